"""Server-side scan planning is correct: pyiceberg planning on the server reads exactly what it reads when it
plans itself.

For every case, the same scan runs twice through the same proxy: once with pyiceberg's own (client-side)
planning and once with ``scan-planning-mode = server`` (planTableScan + fetchScanTasks). Both must give the same
rows (``to_arrow()``, order-free), the same ``count()`` (which trusts the residual filters and record counts of
the tasks) and the same tasks: (data file, delete files) pairs from ``plan_files()``.

Backends, all catalogs of one front proxy (``[server.scan_planning]`` ``files_per_task = 500``,
``tasks_per_response = 200``, so large plans come in several plan-tasks):

* ``local``: the embedded catalog (file:// warehouse);
* ``glue``: Glue on moto's server with the data on moto's S3; the Spark-written tables and the table of
  thousands of files use the Glue catalog ``glue_file`` (same moto Glue, file:// warehouse): Spark has no
  S3 FileIO here, and 3,000 objects on moto's S3 would cost a minute;
* ``rest_served``: a REST catalog federated to a second proxy whose catalog has ``scan_planning = "off"``:
  the upstream does not advertise planning, the front plans over the upstream's metadata;
* ``rest_forwarded``: the same, to an upstream catalog that plans: the front forwards planning.

Tables written by pyiceberg (filters, partition evolution, schema evolution, time travel, pyiceberg's own
deletes, an empty table, equality deletes via pyiceberg's manifest writer, 3,000 files) and by Spark
(merge-on-read position deletes on v2, deletion vectors on v3; marked ``spark``), set up once per backend.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest
from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
)
from pyiceberg.manifest import ManifestContent
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, MonthTransform, TruncateTransform
from pyiceberg.typedef import Identifier, Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config, moto_server
from tests.support.plan_checks import (
    add_equality_deletes,
    append_partitioned,
    check_scan_tasks,
    conforms,
    planned,
    sorted_rows,
)
from tests.support.server import ProxyProcess

BUCKET = "irc-scan-planning"
BACKENDS = ("local", "glue", "rest_served", "rest_forwarded")
FILES_PER_TASK = 500
TASKS_PER_RESPONSE = 200
PLANNING = f"""
[server.scan_planning]
files_per_task = {FILES_PER_TASK}
tasks_per_response = {TASKS_PER_RESPONSE}
"""
PLAN_ENDPOINT = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"


# The proxies -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        httpx.post(f"{endpoint}/moto-api/reset")  # moto's backends are process-wide
        client("s3", endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
        httpx.post(f"{endpoint}/moto-api/reset")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The second proxy: ``noplan`` does not serve planning (not advertised, 406), ``planned`` does."""
    config = PLANNING + '[catalogs.noplan]\nkind = "local"\nscan_planning = "off"\n'
    config += '[catalogs.planned]\nkind = "local"\n'
    server = ProxyProcess(tmp_path_factory.mktemp("plan-upstream"), config).start()
    yield server
    server.stop()


def rest_section(name: str, uri: str, warehouse: str) -> str:
    return f'[catalogs.{name}]\nkind = "rest"\nuri = "{uri}"\nwarehouse = "{warehouse}"\n'


@pytest.fixture(scope="module")
def front(moto: str, upstream: ProxyProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("plan-front")
    config = PLANNING + '[catalogs.local]\nkind = "local"\n'
    config += glue_catalog_config("glue", moto, f"s3://{BUCKET}/wh", s3_path_style_access="true")
    config += glue_catalog_config("glue_file", moto, (workdir / "glue-warehouse").as_uri())
    config += rest_section("rest_served", upstream.url, "noplan")
    config += rest_section("rest_forwarded", upstream.url, "planned")
    server = ProxyProcess(workdir, config).start()
    yield server
    server.stop()


class CountingCatalog(RestCatalog):
    """pyiceberg's RestCatalog, counting the plans it has the server make."""

    plans = 0

    def plan_scan(self, identifier: str | Identifier, request: PlanTableScanRequest) -> list[FileScanTask]:
        self.plans += 1
        return super().plan_scan(identifier, request)


@dataclass
class Backend:
    """One backend: a catalog of the front proxy for pyiceberg's tables, one for Spark's and the big table."""

    name: str
    front: ProxyProcess
    warehouse: str
    file_warehouse: str  # a file:// warehouse: Spark-written tables, the table of thousands of files
    properties: dict[str, str]
    ns: str
    _catalogs: dict[tuple[str, bool], CountingCatalog] = field(default_factory=dict)

    def catalog(self, server: bool, warehouse: str | None = None) -> CountingCatalog:
        """pyiceberg on ``warehouse`` (default: the backend's), planning on the server or not."""
        key = (warehouse or self.warehouse, server)
        if key not in self._catalogs:
            mode = {"scan-planning-mode": "server"} if server else {}
            self._catalogs[key] = CountingCatalog(
                f"{self.name}-{'server' if server else 'client'}",
                uri=self.front.url,
                warehouse=key[0],
                **self.properties,
                **mode,
            )
        return self._catalogs[key]

    def url(self, table: str, warehouse: str | None = None) -> str:
        """The table's REST path on the front proxy."""
        return f"{self.front.url}/v1/{warehouse or self.warehouse}/namespaces/{quote(self.ns, safe='')}/tables/{table}"


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, front: ProxyProcess, moto: str) -> Backend:
    name: str = request.param
    properties = {}
    if name == "glue":
        properties = {
            "s3.endpoint": moto,
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.region": REGION,
        }
    file_warehouse = "glue_file" if name == "glue" else name
    ns = f"plans_{name}_{uuid.uuid4().hex[:8]}"
    result = Backend(name, front, name, file_warehouse, properties, ns)
    result.catalog(server=False).create_namespace(ns)
    file_catalog = result.catalog(server=False, warehouse=file_warehouse)
    if not file_catalog.namespace_exists(ns):  # glue and glue_file share moto's Glue
        file_catalog.create_namespace(ns)
    return result


