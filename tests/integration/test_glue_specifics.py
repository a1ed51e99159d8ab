"""What only a Glue catalog has: mixed-format databases, Glue parameters, database names and fields,
replicas sharing one Glue, and Glue's faults (denied, unreachable, throttled, ambiguous commits).

Proxies are real ``irc-proxy serve`` processes; Glue is moto's server on 127.0.0.1 (state arranged and
read back with boto3); faults come from moto's IAM enforcement, a closed port, or ``FakeGlue``, a real
HTTP endpoint in front of moto that throttles, delays, pages and enforces ``VersionId`` like real Glue.
Metadata files live in a ``file://`` warehouse.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException

from tests.support.aws import ACCESS_KEY, SECRET_KEY, client, glue_catalog_config
from tests.support.fake_glue import FakeGlue, fake_glue
from tests.support.postgres import scratch_database
from tests.support.rest import SCHEMA, assert_error, ns_path
from tests.support.server import ProxyProcess, Serve, free_port

CATALOG = "glue"
UNKNOWN_STATES = {500, 502, 504}


def config(endpoint: str, warehouse: Path, **extra: str) -> str:
    return glue_catalog_config(CATALOG, endpoint, warehouse.as_uri(), **extra)


def start(tmp_path_factory: pytest.TempPathFactory, text: str, label: str = "glue-proxy") -> ProxyProcess:
    return ProxyProcess(tmp_path_factory.mktemp(label), text).start()


def api(proxy: ProxyProcess, timeout: float = 60) -> httpx.Client:
    return httpx.Client(base_url=f"{proxy.url}/v1/{CATALOG}", timeout=timeout)


def table_path(namespace: tuple[str, ...], name: str) -> str:
    return f"/namespaces/{ns_path(*namespace)}/tables/{name}"


def create_namespace(http: httpx.Client, *levels: str, properties: dict[str, str] | None = None) -> None:
    response = http.post("/namespaces", json={"namespace": list(levels), "properties": properties or {}})
    assert response.status_code == 200, response.text


def create_table(http: httpx.Client, namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    response = http.post(f"/namespaces/{ns_path(*namespace)}/tables", json={"name": name, "schema": SCHEMA})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def set_properties(http: httpx.Client, namespace: tuple[str, ...], name: str, **updates: str) -> httpx.Response:
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": updates}]}
    return http.post(table_path(namespace, name), json=body)


def glue_parameters(glue: Any, database: str, name: str) -> dict[str, str]:
    parameters: dict[str, str] = glue.get_table(DatabaseName=database, Name=name)["Table"].get("Parameters", {})
    return parameters


def database_names(glue: Any) -> set[str]:
    return {d["Name"] for d in glue.get_databases()["DatabaseList"]}


def listed(http: httpx.Client, namespace: tuple[str, ...], **params: Any) -> httpx.Response:
    response = http.get(f"/namespaces/{ns_path(*namespace)}/tables", params=params)
    assert response.status_code == 200, response.text
    return response


def all_pages(http: httpx.Client, namespace: tuple[str, ...], page_size: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token = ""
    while True:
        body = listed(http, namespace, pageSize=page_size, pageToken=token).json()
        pages.append([t["name"] for t in body["identifiers"]])
        token = body.get("next-page-token")
        if not token:
            return pages


def foreign_table(glue: Any, database: str, name: str, parameters: dict[str, str], **extra: Any) -> None:
    """A Glue table written by another engine (Hive, Spark/Delta, Hudi, Trino...)."""
    table_input = {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "StorageDescriptor": {
            "Columns": [{"Name": "id", "Type": "bigint"}],
            "Location": f"s3://elsewhere/{database}/{name}",
            "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"},
        },
    } | extra
    glue.create_table(DatabaseName=database, TableInput=table_input)


# Fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def glue(moto: str) -> Any:
    return client("glue", moto)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("glue-warehouse")


@pytest.fixture(scope="module")
def glue_proxy(moto: str, warehouse: Path, serve: Serve) -> ProxyProcess:
    return serve(config(moto, warehouse), "glue-proxy")


@pytest.fixture
def http(glue_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with api(glue_proxy) as session:
        yield session


@pytest.fixture(scope="module")
def fake(moto: str) -> Iterator[FakeGlue]:
    with fake_glue(moto) as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def fronted_proxy(fake: FakeGlue, warehouse: Path, serve: Serve) -> ProxyProcess:
    """A proxy whose Glue endpoint is the fake: 1 s timeout, at most 2 botocore retries per Glue call."""
    return serve(config(fake.url, warehouse, timeout_seconds="1.0"), "fronted-proxy")


@pytest.fixture
def fronted(fronted_proxy: ProxyProcess, fake: FakeGlue) -> Iterator[httpx.Client]:
    fake.reset()
    with api(fronted_proxy) as session:
        yield session
    fake.reset()


# Mixed-format databases ----------------------------------------------------------------------
def test_mixed_format_database_lists_and_loads_only_iceberg_tables(
    http: httpx.Client, glue: Any, moto: str, warehouse: Path, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    ns = (ns_name,)
    create_namespace(http, ns_name)
    for name in ("ice_a", "ice_b"):
        create_table(http, ns, name)
    foreign_table(glue, ns_name, "hive_t", {"EXTERNAL": "TRUE", "classification": "parquet"})
    foreign_table(glue, ns_name, "delta_t", {"spark.sql.sources.provider": "delta", "EXTERNAL": "TRUE"})
    foreign_table(
        glue,
        ns_name,
        "hudi_t",
        {"spark.sql.sources.provider": "hudi", "last_commit_time_sync": "20260101000000000", "EXTERNAL": "TRUE"},
    )
    foreign_table(
        glue,
        ns_name,
        "view_t",
        {"comment": "a Hive view"},
        TableType="VIRTUAL_VIEW",
        ViewOriginalText="SELECT 1 AS id",
        ViewExpandedText="SELECT 1 AS id",
    )
    assert len(glue.get_tables(DatabaseName=ns_name)["TableList"]) == 6

    names = {t["name"] for t in listed(http, ns).json()["identifiers"]}
    assert names == {"ice_a", "ice_b"}

    typed = start(tmp_path_factory, config(moto, warehouse, table_type_filter='["ICEBERG", "HIVE"]'), "typed")
    try:
        with api(typed) as typed_http:
            assert {t["name"] for t in listed(typed_http, ns).json()["identifiers"]} == {"ice_a", "ice_b", "hive_t"}
            # Listed is not loadable: a Hive table is still not an Iceberg table.
            assert_error(typed_http.get(table_path(ns, "hive_t")), 404, "NoSuchTableException", "not an Iceberg table")
    finally:
        typed.stop()

    for name, kind in (("hive_t", "HIVE"), ("delta_t", "DELTA"), ("hudi_t", "HUDI")):
        response = http.get(table_path(ns, name))
        assert_error(response, 404, "NoSuchTableException", "not an Iceberg table")
        assert kind in response.json()["error"]["message"]
        assert http.head(table_path(ns, name)).status_code == 404
    assert_error(http.get(table_path(ns, "view_t")), 404, "NoSuchTableException")

    # The Hive table holds its name: neither a create nor a rename may take it; it is left untouched.
    before = glue.get_table(DatabaseName=ns_name, Name="hive_t")["Table"]
    response = http.post(f"/namespaces/{ns_name}/tables", json={"name": "hive_t", "schema": SCHEMA})
    assert_error(response, 409, "AlreadyExistsException")
    rename = {
        "source": {"namespace": [ns_name], "name": "ice_a"},
        "destination": {"namespace": [ns_name], "name": "hive_t"},
    }
    assert_error(http.post("/tables/rename", json=rename), 409, "AlreadyExistsException")
    after = glue.get_table(DatabaseName=ns_name, Name="hive_t")["Table"]
    assert after["Parameters"] == before["Parameters"] == {"EXTERNAL": "TRUE", "classification": "parquet"}
    assert after.get("VersionId") == before.get("VersionId")
    # ...and keeps the database from being dropped.
    for name in ("ice_a", "ice_b"):
        assert http.delete(table_path(ns, name)).status_code == 204
    assert_error(http.delete(f"/namespaces/{ns_name}"), 409, "NamespaceNotEmptyException")


def _arrange_250_iceberg_and_30_hive(glue: Any, database: str, warehouse: Path) -> set[str]:
    iceberg = set()
    for i in range(280):
        if i % 9 == 4 and i < 9 * 30:  # 30 Hive tables spread through the listing
            foreign_table(glue, database, f"t{i:03d}", {"EXTERNAL": "TRUE"})
            continue
        name = f"t{i:03d}"
        iceberg.add(name)
        location = f"{warehouse.as_uri()}/{database}/{name}/metadata/00000-{uuid.uuid4()}.metadata.json"
        foreign_table(glue, database, name, {"table_type": "ICEBERG", "metadata_location": location})
    assert len(iceberg) == 250
    return iceberg


def test_250_tables_page_by_100(
    http: httpx.Client, fronted: httpx.Client, fake: FakeGlue, glue: Any, warehouse: Path, ns_name: str
) -> None:
    create_namespace(http, ns_name)
    iceberg = _arrange_250_iceberg_and_30_hive(glue, ns_name, warehouse)

    # moto returns every table in one GetTables answer whatever MaxResults says.
    pages = all_pages(http, (ns_name,), 100)
    assert [len(p) for p in pages] == [100, 100, 50]
    assert sorted(n for p in pages for n in p) == sorted(iceberg)

    # Real Glue pages: at most 100 per GetTables, resumed with NextToken (the fake does that).
    fake.paginate = True
    pages = all_pages(fronted, (ns_name,), 100)
    assert [len(p) for p in pages] == [100, 100, 50]
    assert sorted(n for p in pages for n in p) == sorted(iceberg)
    received = fake.bodies("GetTables")
    assert all(1 <= r["MaxResults"] <= 100 for r in received), [r["MaxResults"] for r in received]
    # A botocore retry (this proxy's Glue timeout is 1 s: a loaded host can pass it) repeats the request just sent;
    # a page that re-listed the database would send an earlier request again after later ones, and is counted.
    requests = [r for i, r in enumerate(received) if i == 0 or r != received[i - 1]]
    asked = sum(r["MaxResults"] for r in requests)
    print(f"\nGetTables calls for 3 pages: {len(requests)} (+{len(received) - len(requests)} retried), ", end="")
    print(f"entries asked for: {asked} (280 in Glue)")
    assert asked <= 280 + 100, "each page must resume with NextToken, not re-list the database"

    # One big page is filled from several Glue pages; no page at all returns everything.
    body = listed(fronted, (ns_name,), pageSize=250).json()
    assert sorted(t["name"] for t in body["identifiers"]) == sorted(iceberg)
    everything = listed(fronted, (ns_name,)).json()
    assert sorted(t["name"] for t in everything["identifiers"]) == sorted(iceberg)
    assert everything.get("next-page-token") is None


# Glue parameters ---------------------------------------------------------------------------------
def test_glue_parameters_and_fields_survive_commits_and_rename(http: httpx.Client, glue: Any, ns_name: str) -> None:
    ns = (ns_name,)
    create_namespace(http, ns_name)
    created = create_table(http, ns, "t")
    first = created["metadata-location"]
    table = glue.get_table(DatabaseName=ns_name, Name="t")["Table"]
    assert table["Parameters"]["table_type"] == "ICEBERG"
    assert table["Parameters"]["metadata_location"] == first
    table_input = {key: table[key] for key in ("Name", "TableType", "StorageDescriptor", "Parameters")}
    table_input["Parameters"] = table["Parameters"] | {"lake.owner": "team-sales", "classification": "iceberg"}
    table_input["Description"] = "orders, written by the proxy"
    table_input["Owner"] = "data-platform"
    glue.update_table(DatabaseName=ns_name, TableInput=table_input)

    response = set_properties(http, ns, "t", **{"commit.note": "one"})
    assert response.status_code == 200, response.text
    second = response.json()["metadata-location"]
    response = set_properties(http, ns, "t", **{"commit.note": "two"})
    assert response.status_code == 200, response.text
    third = response.json()["metadata-location"]

    table = glue.get_table(DatabaseName=ns_name, Name="t")["Table"]
    parameters = table["Parameters"]
    assert parameters["lake.owner"] == "team-sales"
    assert parameters["classification"] == "iceberg"
    assert parameters["table_type"] == "ICEBERG"
    assert parameters["metadata_location"] == third
    assert parameters["previous_metadata_location"] == second
    assert first != second != third
    assert table["Description"] == "orders, written by the proxy"
    assert table["Owner"] == "data-platform"
    assert [c["Name"] for c in table["StorageDescriptor"]["Columns"]] == ["id", "data"]
    assert http.get(table_path(ns, "t")).json()["metadata-location"] == third

    rename = {"source": {"namespace": [ns_name], "name": "t"}, "destination": {"namespace": [ns_name], "name": "t2"}}
    assert http.post("/tables/rename", json=rename).status_code == 204
    renamed = glue.get_table(DatabaseName=ns_name, Name="t2")["Table"]
    assert renamed["Parameters"] == parameters
    assert renamed["Description"] == "orders, written by the proxy"
    assert [t["Name"] for t in glue.get_tables(DatabaseName=ns_name)["TableList"]] == ["t2"]


# Namespaces --------------------------------------------------------------------------------------
def test_nested_namespaces_are_glue_databases_named_with_the_separator(
    http: httpx.Client, glue: Any, ns_name: str
) -> None:
    create_namespace(http, ns_name, "sales")
    create_namespace(http, ns_name, "a:b")
    assert {ns_name, f"{ns_name}:sales", f"{ns_name}:a%3Ab"} <= database_names(glue)
    # A database made by another tool with the same naming shows up as a child.
    glue.create_database(DatabaseInput={"Name": f"{ns_name}:ops"})
    response = http.get("/namespaces", params={"parent": ns_name})
    assert response.status_code == 200, response.text
    assert sorted(response.json()["namespaces"]) == [[ns_name, "a:b"], [ns_name, "ops"], [ns_name, "sales"]]
    assert http.head(f"/namespaces/{ns_path(ns_name, 'ops')}").status_code == 204
    assert http.get("/namespaces", params={"parent": f"{ns_name}\x1fsales"}).json()["namespaces"] == []
    top = http.get("/namespaces").json()["namespaces"]
    assert [ns_name] in top
    assert not [level for level in top if len(level) > 1]

    create_table(http, (ns_name, "sales"), "orders")
    assert (
        glue.get_table(DatabaseName=f"{ns_name}:sales", Name="orders")["Table"]["Parameters"]["table_type"] == "ICEBERG"
    )
    assert_error(http.delete(f"/namespaces/{ns_name}"), 409, "NamespaceNotEmptyException")


def test_failed_nested_create_leaves_no_parent_behind(http: httpx.Client, glue: Any, ns_name: str) -> None:
    """Glue refuses an empty parameter key (botocore validates DatabaseInput before sending), so the
    last CreateDatabase of a chain fails for real after its parents were created."""
    response = http.post("/namespaces", json={"namespace": [ns_name, "b", "c"], "properties": {"": "empty key"}})
    assert_error(response, 400, "BadRequestException", "CreateDatabase")
    assert not {n for n in database_names(glue) if n.startswith(ns_name)}

    create_namespace(http, ns_name)  # an existing parent is not rolled back
    response = http.post("/namespaces", json={"namespace": [ns_name, "b", "c"], "properties": {"location": ""}})
    assert_error(response, 400, "BadRequestException", "Invalid location")  # refused before any Glue call
    assert {n for n in database_names(glue) if n.startswith(ns_name)} == {ns_name}
    assert http.get(f"/namespaces/{ns_path(ns_name, 'b')}").status_code == 404

    create_namespace(http, ns_name, "b", "c")
    assert {n for n in database_names(glue) if n.startswith(ns_name)} == {ns_name, f"{ns_name}:b", f"{ns_name}:b:c"}


def test_namespace_properties_are_database_parameters_description_and_location(
    http: httpx.Client, glue: Any, warehouse: Path, ns_name: str
) -> None:
    lake = f"{warehouse.as_uri()}/lake-{ns_name}"
    properties = {"location": f"{lake}/sales", "comment": "Sales team", "owner": "alice"}
    create_namespace(http, ns_name, properties=properties)
    database = glue.get_database(Name=ns_name)["Database"]
    assert database["LocationUri"] == f"{lake}/sales"
    assert database["Description"] == "Sales team"
    assert database["Parameters"] == {"owner": "alice"}
    assert http.get(f"/namespaces/{ns_name}").json()["properties"] == properties

    response = http.post(
        f"/namespaces/{ns_name}/properties",
        json={"removals": ["comment", "missing"], "updates": {"owner": "bob", "retention": "30d"}},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"updated": ["owner", "retention"], "removed": ["comment"], "missing": ["missing"]}
    database = glue.get_database(Name=ns_name)["Database"]
    assert "Description" not in database or not database["Description"]
    assert database["LocationUri"] == f"{lake}/sales"
    assert database["Parameters"] == {"owner": "bob", "retention": "30d"}

    glue.update_database(
        Name=ns_name,
        DatabaseInput={
            "Name": ns_name,
            "Description": "set in Glue",
            "LocationUri": f"{lake}/v2",
            "Parameters": {"x": "y"},
        },
    )
    assert http.get(f"/namespaces/{ns_name}").json()["properties"] == {
        "location": f"{lake}/v2",
        "comment": "set in Glue",
        "x": "y",
    }
    # A table created without a location goes under the database's LocationUri.
    created = create_table(http, (ns_name,), "t")
    assert created["metadata"]["location"] == f"{lake}/v2/t"


# Replicas ----------------------------------------------------------------------------------------
THREADS = 8
COMMITS_PER_THREAD = 10
APPENDS_PER_THREAD = 3


def _hammer_properties(
    proxies: list[ProxyProcess], ns: tuple[str, ...], name: str
) -> tuple[Counter[int], set[str], set[str]]:
    """THREADS x COMMITS_PER_THREAD set-properties commits with distinct keys, alternating proxies."""
    clients = [api(p) for p in proxies]

    def commit(i: int) -> tuple[str, int]:
        key = f"k{i:04d}"
        return key, set_properties(clients[i % len(clients)], ns, name, **{key: str(i)}).status_code

    try:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            results = list(pool.map(commit, range(THREADS * COMMITS_PER_THREAD)))
        stored = set(clients[0].get(table_path(ns, name)).json()["metadata"]["properties"])
    finally:
        for c in clients:
            c.close()
    statuses = Counter(status for _, status in results)
    acknowledged = {key for key, status in results if status == 200}
    refused = {key for key, status in results if status != 200}
    return statuses, acknowledged - stored, refused & stored


@pytest.mark.postgres
def test_two_replicas_on_one_glue_and_one_state_database_lose_no_commit(
    moto: str, glue: Any, warehouse: Path, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    with scratch_database() as url:
        text = f'[state]\ndatabase_url = "{url}"\n' + config(moto, warehouse)
        proxies = [start(tmp_path_factory, text, "replica-a"), start(tmp_path_factory, text, "replica-b")]
        try:
            with api(proxies[0]) as http:
                create_namespace(http, ns_name)
                create_table(http, (ns_name,), "props")
            ns = (ns_name,)
            started = time.monotonic()
            statuses, lost, phantom = _hammer_properties(proxies, ns, "props")
            took = time.monotonic() - started
            attempts = THREADS * COMMITS_PER_THREAD
            print(
                f"\nset-properties via 2 replicas: attempts={attempts} ok={statuses[200]} 409={statuses[409]} "
                f"other={attempts - statuses[200] - statuses[409]} lost={len(lost)} in {took:.1f}s"
            )
            assert set(statuses) <= {200, 409}, statuses
            assert not lost, f"acknowledged but missing: {sorted(lost)}"
            assert not phantom, f"refused but present: {sorted(phantom)}"
            assert statuses[200] >= attempts * 0.9

            appended = _concurrent_appends(proxies, ns)
            print(
                f"pyiceberg appends via 2 replicas: attempts={appended['attempts']} ok={appended['ok']} "
                f"409={appended['conflicts']} lost={appended['lost']} phantom={appended['phantom']}"
            )
            assert appended["ok"] >= 1
            assert appended["lost"] == appended["phantom"] == 0
            assert appended["ok"] + appended["conflicts"] == appended["attempts"]
            parameters = glue_parameters(glue, ns_name, "events")
            with api(proxies[1]) as http:
                assert parameters["metadata_location"] == http.get(table_path(ns, "events")).json()["metadata-location"]
        finally:
            for proxy in proxies:
                proxy.stop()


def _concurrent_appends(proxies: list[ProxyProcess], ns: tuple[str, ...]) -> dict[str, int]:
    """pyiceberg appends from THREADS threads, alternating replicas: acknowledged rows are there, refused ones not."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("writer", pa.string())])
    catalogs = [RestCatalog(f"r{i}", uri=p.url, warehouse=CATALOG) for i, p in enumerate(proxies)]
    catalogs[0].create_table((*ns, "events"), schema=schema)

    def append(i: int) -> tuple[int, bool]:
        table = catalogs[i % len(catalogs)].load_table((*ns, "events"))
        rows = pa.Table.from_pylist([{"id": i * 10 + j, "writer": f"w{i}"} for j in range(3)], schema=schema)
        try:
            table.append(rows)
        except CommitFailedException:
            return i, False
        return i, True

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = list(pool.map(append, range(THREADS * APPENDS_PER_THREAD)))
    stored = Counter(catalogs[1].load_table((*ns, "events")).scan().to_arrow().column("writer").to_pylist())
    ok = {f"w{i}" for i, done in results if done}
    refused = {f"w{i}" for i, done in results if not done}
    return {
        "attempts": len(results),
        "ok": len(ok),
        "conflicts": len(refused),
        "lost": len({w for w in ok if stored[w] != 3}),
        "phantom": len({w for w in refused if w in stored}),
    }


