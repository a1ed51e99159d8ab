"""A migrated state database per test module: a SQLite file, and a throwaway PostgreSQL database.

Module-scoped, so tests in a module share it: each test names its rows with ``uid`` so that none sees
another's. PostgreSQL is migrated once per run into a template that each module's database is copied from
(``CREATE DATABASE ... TEMPLATE``, a file copy on the server) and dropped after the module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from irc_proxy.stores import db
from irc_proxy.threads import ThreadRunner
from tests.support.postgres import scratch_database


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def state_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[sa.Engine]:
    """A state database at the head revision, on SQLite (a file) and on PostgreSQL (dropped afterwards)."""
    if request.param == "sqlite":
        engine = db.create_state_engine(f"sqlite:///{tmp_path_factory.mktemp('state') / 'state.db'}")
        db.upgrade(engine)
        yield engine
        engine.dispose()
        return
    template = request.getfixturevalue("postgresql_template")
    with scratch_database(template) as url:
        engine = db.create_state_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


@pytest.fixture(scope="session")
def postgresql_template() -> Iterator[str]:
    """The name of a PostgreSQL database at the head revision, for the modules' databases to be copied from."""
    with scratch_database() as url:
        engine = db.create_state_engine(url)
        db.upgrade(engine)
        engine.dispose()  # a template must have no connection while it is copied
        yield url.rsplit("/", 1)[1]


@pytest.fixture
def threads() -> ThreadRunner:
    return ThreadRunner(4)


@pytest.fixture
def uid() -> str:
    """A name no other test in the module uses."""
    return uuid.uuid4().hex[:12]