# Comparing the two plans -------------------------------------------------------------------------------------
def same_scan(
    backend: Backend, table: str, warehouse: str | None = None, vectors: bool = False, read: bool = True, **scan: Any
) -> list[dict[str, Any]]:
    """Scan ``table`` with client-side and with server-side planning; both must agree. The rows.

    ``vectors``: the table has deletion vectors. pyiceberg 0.12 reads manifests without ``referenced_data_file``,
    so its own plan attaches a vector to every older data file of its partition (reading it applies only the
    right one); the server's plan must then be a subset, checked exactly against Spark elsewhere.
    ``read=False``: compare the plans and ``count()`` only (no rows are returned).
    """
    ident = (backend.ns, table)
    expected_table = backend.catalog(server=False, warehouse=warehouse).load_table(ident)
    server_catalog = backend.catalog(server=True, warehouse=warehouse)
    got_table = server_catalog.load_table(ident)
    expected_scan, got_scan = expected_table.scan(**scan), got_table.scan(**scan)

    plans = server_catalog.plans
    got_tasks = list(got_scan.plan_files())
    assert server_catalog.plans == plans + 1, "pyiceberg planned on the server"
    expected_tasks = list(expected_scan.plan_files())
    if vectors:
        got_plan, expected_plan = planned(got_tasks), planned(expected_tasks)
        assert [path for path, _ in got_plan] == [path for path, _ in expected_plan]
        for (path, got_deletes), (_, expected_deletes) in zip(got_plan, expected_plan, strict=True):
            assert set(got_deletes) <= set(expected_deletes), path
    else:
        assert planned(got_tasks) == planned(expected_tasks)

    if not read:
        assert got_scan.count() == expected_scan.count()
        return []
    expected_rows = expected_scan.to_arrow()
    got_rows = got_scan.to_arrow()
    assert got_rows.schema == expected_rows.schema
    assert sorted_rows(got_rows) == sorted_rows(expected_rows)
    assert got_scan.count() == expected_scan.count() == expected_rows.num_rows
    rows: list[dict[str, Any]] = expected_rows.to_pylist()
    return rows


def ids(rows: list[dict[str, Any]]) -> list[int]:
    return sorted(r["id"] for r in rows)


def plan_http(backend: Backend, table: str, body: dict[str, Any], warehouse: str | None = None) -> dict[str, Any]:
    response = httpx.post(f"{backend.url(table, warehouse)}/plan", json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def fetch_tasks(backend: Backend, table: str, plan_task: str, warehouse: str | None = None) -> dict[str, Any]:
    response = httpx.post(f"{backend.url(table, warehouse)}/tasks", json={"plan-task": plan_task}, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def spec_fields(table: Table) -> dict[int, int]:
    return {spec_id: len(spec.fields) for spec_id, spec in table.metadata.specs().items()}


# Tables written by pyiceberg ---------------------------------------------------------------------------------
EVENTS_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
    NestedField(4, "note", StringType(), required=False),
    NestedField(5, "day", DateType(), required=False),
    NestedField(6, "code", StringType(), required=False),
)
EVENTS_SPEC = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"),
    PartitionField(source_id=5, field_id=1001, transform=MonthTransform(), name="day_month"),
    PartitionField(source_id=6, field_id=1002, transform=TruncateTransform(2), name="code_trunc"),
)
CODES = ["ab1", "ab2", "ac1", "b1", "bz", "abc", "a"]
NAN = math.nan
EVENT_BATCHES: list[list[tuple[int, str, float | None, str | None, date]]] = [
    [
        (1, "eu", 10.0, None, date(2024, 1, 1)),
        (2, "eu", 20.0, "x", date(2024, 1, 2)),
        (3, "us", 30.0, None, date(2024, 1, 3)),
        (4, "us", 40.0, "abc", date(2024, 1, 4)),
        (5, "latam", 50.0, None, date(2024, 1, 5)),
        (6, "apac", 60.0, "y", date(2024, 1, 6)),
        (7, "eu", 70.0, "abd", date(2024, 1, 7)),
        (8, "us", 80.0, None, date(2024, 1, 8)),
    ],
    [
        (9, "eu", 15.5, None, date(2024, 2, 1)),
        (10, "apac", 25.5, "x", date(2024, 2, 2)),
        (11, "apac", 35.5, None, date(2024, 2, 3)),
        (12, "eu", 45.5, "zz", date(2024, 2, 10)),
        (13, "europe", 55.5, None, date(2024, 2, 11)),
        (14, "latam", 65.5, "y", date(2024, 2, 12)),
        (15, "us", 75.5, None, date(2024, 2, 28)),
        (16, "eu", 85.5, "ab", date(2024, 2, 29)),
    ],
    [
        (17, "us", NAN, None, date(2024, 3, 1)),
        (18, "us", 5.0, "x", date(2024, 3, 2)),
        (19, "apac", None, None, date(2024, 3, 3)),
        (20, "europe", NAN, "q", date(2024, 3, 4)),
        (21, "eu", 100.0, None, date(2024, 3, 5)),
        (22, "latam", 1.0, None, date(2024, 3, 6)),
        (23, "us", NAN, "abz", date(2024, 3, 7)),
        (24, "apac", 2.0, None, date(2024, 3, 31)),
    ],
    [
        (25, "eu", 11.0, "x", date(2024, 1, 20)),
        (26, "europe", 12.0, None, date(2024, 1, 21)),
        (27, "us", 13.0, "y", date(2024, 1, 22)),
        (28, "eu", 14.0, None, date(2024, 1, 23)),
        (29, "eu", 15.0, "abc", date(2024, 4, 1)),
        (30, "us", 16.0, None, date(2024, 4, 2)),
    ],
]


def events_batch(batch: list[tuple[int, str, float | None, str | None, date]]) -> pa.Table:
    names = ["id", "region", "amount", "note", "day"]
    return pa.Table.from_pylist(
        [dict(zip(names, row, strict=True)) | {"code": CODES[row[0] % len(CODES)]} for row in batch],
        schema=EVENTS_SCHEMA.as_arrow(),
    )


PART_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)


def part_rows(first: int, last: int) -> pa.Table:
    regions = ["eu", "us", "apac", "latam"]
    return pa.Table.from_pylist(
        [{"id": i, "region": regions[i % 4]} for i in range(first, last + 1)], schema=PART_SCHEMA.as_arrow()
    )


EVO_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "score", DoubleType(), required=False),
    NestedField(4, "qty", IntegerType(), required=False),
)

TYPES_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "b", BooleanType(), required=False),
    NestedField(3, "i", IntegerType(), required=False),
    NestedField(4, "f", FloatType(), required=False),
    NestedField(5, "d", DoubleType(), required=False),
    NestedField(6, "dec", DecimalType(9, 2), required=False),
    NestedField(7, "dt", DateType(), required=False),
    NestedField(8, "t", TimeType(), required=False),
    NestedField(9, "ts", TimestampType(), required=False),
    NestedField(10, "tstz", TimestamptzType(), required=False),
    NestedField(11, "s", StringType(), required=False),
    NestedField(12, "bin", BinaryType(), required=False),
)
TYPES_SPEC = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="b"),
    PartitionField(source_id=6, field_id=1001, transform=IdentityTransform(), name="dec"),
    PartitionField(source_id=9, field_id=1002, transform=DayTransform(), name="ts_day"),
)


