"""Resident memory of the proxy after listing and loading: it must stay small (caches are bounded by bytes).

Workload: one proxy process (local catalog, default settings: metadata cache 64 MiB): a namespace of
10,000 seeded table pointers listed 100 per page, twice; 300 real tables (created through the API,
2 snapshots each) loaded 5 times each; then VmRSS of the proxy process is read from /proc
(quick: 1,000 pointers, 30 tables). Goal: RSS <= 300 MB.
"""

from __future__ import annotations

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.support import SCHEMA, proxy_pid, row, rows, rss_mb, seed_local_pointers, served_proxy


def run(quick: bool = False) -> list[dict[str, object]]:
    pointers, tables = (1000, 30) if quick else (10_000, 300)
    with served_proxy() as proxy, httpx.Client(base_url=proxy.url, timeout=60) as http:
        idle = rss_mb(proxy_pid(proxy))
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("wide")
        seed_local_pointers(proxy, "wide", [f"t{i:05d}" for i in range(pointers)], "file:///none.metadata.json")
        for _ in range(2):
            token = None
            while True:
                params = {"pageSize": "100"} | ({"pageToken": token} if token else {})
                token = http.get("/v1/local/namespaces/wide/tables", params=params).json().get("next-page-token")
                if not token:
                    break
        rest.create_namespace("loaded")
        for i in range(tables):
            table = rest.create_table(("loaded", f"t{i}"), schema=SCHEMA)
            table.append(rows(10))
            table.append(rows(10, 10))
        for _ in range(5):
            for i in range(tables):
                http.get(f"/v1/local/namespaces/loaded/tables/t{i}").raise_for_status()
        after = rss_mb(proxy_pid(proxy))
    workload = (
        f"RSS after listing {pointers} tables x2 and loading {tables} tables x5 (idle RSS {idle:.0f} MB); "
        "no warm-up, 1 sample"
    )
    return [row("memory", workload, "proxy RSS MB", after, None, None, ratio=after / 300) | _goal(after)]


def _goal(rss: float) -> dict[str, object]:
    return {"goal": "<= 300 MB", "passed": rss <= 300}
