"""loadTable and a small commit: through the proxy (Glue backend) vs pyiceberg's GlueCatalog used directly.

Both sides use the same moto server (Glue + S3 on 127.0.0.1, in this process) and the same kind of
table, measured side by side in one run with the order alternating each round:

* state: one Glue database, two tables of 3 columns (one per side) with one 100-row snapshot each,
  metadata files on moto's S3 (``s3://<bucket>/...``);
* load: ``load_table`` (a Glue GetTable plus reading the metadata file; the proxy caches metadata
  files, which are immutable, and only checks the file still exists);
* commit: ``set_properties`` in a transaction (one new metadata file on S3 plus a Glue UpdateTable;
  the proxy also takes its commit lock and re-reads the pointer first);
* ``WARMUP`` rounds are discarded, then ``SAMPLES`` rounds are timed.

The proxy is a real ``irc-proxy serve`` process (hypercorn) with SQLite state, reached with
pyiceberg's RestCatalog; the proxy side therefore includes one HTTP hop and JSON (de)serialisation
both ways. No assertions: this prints p50/p99 (ms) and the proxy/direct ratios.

Run: ``.venv/bin/python benchmarks/glue_load_commit.py`` (about half a minute).
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
from pyiceberg.catalog import Catalog  # noqa: E402
from pyiceberg.catalog.glue import GlueCatalog  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table import Table  # noqa: E402
from pyiceberg.types import DoubleType, LongType, NestedField, StringType  # noqa: E402

from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config, moto_server  # noqa: E402
from tests.support.server import ProxyProcess  # noqa: E402

WARMUP = 20
SAMPLES = 200
BUCKET = "irc-bench"
DATABASE = "bench"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)
ROWS = pa.Table.from_pylist(
    [{"id": i, "region": ("eu", "us", "apac")[i % 3], "amount": i * 1.5} for i in range(100)],
    schema=pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())]),
)


def s3_properties(endpoint: str) -> dict[str, str]:
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def set_property(table: Table, value: str) -> None:
    table.transaction().set_properties({"bench.round": value}).commit_transaction()


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request log lines
    with moto_server() as endpoint, tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        client("s3", endpoint).create_bucket(Bucket=BUCKET)
        config = glue_catalog_config("glue", endpoint, f"s3://{BUCKET}/proxy", s3_path_style_access="true")
        proxy = ProxyProcess(Path(tmp), config).start()
        try:
            via_proxy = RestCatalog("proxy", uri=proxy.url, warehouse="glue", **s3_properties(endpoint))
            direct = GlueCatalog(
                "direct",
                **{
                    "glue.endpoint": endpoint,
                    "glue.region": REGION,
                    "glue.access-key-id": ACCESS_KEY,
                    "glue.secret-access-key": SECRET_KEY,
                    "warehouse": f"s3://{BUCKET}/direct",
                    **s3_properties(endpoint),
                },
            )
            via_proxy.create_namespace(DATABASE)
            tables: dict[str, tuple[Catalog, tuple[str, str]]] = {
                "proxy": (via_proxy, (DATABASE, "via_proxy")),
                "direct": (direct, (DATABASE, "direct")),
            }
            handles: dict[str, Table] = {}
            for side, (catalog, ident) in tables.items():
                table = catalog.create_table(ident, schema=SCHEMA)
                table.append(ROWS)
                handles[side] = table

            samples: dict[str, list[float]] = {f"{op} {side}": [] for op in ("load", "commit") for side in tables}
            started = time.perf_counter()
            for round_number in range(WARMUP + SAMPLES):
                order = list(tables) if round_number % 2 == 0 else list(reversed(tables))
                for side in order:
                    catalog, ident = tables[side]
                    load = timed(partial(catalog.load_table, ident))
                    commit = timed(partial(set_property, handles[side], str(round_number)))
                    if round_number >= WARMUP:
                        samples[f"load {side}"].append(load)
                        samples[f"commit {side}"].append(commit)
            took = time.perf_counter() - started
        finally:
            proxy.stop()

    print(f"Glue on moto (127.0.0.1), metadata on moto S3; {WARMUP} warm-up + {SAMPLES} timed rounds in {took:.1f}s")
    print(f"{'operation':<16}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, values in samples.items():
        p50, p99, mean = percentile(values, 0.5), percentile(values, 0.99), statistics.mean(values)
        print(f"{name:<16}{p50:>10.2f}{p99:>10.2f}{mean:>10.2f}")
    for op in ("load", "commit"):
        p50 = percentile(samples[f"{op} proxy"], 0.5) / percentile(samples[f"{op} direct"], 0.5)
        p99 = percentile(samples[f"{op} proxy"], 0.99) / percentile(samples[f"{op} direct"], 0.99)
        print(f"{op:<6} proxy/direct: p50 x{p50:.2f}, p99 x{p99:.2f}")


if __name__ == "__main__":
    main()
