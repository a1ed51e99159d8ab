"""Backends are picked by ``kind`` from a table; credential vending only where a catalog has a ``vending`` table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa

from irc_proxy.backends.glue import GlueBackend
from irc_proxy.backends.local import LocalBackend
from irc_proxy.backends.registry import BACKENDS, create_backend, create_credential_source
from irc_proxy.backends.rest import RestBackend
from irc_proxy.backends.sts import StsCredentials
from irc_proxy.settings import load_settings
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.threads import ThreadRunner


def test_each_kind_of_catalog_gets_its_backend(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        {
            "IRC_PROXY_DATA_DIR": str(tmp_path / "data"),
            "IRC_PROXY_CATALOGS__L__KIND": "local",
            "IRC_PROXY_CATALOGS__L__DATABASE_URL": f"sqlite:///{tmp_path / 'nested' / 'dir' / 'catalog.db'}",
            "IRC_PROXY_CATALOGS__L__VENDING__ROLE_ARN": "arn:aws:iam::123456789012:role/r",
            "IRC_PROXY_CATALOGS__G__KIND": "glue",
            "IRC_PROXY_CATALOGS__G__REGION": "us-east-1",
            "IRC_PROXY_CATALOGS__G__CATALOG_ID": "123456789012",
            "IRC_PROXY_CATALOGS__G__WAREHOUSE": "s3://b/wh",
            "IRC_PROXY_CATALOGS__R__KIND": "rest",
            "IRC_PROXY_CATALOGS__R__URI": "http://127.0.0.1:9",
        },
    )
    assert set(BACKENDS) == {"local", "glue", "rest"}
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.db'}")
    threads, locks = ThreadRunner(2), CommitLocks(engine)
    built = {name: create_backend(name, catalog, threads, locks) for name, catalog in settings.catalogs.items()}
    try:
        assert isinstance(built["l"], LocalBackend)
        assert (tmp_path / "nested" / "dir" / "catalog.db").exists()  # its directory was made
        assert isinstance(built["g"], GlueBackend) and isinstance(built["r"], RestBackend)
        assert isinstance(create_credential_source(settings.catalogs["l"], threads), StsCredentials)
        assert create_credential_source(settings.catalogs["g"], threads) is None
    finally:
        for backend in built.values():
            asyncio.run(backend.close())
        engine.dispose()