def types_rows(first: int, last: int) -> pa.Table:
    rows = []
    for n in range(first, last + 1):
        rows.append(
            {
                "id": n,
                "b": n % 3 == 0,
                "i": n * 2,
                "f": n / 2,
                "d": n * 25.5,
                "dec": [Decimal("1.50"), Decimal("10.25"), Decimal("-3.00")][n % 3],
                "dt": date(2024, 1, 1) + timedelta(days=n * 3),
                "t": time(n % 24, 30),
                "ts": datetime(2024, 1, 1, 6) + timedelta(hours=n * 10),
                "tstz": datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=n * 7),
                "s": ["ab", "abc", "b", "ba", "zz"][n % 5] + str(n),
                "bin": bytes([n % 4, 0x61 + n % 3]),
            }
        )
    return pa.Table.from_pylist(rows, schema=TYPES_SCHEMA.as_arrow())


FLOATS_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "d", DoubleType(), required=False),
    NestedField(3, "f", FloatType(), required=False),
)

BIG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", IntegerType()))
BIG_APPENDS = 6
BIG_FILES_PER_APPEND = 500  # one manifest per append, one file per partition value


@dataclass
class Tables:
    """What the pyiceberg-written tables of one backend hold, for the cases to point at."""

    events_snapshots: list[int]
    evo_snapshots: list[int]
    pydel_snapshots: list[int]
    eq_referencing: set[str]  # data files the partitioned equality delete applies to
    eq_global_referencing: set[str]


