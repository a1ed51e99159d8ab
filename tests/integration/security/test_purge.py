"""Guarantee 2: purge deletes only what belongs to the table.

A table's metadata is client data: a registered (or committed) file can point statistics, the metadata log
and manifest lists at another table's files or at files outside the warehouse. Purge deletes files under
the table's own locations only, leaves the rest in place (counted in ``irc_proxy_purge_skipped_total``), and,
once the pointer is dropped, answers 204 whatever it cannot read or delete (``irc_proxy_purge_failures_total``).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from tests.integration.security.conftest import SECRET_TEXT, Target
from tests.support.rest import table_url

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "data": pa.array(["a", "b", "c"])})


@pytest.fixture
def catalog(target: Target) -> RestCatalog:
    return RestCatalog(f"sec-{target.backend}", uri=target.url, warehouse="local")


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def table_with_data(catalog: RestCatalog, ns: str, name: str, appends: int = 2) -> Table:
    table = catalog.create_table((ns, name), schema=ROWS.schema)
    for _ in range(appends):
        table.append(ROWS)
    return table


def files_under(table: Table) -> set[Path]:
    return {p for p in path_of(table.metadata.location).rglob("*") if p.is_file()}


def counter(client: httpx.Client, name: str, **labels: str) -> float:
    """The sum of a counter's samples (those with ``labels``) in ``/metrics``."""
    families = text_string_to_metric_families(client.get("/metrics").text)
    return sum(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == f"{name}_total" and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def purge(client: httpx.Client, ns: str, name: str) -> httpx.Response:
    return client.delete(table_url((ns,), name), params={"purgeRequested": "true"})


def damaged_copy(table: Table, victim: Table, secret: Path) -> Path:
    """``table``'s metadata with statistics, metadata log and a snapshot's manifest list pointing at victims."""
    metadata: dict[str, Any] = json.loads(path_of(table.metadata_location).read_text(encoding="utf-8"))
    current = metadata["current-snapshot-id"]
    victim_metadata = victim.metadata_location
    victim_data = next(task.file.file_path for task in victim.scan().plan_files())
    stolen = dict(
        metadata["snapshots"][0], **{"snapshot-id": 424242, "manifest-list": victim.metadata.snapshots[0].manifest_list}
    )
    stolen.pop("parent-snapshot-id", None)
    metadata["snapshots"].append(stolen)

    def statistics(path: str) -> dict[str, Any]:
        return {
            "snapshot-id": current,
            "statistics-path": path,
            "file-size-in-bytes": 1,
            "file-footer-size-in-bytes": 1,
            "blob-metadata": [],
        }

    metadata["statistics"] = [statistics(secret.as_uri()), statistics(victim_metadata)]
    metadata["partition-statistics"] = [
        {"snapshot-id": current, "statistics-path": victim_data, "file-size-in-bytes": 1}
    ]
    metadata["metadata-log"] += [
        {"timestamp-ms": 1, "metadata-file": victim_metadata},
        {"timestamp-ms": 2, "metadata-file": secret.as_uri()},
    ]
    damaged = path_of(table.metadata_location).with_name(f"99999-{uuid.uuid4()}.metadata.json")
    damaged.write_text(json.dumps(metadata), encoding="utf-8")
    return damaged


def test_purge_of_damaged_metadata_deletes_the_tables_own_files_and_leaves_victims_in_place(
    target: Target, client: httpx.Client, catalog: RestCatalog, ns: str
) -> None:
    table = table_with_data(catalog, ns, "t")
    victim = table_with_data(catalog, ns, "victim", appends=1)
    damaged = damaged_copy(table, victim, target.secret)
    own_files = files_under(table) - {path_of(table.metadata_location)}  # the copy's log does not name its source
    victim_files = files_under(victim)
    # Drop (keeping the files), then register the damaged copy as the table (its own location is free again).
    assert client.delete(table_url((ns,), "t")).status_code == 204
    registered = client.post(
        f"/v1/local/namespaces/{ns}/register", json={"name": "t2", "metadata-location": damaged.as_uri()}
    )
    assert registered.status_code == 200, registered.text
    skipped_before = counter(client, "irc_proxy_purge_skipped")

    assert purge(client, ns, "t2").status_code == 204

    assert target.secret.read_text(encoding="utf-8") == SECRET_TEXT
    assert all(path.is_file() for path in victim_files), "another table's files were deleted"
    assert client.get(table_url((ns,), "victim")).status_code == 200
    assert catalog.load_table((ns, "victim")).scan().to_arrow().num_rows == 3
    assert [p for p in own_files if p.exists()] == [], "the table's own files were left"
    assert counter(client, "irc_proxy_purge_skipped") - skipped_before == 6  # 2 stats, 1 partition stats, 2 log, 1 list
    assert "purge of table" in target.server.log()


def junk_bytes(path: Path) -> None:
    path.write_bytes(b"this is not avro " * 100)


def a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("damage", "reason"), [(junk_bytes, "unreadable"), (a_fifo, "not_regular")], ids=["junk", "fifo"]
)
def test_purge_of_a_table_whose_manifest_list_is_unreadable_is_204_and_counted(
    client: httpx.Client, catalog: RestCatalog, ns: str, damage: Any, reason: str
) -> None:
    table = table_with_data(catalog, ns, "t", appends=1)
    manifest_list = path_of(table.metadata.snapshots[0].manifest_list)
    damage(manifest_list)
    failures_before = counter(client, "irc_proxy_purge_failures", reason=reason)

    response = purge(client, ns, "t")

    assert response.status_code == 204, response.text
    assert counter(client, "irc_proxy_purge_failures", reason=reason) == failures_before + 1
    assert not path_of(table.metadata_location).exists()
    assert client.get(table_url((ns,), "t")).status_code == 404


