"""Listing a namespace of 10,000 tables, 100 per page: the last page must cost about what the first does.

Local: pointers seeded straight into the catalog's SQLite tables (the API would take minutes), then
``GET .../tables?pageSize=100`` followed page by page through ``next-page-token``. Glue: 10,000 Iceberg
tables created in the moto server with boto3. moto ignores ``MaxResults``/``NextToken`` on GetTables
(it returns the whole database every time), so the benchmark installs real Glue's paging (at most
``MaxResults`` entries, an opaque ``NextToken``) into the in-process moto server; otherwise every page
would cost a full listing in moto whatever the proxy does. One warm-up pass, then 3 timed passes;
each page's time is its median over the passes; "first"/"last" are the medians of the first and the
last 5 pages (quick: 1,000 tables, 1 pass).
Goal: last page / first page <= 1.5 (no re-listing per page).
"""

from __future__ import annotations

import base64
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.support import quiet_moto, row, seed_local_pointers, served_proxy
from tests.support.aws import client, glue_catalog_config
from tests.support.server import ProxyProcess

PAGE = 100
EDGE = 5  # "first" and "last" page: the median of the first and of the last 5 pages (single pages are noisy)


def page_times(http: httpx.Client, url: str, passes: int) -> tuple[list[float], int]:
    """Median time of each page over ``passes`` full listings (after one warm-up pass), and the table count."""
    per_page: list[list[float]] = []
    count = 0
    for number in range(passes + 1):
        token: str | None = None
        index, count = 0, 0
        while True:
            params = {"pageSize": str(PAGE)} | ({"pageToken": token} if token else {})
            response = http.get(url, params=params)
            response.raise_for_status()
            body = response.json()
            count += len(body["identifiers"])
            if number > 0:
                if len(per_page) <= index:
                    per_page.append([])
                per_page[index].append(response.elapsed.total_seconds() * 1000)
            index += 1
            token = body.get("next-page-token")
            if not token:
                break
    return [statistics.median(times) for times in per_page], count


def listing_row(backend: str, times: list[float], count: int, passes: int) -> dict[str, object]:
    workload = (
        f"{backend}: {count} tables, pageSize {PAGE} ({len(times)} pages), 1 warm-up pass + {passes} timed; "
        f"per-page median; first/last = median of {EDGE} pages"
    )
    return row(
        f"listing {backend}",
        workload,
        "last/first page ms",
        statistics.median(times[-EDGE:]),
        statistics.median(times[:EDGE]),
        1.5,
        samples={"first 10 pages": times[:10], "last 10 pages": times[-10:]},
    )


@contextmanager
def glue_paging() -> Iterator[None]:
    """Make the in-process moto server page GetTables like Glue does (MaxResults, NextToken)."""
    from moto.core.responses import ActionResult
    from moto.glue.responses import GlueResponse

    original = GlueResponse.get_tables

    def get_tables(self: Any) -> Any:
        tables = self.glue_backend.get_tables(self.parameters.get("DatabaseName"), self.parameters.get("Expression"))
        start = int(base64.b64decode(self.parameters["NextToken"])) if self.parameters.get("NextToken") else 0
        limit = int(self.parameters.get("MaxResults") or 100)
        result: dict[str, Any] = {"TableList": [t.as_dict() for t in tables[start : start + limit]]}
        if start + limit < len(tables):
            result["NextToken"] = base64.b64encode(str(start + limit).encode()).decode()
        return ActionResult(result)

    GlueResponse.get_tables = get_tables  # type: ignore[method-assign]
    try:
        yield
    finally:
        GlueResponse.get_tables = original  # type: ignore[method-assign]


def run(quick: bool = False) -> list[dict[str, object]]:
    tables, passes = (1000, 1) if quick else (10_000, 3)
    names = [f"t{i:05d}" for i in range(tables)]
    result = []
    with served_proxy() as proxy, httpx.Client(base_url=proxy.url, timeout=60) as http:
        http.post("/v1/local/namespaces", json={"namespace": ["wide"]}).raise_for_status()
        seed_local_pointers(proxy, "wide", names, "file:///nonexistent/metadata/00000.metadata.json")
        times, count = page_times(http, "/v1/local/namespaces/wide/tables", passes)
        result.append(listing_row("local", times, count, passes))
    with quiet_moto() as endpoint, glue_paging(), tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        glue = client("glue", endpoint)
        glue.create_database(DatabaseInput={"Name": "wide"})
        for name in names:
            glue.create_table(
                DatabaseName="wide",
                TableInput={
                    "Name": name,
                    "TableType": "EXTERNAL_TABLE",
                    "Parameters": {"table_type": "ICEBERG", "metadata_location": f"s3://bench/{name}.metadata.json"},
                },
            )
        proxy = ProxyProcess(Path(tmp), glue_catalog_config("glue", endpoint, "s3://bench/wh")).start()
        try:
            with httpx.Client(base_url=proxy.url, timeout=60) as http:
                times, count = page_times(http, "/v1/glue/namespaces/wide/tables", passes)
        finally:
            proxy.stop()
        result.append(listing_row("Glue (moto)", times, count, passes))
    return result