def data_files_with_sequence(table: Table) -> dict[str, tuple[int, Record]]:
    """Live data files of the current snapshot: path -> (data sequence number, partition)."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    found = {}
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            assert entry.sequence_number is not None
            found[entry.data_file.file_path] = (entry.sequence_number, entry.data_file.partition)
    return found


@pytest.fixture(scope="module")
def tables(backend: Backend) -> Tables:
    catalog = backend.catalog(server=False)
    ns = backend.ns

    events = catalog.create_table((ns, "events"), EVENTS_SCHEMA, partition_spec=EVENTS_SPEC)
    for batch in EVENT_BATCHES:
        append_partitioned(events, events_batch(batch))
    events_snapshots = [s.snapshot_id for s in events.snapshots()]

    # Partition evolution: identity(region), then bucket(id) without region, then both.
    part = catalog.create_table(
        (ns, "part_evo"),
        PART_SCHEMA,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")),
    )
    part.append(part_rows(1, 8))
    with part.update_spec() as update:
        update.remove_field("region")
        update.add_field("id", BucketTransform(4), "id_bucket")
    append_partitioned(part, part_rows(9, 20))
    with part.update_spec() as update:
        update.add_identity("region")
    append_partitioned(part, part_rows(21, 28))

    # Schema evolution: add a column, rename the partition source, promote int -> long, drop a column.
    evo = catalog.create_table(
        (ns, "schema_evo"),
        EVO_SCHEMA,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name")),
    )
    evo.append(
        pa.Table.from_pylist(
            [
                {"id": 1, "name": "a", "score": 1.0, "qty": 1},
                {"id": 2, "name": "b", "score": 2.0, "qty": 2},
                {"id": 3, "name": "c", "score": 3.0, "qty": 3},
            ],
            schema=EVO_SCHEMA.as_arrow(),
        )
    )
    with evo.update_schema() as update:
        update.add_column("extra", StringType())
    evo.append(
        pa.Table.from_pylist(
            [
                {"id": 4, "name": "a", "score": 4.0, "qty": 4, "extra": "x"},
                {"id": 5, "name": "d", "score": 5.0, "qty": 5, "extra": None},
            ],
            schema=evo.schema().as_arrow(),
        )
    )
    with evo.update_schema() as update:
        update.rename_column("name", "label")
        update.update_column("qty", LongType())
    evo.append(
        pa.Table.from_pylist(
            [{"id": 6, "label": "b", "score": 6.0, "qty": 6_000_000_000, "extra": "y"}], schema=evo.schema().as_arrow()
        )
    )
    with evo.update_schema() as update:
        update.delete_column("score")
    evo.append(pa.Table.from_pylist([{"id": 7, "label": "e", "qty": 7, "extra": "z"}], schema=evo.schema().as_arrow()))
    evo_snapshots = [s.snapshot_id for s in evo.snapshots()]

    # pyiceberg's own deletes (0.12: copy-on-write, files rewritten or dropped).
    pydel = catalog.create_table(
        (ns, "pydel"), PART_SCHEMA, partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    )
    pydel.append(part_rows(1, 12))
    pydel.delete(delete_filter=In("id", {1, 2}))
    pydel.delete(delete_filter=EqualTo("region", "apac"))
    pydel_snapshots = [s.snapshot_id for s in pydel.snapshots()]

    catalog.create_table((ns, "empty"), EVENTS_SCHEMA, partition_spec=EVENTS_SPEC)

    nulls = catalog.create_table(
        (ns, "null_partitions"),
        PART_SCHEMA,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")),
    )
    nulls.append(
        pa.Table.from_pylist(
            [
                {"id": 1, "region": "eu"},
                {"id": 2, "region": None},
                {"id": 3, "region": None},
                {"id": 4, "region": "us"},
            ],
            schema=PART_SCHEMA.as_arrow(),
        )
    )

    # Equality deletes: partitioned (applies to the older files of its partition) and global.
    eq = catalog.create_table(
        (ns, "eqdel"), PART_SCHEMA, partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    )
    eq.append(pa.Table.from_pylist([{"id": i, "region": r} for i, r in [(1, "eu"), (2, "eu"), (3, "us")]]))
    eq.append(pa.Table.from_pylist([{"id": 4, "region": "eu"}, {"id": 5, "region": "us"}]))
    before = data_files_with_sequence(eq)
    add_equality_deletes(eq, pa.table({"id": pa.array([2, 4], pa.int64())}), Record("eu"))
    eq.append(pa.Table.from_pylist([{"id": 2, "region": "eu"}, {"id": 6, "region": "us"}]))
    eq_referencing = {path for path, (_, partition) in before.items() if partition == Record("eu")}
    assert len(eq_referencing) == 2

    eq_global = catalog.create_table((ns, "eqdel_global"), PART_SCHEMA)
    eq_global.append(part_rows(1, 4))
    eq_global_referencing = set(data_files_with_sequence(eq_global))
    add_equality_deletes(eq_global, pa.table({"id": pa.array([1], pa.int64())}))
    eq_global.append(part_rows(1, 2))

    floats = catalog.create_table(
        (ns, "non_finite"),
        FLOATS_SCHEMA,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "d")),
    )
    append_partitioned(
        floats,
        pa.Table.from_pylist(
            [
                {"id": 1, "d": NAN, "f": NAN},
                {"id": 2, "d": math.inf, "f": -math.inf},
                {"id": 3, "d": 1.5, "f": 2.5},
            ],
            schema=FLOATS_SCHEMA.as_arrow(),
        ),
    )

    types = catalog.create_table((ns, "types"), TYPES_SCHEMA, partition_spec=TYPES_SPEC)
    append_partitioned(types, types_rows(1, 9))
    append_partitioned(types, types_rows(10, 16))

    # Thousands of files: one manifest of 500 files per append.
    big = backend.catalog(server=False, warehouse=backend.file_warehouse).create_table(
        (ns, "big"), BIG_SCHEMA, partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
    )
    for k in range(BIG_APPENDS):
        numbers = range(k * BIG_FILES_PER_APPEND, (k + 1) * BIG_FILES_PER_APPEND)
        big.append(
            pa.table({"id": pa.array(numbers, pa.int64()), "part": pa.array(numbers, pa.int32())}),
        )

    return Tables(events_snapshots, evo_snapshots, pydel_snapshots, eq_referencing, eq_global_referencing)


# Filters -----------------------------------------------------------------------------------------------------
FILTERS: dict[str, BooleanExpression] = {
    "always-true": AlwaysTrue(),
    "eq-partition": EqualTo("region", "eu"),
    "eq-column": EqualTo("id", 7),
    "eq-string-column": EqualTo("note", "x"),
    "not-eq-partition": NotEqualTo("region", "eu"),
    "range-partition-transform": And(GreaterThanOrEqual("day", "2024-02-01"), LessThan("day", "2024-03-01")),
    "range-one-day": And(GreaterThan("day", "2024-02-28"), LessThanOrEqual("day", "2024-03-01")),
    "range-column": And(GreaterThan("amount", 20.0), LessThanOrEqual("amount", 60.0)),
    "range-open": GreaterThan("id", 20),
    "in-partition": In("region", {"eu", "apac"}),
    "in-partition-transform": In("day", {"2024-01-02", "2024-03-31", "2024-04-02"}),
    "truncate-starts-with-width": StartsWith("code", "ab"),
    "truncate-starts-with-shorter": StartsWith("code", "a"),
    "truncate-starts-with-longer": StartsWith("code", "abc"),
    "truncate-not-starts-with": NotStartsWith("code", "ab"),
    "truncate-not-starts-with-longer": NotStartsWith("code", "abc"),
    "truncate-eq": EqualTo("code", "ab2"),
    "truncate-in": In("code", {"ac1", "bz"}),
    "truncate-range": And(GreaterThan("code", "ab2"), LessThanOrEqual("code", "b1")),
    "in-column": In("id", {1, 9, 17, 25}),
    "not-in-partition": NotIn("region", {"eu", "us"}),
    "not-in-column": NotIn("id", {1, 2, 3}),
    "is-null-partition": IsNull("region"),
    "is-null-column": IsNull("note"),
    "not-null-partition": NotNull("region"),
    "not-null-column": NotNull("note"),
    "is-nan": IsNaN("amount"),
    "not-nan": NotNaN("amount"),
    "starts-with-partition": StartsWith("region", "eu"),
    "starts-with-column": StartsWith("note", "ab"),
    "not-starts-with-partition": NotStartsWith("region", "eu"),
    "not-starts-with-column": NotStartsWith("note", "ab"),
    "and-or-not": And(Or(EqualTo("region", "eu"), GreaterThan("amount", 40.0)), Not(EqualTo("id", 3))),
    "not-of-and": Not(And(EqualTo("region", "us"), LessThan("id", 20))),
    "or-partition-column": Or(IsNull("region"), In("note", {"x", "y"})),
    "not-of-or": Not(Or(StartsWith("region", "eu"), IsNull("note"))),
    "nothing-by-partition": EqualTo("region", "mars"),
    "nothing-by-metrics": GreaterThan("id", 1_000_000),
    "nothing-by-contradiction": And(EqualTo("region", "eu"), EqualTo("region", "us")),
    "always-false": AlwaysFalse(),
}
MATCHES_NOTHING = {
    "is-null-partition",
    "nothing-by-partition",
    "nothing-by-metrics",
    "nothing-by-contradiction",
    "always-false",
}


@pytest.mark.parametrize("case", list(FILTERS))
def test_filter(backend: Backend, tables: Tables, case: str) -> None:
    rows = same_scan(backend, "events", row_filter=FILTERS[case])
    assert (not rows) if case in MATCHES_NOTHING else rows, "the case is not vacuous"


def test_filter_with_projection_and_case_insensitive_names(backend: Backend, tables: Tables) -> None:
    rows = same_scan(backend, "events", row_filter=EqualTo("region", "apac"), selected_fields=("id", "amount"))
    assert rows and set(rows[0]) == {"id", "amount"}
    rows = same_scan(
        backend, "events", row_filter=And(EqualTo("REGION", "eu"), LessThan("Id", 10)), case_sensitive=False
    )
    assert ids(rows) == [1, 2, 7, 9]
    rows = same_scan(
        backend, "events", row_filter=StartsWith("CODE", "ab"), selected_fields=("ID", "Code"), case_sensitive=False
    )
    assert rows and all(r["code"].startswith("ab") for r in rows)


def test_filters_match_the_data(backend: Backend, tables: Tables) -> None:
    """A few cases against the rows written, so that a shared mistake of both planners would show."""
    assert ids(same_scan(backend, "events", row_filter=EqualTo("region", "eu"))) == [1, 2, 7, 9, 12, 16, 21, 25, 28, 29]
    assert ids(same_scan(backend, "events", row_filter=EqualTo("region", "latam"))) == [5, 14, 22]
    assert ids(same_scan(backend, "events", row_filter=StartsWith("region", "eu"))) == [
        1, 2, 7, 9, 12, 13, 16, 20, 21, 25, 26, 28, 29,
    ]  # fmt: skip
    assert len(same_scan(backend, "events")) == 30


# Literals of every primitive type (as pyiceberg 0.12 writes them: times as microseconds, binary as hex,
# timestamptz without an offset) -----------------------------------------------------------------------------
TYPE_FILTERS: dict[str, list[BooleanExpression]] = {
    "boolean-partition": [EqualTo("b", True), NotEqualTo("b", True)],
    "int": [In("i", {2, 10, 31}), GreaterThanOrEqual("i", 20)],
    "float": [LessThan("f", 2.5), GreaterThan("f", 7.0)],
    "double": [GreaterThan("d", 300.0), EqualTo("d", 51.0)],
    "decimal-partition": [EqualTo("dec", Decimal("1.50")), GreaterThan("dec", Decimal("5.00"))],
    "decimal-in": [In("dec", {Decimal("-3.00"), Decimal("10.25")}), NotIn("dec", {Decimal("-3.00")})],
    "date": [EqualTo("dt", date(2024, 1, 7)), And(GreaterThan("dt", "2024-01-10"), LessThan("dt", "2024-02-01"))],
    "time": [GreaterThan("t", time(12, 0)), EqualTo("t", time(3, 30))],
    "timestamp-partition-day": [
        LessThan("ts", datetime(2024, 1, 3)),
        And(GreaterThanOrEqual("ts", "2024-01-03T16:00:00"), LessThanOrEqual("ts", "2024-01-05T00:00:00")),
    ],
    "timestamptz-string": [
        GreaterThanOrEqual("tstz", "2024-01-03T00:00:00+00:00"),
        EqualTo("tstz", "2024-01-01T09:00:00+02:00"),
    ],
    "timestamptz-datetime": [
        GreaterThanOrEqual("tstz", datetime(2024, 1, 3, tzinfo=UTC)),
        EqualTo("tstz", datetime(2024, 1, 1, 7, tzinfo=UTC)),
    ],
    "string": [StartsWith("s", "ab"), GreaterThan("s", "b")],
    "binary": [EqualTo("bin", bytes([1, 0x62])), GreaterThanOrEqual("bin", bytes([2]))],
}


@pytest.mark.parametrize("case", list(TYPE_FILTERS))
def test_literal_types(backend: Backend, tables: Tables, case: str) -> None:
    for expression in TYPE_FILTERS[case]:
        assert same_scan(backend, "types", row_filter=expression), expression


def test_non_finite_floats_are_not_null(backend: Backend, tables: Tables) -> None:
    """NaN and infinite partition values and bounds are Jackson's strings (what Java writes), never a null."""
    table = backend.catalog(server=False).load_table((backend.ns, "non_finite"))
    answer = plan_http(backend, "non_finite", {"stats-fields": ["d", "f"]})
    check_scan_tasks(answer, spec_fields(table), "CompletedPlanningWithIDResult")
    by_id: dict[int, dict[str, Any]] = {}
    for task in answer["file-scan-tasks"]:
        data = task["data-file"]
        for key in ("lower-bounds", "upper-bounds"):
            assert None not in data.get(key, {}).get("values", []), data
        by_id[{"NaN": 1, "Infinity": 2, 1.5: 3}[data["partition"][0]]] = data
    assert sorted(by_id) == [1, 2, 3]
    assert "lower-bounds" not in by_id[1]  # a file of NaN only has no bounds
    infinite = by_id[2]
    assert dict(zip(infinite["lower-bounds"]["keys"], infinite["lower-bounds"]["values"], strict=True)) == {
        2: "Infinity",
        3: "-Infinity",
    }


