"""``/v1/config`` suggests ``io-impl = HadoopFileIO`` to Java clients of a catalog whose every allowed location is
``file://`` (Iceberg Java's default, ``ResolvingFileIO``, hands ``file:`` paths to it anyway). The suggestion must
never reach a table that is not on ``file://``: ``HadoopFileIO`` reads no ``s3://`` path, where ``ResolvingFileIO``
picks ``S3FileIO``.

No client can put a table off ``file://`` in such a catalog (every location, write path and registered metadata
file is confined, whatever its spelling), but the catalog may hold one all the same: kept from before
``allowed_locations`` was narrowed (``held_roots``), or made by another engine on the same Glue catalog. Its own
config then says ``io-impl = ResolvingFileIO`` (Java merges a table's config over the catalog's properties for that
table's FileIO; checked with a real Spark session while writing this: the table's ``io()`` was ``ResolvingFileIO``,
``HadoopFileIO`` before).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.security.conftest import Target
from tests.support.aws import client as aws_client
from tests.support.aws import glue_catalog_config
from tests.support.federation import rest_catalog, start_front
from tests.support.rest import SCHEMA, create_namespace, create_table, ns_path, table_url
from tests.support.server import ProxyProcess

HADOOP = "org.apache.iceberg.hadoop.HadoopFileIO"
RESOLVING = "org.apache.iceberg.io.ResolvingFileIO"


def suggested(http: httpx.Client, **params: str) -> str | None:
    """The ``io-impl`` the catalog's ``/v1/config`` suggests, if any."""
    response = http.get("/v1/config", params=params)
    assert response.status_code == 200, response.text
    value: str | None = response.json()["defaults"].get("io-impl")
    return value


def loaded_config(http: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    response = http.get(table_url((namespace,), name))
    assert response.status_code == 200, response.text
    config: dict[str, Any] = response.json()["config"]
    return config


@pytest.mark.parametrize(
    "location",
    [
        "s3a://bucket/{warehouse_path}/t",
        "S3://bucket/t",
        "hdfs://namenode{warehouse_path}/t",
        "file://otherhost{warehouse_path}/t",
        "gs://bucket/t",
    ],
)
def test_no_client_input_puts_a_table_off_file_in_a_file_only_catalog(
    target: Target, client: httpx.Client, ns: str, location: str
) -> None:
    """A writer in its own namespace: a create, a register, a move and a write path at another scheme (or host)
    are refused, so the suggestion holds for every table a client can make."""
    wanted = location.format(warehouse_path=target.warehouse.as_posix())
    tables = f"/v1/local/namespaces/{ns_path(ns)}/tables"
    assert client.post(tables, json={"name": "t", "schema": SCHEMA, "location": wanted}).status_code in (400, 403)
    registered = {"name": "r", "metadata-location": f"{wanted}/metadata/00000-x.metadata.json"}
    assert client.post(f"/v1/local/namespaces/{ns_path(ns)}/register", json=registered).status_code in (400, 403)
    create_table(client, (ns,), "mine")
    url = table_url((ns,), "mine")
    for update in (
        {"action": "set-location", "location": wanted},
        {"action": "set-properties", "updates": {"write.data.path": wanted}},
        {"action": "set-properties", "updates": {"write.metadata.path": wanted}},
    ):
        answer = client.post(url, json={"requirements": [], "updates": [update]})
        assert answer.status_code in (400, 403), (update, answer.text)
    assert "io-impl" not in loaded_config(client, ns, "mine")
    # Whichever way a client names the catalog, it is the same file-only catalog.
    assert suggested(client) == suggested(client, warehouse="local") == HADOOP
    assert suggested(client, warehouse=target.warehouse.as_uri() + "/") == HADOOP


def test_a_file_spelling_of_the_warehouse_keeps_hadoop_file_io(target: Target, client: httpx.Client, ns: str) -> None:
    """``FILE:`` and ``file:/`` spellings of an allowed directory are the same family: no per-table override."""
    for name, spelling in (("upper", "FILE://"), ("hadoop", "file:")):
        location = f"{spelling}{target.warehouse.as_posix()}/{ns}/{name}"
        created = create_table(client, (ns,), name, location=location)
        assert "io-impl" not in created["config"]
        assert "io-impl" not in loaded_config(client, ns, name)


def test_a_table_kept_off_file_when_allowed_locations_narrowed_is_told_resolving_file_io(
    moto: str, tmp_path: Path
) -> None:
    """The operator narrows a Glue catalog's ``allowed_locations`` from ``s3://`` and ``file://`` to ``file://``:
    the catalog now suggests ``HadoopFileIO``, and the ``s3://`` table it still serves says ``ResolvingFileIO``
    in its own config (create, load); a ``file://`` table beside it says nothing."""
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    aws_client("s3", moto).create_bucket(Bucket=bucket)
    warehouse, on_s3 = (tmp_path / "warehouse").as_uri(), f"s3://{bucket}/wh"
    database = f"ns_{uuid.uuid4().hex[:8]}"

    def config(*allowed: str) -> str:
        listed = ", ".join(f'"{location}"' for location in allowed)
        extra = {"s3_path_style_access": "true", "allowed_locations": f"[{listed}]"}
        return glue_catalog_config("local", moto, on_s3, **extra)

    both = ProxyProcess(tmp_path, config(warehouse, on_s3)).start()
    try:
        with httpx.Client(base_url=both.url, timeout=60) as http:
            assert suggested(http) is None  # s3:// allowed: the client's class path decides
            create_namespace(http, database)
            created = create_table(http, (database,), "kept", location=f"{on_s3}/{database}/kept")
            assert "io-impl" not in created["config"]
    finally:
        both.stop()

    narrowed = ProxyProcess(tmp_path, config(warehouse)).start()
    try:
        with httpx.Client(base_url=narrowed.url, timeout=60) as http:
            assert suggested(http) == HADOOP
            assert loaded_config(http, database, "kept").get("io-impl") == RESOLVING
            beside = create_table(http, (database,), "beside", location=f"{warehouse}/{database}/beside")
            assert "io-impl" not in beside["config"]
            assert "io-impl" not in loaded_config(http, database, "beside")
    finally:
        narrowed.stop()


def test_a_front_passes_its_upstream_proxys_suggestion_and_tables_through(remote: ProxyProcess, tmp_path: Path) -> None:
    """A front irc-proxy over an upstream irc-proxy whose warehouse is ``file://``: the front's clients read the
    upstream's tables, so the upstream's suggestion is theirs too (passed through with the other defaults); a
    forwarded table's config is the upstream's (nothing added by the front), and the front's own read of it (the
    console's preview) still works."""
    front = start_front(tmp_path, rest_catalog("fed", remote.url))
    try:
        with httpx.Client(base_url=front.url, timeout=60) as http:
            assert suggested(http, warehouse="fed") == HADOOP
            assert suggested(http, warehouse="local") == HADOOP  # the front's own local catalog
            namespace = f"fed_{uuid.uuid4().hex[:8]}"
            assert http.post("/v1/fed/namespaces", json={"namespace": [namespace]}).status_code == 200
            body = {"name": "t", "schema": SCHEMA}
            assert http.post(f"/v1/fed/namespaces/{namespace}/tables", json=body).status_code == 200
            loaded = http.get(f"/v1/fed/namespaces/{namespace}/tables/t")
            assert loaded.status_code == 200 and "io-impl" not in loaded.json()["config"], loaded.text
            page = http.get(f"/ui/catalogs/fed/namespaces/{namespace}/tables/t/preview")
            assert page.status_code == 200, page.text
    finally:
        front.stop()
