"""The HTTP layer: Starlette only. It parses requests and renders responses; it never imports
boto3, SQLModel or a backend."""
