"""Hostile review of how ``rewrite-data-files`` reads a group's files (``maintenance/reading.py``): a writer of its
own table commits Parquet files it wrote itself, on one served ``irc-proxy serve`` process.

* two files whose Arrow schemas differ only in field ids that ``Schema.to_string`` shows truncated (an
  ``iceberg.id`` field metadata value of 100 zeros then the id: pyiceberg reads the id from it, ``to_string``
  shows the first 60 characters): the shape cache took the second file for the first's schema and read its
  columns under the first's field ids, swapping two columns' values silently in the compacted table.
"""

from __future__ import annotations

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField

from tests.support.maintenance import finished_run, path_of, request_run
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
JOB = "rewrite-data-files"
SCHEMA = Schema(
    NestedField(1, "a", LongType(), required=False),
    NestedField(2, "b", LongType(), required=False),
)


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "compaction-reading-attacks")


def commit_file(table: Table, name: str, data: pa.Table) -> None:
    """Write ``data`` as a Parquet file in ``table``'s data folder and commit it as is (the writer's own client
    writes its manifests: no check of the file's schema on the way)."""
    path = f"{table.location()}/data/{name}.parquet"
    path_of(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, str(path_of(path)))
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=data.num_rows,
        file_size_in_bytes=path_of(path).stat().st_size,
        spec_id=0,
    )
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(data_file)


def padded_ids(a_id: int, b_id: int, a: int, b: int) -> pa.Table:
    """One row; the columns' field ids as ``iceberg.id`` metadata, zero-padded past ``to_string``'s truncation."""
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), metadata={"iceberg.id": "0" * 100 + str(a_id)}),
            pa.field("b", pa.int64(), metadata={"iceberg.id": "0" * 100 + str(b_id)}),
        ]
    )
    return pa.table({"a": [a], "b": [b]}, schema=schema)


def rows(table: Table) -> list[tuple[int, int]]:
    data = table.scan().to_arrow()
    return sorted(zip(data["a"].to_pylist(), data["b"].to_pylist(), strict=True))


def test_files_whose_field_ids_differ_past_the_printed_schema_keep_their_columns(
    proxy: ProxyProcess, ns_name: str
) -> None:
    iceberg = RestCatalog("compaction-reading-attacks", uri=proxy.url, warehouse="local")
    iceberg.create_namespace_if_not_exists(ns_name)
    table = iceberg.create_table((ns_name, "swapped"), schema=SCHEMA)
    for i in range(3):
        commit_file(table, f"straight-{i}", padded_ids(1, 2, a=10 + i, b=20 + i))
        commit_file(table, f"swapped-{i}", padded_ids(2, 1, a=30 + i, b=40 + i))
    table = iceberg.load_table((ns_name, "swapped"))
    before = rows(table)
    assert (40, 30) in before, "pyiceberg reads a file's columns by the ids it names"

    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        result = finished_run(http, request_run(http, ns_name, "swapped", [JOB]))["results"][JOB]

    assert result["status"] == "succeeded" and result["data-files-rewritten"] == 6, result
    assert rows(iceberg.load_table((ns_name, "swapped"))) == before
