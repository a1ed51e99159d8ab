"""Server-side scan planning: pyiceberg's ``plan_files()`` planned by the proxy vs planned in the client.

Workload: one proxy process (local catalog, ``scan_planning = "offered"``, default planning settings)
and one table of 6 columns partitioned by ``day(ts)``, built through the proxy by 25 fast appends of
20 manifests x 40 data files each: 500 manifests, 20,000 data files with column metrics on every
column (the data files themselves are never written: planning reads only manifests). Each file holds
1,000 consecutive ``id`` values, so the filter ``id between X and X+2000`` (X moving every round) keeps
3 files, and only by column metrics: ``id`` is not a partition source, so a planner reads every
manifest. Both sides get the same filter in the same round and must return the same file paths
(checked in every round, and against the files the table was built with).

* **client**: ``table.scan(row_filter).plan_files()`` on a RestCatalog in the default mode (pyiceberg
  reads the manifest list and all manifests from the warehouse itself);
* **server**: the same on a RestCatalog with ``scan-planning-mode = server`` (planTableScan, plus
  fetchScanTasks for any plan tasks).

Warm: one proxy, alternating order each round, warm-up 3 rounds, 25 timed rounds. Cold: the proxy is
restarted before each round (empty manifest and metadata caches; the OS page cache stays warm for
both sides); fresh catalogs load the table (not timed), then one plan per side, alternating order;
8 rounds. Quick: 60 manifests, 1 + 5 warm rounds, 2 cold rounds. Goals: server/client p50 <= 0.3
warm, <= 1.0 cold. The proxy's RSS after all rounds and its manifest-cache counters are reported.
"""

from __future__ import annotations

import gc
import time
from datetime import UTC, datetime

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.conversions import to_bytes
from pyiceberg.expressions import And, BooleanExpression, GreaterThanOrEqual, LessThanOrEqual
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import DayTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType, TimestamptzType

from benchmarks.support import percentile, proxy_pid, row, rss_mb, served_proxy
from tests.support.server import ProxyProcess

NAME = "scan planning"
IDENT = ("bench", "events")
FILES_PER_MANIFEST = 40
MANIFESTS_PER_COMMIT = 20
ROWS_PER_FILE = 1000
SPAN = 2000
"""The filter covers ids X .. X+SPAN: 3 files of ROWS_PER_FILE ids."""
REGIONS = ("apac", "eu", "us")
EPOCH_DAY = 19_700  # 2023-12-08: file k lies in day EPOCH_DAY + k // FILES_PER_MANIFEST
MICROS_PER_DAY = 86_400_000_000

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestamptzType(), required=True),
    NestedField(3, "region", StringType(), required=False),
    NestedField(4, "customer_id", LongType(), required=False),
    NestedField(5, "quantity", IntegerType(), required=False),
    NestedField(6, "amount", DoubleType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))


class _ManifestPerBatchAppend(_FastAppendFiles):
    """A fast append that writes its added files into manifests of FILES_PER_MANIFEST files each
    (pyiceberg writes one manifest per commit): many manifests from a few commits."""

    def _manifests(self) -> list[ManifestFile]:
        spec = self._transaction.table_metadata.spec()
        written: list[ManifestFile] = []
        for start in range(0, len(self._added_data_files), FILES_PER_MANIFEST):
            with self.new_manifest_writer(spec) as writer:
                for data_file in self._added_data_files[start : start + FILES_PER_MANIFEST]:
                    writer.add(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED,
                            snapshot_id=self._snapshot_id,
                            sequence_number=None,
                            file_sequence_number=None,
                            data_file=data_file,
                        )
                    )
            written.append(writer.to_manifest_file())
        return written + self._existing_manifests()


def file_path(location: str, k: int) -> str:
    day = EPOCH_DAY + k // FILES_PER_MANIFEST
    return f"{location}/data/ts_day={datetime.fromtimestamp(day * 86_400, UTC):%Y-%m-%d}/{k:06d}-0-bench.parquet"


