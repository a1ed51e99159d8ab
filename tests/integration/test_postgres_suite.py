"""The namespace, table, commit and view behaviour suites again, with the local catalog and the
view store on PostgreSQL instead of SQLite (same tests, collected here with other fixtures)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import httpx
import pytest

from tests.integration import test_commits, test_namespaces, test_tables, test_views
from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.postgres
SQLITE_ONLY = {"test_versions_record_who_and_when"}  # reads the SQLite state file directly


def _collect(*modules: ModuleType) -> dict[str, object]:
    return {
        name: fn
        for module in modules
        for name, fn in vars(module).items()
        if name.startswith("test_") and callable(fn) and name not in SQLITE_ONLY
    }


globals().update(_collect(test_namespaces, test_tables, test_commits, test_views))


@pytest.fixture(scope="module")
def pg_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    with scratch_database() as url:
        config = f'[state]\ndatabase_url = "{url}"\n[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\n'
        server = ProxyProcess(tmp_path_factory.mktemp("pg-proxy"), config).start()
        yield server
        server.stop()


@pytest.fixture
def client(pg_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=pg_proxy.url, timeout=30) as http:
        yield http
