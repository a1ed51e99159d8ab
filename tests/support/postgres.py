"""A throw-away PostgreSQL database on the machine's server (127.0.0.1:5432, trust auth)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

ADMIN_URL = os.environ.get("IRC_PROXY_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@contextmanager
def scratch_database(template: str | None = None) -> Iterator[str]:
    """Create a uniquely named database (a copy of ``template`` when given), yield its URL, drop it afterwards.
    Skips if no server."""
    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"ircp_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    except sa.exc.OperationalError as exc:
        admin.dispose()
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL}: {exc.orig}")
    try:
        yield ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