def data_file(location: str, k: int) -> DataFile:
    """File ``k``: ids k*1000 .. k*1000+999, one hour-ish slice of day EPOCH_DAY + k // 40, stats on every column."""
    day = EPOCH_DAY + k // FILES_PER_MANIFEST
    low_id, high_id = k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE - 1
    slot = MICROS_PER_DAY // FILES_PER_MANIFEST
    low_ts = day * MICROS_PER_DAY + (k % FILES_PER_MANIFEST) * slot
    high_ts = low_ts + slot - 1
    regions = sorted({REGIONS[k % 3], REGIONS[(k + 1) % 3]})
    low = {
        1: to_bytes(LongType(), low_id),
        2: to_bytes(TimestamptzType(), low_ts),
        3: to_bytes(StringType(), regions[0]),
        4: to_bytes(LongType(), (k * 7919) % 100_000),
        5: to_bytes(IntegerType(), 1),
        6: to_bytes(DoubleType(), 0.5),
    }
    high = {
        1: to_bytes(LongType(), high_id),
        2: to_bytes(TimestamptzType(), high_ts),
        3: to_bytes(StringType(), regions[-1]),
        4: to_bytes(LongType(), (k * 7919) % 100_000 + 50_000),
        5: to_bytes(IntegerType(), 50),
        6: to_bytes(DoubleType(), 9_999.5 + k % 100),
    }
    columns = range(1, 7)
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=file_path(location, k),
        file_format=FileFormat.PARQUET,
        partition=Record(day),
        record_count=ROWS_PER_FILE,
        file_size_in_bytes=48_000 + (k * 37) % 4_000,
        column_sizes={c: 4_000 + c * 300 for c in columns},
        value_counts=dict.fromkeys(columns, ROWS_PER_FILE),
        null_value_counts={c: 0 if c <= 2 else (k + c) % 5 for c in columns},
        nan_value_counts={6: 0},
        lower_bounds=low,
        upper_bounds=high,
        split_offsets=[4],
        sort_order_id=0,
        spec_id=0,
    )


def build_table(rest: RestCatalog, manifests: int) -> Table:
    """The table, through the proxy: ``manifests / MANIFESTS_PER_COMMIT`` fast appends."""
    rest.create_namespace(IDENT[0])
    table = rest.create_table(IDENT, schema=SCHEMA, partition_spec=SPEC)
    location = table.location()
    files_per_commit = MANIFESTS_PER_COMMIT * FILES_PER_MANIFEST
    for first in range(0, manifests * FILES_PER_MANIFEST, files_per_commit):
        with table.transaction() as transaction:
            append = _ManifestPerBatchAppend(operation=Operation.APPEND, transaction=transaction, io=table.io)
            for k in range(first, min(first + files_per_commit, manifests * FILES_PER_MANIFEST)):
                append.append_data_file(data_file(location, k))
            append.commit()
    return rest.load_table(IDENT)


def id_filter(start: int) -> BooleanExpression:
    return And(GreaterThanOrEqual("id", start), LessThanOrEqual("id", start + SPAN))


def expected_paths(location: str, start: int, files: int) -> frozenset[str]:
    first, last = start // ROWS_PER_FILE, min(files - 1, (start + SPAN) // ROWS_PER_FILE)
    return frozenset(file_path(location, k) for k in range(first, last + 1))


def planned(table: Table, start: int) -> frozenset[str]:
    try:
        return frozenset(task.file.file_path for task in table.scan(row_filter=id_filter(start)).plan_files())
    except NotImplementedError as exc:  # pyiceberg 0.12 cannot poll a plan answered "submitted"
        raise RuntimeError(f"planTableScan was answered 'submitted' (past the sync budget): {exc}") from None


def catalogs(proxy: ProxyProcess) -> tuple[Table, Table]:
    """Fresh client-planning and server-planning catalogs, each with the table loaded."""
    client = RestCatalog("client", uri=proxy.url, warehouse="local")
    server = RestCatalog("server", uri=proxy.url, warehouse="local", **{"scan-planning-mode": "server"})
    if not server.supports_server_side_planning() or client.supports_server_side_planning():
        raise RuntimeError("the proxy does not advertise planTableScan (or the client would plan on the server)")
    return client.load_table(IDENT), server.load_table(IDENT)


