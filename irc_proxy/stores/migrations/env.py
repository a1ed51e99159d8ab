"""Alembic environment: the engine comes from the caller (``irc-proxy db upgrade`` or start-up).

The target is every table of ``irc_proxy.stores.tables`` (the schema's one source), so autogenerate and
``alembic check`` compare all of them. A local catalog's tables, which may share the database, are
pyiceberg's and created by ``irc_proxy.backends.local``: Alembic neither adds nor drops them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alembic import context
from sqlmodel import SQLModel

from irc_proxy.stores import tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from irc_proxy.stores.db import CATALOG_TABLE_NAMES


def include_name(name: str | None, type_: str, _parents: Mapping[Any, Any]) -> bool:
    """Leave a local catalog's tables out of every comparison."""
    return not (type_ == "table" and name in CATALOG_TABLE_NAMES)


engine = context.config.attributes["engine"]
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=engine.dialect.name == "sqlite",
        include_name=include_name,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
