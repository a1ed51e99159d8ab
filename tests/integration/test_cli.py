"""The command line: help, configuration errors, schema migrations and the out-of-date refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from irc_proxy.stores.db import head_revision


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "irc_proxy", *args], capture_output=True, text=True, env=clean, cwd=cwd, timeout=60
    )


def test_help_lists_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("serve", "check-config", "db"):
        assert command in result.stdout


def test_unknown_key_and_bad_values_are_named(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[server]\nport = "eighty"\nnamespace_separator = "."\ncolour = "red"\n')
    result = run("check-config", "--config", str(config))
    assert result.returncode == 2
    assert "server.port" in result.stderr
    assert "server.namespace_separator" in result.stderr
    assert "server.colour: unknown key" in result.stderr


def test_environment_overrides_are_validated_and_applied(tmp_path: Path) -> None:
    bad = run("check-config", env={"IRC_PROXY_SERVER__WORKERZ": "2"}, cwd=tmp_path)
    assert bad.returncode == 2 and "server.workerz: unknown key" in bad.stderr
    good = run("check-config", env={"IRC_PROXY_SERVER__PORT": "9999", "IRC_PROXY_DATA_DIR": str(tmp_path)})
    assert good.returncode == 0 and '"port": 9999' in good.stdout


def test_unreadable_config_file_fails(tmp_path: Path) -> None:
    result = run("serve", "--config", str(tmp_path / "missing.toml"))
    assert result.returncode == 2 and "cannot read config file" in result.stderr


def test_db_upgrade_and_status(tmp_path: Path) -> None:
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path)}
    assert run("db", "status", env=env).returncode == 1
    upgraded = run("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"empty -> {head_revision()}" in upgraded.stdout
    status = run("db", "status", env=env)
    assert status.returncode == 0 and f"revision: {head_revision()}" in status.stdout


def test_serve_refuses_an_out_of_date_schema(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("create table alembic_version (version_num varchar(32) primary key)"))
        conn.execute(sa.text("insert into alembic_version values ('0000')"))
    engine.dispose()
    result = run("serve", "--port", "0", env={"IRC_PROXY_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert "irc-proxy db upgrade" in result.stderr and "0000" in result.stderr
