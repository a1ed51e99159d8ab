"""Issue 28: "a Spark writer appending and deleting while compaction runs: no acknowledged row lost or resurrected".

A real PySpark writer (a v2 table with copy-on-write deletes, so the table never has delete files and the local
executor can rewrite every file) appends and deletes in a loop, while the management API runs ``rewrite-data-files``
on the local executor again and again. Either side may lose a race: Spark retries its commit on the new head (or
fails the statement, which is then not acknowledged), the job validates and commits on the newer head or skips.
At the end the table holds exactly the rows whose statements Spark acknowledged, each once, and compaction did
rewrite files while the writer ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from irc_proxy.handling.maintenance.binpack import MIN_INPUT_FILES
from tests.e2e.test_glue_clients import add_spark_catalog
from tests.support.maintenance import finished_run, request_run
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.spark

CONFIG = '[server.maintenance]\npoll_seconds = 0.05\n[catalogs.local]\nkind = "local"\n'
CATALOG = "race_e2e"
JOB = "rewrite-data-files"
ROUNDS = 12
ROWS_PER_APPEND = 5
DELETE_EVERY = 3
"""Every third round also deletes: the rows of one residue class of the ids written so far."""
DELETE_ATTEMPTS = 3
"""A copy-on-write DELETE whose files compaction rewrote meanwhile fails (Iceberg's ``Missing required files to
delete``): the writer tries it again, as an application would."""


@pytest.fixture(scope="module")
def racing_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    server = ProxyProcess(tmp_path_factory.mktemp("compaction-race"), CONFIG).start()
    yield server
    server.stop()


class Compactor(threading.Thread):
    """Requests ``rewrite-data-files`` runs of one table back to back until stopped; keeps each job's result."""

    def __init__(self, proxy: ProxyProcess, ns: str, name: str) -> None:
        super().__init__(daemon=True)
        self.proxy, self.ns, self.name = proxy, ns, name
        self.results: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.proxy.url, timeout=60) as http:
                while not self.stopped.is_set():
                    run = finished_run(http, request_run(http, self.ns, self.name, [JOB]), timeout=60)
                    self.results.append(run["results"].get(JOB, {"status": run["status"], "run": run}))
        except BaseException as exc:  # reported by the test
            self.error = exc


def test_a_spark_writer_appending_and_deleting_while_compaction_runs_loses_and_resurrects_no_row(
    spark: Any, racing_proxy: ProxyProcess, ns_name: str
) -> None:
    cat = add_spark_catalog(spark, CATALOG, racing_proxy, "local")
    table = f"{cat}.{ns_name}.events"
    spark.sql(f"CREATE NAMESPACE {cat}.{ns_name}")
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
        "'commit.retry.num-retries'='10', 'commit.retry.min-wait-ms'='20')"
    )
    acknowledged: dict[int, str] = {}
    deleted = 0
    refused: list[str] = []
    compactor = Compactor(racing_proxy, ns_name, "events")
    compactor.start()
    try:
        for n in range(ROUNDS):
            acknowledged |= _append(spark, table, n, refused)
            if n % DELETE_EVERY == DELETE_EVERY - 1:
                residue = n % 4
                delete = f"DELETE FROM {table} WHERE id % 4 = {residue}"
                if any(_statement(spark, delete, refused) for _attempt in range(DELETE_ATTEMPTS)):
                    acknowledged = {i: v for i, v in acknowledged.items() if i % 4 != residue}
                    deleted += 1
        # On a slow machine every run during the writes may lose its race (the writer always wins); the compactor
        # goes on after the writes, and its later commits are checked against the acknowledged rows all the same.
        # The last copy-on-write DELETE may have left fewer files than bin-pack's `min-input-files` (5), so that an
        # idle table has nothing to rewrite: appends without deletes then give it enough small files.
        for n in range(ROUNDS, ROUNDS + MIN_INPUT_FILES):
            if any(r.get("data-files-rewritten", 0) > 0 for r in compactor.results):
                break
            acknowledged |= _append(spark, table, n, refused)
        writes_ended = time.monotonic()
        while not any(r.get("data-files-rewritten", 0) > 0 for r in compactor.results) and compactor.is_alive():
            if time.monotonic() - writes_ended > 90:
                break
            time.sleep(0.1)
    finally:
        compactor.stopped.set()
        compactor.join(timeout=90)
    assert compactor.error is None, compactor.error
    statuses = [r.get("status") for r in compactor.results]
    assert "failed" not in statuses, compactor.results
    rewrote = [r for r in compactor.results if r.get("data-files-rewritten", 0) > 0 and r["status"] == "succeeded"]
    assert rewrote, compactor.results  # compaction did commit while the writer wrote
    assert deleted > 0, refused  # deletes were acknowledged (a resurrected row would show)

    spark.sql(f"REFRESH TABLE {table}")
    found = [(row.id, row.v) for row in spark.sql(f"SELECT id, v FROM {table}").collect()]
    assert len(found) == len({i for i, _ in found}), "no row twice"
    assert sorted(found) == sorted(acknowledged.items())
    arrow = RestCatalog("race", uri=racing_proxy.url, warehouse="local").load_table((ns_name, "events")).scan()
    data = arrow.to_arrow()
    assert sorted(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True)) == sorted(acknowledged.items())


def _append(spark: Any, table: str, n: int, refused: list[str]) -> dict[int, str]:
    """Round ``n``'s rows appended: those rows if Spark acknowledged the INSERT, else none."""
    batch = {n * ROWS_PER_APPEND + i: f"v{n}-{i}" for i in range(ROWS_PER_APPEND)}
    values = ", ".join(f"({i}, '{v}')" for i, v in batch.items())
    return batch if _statement(spark, f"INSERT INTO {table} VALUES {values}", refused) else {}


def _statement(spark: Any, sql: str, refused: list[str]) -> bool:
    """Run one write; whether Spark acknowledged it (a statement whose commit lost a race it could not retry
    raises, and changed nothing: Iceberg commits are atomic)."""
    try:
        spark.sql(sql)
    except Exception as exc:  # Py4J / AnalysisException: the commit was refused
        refused.append(f"{sql[:40]}: {str(exc)[:200]}")
        return False
    return True