# Time travel -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", [0, 1, 2])
def test_time_travel(backend: Backend, tables: Tables, which: int) -> None:
    snapshot_id = tables.events_snapshots[which]
    everything = same_scan(backend, "events", snapshot_id=snapshot_id)
    assert len(everything) == sum(len(b) for b in EVENT_BATCHES[: which + 1])
    same_scan(backend, "events", snapshot_id=snapshot_id, row_filter=EqualTo("region", "us"))
    same_scan(backend, "events", snapshot_id=snapshot_id, row_filter=Or(GreaterThan("id", 8), IsNull("note")))


# Partition evolution ----------------------------------------------------------------------------------------
PART_FILTERS: dict[str, BooleanExpression] = {
    "always-true": AlwaysTrue(),
    "old-partition-field": EqualTo("region", "eu"),
    "bucket-field": EqualTo("id", 9),
    "in-across-specs": In("id", {2, 9, 16, 25}),
    "partition-not-eq": NotEqualTo("region", "latam"),
    "or-across-specs": Or(LessThan("id", 5), EqualTo("region", "us")),
    "not-in": NotIn("id", {1, 10, 21}),
    "nothing": And(EqualTo("region", "eu"), EqualTo("id", 3)),
}


@pytest.mark.parametrize("case", list(PART_FILTERS))
def test_partition_evolution(backend: Backend, tables: Tables, case: str) -> None:
    rows = same_scan(backend, "part_evo", row_filter=PART_FILTERS[case])
    assert bool(rows) == (case != "nothing")


def test_partition_evolution_has_three_specs(backend: Backend, tables: Tables) -> None:
    table = backend.catalog(server=True).load_table((backend.ns, "part_evo"))
    tasks = list(table.scan().plan_files())
    assert {t.file.spec_id for t in tasks} == {0, 1, 2}
    assert len(same_scan(backend, "part_evo")) == 28


# Schema evolution -------------------------------------------------------------------------------------------
EVO_FILTERS: dict[str, BooleanExpression] = {
    "always-true": AlwaysTrue(),
    "added-column-eq": EqualTo("extra", "x"),
    "added-column-null": IsNull("extra"),
    "added-column-not-null": NotNull("extra"),
    "renamed-partition-source": EqualTo("label", "b"),
    "renamed-starts-with": StartsWith("label", "a"),
    "renamed-in": In("label", {"a", "e"}),
    "promoted-column": GreaterThan("qty", 2),
    "promoted-column-big": GreaterThan("qty", 5_000_000_000),
    "combined": Or(And(NotNull("extra"), EqualTo("label", "a")), GreaterThanOrEqual("id", 7)),
}


@pytest.mark.parametrize("case", list(EVO_FILTERS))
def test_schema_evolution(backend: Backend, tables: Tables, case: str) -> None:
    assert same_scan(backend, "schema_evo", row_filter=EVO_FILTERS[case])


