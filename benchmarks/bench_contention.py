"""Concurrent appends to one table: no commit may be lost, and few should come back 409.

Workload: the local catalog; 8 writer threads, each with its own pyiceberg RestCatalog, each doing
25 appends of 10 rows to the same table (quick: 2 x 3). pyiceberg retries a 409 itself (refresh and
re-apply, up to 4 times); a CommitFailedException that still escapes makes the writer reload and try
again. The 409s clients saw are counted from the proxy's access log (every commit response). No
warm-up (the table is created first). Afterwards the table's current snapshot must hold every row.
Goals: 0 lost commits; 409s seen by clients <= 0.05 per commit. commits/s is reported.
"""

from __future__ import annotations

import threading
import time

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException

from benchmarks.support import SCHEMA, row, rows, served_proxy

ROWS_PER_APPEND = 10


def run(quick: bool = False) -> list[dict[str, object]]:
    writers, appends = (2, 3) if quick else (8, 25)
    conflicts = [0] * writers
    failures: list[BaseException] = []
    with served_proxy() as proxy:
        setup = RestCatalog("setup", uri=proxy.url, warehouse="local")
        setup.create_namespace("bench")
        setup.create_table(("bench", "contended"), schema=SCHEMA)
        start = threading.Barrier(writers)

        def writer(number: int) -> None:
            try:
                catalog = RestCatalog(f"writer{number}", uri=proxy.url, warehouse="local")
                table = catalog.load_table(("bench", "contended"))
                start.wait()
                for i in range(appends):
                    data = rows(ROWS_PER_APPEND, (number * appends + i) * ROWS_PER_APPEND)
                    while True:
                        try:
                            table.append(data)
                            break
                        except CommitFailedException:
                            conflicts[number] += 1
                            table = catalog.load_table(("bench", "contended"))
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
        table = setup.load_table(("bench", "contended"))
        snapshot = table.current_snapshot()
        records = int(snapshot.summary["total-records"]) if snapshot and snapshot.summary else 0
        commit_line = "POST /v1/local/namespaces/bench/tables/contended"
        log = proxy.log().splitlines()
        statuses = [line.split(commit_line, 1)[1].split()[0] for line in log if commit_line in line]
    commits = writers * appends
    lost = commits - records // ROWS_PER_APPEND
    per_commit = statuses.count("409") / commits
    workload = (
        f"{writers} writers x {appends} appends of {ROWS_PER_APPEND} rows to one table (local); "
        f"{len(statuses)} commit requests, {statuses.count('409')} x 409, {sum(conflicts)} escaped pyiceberg's "
        "retries; no warm-up"
    )
    return [
        row("contention", workload, "lost commits", lost, None, None, ratio=lost, higher_is_better=False)
        | {"goal": "== 0", "passed": lost == 0},
        row("contention", workload, "409s per commit", per_commit, None, 0.05, ratio=per_commit),
        row("contention", workload, "commits/s", commits / took, None, None),
    ]
