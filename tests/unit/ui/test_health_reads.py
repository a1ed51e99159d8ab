"""A table's health panel counts its manifests' entries within its bound and says when it stopped
(``ui.health_reads.measure``), over an in-memory manifest source."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus, ManifestFile

from irc_proxy.errors import Forbidden
from irc_proxy.handling.maintenance.policy import resolve
from irc_proxy.planning.manifests import ManifestSource
from irc_proxy.settings import CatalogMaintenanceSettings
from irc_proxy.ui import health_reads
from irc_proxy.ui.budget import Deadline
from irc_proxy.ui.preview import OpenedTable
from tests.unit.handling.maintenance.test_health import metadata

POLICY = resolve(CatalogMaintenanceSettings(small_files=6), [], {})


class Manifests(ManifestSource):
    """``count`` manifests of two small data files each; the manifest named ``refused`` is outside the table."""

    def __init__(self, count: int, refused: int | None = None) -> None:
        super().__init__(None, "t", lambda path, what: b"", lambda path: True)
        self.count, self.refused = count, refused

    def manifest_list(self, path: str) -> list[ManifestFile]:
        return [
            ManifestFile.from_args(
                manifest_path=f"file:///w/t/metadata/m{i}.avro",
                manifest_length=1,
                partition_spec_id=0,
                added_snapshot_id=1,
            )
            for i in range(self.count)
        ]

    def entries(self, manifest: ManifestFile) -> list[ManifestEntry]:
        if manifest.manifest_path.endswith(f"m{self.refused}.avro"):
            raise Forbidden(f"The table's manifest {manifest.manifest_path} lies outside the allowed locations")
        files = [
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"{manifest.manifest_path}-{j}.parquet",
                file_format=FileFormat.PARQUET,
                partition={},
                record_count=1,
                file_size_in_bytes=10,
            )
            for j in range(2)
        ]
        return [ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=1, data_file=f) for f in files]


def opened(manifests: ManifestSource) -> OpenedTable:
    table: Any = metadata({})
    return OpenedTable(table, manifests, lambda path, what, size: b"", lambda path: True)


def test_every_entry_is_counted_when_within_the_bound() -> None:
    measured = health_reads.measure(opened(Manifests(3)), POLICY, Deadline.after(5))
    assert (measured.health.data_files, measured.health.manifests, measured.health.small_files) == (6, 3, 6)
    assert measured.health.complete and measured.notes == []
    assert "6 small data files, threshold 6 (rewrite-data-files)" in measured.reasons


def test_past_the_bound_the_numbers_are_lower_bounds_and_the_page_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health_reads, "MAX_ENTRIES", 5)
    measured = health_reads.measure(opened(Manifests(3)), POLICY, Deadline.after(5))
    assert (measured.health.data_files, measured.health.manifests) == (4, 2)
    assert not measured.health.complete and "lower bounds" in measured.notes[0]


def test_a_manifest_outside_the_table_stops_the_count_and_is_named() -> None:
    measured = health_reads.measure(opened(Manifests(3, refused=1)), POLICY, Deadline.after(5))
    assert (measured.health.data_files, measured.health.manifests) == (2, 1)
    assert not measured.health.complete and "outside the allowed locations" in measured.notes[0]
