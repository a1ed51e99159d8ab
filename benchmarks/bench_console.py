"""The console's table page against the table's loadTable, side by side, for a table with 1,000 snapshots.

The snapshots are committed through the REST API (50 per commit, each with an operation and the summary
numbers the charts draw; no data files: the page reads only the metadata). Then ``GET /ui/.../tables/t``
(the HTML page: schema, history, both SVG charts, refs, the newest 100 snapshots) and ``GET
/v1/.../tables/t`` (the JSON loadTable) alternate, 5 warm-ups each, then 40 timed (quick: 10). The first
view of a metadata file draws its charts (printed apart); later views reuse them, as loadTable reuses its
cached JSON.
Goal: page p50 / loadTable p50 <= 5, and the page well under a second in absolute terms (printed).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx

from benchmarks.support import row, served_proxy, timed
from tests.support.rest import SCHEMA

SNAPSHOTS = 1000
PER_COMMIT = 50
OPERATIONS = ("append", "append", "overwrite", "delete")


def snapshot_json(number: int, location: str) -> dict[str, Any]:
    operation = OPERATIONS[number % len(OPERATIONS)]
    added = 0 if operation == "delete" else 100 + number % 37
    return {
        "snapshot-id": number,
        **({"parent-snapshot-id": number - 1} if number > 1 else {}),
        "sequence-number": number,
        "timestamp-ms": 1_700_000_000_000 + number * 60_000,
        "manifest-list": f"{location}/metadata/snap-{number}.avro",
        "summary": {
            "operation": operation,
            "added-records": str(added),
            "deleted-records": str(20 if operation != "append" else 0),
            "added-data-files": str(1 if added else 0),
            "deleted-data-files": str(1 if operation != "append" else 0),
            "total-records": str(number * 90),
            "total-files-size": str(number * 4096),
        },
        "schema-id": 0,
    }


def seed(http: httpx.Client) -> str:
    """A table with ``SNAPSHOTS`` snapshots; returns its path under ``/v1/local``."""
    assert http.post("/v1/local/namespaces", json={"namespace": ["bench"]}).status_code == 200
    created = http.post("/v1/local/namespaces/bench/tables", json={"name": "t", "schema": SCHEMA})
    created.raise_for_status()
    location = created.json()["metadata"]["location"]
    for start in range(1, SNAPSHOTS + 1, PER_COMMIT):
        numbers = range(start, min(start + PER_COMMIT, SNAPSHOTS + 1))
        updates: list[dict[str, Any]] = [
            {"action": "add-snapshot", "snapshot": snapshot_json(n, location)} for n in numbers
        ]
        updates.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": numbers[-1]})
        main = {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": start - 1 if start > 1 else None}
        body = {"requirements": [main], "updates": updates}
        committed = http.post("/v1/local/namespaces/bench/tables/t", json=body)
        assert committed.status_code == 200, committed.text
    return "namespaces/bench/tables/t"


def run(quick: bool = False) -> list[dict[str, object]]:
    samples = 10 if quick else 40
    with served_proxy() as proxy, httpx.Client(base_url=proxy.url, timeout=120) as http:
        path = seed(http)
        page_url, load_url = f"/ui/catalogs/local/{path}", f"/v1/local/{path}"
        started = time.perf_counter()
        page_html = http.get(page_url)  # the first view draws the charts (later views of this metadata reuse them)
        page_html.raise_for_status()
        first_ms = (time.perf_counter() - started) * 1000
        assert f'data-points="{SNAPSHOTS}"' in page_html.text, "the timeline must draw every snapshot"
        for _ in range(5):
            http.get(page_url).raise_for_status()
            http.get(load_url).raise_for_status()
        pages: list[float] = []
        loads: list[float] = []
        for _ in range(samples):
            pages.append(timed(lambda: http.get(page_url).raise_for_status()))
            loads.append(timed(lambda: http.get(load_url).raise_for_status()))
    page_p50, load_p50 = statistics.median(pages), statistics.median(loads)
    print(
        f"console table page: first view {first_ms:.1f} ms, then p50 {page_p50:.1f} ms; "
        f"loadTable p50 {load_p50:.1f} ms ({SNAPSHOTS} snapshots)"
    )
    return [
        row(
            "console table page",
            f"local: a table with {SNAPSHOTS} snapshots; /ui table page vs loadTable, alternating, {samples} each "
            f"(the first view, which draws the charts: {first_ms:.0f} ms)",
            "page/loadTable p50 ms",
            page_p50,
            load_p50,
            5.0,
            samples={"table page ms": pages, "loadTable ms": loads},
        )
    ]


if __name__ == "__main__":
    for result in run():
        print(result)
