"""The proxy's own database (SQLModel): views and their history, later audit and shared state."""
