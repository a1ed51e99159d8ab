"""The namespace, table, commit and view behaviour suites against a Glue catalog (moto server).

The catalog is named ``local`` here so the shared tests' paths (``/v1/local/...``) address it; its
metadata files live in a ``file://`` warehouse, its pointers in Glue."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import httpx
import pytest

from tests.integration import test_commits, test_namespaces, test_tables, test_views
from tests.support.aws import glue_catalog_config, moto_server
from tests.support.server import ProxyProcess

GLUE_DIFFERENCES = {
    "test_versions_record_who_and_when",  # reads the SQLite state file of the default proxy
    "test_transaction_commits_all_or_nothing",  # Glue has no atomic multi-table commit (406, tested below)
}


def _collect(*modules: ModuleType) -> dict[str, object]:
    return {
        name: fn
        for module in modules
        for name, fn in vars(module).items()
        if name.startswith("test_") and callable(fn) and name not in GLUE_DIFFERENCES
    }


globals().update(_collect(test_namespaces, test_tables, test_commits, test_views))


@pytest.fixture(scope="module")
def glue_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    with moto_server() as endpoint:
        workdir = tmp_path_factory.mktemp("glue-proxy")
        warehouse = (workdir / "warehouse").as_uri()
        server = ProxyProcess(workdir, glue_catalog_config("local", endpoint, warehouse)).start()
        yield server
        server.stop()


@pytest.fixture
def client(glue_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=glue_proxy.url, timeout=30) as http:
        yield http


def test_multi_table_transaction_is_refused_on_glue(client: httpx.Client, ns_name: str) -> None:
    from tests.support.rest import assert_error, create_namespace, create_table

    create_namespace(client, ns_name)
    for name in ("a", "b"):
        create_table(client, (ns_name,), name)
    body = {
        "table-changes": [
            {"identifier": {"namespace": [ns_name], "name": n}, "requirements": [], "updates": []} for n in ("a", "b")
        ]
    }
    assert_error(client.post("/v1/local/transactions/commit", json=body), 406, "UnsupportedOperationException")
    single = {"table-changes": body["table-changes"][:1]}
    single["table-changes"][0]["updates"] = [{"action": "set-properties", "updates": {"k": "v"}}]
    assert client.post("/v1/local/transactions/commit", json=single).status_code == 204
