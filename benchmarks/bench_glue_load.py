"""loadTable (and a small commit) on Glue: the proxy (warm) vs pyiceberg's GlueCatalog used directly.

Both sides use the same moto server (Glue + S3 on 127.0.0.1, in this process) and the same kind of
table: one Glue database, two tables of 3 columns (one per side) with 5 append snapshots each,
metadata files on moto's S3. Sides, timed in alternating order each round:

* direct: ``GlueCatalog.load_table`` (Glue GetTable + S3 GET of the metadata file + parse);
* proxy: ``RestCatalog.load_table`` through a real ``irc-proxy serve`` (one HTTP hop; the proxy
  reads the Glue pointer, serves the cached metadata JSON after an existence check on S3);
* proxy 304: a GET with ``If-None-Match`` of the last ETag (the proxy reads the pointer only);
* commit (informational): ``set_properties`` in a transaction on each side.

Warm-up 20 rounds, 200 timed rounds (quick: 3 + 15). Goals (issue 29): p50 proxy/direct <= 0.3, 304 <= 0.2.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
from pyiceberg.catalog.glue import GlueCatalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from benchmarks.support import SCHEMA, alternate, latency_rows, percentile, quiet_moto, row, rows
from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config
from tests.support.server import ProxyProcess

BUCKET = "irc-bench"
DATABASE = "bench"
SNAPSHOTS = 5


def s3_properties(endpoint: str) -> dict[str, str]:
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
    }


def set_property(table: Table, value: str) -> None:
    table.transaction().set_properties({"bench.round": value}).commit_transaction()


def run(quick: bool = False) -> list[dict[str, object]]:
    warmup, samples = (3, 15) if quick else (20, 200)
    snapshots = 1 if quick else SNAPSHOTS
    with quiet_moto() as endpoint, tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
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
            proxy_ident, direct_ident = (DATABASE, "via_proxy"), (DATABASE, "direct")
            handles = {}
            for side, catalog, ident in (("proxy", via_proxy, proxy_ident), ("direct", direct, direct_ident)):
                table = catalog.create_table(ident, schema=SCHEMA)
                for i in range(snapshots):
                    table.append(rows(100, i * 100))
                handles[side] = table
            http = httpx.Client(base_url=proxy.url, timeout=30)
            url = f"/v1/glue/namespaces/{DATABASE}/tables/via_proxy"
            tag = http.get(url).headers["etag"]

            def not_modified() -> None:
                assert http.get(url, headers={"If-None-Match": tag}).status_code == 304

            loads = alternate(
                {
                    "proxy": lambda: via_proxy.load_table(proxy_ident),
                    "proxy 304": not_modified,
                    "pyiceberg GlueCatalog": lambda: direct.load_table(direct_ident),
                },
                warmup,
                samples,
            )
            counter = iter(range(10**9))
            commits = alternate(
                {
                    "proxy": lambda: set_property(handles["proxy"], str(next(counter))),
                    "pyiceberg GlueCatalog": lambda: set_property(handles["direct"], str(next(counter))),
                },
                max(1, warmup // 2),
                max(5, samples // 4),
            )
            http.close()
        finally:
            proxy.stop()
    workload = (
        f"Glue+S3 on moto, {snapshots}-snapshot table; RestCatalog via proxy / If-None-Match GET "
        f"vs GlueCatalog direct; warm-up {warmup}, {samples} samples"
    )
    direct_p50 = percentile(loads["pyiceberg GlueCatalog"], 0.5)
    result = latency_rows("Glue loadTable", workload, loads, "proxy", "pyiceberg GlueCatalog", 0.3)
    result.append(
        row(
            "Glue loadTable 304",
            workload,
            "p50 ms",
            percentile(loads["proxy 304"], 0.5),
            direct_p50,
            0.2,
            samples={"proxy 304": loads["proxy 304"], "pyiceberg GlueCatalog": loads["pyiceberg GlueCatalog"]},
        )
    )
    commit_workload = (
        f"set_properties commit, same tables; warm-up {max(1, warmup // 2)}, {max(5, samples // 4)} samples"
    )
    result += latency_rows("Glue commit", commit_workload, commits, "proxy", "pyiceberg GlueCatalog", None)
    return result
