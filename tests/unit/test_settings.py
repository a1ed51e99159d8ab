"""Each setting is defaulted and normalised once, in ``settings.py``: the builders in ``app.py`` take the values as
they are (every catalog kind answers ``allowed_locations``; retentions, hosts and byte budgets are derived there)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from irc_proxy.app import read_limits
from irc_proxy.settings import ServerSettings, Settings, load_settings

GLUE: dict[str, object] = {
    "kind": "glue",
    "region": "eu-west-1",
    "catalog_id": "123456789012",
    "warehouse": "s3://lake/wh/",
}


def settings(tmp_path: Path, **catalogs: dict[str, object]) -> Settings:
    return Settings.model_validate({"data_dir": str(tmp_path), "catalogs": catalogs})


def test_every_catalog_kind_has_normalised_allowed_locations(tmp_path: Path) -> None:
    found = settings(
        tmp_path,
        mine={},
        own={"warehouse": "file:///srv/wh/", "allowed_locations": ["file:///srv/a/", "s3://b/c"]},
        glue=GLUE,
        remote={"kind": "rest", "uri": "https://upstream.example/api"},
    ).catalogs
    assert found["mine"].allowed_locations == [(tmp_path / "warehouse" / "mine").as_uri()]
    assert found["own"].allowed_locations == ["file:///srv/a", "s3://b/c"]
    assert found["glue"].allowed_locations == ["s3://lake/wh"]
    # A remote catalog keeps only its views' files here: in its view warehouse (a default under data_dir).
    assert found["remote"].allowed_locations == [(tmp_path / "warehouse" / "remote").as_uri()]
    assert [c.allow_overlapping_locations for c in found.values()] == [False, False, False, False]


def test_overlapping_locations_are_a_local_or_glue_catalogs_choice(tmp_path: Path) -> None:
    found = settings(
        tmp_path, mine={"allow_overlapping_locations": True}, glue=GLUE | {"allow_overlapping_locations": True}
    )
    assert found.catalogs["mine"].allow_overlapping_locations and found.catalogs["glue"].allow_overlapping_locations


def test_a_catalogs_drop_retention_is_its_own_else_the_servers(tmp_path: Path) -> None:
    found = Settings.model_validate(
        {
            "data_dir": str(tmp_path),
            "server": {"drop_retention": "P2D"},
            "catalogs": {
                "kept": {"drop_retention": "PT1H"},
                "final": {"drop_retention": "PT0S"},
                "inherits": {},
                "glue": GLUE,
                "remote": {"kind": "rest", "uri": "https://upstream.example/api"},
            },
        }
    )
    assert found.drop_retentions == {
        "kept": timedelta(hours=1),
        "final": timedelta(0),  # PT0S is a retention (drops are final at once), not "unset"
        "inherits": timedelta(days=2),
        "glue": timedelta(days=2),
        "remote": timedelta(days=2),
    }
    assert Settings.model_validate({"data_dir": str(tmp_path)}).drop_retentions == {"local": timedelta(days=7)}


def test_accepted_hosts_default_to_the_bind_address_and_loopback_names() -> None:
    assert ServerSettings().accepted_hosts == ["127.0.0.1", "localhost", "::1"]
    assert ServerSettings(host="Proxy.Example").accepted_hosts == ["proxy.example", "localhost", "127.0.0.1", "::1"]
    assert ServerSettings(allowed_hosts=[]).accepted_hosts == ["127.0.0.1", "localhost", "::1"]
    assert ServerSettings.model_validate({"allowed_hosts": "a.example, *.b.example"}).accepted_hosts == [
        "a.example",
        "*.b.example",
    ]


def test_cache_budgets_are_given_in_mebibytes_and_used_in_bytes() -> None:
    server = ServerSettings.model_validate({"metadata_cache_mb": 3, "scan_planning": {"manifest_cache_mb": 5}})
    assert server.metadata_cache_bytes == 3 << 20 and server.scan_planning.manifest_cache_bytes == 5 << 20
    assert ServerSettings().metadata_cache_bytes == 64 << 20
    assert ServerSettings().scan_planning.manifest_cache_bytes == 256 << 20


def test_read_limits_are_the_servers_metadata_bound_and_storage_timeout() -> None:
    default = read_limits(ServerSettings())
    assert (default.max_bytes, default.timeout) == (64 * 1024 * 1024, 10.0)  # the documented defaults, unchanged
    own = read_limits(ServerSettings(max_metadata_bytes=4096, storage_timeout_seconds=2.5))
    assert (own.max_bytes, own.timeout) == (4096, 2.5)


def test_the_environment_reaches_the_normalised_values(tmp_path: Path) -> None:
    environ = {
        "IRC_PROXY_DATA_DIR": str(tmp_path),
        "IRC_PROXY_SERVER__ALLOWED_HOSTS": "catalog.example",
        "IRC_PROXY_CATALOGS__LAKE__WAREHOUSE": "s3://lake/wh/",
        "IRC_PROXY_CATALOGS__LAKE__DROP_RETENTION": "PT5M",
    }
    found = load_settings(environ=environ)
    assert found.server.accepted_hosts == ["catalog.example"]
    assert found.catalogs["lake"].allowed_locations == ["s3://lake/wh"]
    assert found.drop_retentions == {"lake": timedelta(minutes=5)}