def test_purge_of_a_table_whose_metadata_file_is_gone_is_204(
    client: httpx.Client, catalog: RestCatalog, ns: str
) -> None:
    table = table_with_data(catalog, ns, "t", appends=1)
    path_of(table.metadata_location).unlink()

    assert purge(client, ns, "t").status_code == 204
    assert client.get(table_url((ns,), "t")).status_code == 404


def test_purge_of_an_intact_table_deletes_all_its_files(client: httpx.Client, catalog: RestCatalog, ns: str) -> None:
    table = table_with_data(catalog, ns, "t")
    own_files = files_under(table)
    assert own_files

    assert purge(client, ns, "t").status_code == 204
    assert [p for p in own_files if p.exists()] == []


def test_delete_after_commit_deletes_only_the_tables_own_old_metadata(
    target: Target, client: httpx.Client, catalog: RestCatalog, ns: str
) -> None:
    table = table_with_data(catalog, ns, "t", appends=1)
    victim = table_with_data(catalog, ns, "victim", appends=1)
    damaged = damaged_copy(table, victim, target.secret)
    metadata = json.loads(damaged.read_text(encoding="utf-8"))
    metadata["properties"] |= {
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1",
    }
    damaged.write_text(json.dumps(metadata), encoding="utf-8")
    own_old = [path_of(entry["metadata-file"]) for entry in metadata["metadata-log"][:-2]]
    assert client.delete(table_url((ns,), "t")).status_code == 204
    body = {"name": "t2", "metadata-location": damaged.as_uri()}
    assert client.post(f"/v1/local/namespaces/{ns}/register", json=body).status_code == 200

    update = {"action": "set-properties", "updates": {"touched": "yes"}}
    response = client.post(table_url((ns,), "t2"), json={"requirements": [], "updates": [update]})

    assert response.status_code == 200, response.text
    assert target.secret.read_text(encoding="utf-8") == SECRET_TEXT
    assert path_of(victim.metadata_location).is_file()
    assert [p for p in own_old if p.exists()] == []
