"""pyiceberg's view API (RestCatalog) against the served proxy, plus a second dialect added over REST."""

from __future__ import annotations

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from tests.support.server import ProxyProcess

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))


@pytest.fixture
def catalog(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("irc", uri=proxy.url, warehouse="local")


def spark_version(sql: str, namespace: tuple[str, ...]) -> ViewVersion:
    return ViewVersion.model_validate(
        {
            "version-id": 1,
            "schema-id": 0,
            "timestamp-ms": 1,
            "summary": {"engine-name": "pyiceberg"},
            "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
            "default-namespace": list(namespace),
        }
    )


def test_pyiceberg_creates_lists_loads_and_drops_views(catalog: RestCatalog, ns_name: str) -> None:
    namespace = (ns_name, "reports")
    catalog.create_namespace(namespace)
    view = catalog.create_view((*namespace, "daily"), SCHEMA, spark_version("SELECT 1 AS id, 'a' AS name", namespace))
    assert view.metadata.current_version_id == 1
    assert catalog.view_exists((*namespace, "daily"))
    assert catalog.list_views(namespace) == [(*namespace, "daily")]
    assert catalog.list_tables(namespace) == []
    loaded = catalog.load_view((*namespace, "daily"))
    rep = loaded.metadata.versions[0].representations[0].root
    assert isinstance(rep, SQLViewRepresentation) and rep.sql == "SELECT 1 AS id, 'a' AS name"
    assert [f.name for f in loaded.metadata.schemas[0].fields] == ["id", "name"]
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view((*namespace, "daily"), SCHEMA, spark_version("SELECT 2", namespace))
    catalog.drop_view((*namespace, "daily"))
    assert not catalog.view_exists((*namespace, "daily"))
    with pytest.raises(NoSuchViewError):
        catalog.load_view((*namespace, "daily"))


def test_register_view_restores_a_dropped_view(catalog: RestCatalog, client: httpx.Client, ns_name: str) -> None:
    catalog.create_namespace((ns_name,))
    created = catalog.create_view((ns_name, "v"), SCHEMA, spark_version("SELECT 1", (ns_name,)))
    location = client.get(f"/v1/local/namespaces/{ns_name}/views/v").json()["metadata-location"]
    catalog.drop_view((ns_name, "v"))
    restored = catalog.register_view((ns_name, "v"), location)
    assert restored.metadata.view_uuid == created.metadata.view_uuid


def test_second_dialect_added_over_rest_reads_back_in_both(
    catalog: RestCatalog, client: httpx.Client, ns_name: str
) -> None:
    catalog.create_namespace((ns_name,))
    created = catalog.create_view((ns_name, "v"), SCHEMA, spark_version("SELECT id, name FROM t", (ns_name,)))
    current = created.metadata.versions[0].model_dump(mode="json")
    current["representations"].append({"type": "sql", "sql": 'SELECT "id", "name" FROM t', "dialect": "trino"})
    current["schema-id"] = 0
    body = {
        "requirements": [{"type": "assert-view-uuid", "uuid": created.metadata.view_uuid}],
        "updates": [
            {"action": "add-view-version", "view-version": current},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    response = client.post(f"/v1/local/namespaces/{ns_name}/views/v", json=body)
    assert response.status_code == 200, response.text
    view = catalog.load_view((ns_name, "v"))
    head = next(v for v in view.metadata.versions if v.version_id == view.metadata.current_version_id)
    sql = {r.root.dialect: r.root.sql for r in head.representations}
    assert sql == {"spark": "SELECT id, name FROM t", "trino": 'SELECT "id", "name" FROM t'}
    assert view.metadata.current_version_id == 2
    assert [e.version_id for e in view.metadata.version_log] == [1, 2]
