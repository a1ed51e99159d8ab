"""Reference format-v3 tables written by Spark's own ``hadoop`` catalog (no proxy involved).

What the server must accept and produce for format v3 is easiest to read off metadata that Iceberg Java wrote
itself. :func:`write_reference_tables` runs the statements below with the e2e jars (PySpark 3.5.9 + Iceberg
1.10.2) against a ``type=hadoop`` catalog on a ``file://`` warehouse and returns the tables' metadata JSON files:

* ``mor``: a partitioned v3 merge-on-read table: two inserts, a DELETE and an UPDATE (deletion vectors), a
  branch with a commit, then ``rewrite_data_files``;
* ``upgraded``: a v2 merge-on-read table with data (and a v2 position delete), upgraded to v3 with
  ``ALTER TABLE … SET TBLPROPERTIES ('format-version'='3')``, then an append and a delete.

The statement lists are functions of the table name, so the e2e tests can run exactly the same statements
through the proxy and compare ``_row_id`` / ``_last_updated_sequence_number`` with the reference.

``python -m tests.support.spark_v3_reference DIR`` writes the tables under ``DIR`` and prints a summary of each
metadata file (next-row-id, snapshots' first-row-id/added-rows, encryption fields, delete file formats).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.spark_session import local_builder, started

__all__ = [
    "MOR_PROPERTIES",
    "ReferenceTable",
    "Step",
    "add_hadoop_catalog",
    "current_metadata_file",
    "delete_files",
    "local_session",
    "mor_statements",
    "observe",
    "row_lineage",
    "run_and_observe",
    "snapshot_lineage",
    "summarize",
    "upgrade_statements",
    "write_reference_tables",
]

REFERENCE_CATALOG = "v3ref"
REFERENCE_NAMESPACE = "db"

MOR_PROPERTIES = (
    "'format-version' = '3', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read'"
)
_MOR_V2_PROPERTIES = MOR_PROPERTIES.replace("'format-version' = '3'", "'format-version' = '2'")


def mor_statements(table: str, catalog: str, table_in_catalog: str) -> list[str]:
    """Statements for the partitioned v3 merge-on-read table.

    ``table`` is the full Spark name (``catalog.ns.t``); ``table_in_catalog`` the name the CALL procedures take
    (``ns.t``), ``catalog`` the catalog whose ``system`` procedures run.
    """
    return [
        f"CREATE TABLE {table} (id bigint, data string, category string) USING iceberg "
        f"PARTITIONED BY (category) TBLPROPERTIES ({MOR_PROPERTIES})",
        f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')",
        f"INSERT INTO {table} VALUES (4, 'd', 'y'), (5, 'e', 'z'), (6, 'f', 'x')",
        f"DELETE FROM {table} WHERE id = 1",
        f"UPDATE {table} SET data = 'D' WHERE id = 4",
        f"ALTER TABLE {table} CREATE BRANCH audit",
        f"INSERT INTO {table}.branch_audit VALUES (7, 'g', 'y')",
        f"CALL {catalog}.system.rewrite_data_files(table => '{table_in_catalog}', "
        "options => map('rewrite-all', 'true'))",
    ]


def upgrade_statements(table: str) -> list[str]:
    """Statements for the v2 table that is upgraded to v3 with data in it."""
    return [
        f"CREATE TABLE {table} (id bigint, data string) USING iceberg TBLPROPERTIES ({_MOR_V2_PROPERTIES})",
        # One data file per insert (REPARTITION(1)), so the deletes below hit part of a file.
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a'), (2, 'b'), (3, 'c') AS v(id, data)",
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ * FROM VALUES (4, 'd'), (5, 'e') AS v(id, data)",
        f"DELETE FROM {table} WHERE id = 3",  # a v2 position delete file (Parquet), before the upgrade
        f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version' = '3')",
        f"INSERT INTO {table} VALUES (6, 'f')",
        f"DELETE FROM {table} WHERE id = 2",  # a vector on the same v2-era file, after the upgrade
        f"DELETE FROM {table} WHERE id = 5",  # a vector on the other v2-era file
    ]


@dataclass(frozen=True)
class Step:
    """What one statement left behind: rows' lineage per branch, and the metadata's row-lineage fields."""

    statement: str
    format_version: int
    next_row_id: int | None
    # (sequence-number, operation, first-row-id, added-rows) of every snapshot, by sequence number.
    snapshots: list[tuple[Any, ...]]
    # branch -> (id, _row_id, _last_updated_sequence_number) of its live rows, ordered by id ("main" always).
    lineage: dict[str, list[tuple[Any, ...]]]
    # Live delete files of main (Spark's ``delete_files`` metadata table, DELETE_FILE_COLUMNS).
    delete_files: list[tuple[Any, ...]]


@dataclass
class ReferenceTable:
    """One table written by the reference run: its current metadata file, every metadata version, every step."""

    name: str
    metadata_file: Path
    metadata_files: list[Path] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    @property
    def lineage(self) -> list[tuple[Any, ...]]:
        """(id, _row_id, _last_updated_sequence_number) of the live rows on main at the end, ordered by id."""
        return self.steps[-1].lineage["main"]


def local_session(scratch: Path, jars: list[Path] | None = None) -> Any:
    """A local SparkSession set up like the e2e fixture (tests/e2e/conftest.py), with no catalogs of its own."""
    from tests.e2e.spark_jars import ensure_spark_jars

    scratch.mkdir(parents=True, exist_ok=True)
    return started(local_builder("irc-proxy-v3-reference", scratch, jars or ensure_spark_jars()))


def add_hadoop_catalog(spark: Any, name: str, warehouse: Path) -> None:
    """Register Spark's own ``hadoop`` catalog ``name`` on a ``file://`` warehouse in a running session."""
    warehouse.mkdir(parents=True, exist_ok=True)
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", warehouse.resolve().as_uri())