def test_schema_evolution_time_travel(backend: Backend, tables: Tables) -> None:
    """Older snapshots read with the current schema (what pyiceberg asks for: use-snapshot-schema false)."""
    first, second, third, _ = tables.evo_snapshots
    assert ids(same_scan(backend, "schema_evo", snapshot_id=first)) == [1, 2, 3]
    assert ids(same_scan(backend, "schema_evo", snapshot_id=second, row_filter=EqualTo("label", "a"))) == [1, 4]
    assert ids(same_scan(backend, "schema_evo", snapshot_id=third, row_filter=IsNull("extra"))) == [1, 2, 3, 5]
    assert ids(same_scan(backend, "schema_evo", selected_fields=("id", "label"), row_filter=NotNull("qty"))) == [
        1, 2, 3, 4, 5, 6, 7,
    ]  # fmt: skip


# Deletes ----------------------------------------------------------------------------------------------------
def test_pyiceberg_deletes_rewrite_files(backend: Backend, tables: Tables) -> None:
    """pyiceberg 0.12's ``delete`` is copy-on-write: no delete files, data files rewritten or dropped."""
    table = backend.catalog(server=True).load_table((backend.ns, "pydel"))
    tasks = list(table.scan().plan_files())
    assert tasks and not any(t.delete_files for t in tasks)
    operations = [s.summary.operation.value for s in table.snapshots() if s.summary is not None]
    assert operations[0] == "append" and "delete" in operations[1:]
    assert ids(same_scan(backend, "pydel")) == [3, 4, 5, 7, 8, 9, 11, 12]
    assert ids(same_scan(backend, "pydel", row_filter=EqualTo("region", "eu"))) == [4, 8, 12]
    assert ids(same_scan(backend, "pydel", row_filter=EqualTo("region", "latam"))) == [3, 7, 11]
    assert ids(same_scan(backend, "pydel", snapshot_id=tables.pydel_snapshots[0])) == list(range(1, 13))


def test_empty_table(backend: Backend, tables: Tables) -> None:
    assert same_scan(backend, "empty") == []
    assert same_scan(backend, "empty", row_filter=EqualTo("region", "eu")) == []
    answer = plan_http(backend, "empty", {})
    assert answer["status"] == "completed" and answer["plan-id"]
    assert not answer.get("file-scan-tasks") and not answer.get("plan-tasks")


def test_null_partition_values_in_the_answer(backend: Backend, tables: Tables) -> None:
    """A null partition value is a JSON null in the task's ``partition`` (as Java's ContentFileParser writes it)."""
    table = backend.catalog(server=False).load_table((backend.ns, "null_partitions"))
    expected = {t.file.file_path: [t.file.partition[0]] for t in table.scan().plan_files()}
    assert sorted(expected.values(), key=repr) == [["eu"], ["us"], [None]]
    answer = plan_http(backend, "null_partitions", {})
    assert {t["data-file"]["file-path"]: t["data-file"]["partition"] for t in answer["file-scan-tasks"]} == expected
    for term, wanted in (("is-null", [None]), ("not-null", ["eu"])):
        body: dict[str, Any] = {"filter": {"type": term, "term": "region"}}
        if term == "not-null":
            body = {
                "filter": {"type": "and", "left": body["filter"], "right": {"type": "eq", "term": "id", "value": 1}}
            }
        planned_paths = {
            t["data-file"]["file-path"] for t in plan_http(backend, "null_partitions", body)["file-scan-tasks"]
        }
        assert planned_paths == {path for path, value in expected.items() if value == wanted}


@pytest.mark.xfail(
    strict=True,
    reason="pyiceberg 0.12 rejects null in a REST content file's partition (list[PrimitiveTypeValue], and the "
    "spec's PrimitiveTypeValue has no null): files of a null partition cannot be planned on the server for it",
)
def test_null_partition_values_with_pyiceberg(backend: Backend, tables: Tables) -> None:
    same_scan(backend, "null_partitions", row_filter=LessThan("id", 4))


def test_a_filter_pruning_every_file(backend: Backend, tables: Tables) -> None:
    assert same_scan(backend, "part_evo", row_filter=GreaterThan("id", 10_000)) == []
    answer = plan_http(backend, "events", {"filter": {"type": "eq", "term": "region", "value": "mars"}})
    assert answer["status"] == "completed"
    assert not answer.get("file-scan-tasks") and not answer.get("delete-files") and not answer.get("plan-tasks")


def test_equality_deletes_are_referenced_by_the_right_tasks(backend: Backend, tables: Tables) -> None:
    """pyiceberg reads no equality deletes in either mode; the server must hand the file to exactly the data
    files of its partition with a lower sequence number (and a global one to every older file)."""
    for table_name, expected in (("eqdel", tables.eq_referencing), ("eqdel_global", tables.eq_global_referencing)):
        table = backend.catalog(server=False).load_table((backend.ns, table_name))
        answer = plan_http(backend, table_name, {})
        assert answer["status"] == "completed", answer
        check_scan_tasks(answer, spec_fields(table), "CompletedPlanningWithIDResult")
        deletes = answer.get("delete-files", [])
        assert [d["content"] for d in deletes] == ["equality-deletes"], deletes
        assert deletes[0]["equality-ids"] == [1]
        assert deletes[0]["record-count"] == (2 if table_name == "eqdel" else 1)
        referencing = {
            t["data-file"]["file-path"] for t in answer["file-scan-tasks"] if t.get("delete-file-references")
        }
        assert referencing == expected
        assert len(answer["file-scan-tasks"]) == (6 if table_name == "eqdel" else 2)

        server_table = backend.catalog(server=True).load_table((backend.ns, table_name))
        with pytest.raises(NotImplementedError, match="equality deletes"):
            server_table.scan().to_arrow()
        with pytest.raises(ValueError, match="equality deletes"):
            table.scan().to_arrow()

    # Before the equality delete, both planners read the table; after it, scans that do not reach the delete
    # file's partition do.
    before_delete = backend.catalog(server=False).load_table((backend.ns, "eqdel")).snapshots()[1].snapshot_id
    assert ids(same_scan(backend, "eqdel", snapshot_id=before_delete)) == [1, 2, 3, 4, 5]
    assert not plan_http(backend, "eqdel", {"snapshot-id": before_delete}).get("delete-files")
    assert ids(same_scan(backend, "eqdel", row_filter=EqualTo("region", "us"))) == [3, 5, 6]
    filtered = plan_http(backend, "eqdel", {"filter": {"type": "eq", "term": "region", "value": "eu"}})
    assert {t["data-file"]["file-path"] for t in filtered["file-scan-tasks"] if t.get("delete-file-references")} == (
        tables.eq_referencing
    )


