"""The maintenance policy resolver: catalog < namespace (nearest wins) < table < Iceberg's own properties."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from irc_proxy.errors import NoSuchNamespace
from irc_proxy.handling.maintenance.policy import OncePerNamespace, namespace_layers, resolve
from irc_proxy.handling.maintenance.retention import FOREVER
from irc_proxy.settings import CatalogMaintenanceSettings, ConfigError, load_settings

P = "irc-proxy.maintenance."


def test_defaults_and_catalog_keys_name_their_source() -> None:
    policy = resolve(CatalogMaintenanceSettings(snapshots=7), [], {})
    assert policy.settings.snapshots == 7
    assert policy.sources["snapshots"] == "catalog"
    assert policy.sources["delete_files"] == "default"
    assert policy.retention.max_snapshot_age_ms == 5 * 24 * 3600 * 1000
    assert policy.retention.max_ref_age_ms == FOREVER
    assert policy.gc_enabled


def test_namespace_override_is_inherited_by_a_child_and_the_nearest_wins() -> None:
    parent = {P + "max_snapshot_age": "P10D", P + "snapshots": "20"}
    child = {P + "snapshots": "30"}
    policy = resolve(CatalogMaintenanceSettings(), [("a", parent), ("a.b", child)], {})
    assert policy.settings.max_snapshot_age == timedelta(days=10)
    assert policy.sources["max_snapshot_age"] == "namespace a"
    assert policy.settings.snapshots == 30
    assert policy.sources["snapshots"] == "namespace a.b"


def test_table_override_wins_over_namespace_and_iceberg_property_wins_over_both() -> None:
    namespace = {P + "max_snapshot_age": "P10D", P + "min_snapshots_to_keep": "3"}
    table = {
        P + "max_snapshot_age": "P2D",
        P + "min_snapshots_to_keep": "4",
        "history.expire.min-snapshots-to-keep": "9",
        "write.target-file-size-bytes": "1048576",
        "gc.enabled": "false",
    }
    policy = resolve(CatalogMaintenanceSettings(min_snapshots_to_keep=2), [("a", namespace)], table)
    assert policy.settings.max_snapshot_age == timedelta(days=2)
    assert policy.sources["max_snapshot_age"] == "table"
    assert policy.settings.min_snapshots_to_keep == 9
    assert policy.sources["min_snapshots_to_keep"] == "table property history.expire.min-snapshots-to-keep"
    assert policy.settings.target_file_size_bytes == 1 << 20
    assert policy.retention.min_snapshots_to_keep == 9
    assert not policy.gc_enabled
    assert policy.to_json()["policy"]["gc_enabled"]["source"] == "table property gc.enabled"


def test_invalid_overrides_are_ignored_with_a_warning() -> None:
    table = {
        P + "snapshots": "many",
        P + "no_such_key": "1",
        P + "interval": "PT1S",
        P + "orphan_min_age": "PT1M",
        P + "jobs": "expire-snapshots,vacuum",
        "history.expire.max-snapshot-age-ms": "soon",
    }
    policy = resolve(CatalogMaintenanceSettings(), [], table)
    assert policy.settings == CatalogMaintenanceSettings()
    assert len(policy.warnings) == 6
    assert any("no such key" in w for w in policy.warnings)
    assert any("catalog's settings only" in w for w in policy.warnings)


def test_jobs_and_unsetting_a_duration_from_properties() -> None:
    table = {P + "jobs": "remove-orphan-files, expire-snapshots", P + "enabled": "false"}
    policy = resolve(CatalogMaintenanceSettings(enabled=True, max_ref_age=timedelta(days=1)), [], table)
    assert policy.settings.jobs == ["remove-orphan-files", "expire-snapshots"]
    assert not policy.settings.enabled
    cleared = resolve(CatalogMaintenanceSettings(max_ref_age=timedelta(days=1)), [], {P + "max_ref_age": ""})
    assert cleared.settings.max_ref_age is None


@pytest.mark.parametrize(
    "bad",
    ['interval = "PT0S"', "jobs = []", 'jobs = ["vacuum"]', 'orphan_min_age = "PT5M"', "small_file_ratio = 2"],
)
def test_invalid_catalog_settings_fail_at_load_naming_the_key(tmp_path: Path, bad: str) -> None:
    config = tmp_path / "irc-proxy.toml"
    config.write_text(f'[catalogs.local]\nkind = "local"\n[catalogs.local.maintenance]\n{bad}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"catalogs\.local\.maintenance\." + bad.split(" ", maxsplit=1)[0]):
        load_settings(config, environ={})


def test_once_per_namespace_reads_each_level_once_and_remembers_a_failure() -> None:
    asked: list[tuple[str, ...]] = []

    async def load(namespace: tuple[str, ...]) -> Mapping[str, str]:
        asked.append(namespace)
        if namespace == ("gone",):
            raise NoSuchNamespace("Namespace does not exist: gone")
        return {P + "snapshots": str(len(namespace))}

    once = OncePerNamespace(load)

    async def scenario() -> list[list[tuple[str, Mapping[str, str]]]]:
        found = [await namespace_layers(once, ns) for ns in (("a",), ("a", "b"), ("a", "b"), ("a",), ("c",))]
        for _ in range(2):
            with pytest.raises(NoSuchNamespace):
                await namespace_layers(once, ("gone",))
        return found

    layers = asyncio.run(scenario())
    assert asked == [("a",), ("a", "b"), ("c",), ("gone",)] and once.reads == 4
    assert layers[1] == [("a", {P + "snapshots": "1"}), ("a.b", {P + "snapshots": "2"})] == layers[2]
