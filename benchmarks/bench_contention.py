"""Concurrent appends to one table, two kinds of writer side by side: no commit may be lost.

Workloads (local catalog, one proxy, run one after the other in the same run): 8 writer threads, each
with its own pyiceberg RestCatalog, each doing 25 appends of 10 rows to one table (quick: 2 x 3).

* **pinned**: pyiceberg's own appends. Like Spark/Java, pyiceberg sends ``assert-ref-snapshot-id`` for
  main, which genuinely fails when another append landed first: those 409s are correct per the spec and
  the server never overrides a failed requirement. pyiceberg refreshes and retries a 409 itself (up to
  4 times); a CommitFailedException that still escapes makes the writer reload and try again. Its 409s
  per commit are reported for information, with no goal.
* **blind**: the same pyiceberg-written appends (data files, manifests, manifest list) sent with
  ``assert-table-uuid`` only. Each writer keeps its own, soon stale, table metadata; the server rebases
  every stale append onto the branch head (handling/tables/rebase.py). Goals: 0 lost commits, 409s seen by
  clients <= 0.05 per commit; commits/s is reported.

409s are counted from the proxy's access log (every commit response). No warm-up (the tables are
created first). Afterwards every appended row must be readable from the table's current snapshot.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.update import AssertRefSnapshotId, TableRequirement, TableUpdate

from benchmarks.support import SCHEMA, row, rows, served_proxy
from tests.support.server import ProxyProcess

ROWS_PER_APPEND = 10


class BlindRestCatalog(RestCatalog):
    """pyiceberg's REST client minus ``assert-ref-snapshot-id``: its commits pin only the table UUID."""

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        kept = tuple(r for r in requirements if not isinstance(r, AssertRefSnapshotId))
        response: CommitTableResponse = super().commit_table(table, kept, updates)
        return response


@dataclass(frozen=True)
class Outcome:
    commits: int
    lost: int
    requests: int
    conflicts: int
    escaped: int
    seconds: float


def contend(proxy: ProxyProcess, kind: type[RestCatalog], name: str, writers: int, appends: int) -> Outcome:
    """``writers`` threads x ``appends`` appends to ``bench.<name>``; count lost commits and 409s."""
    escaped = [0] * writers
    failures: list[BaseException] = []
    start = threading.Barrier(writers)

    def writer(number: int) -> None:
        try:
            catalog = kind(f"writer{number}", uri=proxy.url, warehouse="local")
            table = catalog.load_table(("bench", name))
            start.wait()
            for i in range(appends):
                data = rows(ROWS_PER_APPEND, (number * appends + i) * ROWS_PER_APPEND)
                while True:
                    try:
                        table.append(data)
                        break
                    except CommitFailedException:
                        escaped[number] += 1
                        table = catalog.load_table(("bench", name))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - started
    if failures:
        raise failures[0]
    table = RestCatalog("check", uri=proxy.url, warehouse="local").load_table(("bench", name))
    found = set(table.scan().to_arrow()["id"].to_pylist())
    commits = writers * appends
    landed = sum(
        1
        for n in range(commits)
        if set(range(n * ROWS_PER_APPEND, (n + 1) * ROWS_PER_APPEND)) <= found  # every row of that append
    )
    commit_line = f"POST /v1/local/namespaces/bench/tables/{name} "
    statuses = [line.split(commit_line, 1)[1].split()[0] for line in proxy.log().splitlines() if commit_line in line]
    return Outcome(commits, commits - landed, len(statuses), statuses.count("409"), sum(escaped), took)


def run(quick: bool = False) -> list[dict[str, object]]:
    writers, appends = (2, 3) if quick else (8, 25)
    with served_proxy() as proxy:
        setup = RestCatalog("setup", uri=proxy.url, warehouse="local")
        setup.create_namespace("bench")
        for name in ("pinned", "blind"):
            setup.create_table(("bench", name), schema=SCHEMA)
        pinned = contend(proxy, RestCatalog, "pinned", writers, appends)
        blind = contend(proxy, BlindRestCatalog, "blind", writers, appends)
    shape = f"{writers} writers x {appends} appends of {ROWS_PER_APPEND} rows to one table (local); no warm-up"
    results: list[dict[str, object]] = []
    for label, outcome, requirement, goal in (
        ("pinned", pinned, "pyiceberg appends with assert-ref-snapshot-id (409s correct, informational)", None),
        ("blind", blind, "the same appends with assert-table-uuid only, rebased by the server", 0.05),
    ):
        name = f"contention ({label})"
        workload = (
            f"{shape}; {requirement}; {outcome.requests} commit requests, {outcome.conflicts} x 409, "
            f"{outcome.escaped} escaped pyiceberg's retries"
        )
        per_commit = outcome.conflicts / outcome.commits
        lost = outcome.lost
        results += [
            row(name, workload, "lost commits", lost, None, None, ratio=lost) | {"goal": "== 0", "passed": lost == 0},
            row(name, workload, "409s per commit", per_commit, None, goal, ratio=per_commit),
            row(name, workload, "commits/s", outcome.commits / outcome.seconds, None, None),
        ]
    return results