def test_replicas_without_a_shared_state_database_can_lose_commits_on_moto(
    moto: str, warehouse: Path, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    """The same load with each replica on its own SQLite state database (so no commit lock is shared):
    moto ignores VersionId, so a stale UpdateTable wins and acknowledged commits vanish. This is why
    replicas of a Glue catalog must share ``state.database_url``."""
    proxies = [start(tmp_path_factory, config(moto, warehouse), f"lone-{i}") for i in range(2)]
    try:
        with api(proxies[0]) as http:
            create_namespace(http, ns_name)
        lost_total = 0
        for round_number in range(3):
            name = f"t{round_number}"
            with api(proxies[0]) as http:
                create_table(http, (ns_name,), name)
            statuses, lost, _ = _hammer_properties(proxies, (ns_name,), name)
            print(f"\nno shared lock, round {round_number}: ok={statuses[200]} 409={statuses[409]} lost={len(lost)}")
            lost_total += len(lost)
            if lost_total:
                break
        assert lost_total > 0, "expected lost commits without a shared commit lock on moto"
    finally:
        for proxy in proxies:
            proxy.stop()


# Faults ------------------------------------------------------------------------------------------
def test_access_denied_is_403_naming_the_operation_without_credentials(
    moto: str, warehouse: Path, tmp_path_factory: pytest.TempPathFactory, glue: Any, ns_name: str
) -> None:
    glue.create_database(DatabaseInput={"Name": ns_name})
    iam = client("iam", moto)
    user = f"no-glue-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    text = config(moto, warehouse).replace(ACCESS_KEY, key["AccessKeyId"]).replace(SECRET_KEY, key["SecretAccessKey"])
    proxy = start(tmp_path_factory, text, "denied")
    secrets = (key["AccessKeyId"], key["SecretAccessKey"])
    try:
        auth = httpx.post(f"{moto}/moto-api/reset-auth", content=b"0", headers={"Content-Type": "text/plain"})
        assert auth.status_code == 200, auth.text
        with api(proxy) as http:
            responses = {
                "GetDatabases": http.get("/namespaces"),
                "GetDatabase": http.get(f"/namespaces/{ns_name}"),
                "GetTable": http.get(table_path((ns_name,), "t")),
            }
            head = http.head(f"/namespaces/{ns_name}")
            config_body = httpx.get(f"{proxy.url}/v1/config", params={"warehouse": CATALOG}).text
    finally:
        httpx.post(f"{moto}/moto-api/reset-auth", content=b"inf", headers={"Content-Type": "text/plain"})
        proxy.stop()
    for operation, response in responses.items():
        assert_error(response, 403, "ForbiddenException", operation)
        assert not any(secret in response.text for secret in secrets)
    assert head.status_code == 403
    assert not any(secret in config_body for secret in secrets)
    assert not any(secret in proxy.log() for secret in secrets)


def test_unreachable_glue_is_503_in_the_spec_shape_within_the_timeout(
    warehouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    proxy = start(tmp_path_factory, config(closed, warehouse, timeout_seconds="2.0"), "unreachable")
    try:
        with api(proxy, timeout=30) as http:
            for call in (
                lambda: http.get("/namespaces"),
                lambda: http.get("/namespaces/sales"),
                lambda: http.post("/namespaces", json={"namespace": ["sales"]}),
                lambda: http.get(table_path(("sales",), "orders")),
                lambda: set_properties(http, ("sales",), "orders", k="v"),
            ):
                started = time.monotonic()
                response = call()
                took = time.monotonic() - started
                assert_error(response, 503, "ServiceUnavailableException", "unreachable")
                assert set(response.json()) == {"error"}
                assert set(response.json()["error"]) == {"message", "type", "code"}
                assert took < 2.0 * 2 + 3, took
            assert http.head("/namespaces/sales").status_code == 503
    finally:
        proxy.stop()


def test_throttling_is_retried_a_bounded_number_of_times_then_503(
    fronted: httpx.Client, fake: FakeGlue, glue: Any, ns_name: str
) -> None:
    fake.throttle = {"GetDatabases"}
    assert_error(fronted.get("/namespaces"), 503, "ServiceUnavailableException", "GetDatabases")
    assert fake.count("GetDatabases") == 3  # the first call plus max_attempts = 2 botocore retries

    fake.reset()
    ns = (ns_name,)
    create_namespace(fronted, ns_name)
    before = create_table(fronted, ns, "t")["metadata-location"]
    fake.throttle = {"UpdateTable"}
    response = set_properties(fronted, ns, "t", k="v")
    assert_error(response, 503, "ServiceUnavailableException", "UpdateTable")
    assert fake.count("UpdateTable") == 3
    assert glue_parameters(glue, ns_name, "t")["metadata_location"] == before  # nothing happened

    fake.reset()
    response = set_properties(fronted, ns, "t", k="v")
    assert response.status_code == 200, response.text
    assert glue_parameters(glue, ns_name, "t")["metadata_location"] == response.json()["metadata-location"]


def _load_consistent(http: httpx.Client, glue: Any, ns_name: str, name: str) -> dict[str, Any]:
    """The table loads (its metadata file is complete) and Glue points where the proxy says."""
    loaded = http.get(table_path((ns_name,), name))
    assert loaded.status_code == 200, loaded.text
    body: dict[str, Any] = loaded.json()
    assert glue_parameters(glue, ns_name, name)["metadata_location"] == body["metadata-location"]
    return body


def test_commit_whose_update_table_reply_times_out_is_commit_state_unknown(
    fronted: httpx.Client, fake: FakeGlue, glue: Any, ns_name: str
) -> None:
    ns = (ns_name,)
    create_namespace(fronted, ns_name)
    old = create_table(fronted, ns, "t")["metadata-location"]

    fake.delay = {"UpdateTable": 2.5}  # moto applies it; the reply comes after the proxy's 1 s timeout
    started = time.monotonic()
    response = set_properties(fronted, ns, "t", ambiguous="yes")
    took = time.monotonic() - started
    assert response.status_code in UNKNOWN_STATES, response.text
    assert response.json()["error"]["type"] == "CommitStateUnknownException"
    assert response.json()["error"]["code"] == response.status_code
    assert fake.count("UpdateTable") >= 1
    print(f"\nambiguous UpdateTable: {response.status_code} after {took:.1f}s: {response.json()['error']['message']}")

    fake.reset()
    body = _load_consistent(fronted, glue, ns_name, "t")
    # At the old metadata, or at new metadata that has the change (moto applied the UpdateTable).
    assert body["metadata-location"] == old or body["metadata"]["properties"]["ambiguous"] == "yes"
    response = set_properties(fronted, ns, "t", after="ok")
    assert response.status_code == 200, response.text
    assert _load_consistent(fronted, glue, ns_name, "t")["metadata-location"] == response.json()["metadata-location"]


def test_resent_update_table_that_meets_its_own_version_is_not_a_conflict(
    fronted: httpx.Client, fake: FakeGlue, glue: Any, ns_name: str
) -> None:
    """As on real Glue (VersionId enforced): the first UpdateTable lands but its reply times out, botocore
    re-sends it and Glue answers ConcurrentModificationException. That conflict is our own commit: the
    answer must not be 409 (the client would delete files the table now references)."""
    ns = (ns_name,)
    create_namespace(fronted, ns_name)
    old = create_table(fronted, ns, "t")
    schema = dict(SCHEMA) | {
        "schema-id": 1,
        "fields": [*SCHEMA["fields"], {"id": 3, "name": "extra", "type": "int", "required": False}],
    }
    body = {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": [{"action": "add-schema", "schema": schema}, {"action": "set-current-schema", "schema-id": -1}],
    }
    fake.enforce_version_id = True
    fake.delay = {"UpdateTable": 2.5}
    response = fronted.post(table_path(ns, "t"), json=body)
    print(f"\nre-sent UpdateTable: {response.status_code} after {fake.count('UpdateTable')} UpdateTable calls")
    assert response.status_code != 409, response.text
    assert response.status_code == 200 or response.json()["error"]["type"] == "CommitStateUnknownException"
    fake.reset()
    loaded = _load_consistent(fronted, glue, ns_name, "t")
    assert loaded["metadata-location"] != old["metadata-location"]
    assert loaded["metadata"]["current-schema-id"] == 1
    assert len(loaded["metadata"]["schemas"]) == 2  # applied exactly once
    assert response.status_code == 200
    assert response.json()["metadata-location"] == loaded["metadata-location"]


def test_resent_create_table_that_meets_itself_is_not_already_exists(
    fronted: httpx.Client, fake: FakeGlue, glue: Any, ns_name: str
) -> None:
    create_namespace(fronted, ns_name)
    fake.delay = {"CreateTable": 2.5}  # moto creates it; the reply comes too late; botocore re-sends
    response = fronted.post(f"/namespaces/{ns_name}/tables", json={"name": "t", "schema": SCHEMA})
    print(f"\nre-sent CreateTable: {response.status_code} after {fake.count('CreateTable')} CreateTable calls")
    assert response.status_code != 409, response.text
    fake.reset()
    loaded = _load_consistent(fronted, glue, ns_name, "t")
    assert response.status_code == 200, response.text
    assert response.json()["metadata-location"] == loaded["metadata-location"]