def current_metadata_file(table_dir: Path) -> Path:
    """The hadoop catalog's current metadata file (``metadata/version-hint.text`` names the version)."""
    version = (table_dir / "metadata" / "version-hint.text").read_text().strip()
    return table_dir / "metadata" / f"v{version}.metadata.json"


def row_lineage(spark: Any, table: str) -> list[tuple[Any, ...]]:
    """``(id, _row_id, _last_updated_sequence_number)`` of ``table``'s live rows, ordered by id."""
    statement = f"SELECT id, _row_id, _last_updated_sequence_number FROM {table} ORDER BY id"
    return [tuple(r) for r in spark.sql(statement).collect()]


DELETE_FILE_COLUMNS = "content, file_format, record_count, referenced_data_file, content_offset, content_size_in_bytes"


def delete_files(spark: Any, table: str) -> list[tuple[Any, ...]]:
    """Live delete files of ``table`` (Spark's ``delete_files`` metadata table, DELETE_FILE_COLUMNS)."""
    statement = f"SELECT {DELETE_FILE_COLUMNS} FROM {table}.delete_files ORDER BY referenced_data_file"
    return [tuple(r) for r in spark.sql(statement).collect()]


def snapshot_lineage(metadata: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(sequence-number, operation, first-row-id, added-rows) of each snapshot in a metadata document."""
    snapshots = sorted(metadata.get("snapshots", []), key=lambda s: s.get("sequence-number", 0))
    return [
        (s.get("sequence-number"), s.get("summary", {}).get("operation"), s.get("first-row-id"), s.get("added-rows"))
        for s in snapshots
    ]


def observe(spark: Any, statement: str, table: str, metadata: dict[str, Any]) -> Step:
    """The :class:`Step` for ``table`` after ``statement``, its metadata being ``metadata`` (JSON)."""
    branches = sorted(name for name, ref in metadata.get("refs", {}).items() if ref.get("type") == "branch")
    lineage = {"main": row_lineage(spark, table)}
    lineage |= {b: row_lineage(spark, f"{table}.branch_{b}") for b in branches if b != "main"}
    return Step(
        statement=statement,
        format_version=metadata["format-version"],
        next_row_id=metadata.get("next-row-id"),
        snapshots=snapshot_lineage(metadata),
        lineage=lineage,
        delete_files=delete_files(spark, table),
    )


def run_and_observe(
    spark: Any, table: str, statements: list[str], load_metadata: Callable[[], dict[str, Any]]
) -> list[Step]:
    """Run ``statements`` one by one, observing ``table`` after each (``load_metadata`` reads its metadata)."""
    steps = []
    for statement in statements:
        spark.sql(statement).collect()
        steps.append(observe(spark, statement, table, load_metadata()))
    return steps


def _metadata_versions(table_dir: Path) -> list[Path]:
    files = (table_dir / "metadata").glob("v*.metadata.json")
    return sorted(files, key=lambda p: int(p.name[1:].split(".")[0]))


def write_reference_tables(directory: Path, spark: Any | None = None) -> dict[str, ReferenceTable]:
    """Write the two reference tables under ``directory/warehouse``; keyed ``mor`` and ``upgraded``.

    With ``spark`` the tables are written in that running session (a catalog is added to it at run time);
    otherwise a local session is started and stopped here.
    """
    directory = directory.resolve()
    warehouse = directory / "warehouse"
    with _session(directory, spark) as session:
        add_hadoop_catalog(session, REFERENCE_CATALOG, warehouse)
        session.sql(f"CREATE NAMESPACE IF NOT EXISTS {REFERENCE_CATALOG}.{REFERENCE_NAMESPACE}")
        plans: dict[str, Callable[[str], list[str]]] = {
            "mor": lambda t: mor_statements(t, REFERENCE_CATALOG, f"{REFERENCE_NAMESPACE}.mor"),
            "upgraded": upgrade_statements,
        }
        tables: dict[str, ReferenceTable] = {}
        for name, plan in plans.items():
            full = f"{REFERENCE_CATALOG}.{REFERENCE_NAMESPACE}.{name}"
            session.sql(f"DROP TABLE IF EXISTS {full} PURGE")
            table_dir = warehouse / REFERENCE_NAMESPACE / name

            def load(table_dir: Path = table_dir) -> dict[str, Any]:
                loaded: dict[str, Any] = json.loads(current_metadata_file(table_dir).read_text())
                return loaded

            steps = run_and_observe(session, full, plan(full), load)
            tables[name] = ReferenceTable(
                name=name,
                metadata_file=current_metadata_file(table_dir),
                metadata_files=_metadata_versions(table_dir),
                steps=steps,
            )
        return tables


@contextmanager
def _session(directory: Path, spark: Any | None) -> Iterator[Any]:
    if spark is not None:
        yield spark
        return
    session = local_session(directory / "spark-scratch")
    try:
        yield session
    finally:
        session.stop()


def summarize(metadata_file: Path) -> dict[str, Any]:
    """The v3-relevant parts of one metadata file (and of its manifests' delete files, read with pyiceberg)."""
    metadata = json.loads(metadata_file.read_text())
    summary: dict[str, Any] = {
        "format-version": metadata["format-version"],
        "next-row-id": metadata.get("next-row-id"),
        "last-sequence-number": metadata.get("last-sequence-number"),
        "properties": metadata.get("properties", {}),
        "refs": {name: ref["snapshot-id"] for name, ref in metadata.get("refs", {}).items()},
        "top-level keys": sorted(metadata),
        "encryption-keys": metadata.get("encryption-keys"),
        "snapshots": [
            {
                "snapshot-id": s["snapshot-id"],
                "sequence-number": s.get("sequence-number"),
                "operation": s.get("summary", {}).get("operation"),
                "first-row-id": s.get("first-row-id"),
                "added-rows": s.get("added-rows"),
                "key-id": s.get("key-id"),
                "keys": sorted(s),
            }
            for s in metadata.get("snapshots", [])
        ],
        "delete files (current snapshot)": _delete_files(metadata_file),
    }
    return summary


def _delete_files(metadata_file: Path) -> list[dict[str, Any]]:
    """Live delete files of the current snapshot: content, format, referenced data file, counts."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.table.metadata import TableMetadataUtil

    io = PyArrowFileIO()
    try:
        metadata = TableMetadataUtil.parse_raw(metadata_file.read_text())
    except Exception as exc:  # pyiceberg may not parse every field Java writes
        return [{"error": f"pyiceberg could not parse the metadata: {exc!r}"}]
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return []
    found: list[dict[str, Any]] = []
    for manifest in snapshot.manifests(io):
        if manifest.content.value != 1:  # deletes
            continue
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            data_file = entry.data_file
            found.append(
                {
                    "content": data_file.content.name,
                    "file_format": str(data_file.file_format),
                    "record_count": data_file.record_count,
                    "referenced_data_file": getattr(data_file, "referenced_data_file", None),
                    "content_offset": getattr(data_file, "content_offset", None),
                    "content_size_in_bytes": getattr(data_file, "content_size_in_bytes", None),
                    "path": Path(data_file.file_path).name,
                }
            )
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: python -m tests.support.spark_v3_reference DIR  (got {argv[1:]})", file=sys.stderr)
        return 2
    tables = write_reference_tables(Path(argv[1]))
    for name, table in tables.items():
        print(f"== {name}: {table.metadata_file}")
        for path in table.metadata_files:
            print(f"   version {path}")
        for step in table.steps:
            print(f"-- {step.statement}")
            print(f"   format-version {step.format_version}, next-row-id {step.next_row_id}")
            print(f"   snapshots (sequence-number, operation, first-row-id, added-rows): {step.snapshots}")
            for branch, rows in step.lineage.items():
                print(f"   {branch} (id, _row_id, _last_updated_sequence_number): {rows}")
            for row in step.delete_files:
                print(f"   delete file ({DELETE_FILE_COLUMNS}): {row}")
        print(json.dumps(summarize(table.metadata_file), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