class Rounds:
    """Timed plans of both sides, alternating order; the filter moves every round; results compared."""

    def __init__(self, location: str, files: int) -> None:
        self.location, self.files = location, files
        self.times: dict[str, list[float]] = {"server": [], "client": []}
        self.number = 0

    def round(self, sides: dict[str, Table], record: bool) -> None:
        start = ((self.number * 7_919) % (self.files - 3)) * ROWS_PER_FILE + ROWS_PER_FILE // 2
        order = list(sides) if self.number % 2 == 0 else list(reversed(sides))
        found: dict[str, frozenset[str]] = {}
        for side in order:
            # Garbage of earlier rounds is collected before each plan; the collector stays on during it:
            # the client's planning runs in this process and its collections are part of its cost.
            gc.collect()
            began = time.perf_counter()
            found[side] = planned(sides[side], start)
            took = (time.perf_counter() - began) * 1000
            if record:
                self.times[side].append(took)
        expected = expected_paths(self.location, start, self.files)
        for side, paths in found.items():
            if paths != expected:
                raise AssertionError(
                    f"{side} planning of id in [{start}, {start + SPAN}] returned {sorted(paths)}, "
                    f"expected {sorted(expected)}"
                )
        self.number += 1


def cache_counters(proxy: ProxyProcess) -> dict[str, float]:
    wanted = ("irc_proxy_manifest_cache_hits_total", "irc_proxy_manifest_cache_misses_total")
    wanted += ("irc_proxy_manifest_cache_bytes",)
    found: dict[str, float] = {}
    for line in httpx.get(f"{proxy.url}/metrics", timeout=10).text.splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            found[name.removeprefix("irc_proxy_manifest_cache_")] = float(value)
    return found


def latency_pair(label: str, workload: str, times: dict[str, list[float]], goal: float) -> list[dict[str, object]]:
    server, client = times["server"], times["client"]
    return [
        row(
            f"{NAME} {label}",
            workload,
            "p50 ms",
            percentile(server, 0.5),
            percentile(client, 0.5),
            goal,
            samples={"server plans": server, "client plans": client},
        ),
        row(f"{NAME} {label}", workload, "p90 ms", percentile(server, 0.9), percentile(client, 0.9), None),
    ]


def run(quick: bool = False) -> list[dict[str, object]]:
    manifests = 60 if quick else 500
    warmup, samples, cold_rounds = (1, 5, 2) if quick else (3, 25, 8)
    files = manifests * FILES_PER_MANIFEST
    with served_proxy() as proxy:
        began = time.perf_counter()
        table = build_table(RestCatalog("builder", uri=proxy.url, warehouse="local"), manifests)
        build_seconds = time.perf_counter() - began
        snapshot = table.current_snapshot()
        assert snapshot is not None
        built = len(snapshot.manifests(table.io))
        if built != manifests:
            raise AssertionError(f"the table has {built} manifests, not {manifests}")
        location = table.location()

        cold = Rounds(location, files)
        for _ in range(cold_rounds):
            proxy.stop()
            proxy.start()
            client, server = catalogs(proxy)
            cold.round({"server": server, "client": client}, record=True)

        warm = Rounds(location, files)
        client, server = catalogs(proxy)
        sides = {"server": server, "client": client}
        for i in range(warmup + samples):
            warm.round(sides, record=i >= warmup)
        rss = rss_mb(proxy_pid(proxy))
        cache = cache_counters(proxy)

    common = (
        f"plan_files() of id in [X, X+{SPAN}] (3 of {files:,} files, {manifests} manifests, 6 columns with metrics, "
        f"partitioned by day(ts); built in {build_seconds:.1f}s); server = scan-planning-mode=server, "
        "client = pyiceberg planning in-process"
    )
    warm_workload = f"{common}; warm proxy: warm-up {warmup}, {samples} rounds"
    cold_workload = f"{common}; cold: proxy restarted before each of {cold_rounds} rounds"
    rss_workload = (
        f"proxy RSS after {cold_rounds} cold + {warmup + samples} warm plans (manifest cache "
        f"{cache.get('bytes', 0) / 2**20:.0f} MiB estimated, {cache.get('hits_total', 0):.0f} hits, "
        f"{cache.get('misses_total', 0):.0f} misses since the last restart)"
    )
    return [
        *latency_pair("warm", warm_workload, warm.times, 0.3),
        *latency_pair("cold", cold_workload, cold.times, 1.0),
        row(NAME, rss_workload, "proxy RSS MB", rss, None, None, ratio=rss / RSS_GOAL_MB)
        | {"goal": f"<= {RSS_GOAL_MB} MB", "passed": rss <= RSS_GOAL_MB},
    ]


RSS_GOAL_MB = 300
"""The memory benchmark's goal, held with a 20,000-file table's manifests in the cache."""


if __name__ == "__main__":
    for result in run():
        print({k: v for k, v in result.items() if k != "samples"})
