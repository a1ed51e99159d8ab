"""What a refused configuration says: the key as written, the nearest known key, the environment variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from irc_proxy.settings import ConfigError, Settings, load_settings
from irc_proxy.settings_messages import known_keys


def refusal(config: str = "", tmp_path: Path | None = None, **environ: str) -> list[str]:
    """The lines of the ConfigError loading ``config`` (a TOML text) with ``environ`` raises."""
    path = None
    if tmp_path is not None:
        path = tmp_path / "c.toml"
        path.write_text(config, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ=environ)
    first, *lines = str(raised.value).splitlines()
    assert first == "invalid configuration:"
    return [line.strip() for line in lines]


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ("[servr]\nport = 1\n", "servr: unknown key (did you mean server?)"),
        ("[server]\nprot = 1\n", "server.prot: unknown key (did you mean port?)"),
        (
            "[catalogs.lake]\nwarehuose = 'file:///x'\n",
            "catalogs.lake.warehuose: unknown key (did you mean warehouse?)",
        ),
        ("[catalogs.g]\nkind = 'glue'\nregoin = 'x'\n", "catalogs.g.regoin: unknown key (did you mean region?)"),
        ("[catalogs.up]\nkind = 'rest'\nurl = 'http://x'\n", "catalogs.up.url: unknown key (did you mean uri?)"),
        ("[auth]\nmod = 'none'\n", "auth.mod: unknown key (did you mean mode?)"),
        ("[server]\ncolour = 'red'\n", "server.colour: unknown key"),
    ],
)
def test_an_unknown_file_key_gets_the_nearest_known_one(tmp_path: Path, config: str, line: str) -> None:
    assert line in refusal(config, tmp_path)


def test_an_environment_typo_names_the_variable_and_its_right_spelling() -> None:
    assert refusal(IRC_PROXY_SERVR__PORT="9000") == [
        "servr: unknown key in environment variable IRC_PROXY_SERVR__PORT (did you mean IRC_PROXY_SERVER__PORT?)"
    ]
    assert refusal(IRC_PROXY_CATALOGS__LAKE__WAREHUOSE="file:///x") == [
        "catalogs.lake.warehuose: unknown key in environment variable IRC_PROXY_CATALOGS__LAKE__WAREHUOSE "
        "(did you mean IRC_PROXY_CATALOGS__LAKE__WAREHOUSE?)"
    ]


def test_several_variables_under_one_unknown_key_are_all_named() -> None:
    (line,) = refusal(IRC_PROXY_SERVR__PORT="1", IRC_PROXY_SERVR__HOST="h")
    assert line.startswith("servr: unknown key in environment variables ")
    assert (
        "IRC_PROXY_SERVR__PORT" in line and "IRC_PROXY_SERVR__HOST" in line and line.endswith("(did you mean server?)")
    )


def test_a_bad_value_from_the_environment_names_the_variable() -> None:
    (line,) = refusal(IRC_PROXY_SERVER__PORT="eighty")
    assert line.startswith("server.port: ") and line.endswith("(environment variable IRC_PROXY_SERVER__PORT)")


def test_a_file_key_is_not_attributed_to_the_environment(tmp_path: Path) -> None:
    lines = refusal("[server]\nport = 'eighty'\n", tmp_path, IRC_PROXY_SERVER__HOST="0.0.0.0")
    assert len(lines) == 1 and "environment" not in lines[0]


@pytest.mark.parametrize(
    ("warehouse", "line"),
    [
        (
            "/data/wh",
            "catalogs.local.warehouse: not a URI with a scheme and a path: /data/wh (a directory is written "
            "file:///data/wh)",
        ),
        (
            "wh",
            "catalogs.local.warehouse: not a URI with a scheme and a path: wh (e.g. file:///srv/warehouse or "
            "s3://bucket/warehouse)",
        ),
        ("s3://", "catalogs.local.warehouse: not a URI with a scheme and a path: s3://"),
    ],
)
def test_a_warehouse_without_a_scheme_is_a_warehouse_problem(warehouse: str, line: str) -> None:
    (found,) = refusal(IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE=warehouse)
    assert found.startswith(line) and "allowed_locations" not in found


def test_a_glue_warehouse_and_a_rest_view_warehouse_are_checked_too(tmp_path: Path) -> None:
    glue = "[catalogs.g]\nkind = 'glue'\nregion = 'us-east-1'\ncatalog_id = '123456789012'\nwarehouse = 'bucket/wh'\n"
    assert refusal(glue, tmp_path)[0].startswith("catalogs.g.warehouse: not a URI with a scheme")
    rest = "[catalogs.up]\nkind = 'rest'\nuri = 'http://x'\nwarehouse = '123'\nview_warehouse = 'views'\n"
    assert refusal(rest, tmp_path)[0].startswith("catalogs.up.view_warehouse: not a URI with a scheme")


def test_a_rest_warehouse_is_the_upstreams_and_needs_no_scheme() -> None:
    settings = load_settings(
        environ={
            "IRC_PROXY_CATALOGS__UP__KIND": "rest",
            "IRC_PROXY_CATALOGS__UP__URI": "http://x",
            "IRC_PROXY_CATALOGS__UP__WAREHOUSE": "123456789012",
        }
    )
    assert settings.catalogs["up"].warehouse == "123456789012"


def test_allowed_locations_written_without_a_scheme_are_still_named_so() -> None:
    (line,) = refusal(IRC_PROXY_CATALOGS__LOCAL__ALLOWED_LOCATIONS="/data/a")
    assert line.startswith("catalogs.local.allowed_locations: not a URI with a scheme")


def test_known_keys_follow_catalog_kinds_and_lists() -> None:
    assert "region" in known_keys(Settings, ("catalogs", "g", "glue"))
    assert "region" not in known_keys(Settings, ("catalogs", "l", "local"))
    assert "secret_hash" in known_keys(Settings, ("auth", "clients", 0))
    assert "port" in known_keys(Settings, ("server",))
