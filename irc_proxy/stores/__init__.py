"""The proxy's own state database: every table declared in ``tables`` (SQLModel), one store module per concern,
migrations in ``migrations`` (Alembic), the engine, start-up check and schema lock in ``db``."""
