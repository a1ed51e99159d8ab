"""The command line: help (a description and examples everywhere), configuration errors, schema migrations, the
out-of-date refusal, no state database made by accident, and namespaces typed in every form."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.stores.db import head_revision
from tests.support.postgres import scratch_database


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


COMMANDS = [
    ("serve",),
    ("check-config",),
    ("db",),
    ("db", "upgrade"),
    ("db", "status"),
    ("audit",),
    ("audit", "query"),
    ("auth",),
    ("auth", "hash-secret"),
    *[("principals", a) for a in ("list", "create", "delete", "rotate", "assign", "unassign")],
    ("principals",),
    ("roles",),
    *[("roles", a) for a in ("list", "create", "delete")],
    ("grants",),
    *[("grants", a) for a in ("list", "add", "revoke")],
    ("trash",),
    *[("trash", a) for a in ("list", "restore", "expunge")],
    ("maintenance",),
    *[("maintenance", a) for a in ("run", "status", "list")],
]


def test_every_command_is_in_the_help_table() -> None:
    """The table above covers every command the top level lists (a new one must be added to it)."""
    section = run("--help").stdout.split("positional arguments:")[1].split("options:")[0]
    listed = set(re.findall(r"^    (\S+)", section, re.MULTILINE))
    assert listed == {c[0] for c in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_a_description_and_an_example(command: tuple[str, ...]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0, result.stderr
    usage, _, rest = result.stdout.partition("\n\n")
    description = rest.split("\n\n")[0]
    assert usage.startswith(f"usage: irc-proxy {' '.join(command)}")
    assert len(description) > 20 and not description.startswith(("positional", "options")), result.stdout
    examples = result.stdout.split("examples:\n")[1]
    assert f"irc-proxy {' '.join(command)}" in examples, examples


def test_grants_add_lists_the_privileges_in_its_help_not_its_usage_line() -> None:
    out = run("grants", "add", "--help").stdout
    usage = out.split("\n\n")[0]
    assert "table.read" not in usage and "{" not in usage and "PRIVILEGE" in usage
    assert "credentials.write" in out and "namespace.properties" in out
    assert "ROLE" in usage


def test_top_level_help_has_examples_and_answers_fast() -> None:
    """Not a timing test (benchmarks/bench_cli_start.py measures it): --help must import none of the server's
    libraries, which is what made it take 2.5-4 s."""
    probe = (
        "import sys; from irc_proxy.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('pyiceberg', 'pyarrow', 'boto3', 'botocore', 'sqlalchemy', 'sqlmodel', "
        "'starlette', 'pydantic', 'hypercorn', 'alembic', 'httpx') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "examples:" in result.stdout and "irc-proxy serve" in result.stdout
    assert "HEAVY []" in result.stdout, result.stdout[-300:]


STATE_READERS = [
    ("trash", "list"),
    ("trash", "restore", "0123abcd"),
    ("trash", "expunge", "0123abcd"),
    ("audit", "query"),
    ("principals", "list"),
    ("principals", "create", "someone"),
    ("roles", "create", "r"),
    ("grants", "list"),
    ("grants", "add", "r", "table.read", "--catalog", "local"),
    ("maintenance", "run", "sales.orders", "--wait"),
    ("maintenance", "status", "0123abcd"),
    ("maintenance", "list", "--table", "sales.orders"),
]


@pytest.mark.parametrize("command", STATE_READERS, ids=" ".join)
def test_a_command_refuses_without_a_state_database_and_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Run from another directory it used to make ./irc-proxy-data and answer from it (`[]`, nothing)."""
    result = run(*command, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    message = result.stderr.strip()
    assert f"no state database at {tmp_path / 'irc-proxy-data' / 'state.db'}" in message
    assert "--config" in message and "irc-proxy db upgrade" in message
    assert list(tmp_path.iterdir()) == []


def test_the_refusal_names_the_configuration_file_it_read(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text(f'data_dir = "{tmp_path / "nowhere"}"\n')
    result = run("trash", "list", "--config", str(config))
    assert result.returncode == 2
    assert f"no state database at {tmp_path / 'nowhere' / 'state.db'} (configured by {config})" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_db_status_without_a_state_database_is_1_and_creates_nothing(tmp_path: Path) -> None:
    result = run("db", "status", cwd=tmp_path)
    assert result.returncode == 1 and "no state database at" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_empty_sqlite_file_is_no_state_database_either(tmp_path: Path) -> None:
    (tmp_path / "state.db").touch()
    result = run("grants", "list", env={"IRC_PROXY_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2 and f"no state database at {tmp_path / 'state.db'}" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]  # no schema, no lock file
    assert (tmp_path / "state.db").stat().st_size == 0  # not even SQLite's header (it was made a 4 KB database)


@pytest.mark.postgres
def test_a_postgres_database_without_our_schema_is_refused_and_left_empty() -> None:
    with scratch_database() as url:
        result = run("roles", "list", env={"IRC_PROXY_STATE__DATABASE_URL": url})
        assert result.returncode == 2, result.stderr
        assert "no state database at postgresql" in result.stderr and "irc-proxy db upgrade" in result.stderr
        engine = sa.create_engine(url)
        try:
            assert sa.inspect(engine).get_table_names() == []
        finally:
            engine.dispose()


def test_serve_and_db_upgrade_still_create_the_state_database(tmp_path: Path) -> None:
    upgraded = run("db", "upgrade", cwd=tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert (tmp_path / "irc-proxy-data" / "state.db").is_file()
    listed = run("trash", "list", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


@pytest.fixture(scope="module")
def state_with_a_role(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A state database (made by ``db upgrade``) holding role ``r``: the environment that names it."""
    env = {"IRC_PROXY_DATA_DIR": str(tmp_path_factory.mktemp("typed"))}
    assert run("db", "upgrade", env=env).returncode == 0
    assert run("roles", "create", "r", env=env).returncode == 0
    return env


@pytest.mark.parametrize(
    ("typed", "levels"),
    [
        ("sales.eu", ["sales", "eu"]),
        ("sales:eu", ["sales", "eu"]),
        ("sales%1Feu", ["sales", "eu"]),
        ("sales%1feu", ["sales", "eu"]),
        ("new%2Edb", ["new.db"]),
        ("lake:new.db", ["lake", "new.db"]),
        ("a%3Ab:c", ["a:b", "c"]),
        ("x+y", ["x+y"]),
    ],
)
def test_grants_add_takes_a_namespace_in_every_typed_form(
    state_with_a_role: dict[str, str], typed: str, levels: list[str]
) -> None:
    added = run("grants", "add", "r", "table.read", "--catalog", "local", "--namespace", typed, env=state_with_a_role)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["namespace"] == levels


@pytest.mark.parametrize("typed", ["sales..eu", "sales:", "%1Feu"])
def test_an_empty_namespace_level_is_refused(state_with_a_role: dict[str, str], typed: str) -> None:
    refused = run("grants", "add", "r", "table.read", "--catalog", "local", "--namespace", typed, env=state_with_a_role)
    assert refused.returncode == 1 and "must be a non-empty string" in refused.stderr
