"""Settings: a TOML file, ``IRC_PROXY_*`` overrides on top, defaults filled in, every error naming its key; and each
setting defaulted and normalised once, here: the builders in ``app.py`` take the values as they are (every catalog
kind answers ``allowed_locations``; retentions, hosts and byte budgets are derived in ``settings.py``)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from irc_proxy.app import read_limits
from irc_proxy.settings import (
    ConfigError,
    GlueCatalogSettings,
    LocalCatalogSettings,
    RestCatalogSettings,
    ServerSettings,
    Settings,
    load_settings,
)


def error(environ: dict[str, str], path: Path | None = None) -> str:
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ)
    return str(raised.value)


def test_no_configuration_is_one_local_catalog_on_sqlite_files_under_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings(None, {"IRC_PROXY_DATA_DIR": str(tmp_path)})
    assert list(settings.catalogs) == ["local"] and settings.default_catalog == "local"
    local = settings.catalogs["local"]
    assert isinstance(local, LocalCatalogSettings)
    assert local.warehouse == (tmp_path / "warehouse" / "local").as_uri()
    assert local.database_url.get_secret_value() == f"sqlite:///{tmp_path / 'catalog.db'}"
    assert local.allowed_locations == [local.warehouse]
    assert settings.state.database_url.get_secret_value() == f"sqlite:///{tmp_path / 'state.db'}"


def test_the_environment_overrides_the_file_named_by_irc_proxy_config(tmp_path: Path) -> None:
    config = tmp_path / "proxy.toml"
    config.write_text('[server]\nport = 9000\nhost = "0.0.0.0"\n\n[catalogs.lake]\nwarehouse = "s3://lake/wh/"\n')
    settings = load_settings(None, {"IRC_PROXY_CONFIG": str(config), "IRC_PROXY_SERVER__PORT": "9100"})
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9100)
    lake = settings.catalogs["lake"]
    assert isinstance(lake, LocalCatalogSettings)  # ``kind`` left out: local
    assert lake.warehouse == "s3://lake/wh"  # without its trailing slash
    assert settings.default_catalog == "lake"


def test_the_default_catalog_is_the_first_configured_unless_named(tmp_path: Path) -> None:
    config = tmp_path / "proxy.toml"
    config.write_text("[catalogs.b]\n[catalogs.a]\n")
    assert load_settings(config, {}).default_catalog == "b"
    assert load_settings(config, {"IRC_PROXY_DEFAULT_CATALOG": "a"}).default_catalog == "a"
    assert "default_catalog: no catalog named 'c' is configured" in error({"IRC_PROXY_DEFAULT_CATALOG": "c"}, config)


def test_catalog_kinds_are_told_apart_by_their_kind(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        {
            "IRC_PROXY_DATA_DIR": str(tmp_path),
            "IRC_PROXY_CATALOGS__G__KIND": "glue",
            "IRC_PROXY_CATALOGS__G__REGION": "eu-west-1",
            "IRC_PROXY_CATALOGS__G__CATALOG_ID": "123456789012",
            "IRC_PROXY_CATALOGS__G__WAREHOUSE": "s3://bucket/wh/",
            "IRC_PROXY_CATALOGS__R__KIND": "rest",
            "IRC_PROXY_CATALOGS__R__URI": "https://upstream.example.com",
        },
    )
    glue, rest = settings.catalogs["g"], settings.catalogs["r"]
    assert isinstance(glue, GlueCatalogSettings) and glue.allowed_locations == ["s3://bucket/wh"]
    assert isinstance(rest, RestCatalogSettings)
    assert rest.view_warehouse == (tmp_path / "warehouse" / "r").as_uri()  # views of a REST catalog live here


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"IRC_PROXY_SERVER__BOGUS": "1"}, "server.bogus: unknown key"),
        ({"IRC_PROXY_SERVER__PORT": "70000"}, "server.port: Input should be less than or equal to 65535"),
        ({"IRC_PROXY_SERVER____PORT": "1"}, "IRC_PROXY_SERVER____PORT: empty key segment"),
        (
            {"IRC_PROXY_DATA_DIR": "x", "IRC_PROXY_DATA_DIR__FOO": "y"},
            "IRC_PROXY_DATA_DIR__FOO: data_dir is not a table",
        ),
        ({"IRC_PROXY_CATALOGS__NAMESPACES__KIND": "local"}, "catalogs.namespaces: a catalog name must match"),
        ({"IRC_PROXY_CATALOGS__-X__KIND": "local"}, "catalogs.-x: a catalog name must match"),
        ({"IRC_PROXY_CATALOGS__G__KIND": "glue"}, "catalogs.g: missing required key(s) for a glue catalog: region"),
        ({"IRC_PROXY_CATALOGS__R__KIND": "rest", "IRC_PROXY_CATALOGS__R__URI": "ftp://x"}, "catalogs.r.uri: must be"),
        ({"IRC_PROXY_CATALOGS__L__ALLOWED_LOCATIONS": "s3://b/p,nope"}, "catalogs.l.allowed_locations: not a URI"),
        ({"IRC_PROXY_SERVER__ALLOWED_ORIGINS": "https://a.example/x"}, "'https://a.example/x' is not an origin"),
        ({"IRC_PROXY_SERVER__NAMESPACE_SEPARATOR": "::"}, "namespace_separator: must be exactly one character"),
        ({"IRC_PROXY_SERVER__NAMESPACE_SEPARATOR": "."}, "namespace_separator: must not be '.'"),
        ({"IRC_PROXY_SERVER__NAMESPACE_SEPARATOR": "\t"}, "namespace_separator: must not be '.'"),
        ({"IRC_PROXY_SERVER__DROP_RETENTION": "-P1D"}, "drop_retention: must not be negative"),
        ({"IRC_PROXY_SERVER__IDEMPOTENCY_KEY_LIFETIME": "PT0.5S"}, "must be a non-negative whole number of seconds"),
        ({"IRC_PROXY_AUTH__MODE": "oidc"}, "auth.oidc.issuer and auth.oidc.audience are required with mode = oidc"),
    ],
)
def test_an_invalid_setting_is_a_config_error_naming_its_key(environ: dict[str, str], message: str) -> None:
    assert message in error(environ)


def test_every_invalid_key_is_reported_at_once() -> None:
    message = error({"IRC_PROXY_SERVER__BOGUS": "1", "IRC_PROXY_SERVER__PORT": "x"})
    assert message.startswith("invalid configuration:\n  ")
    assert "server.bogus: unknown key" in message and "server.port:" in message


def test_an_unreadable_or_invalid_file_is_a_config_error(tmp_path: Path) -> None:
    assert "cannot read config file" in error({}, tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[server\n")
    assert f"config file {broken} is not valid TOML" in error({}, broken)


def test_comma_separated_origins_are_split_and_lower_cased() -> None:
    settings = load_settings(None, {"IRC_PROXY_SERVER__ALLOWED_ORIGINS": "https://App.Example.com, http://b:8080,"})
    assert settings.server.allowed_origins == ["https://app.example.com", "http://b:8080"]


def test_a_database_password_is_masked_wherever_settings_are_shown() -> None:
    settings = load_settings(None, {"IRC_PROXY_STATE__DATABASE_URL": "postgresql+psycopg://u:hunter2@db/x"})
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings.state.database_url)
    assert settings.state.database_url.get_secret_value() == "postgresql+psycopg://u:hunter2@db/x"


def test_vended_credentials_must_outlive_their_refresh_margin() -> None:
    environ = {
        "IRC_PROXY_CATALOGS__L__VENDING__ROLE_ARN": "arn:aws:iam::123456789012:role/reader",
        "IRC_PROXY_CATALOGS__L__VENDING__DURATION_SECONDS": "900",
        "IRC_PROXY_CATALOGS__L__VENDING__REFRESH_MARGIN_SECONDS": "900",
    }
    assert "refresh_margin_seconds must be less than duration_seconds" in error(environ)
    environ["IRC_PROXY_CATALOGS__L__VENDING__REFRESH_MARGIN_SECONDS"] = "899"
    assert load_settings(None, environ).catalogs["l"].vending is not None  # type: ignore[union-attr]


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


def test_a_configured_client_cannot_take_a_reserved_principal_name(tmp_path: Path) -> None:
    path = tmp_path / "irc-proxy.toml"
    for client in ('id = "irc-proxy"', 'id = "spark"\nprincipal = "anonymous"'):
        path.write_text(f'[[auth.clients]]\n{client}\nsecret_hash = "scrypt$16384$8$1$c2FsdA$aGFzaA"\n')
        assert "is reserved" in error({}, path)


def test_reserved_principal_names_match_the_authenticators() -> None:
    from irc_proxy.handling.security.authn import RESERVED_NAMES
    from irc_proxy.settings import RESERVED_PRINCIPALS

    assert RESERVED_PRINCIPALS == RESERVED_NAMES