# Thousands of files -----------------------------------------------------------------------------------------
def test_thousands_of_files_span_several_plan_tasks(backend: Backend, tables: Tables) -> None:
    warehouse = backend.file_warehouse
    table = backend.catalog(server=False, warehouse=warehouse).load_table((backend.ns, "big"))
    total = BIG_APPENDS * BIG_FILES_PER_APPEND
    first = plan_http(backend, "big", {}, warehouse)
    assert first["status"] == "completed"
    check_scan_tasks(first, spec_fields(table), "CompletedPlanningWithIDResult")
    assert first.get("plan-tasks"), "a plan of 3,000 files in 500-file tasks is handed out in pieces"
    assert len(first.get("file-scan-tasks", [])) < total

    seen = [t["data-file"]["file-path"] for t in first.get("file-scan-tasks", [])]
    pending, fetched = list(first["plan-tasks"]), 0
    while pending:
        batch = fetch_tasks(backend, "big", pending.pop(0), warehouse)
        check_scan_tasks(batch, spec_fields(table), "FetchScanTasksResult")
        seen += [t["data-file"]["file-path"] for t in batch.get("file-scan-tasks", [])]
        pending += batch.get("plan-tasks", [])
        fetched += 1
    assert fetched >= 2
    assert len(seen) == len(set(seen)) == total
    assert set(seen) == {t.file.file_path for t in table.scan().plan_files()}

    same_scan(backend, "big", warehouse, read=False)  # 3,000 files: plans and counts only
    assert backend.catalog(server=True, warehouse=warehouse).load_table((backend.ns, "big")).scan().count() == total
    across = Or(LessThan("part", 100), GreaterThanOrEqual("part", 2950))  # the first and the last manifest
    assert ids(same_scan(backend, "big", warehouse, row_filter=across)) == [*range(100), *range(2950, 3000)]
    assert ids(same_scan(backend, "big", warehouse, row_filter=In("part", {5, 2500, 2999}))) == [5, 2500, 2999]
    assert ids(same_scan(backend, "big", warehouse, row_filter=EqualTo("id", 1234))) == [1234]


# The answer's shape -----------------------------------------------------------------------------------------
def test_answer_shape(backend: Backend, tables: Tables) -> None:
    table = backend.catalog(server=False).load_table((backend.ns, "events"))
    body = {
        "filter": {"type": "or", "left": {"type": "eq", "term": "region", "value": "eu"},
                   "right": {"type": "gt", "term": "amount", "value": 70.0}},
        "select": ["id", "region"],
        "stats-fields": ["id", "day"],
    }  # fmt: skip
    answer = plan_http(backend, "events", body)
    assert answer["status"] == "completed"
    assert isinstance(answer["plan-id"], str) and answer["plan-id"]
    conforms("PlanTableScanResult", answer)
    check_scan_tasks(answer, spec_fields(table), "CompletedPlanningWithIDResult")
    tasks = answer["file-scan-tasks"]
    assert tasks
    expected = {t.file.file_path: t.file for t in table.scan(row_filter="region = 'eu' or amount > 70.0").plan_files()}
    assert {t["data-file"]["file-path"] for t in tasks} == set(expected)
    for task in tasks:
        data = task["data-file"]
        written = expected[data["file-path"]]
        assert data["file-format"] == "parquet"
        assert data["spec-id"] == 0
        assert data["record-count"] == written.record_count
        assert data["file-size-in-bytes"] == written.file_size_in_bytes
        region, month, code = data["partition"]
        assert [region, month, code] == [written.partition[0], written.partition[1], written.partition[2]]
        # Statistics for the stats-fields only (id = 1, day = 5), the bounds in single-value JSON.
        for key in ("value-counts", "null-value-counts", "lower-bounds", "upper-bounds"):
            assert set(data[key]["keys"]) <= {1, 5}, data[key]
        lower = dict(zip(data["lower-bounds"]["keys"], data["lower-bounds"]["values"], strict=True))
        assert isinstance(lower[1], int) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", lower[5])
        if region == "eu":  # the partition decides the filter: a residual of true is not sent
            assert "residual-filter" not in task, task
        else:
            assert task["residual-filter"] not in (None, True), task
    polled = httpx.get(f"{backend.url('events')}/plan/{answer['plan-id']}", timeout=30)
    assert polled.status_code == 200
    conforms("FetchPlanningResult", polled.json())


