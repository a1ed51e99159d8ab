"""What a new user trips on first: configuration as the README writes it, and the CLI's failures.

Every failure must be one line naming the problem (no stack trace, no password), with the exit code
the README promises.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from irc_proxy.stores.db import head_revision
from tests.support.server import free_port

UNREACHABLE_PG = "postgresql+psycopg://irc:hunter2@127.0.0.1:1/nowhere"


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "irc_proxy", *args], capture_output=True, text=True, env=clean, cwd=cwd, timeout=60
    )


def one_line_failure(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "hunter2" not in result.stderr + result.stdout
    return result.stderr.strip().splitlines()[-1]


def test_readme_environment_example_defines_a_local_catalog_without_kind(tmp_path: Path) -> None:
    """``IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE=...`` is the README's example; ``kind`` defaults to local."""
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path), "IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE": f"file://{tmp_path}/wh"}
    result = run("check-config", env=env)
    assert result.returncode == 0, result.stderr
    assert '"kind": "local"' in result.stdout and f'"warehouse": "file://{tmp_path}/wh"' in result.stdout


def test_toml_catalog_without_kind_is_local(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n[catalogs.lake]\nwarehouse = "file://{tmp_path}/lake"\n')
    result = run("check-config", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert '"lake": {\n      "kind": "local"' in result.stdout


@pytest.mark.parametrize("name", ["local", "glue", "rest", "lake"])
def test_unknown_catalog_key_names_the_catalog(tmp_path: Path, name: str) -> None:
    """Catalogs named like a backend kind keep their name in the message."""
    config = tmp_path / "c.toml"
    config.write_text(f'[catalogs.{name}]\nkind = "local"\nwarehuose = "file:///x"\n')
    line = one_line_failure(run("check-config", "--config", str(config)), 2)
    assert line.strip() == f"catalogs.{name}.warehuose: unknown key (did you mean warehouse?)"


def test_check_config_names_an_environment_typo_and_its_right_spelling(tmp_path: Path) -> None:
    line = one_line_failure(run("check-config", env={"IRC_PROXY_SERVR__PORT": "9000"}, cwd=tmp_path), 2)
    assert line.strip() == (
        "servr: unknown key in environment variable IRC_PROXY_SERVR__PORT (did you mean IRC_PROXY_SERVER__PORT?)"
    )


def test_check_config_suggests_the_nearest_file_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[server]\nprot = 9000\n")
    line = one_line_failure(run("check-config", "--config", str(config)), 2)
    assert line.strip() == "server.prot: unknown key (did you mean port?)"


def test_check_config_reports_a_warehouse_without_a_scheme_as_the_warehouse(tmp_path: Path) -> None:
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path), "IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE": "/srv/wh"}
    line = one_line_failure(run("check-config", env=env), 2)
    assert line.strip() == (
        "catalogs.local.warehouse: not a URI with a scheme and a path: /srv/wh (a directory is written file:///srv/wh)"
    )


def test_value_errors_read_as_sentences(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[catalogs.lake]\nkind = "glue"\n')
    line = one_line_failure(run("check-config", "--config", str(config)), 2)
    assert line.strip() == "catalogs.lake: missing required key(s) for a glue catalog: region, catalog_id, warehouse"


@pytest.mark.parametrize(
    ("url", "expected"),
    [(UNREACHABLE_PG, "Connection refused"), ("notaurl", "Could not parse"), ("bogus://x", "bogus")],
)
@pytest.mark.parametrize("command", [["db", "status"], ["db", "upgrade"], ["audit", "query"], ["roles", "list"]])
def test_unusable_state_database_is_one_line(tmp_path: Path, url: str, expected: str, command: list[str]) -> None:
    line = one_line_failure(run(*command, env={"IRC_PROXY_STATE__DATABASE_URL": url}, cwd=tmp_path), 1)
    assert line.startswith("irc-proxy: state database: ") and expected in line


def test_serve_with_unusable_state_database_refuses_to_start(tmp_path: Path) -> None:
    env = {"IRC_PROXY_STATE__DATABASE_URL": UNREACHABLE_PG}
    line = one_line_failure(run("serve", "--port", str(free_port()), env=env, cwd=tmp_path), 2)
    assert line.startswith("irc-proxy: refusing to start: state database: ") and "Connection refused" in line


def test_serve_with_unreachable_catalog_database_refuses_to_start(tmp_path: Path) -> None:
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path), "IRC_PROXY_CATALOGS__LOCAL__DATABASE_URL": UNREACHABLE_PG}
    line = one_line_failure(run("serve", "--port", str(free_port()), env=env, cwd=tmp_path), 2)
    assert line.startswith("irc-proxy: refusing to start: ") and "Connection refused" in line


def test_audit_query_on_a_fresh_data_dir_refuses_and_creates_nothing(tmp_path: Path) -> None:
    """It used to create an empty state database there and print nothing (issue 27)."""
    result = run("audit", "query", env={"IRC_PROXY_DATA_DIR": str(tmp_path / "data")})
    line = one_line_failure(result, 2)
    assert f"no state database at {tmp_path / 'data' / 'state.db'}" in line and "--config" in line
    assert result.stdout == "" and not (tmp_path / "data").exists()


def test_audit_query_with_no_matching_record_says_so_on_stderr_only(tmp_path: Path) -> None:
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path)}
    assert run("db", "upgrade", env=env).returncode == 0
    result = run("audit", "query", "--principal", "nobody", env=env)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.strip() == "irc-proxy: no audit records match"
    assert run("audit", "query", "--principal", "nobody", "--json", env=env).stderr == ""


def test_db_upgrade_twice_says_up_to_date(tmp_path: Path) -> None:
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path)}
    first = run("db", "upgrade", env=env)
    assert first.returncode == 0 and "catalog local: tables created" in first.stdout, first.stdout
    again = run("db", "upgrade", env=env)
    assert again.returncode == 0
    assert again.stdout.splitlines() == [
        f"state database is up to date: {head_revision()}",
        "catalog local: tables are up to date",
    ]


def test_model_level_errors_name_their_key_without_noise(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('default_catalog = "nope"\n[catalogs.a]\n[catalogs.b]\n')
    line = one_line_failure(run("check-config", "--config", str(config)), 2)
    assert line.strip() == "default_catalog: no catalog named 'nope' is configured"


def test_serve_on_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        line = one_line_failure(run("serve", "--port", str(port), env={"IRC_PROXY_DATA_DIR": str(tmp_path)}), 2)
    assert line == f"irc-proxy: refusing to start: cannot listen on 127.0.0.1:{port}: Address already in use"
