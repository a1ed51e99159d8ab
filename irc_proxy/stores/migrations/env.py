"""Alembic environment: the engine comes from the caller (``irc-proxy db upgrade`` or start-up)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from irc_proxy.stores import tables  # noqa: F401  (registers the tables on SQLModel.metadata)

engine = context.config.attributes["engine"]
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=engine.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