# Where REST-federated plans run -----------------------------------------------------------------------------
def scan_plans_total(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(r'^irc_proxy_scan_plans_total\{status="completed"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_rest_federation_plans_in_the_front_or_forwards(front: ProxyProcess, upstream: ProxyProcess) -> None:
    def endpoints(url: str, warehouse: str) -> set[str]:
        return set(httpx.get(f"{url}/v1/config", params={"warehouse": warehouse}, timeout=10).json()["endpoints"])

    assert PLAN_ENDPOINT not in endpoints(upstream.url, "noplan")
    assert PLAN_ENDPOINT in endpoints(upstream.url, "planned")
    assert PLAN_ENDPOINT in endpoints(front.url, "rest_served")
    assert PLAN_ENDPOINT in endpoints(front.url, "rest_forwarded")

    ns = f"fed_{uuid.uuid4().hex[:8]}"
    for warehouse in ("rest_served", "rest_forwarded"):
        catalog = RestCatalog(warehouse, uri=front.url, warehouse=warehouse)
        catalog.create_namespace(ns)
        catalog.create_table((ns, "t"), PART_SCHEMA).append(part_rows(1, 4))

    refused = httpx.post(f"{upstream.url}/v1/noplan/namespaces/{ns}/tables/t/plan", json={}, timeout=10)
    assert refused.status_code == 406, refused.text

    for warehouse, planner in (("rest_served", front), ("rest_forwarded", upstream)):
        idle = upstream if planner is front else None
        before = scan_plans_total(planner.url), (scan_plans_total(idle.url) if idle else 0.0)
        answer = httpx.post(f"{front.url}/v1/{warehouse}/namespaces/{ns}/tables/t/plan", json={}, timeout=30).json()
        assert answer["status"] == "completed" and len(answer["file-scan-tasks"]) == 1, answer
        assert scan_plans_total(planner.url) == before[0] + 1, f"{warehouse}: planned by {planner.url}"
        if idle is not None:
            assert scan_plans_total(idle.url) == before[1], f"{warehouse}: the upstream did not plan"


# Tables written by Spark: position deletes (v2) and deletion vectors (v3) ------------------------------------
SPARK_PROPERTIES = (
    "'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read'"
)


def spark_statements(table: str, version: int, granularity: str) -> list[str]:
    return [
        f"CREATE TABLE {table} (id bigint, data string, category string) USING iceberg PARTITIONED BY (category) "
        f"TBLPROPERTIES ('format-version' = '{version}', 'write.delete.granularity' = '{granularity}', "
        f"{SPARK_PROPERTIES})",
        f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x'), (4, 'd', 'y'), (5, 'e', 'z')",
        f"INSERT INTO {table} VALUES (6, 'f', 'x'), (7, 'g', 'y'), (8, 'h', 'z'), (9, 'i', 'x')",
        f"DELETE FROM {table} WHERE id IN (1, 8)",
        f"UPDATE {table} SET data = 'D' WHERE id = 4",
        f"DELETE FROM {table} WHERE id = 3",
        f"INSERT INTO {table} VALUES (10, 'j', 'x'), (11, 'k', 'z')",
        f"DELETE FROM {table} WHERE id IN (2, 6, 7, 11)",  # several data files and partitions in one write
    ]


# Name -> (format version, write.delete.granularity): file-scoped and partition-scoped position deletes, vectors.
SPARK_TABLES = {"spark_pos_v2": (2, "file"), "spark_pos_v2_partition": (2, "partition"), "spark_dv_v3": (3, "file")}
SPARK_IDS = [4, 5, 9, 10]


@dataclass
class SparkTable:
    snapshots: list[int]
    deletes: set[tuple[str, str | None]]  # Spark's live delete files: (path, referenced data file)


@pytest.fixture(scope="module")
def spark_tables(spark: Any, backend: Backend) -> dict[str, SparkTable]:
    """The Spark-written tables of this backend (in its file:// warehouse)."""
    spark_catalog = f"scanplan_{backend.name}"
    prefix = f"spark.sql.catalog.{spark_catalog}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", backend.front.url)
    spark.conf.set(f"{prefix}.warehouse", backend.file_warehouse)
    written = {}
    for name, (version, granularity) in SPARK_TABLES.items():
        full_name = f"{spark_catalog}.{backend.ns}.{name}"
        for statement in spark_statements(full_name, version, granularity):
            spark.sql(statement)
        table = backend.catalog(server=False, warehouse=backend.file_warehouse).load_table((backend.ns, name))
        deletes = {
            (row[0], row[1])
            for row in spark.sql(f"SELECT file_path, referenced_data_file FROM {full_name}.delete_files").collect()
        }
        written[name] = SparkTable([s.snapshot_id for s in table.snapshots()], deletes)
    return written


SPARK_FILTERS: dict[str, BooleanExpression] = {
    "always-true": AlwaysTrue(),
    "partition": EqualTo("category", "x"),
    "column": GreaterThan("id", 3),
    "updated-row": EqualTo("data", "D"),
    "partition-without-deletes-left": EqualTo("category", "z"),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SPARK_TABLES))
@pytest.mark.parametrize("case", list(SPARK_FILTERS))
def test_spark_deletes(backend: Backend, spark_tables: dict[str, SparkTable], name: str, case: str) -> None:
    vectors = SPARK_TABLES[name][0] == 3
    rows = same_scan(backend, name, backend.file_warehouse, vectors, row_filter=SPARK_FILTERS[case])
    if case == "always-true":
        assert ids(rows) == SPARK_IDS
        assert next(r for r in rows if r["id"] == 4)["data"] == "D"


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SPARK_TABLES))
def test_spark_deletes_time_travel(backend: Backend, spark_tables: dict[str, SparkTable], name: str) -> None:
    snapshots, vectors = spark_tables[name].snapshots, SPARK_TABLES[name][0] == 3
    everything = same_scan(backend, name, backend.file_warehouse, vectors, snapshot_id=snapshots[1])
    assert ids(everything) == list(range(1, 10))
    after_first_delete = same_scan(backend, name, backend.file_warehouse, vectors, snapshot_id=snapshots[2])
    assert ids(after_first_delete) == [2, 3, 4, 5, 6, 7, 9]
    after_update = same_scan(
        backend, name, backend.file_warehouse, vectors, snapshot_id=snapshots[3], row_filter=EqualTo("category", "y")
    )
    assert ids(after_update) == [2, 4, 7]


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SPARK_TABLES))
def test_spark_delete_files_in_the_answer(backend: Backend, spark_tables: dict[str, SparkTable], name: str) -> None:
    warehouse = backend.file_warehouse
    table = backend.catalog(server=False, warehouse=warehouse).load_table((backend.ns, name))
    answer = plan_http(backend, name, {}, warehouse)
    check_scan_tasks(answer, spec_fields(table), "CompletedPlanningWithIDResult")
    deletes = answer["delete-files"]
    assert deletes and all(d["content"] == "position-deletes" for d in deletes)
    if SPARK_TABLES[name][0] == 3:
        # Deletion vectors: one blob of a Puffin file per data file, named by referenced-data-file.
        for task in answer["file-scan-tasks"]:
            for index in task.get("delete-file-references", []):
                vector = deletes[index]
                assert vector["file-format"] == "puffin"
                assert vector["referenced-data-file"] == task["data-file"]["file-path"]
                assert vector["content-offset"] >= 0 and vector["content-size-in-bytes"] > 0
        assert all(len(t.get("delete-file-references", [])) <= 1 for t in answer["file-scan-tasks"])
        assert all("first-row-id" in t["data-file"] for t in answer["file-scan-tasks"])
    else:
        assert all(d["file-format"] == "parquet" for d in deletes)
    # Exactly the delete files Spark says are live, each for the data file it names.
    spark_deletes = spark_tables[name].deletes
    assert {d["file-path"] for d in deletes} == {path for path, _ in spark_deletes}
    if all(referenced for _, referenced in spark_deletes):
        expected: dict[str, set[str]] = {}
        for path, referenced in spark_deletes:
            expected.setdefault(str(referenced), set()).add(path)
        got = {
            t["data-file"]["file-path"]: {deletes[i]["file-path"] for i in t["delete-file-references"]}
            for t in answer["file-scan-tasks"]
            if t.get("delete-file-references")
        }
        assert got == expected
