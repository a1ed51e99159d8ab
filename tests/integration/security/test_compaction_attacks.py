"""Hostile review of ``rewrite-data-files`` (the local executor's compaction): attacks by a writer of its own
table on one served ``irc-proxy serve`` process.

* the writer's manifests name another table's data file, or a file outside every allowed location
  (``add_files``): compaction would read it with the proxy's rights and copy its rows into the writer's table
  (a read the writer may not make itself), then leave it dangling. The job must refuse the table, and neither
  file may change.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.maintenance import finished_run, path_of, request_run
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
JOB = "rewrite-data-files"


def ids(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64())})


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "compaction-attacks")


@pytest.mark.parametrize("foreign", ["another table's data file", "a file outside every allowed location"])
def test_compaction_never_reads_a_data_file_outside_the_table_into_it(
    proxy: ProxyProcess, ns_name: str, tmp_path: Path, foreign: str
) -> None:
    iceberg = RestCatalog("compaction-attacks", uri=proxy.url, warehouse="local")
    iceberg.create_namespace_if_not_exists(ns_name)
    if foreign.startswith("another"):
        victim = iceberg.create_table((ns_name, "victim"), schema=ids(0).schema)
        victim.append(ids(1000))
        target = path_of(next(iter(victim.scan().plan_files())).file.file_path)
    else:
        target = tmp_path / "outside.parquet"
        pq.write_table(ids(1000), target)
    before = target.read_bytes()
    attacker = iceberg.create_table((ns_name, "attacker"), schema=ids(0).schema)
    for i in range(6):
        attacker.append(ids(i * 2))
    attacker.add_files([target.as_uri()])
    head = iceberg.load_table((ns_name, "attacker")).metadata.current_snapshot_id

    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        result = finished_run(http, request_run(http, ns_name, "attacker", [JOB]))["results"][JOB]

    assert result["status"] == "skipped" and "outside its roots" in result["reason"], result
    assert iceberg.load_table((ns_name, "attacker")).metadata.current_snapshot_id == head
    assert target.read_bytes() == before
    written = [p for p in path_of(attacker.location()).rglob("*-rewrite-*.parquet")]
    assert written == []
