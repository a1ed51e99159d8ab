"""Start-up imports only what the configuration needs (docs/contributing.md, "Deferred imports").

A fresh interpreter starts the default zero-config app (a local catalog, the console on) through its lifespan
and answers ``/healthz``, on a state database already at the newest schema revision (as every start after the
first finds it) and on a new one (every first start, every test's proxy: its schema is made from the models):
boto3 (~0.4 s), Alembic (~0.5 s) and pyarrow (~0.5 s) must still be absent; they are imported where an AWS
catalog, an upgrade of an older schema or a file read first needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from irc_proxy.stores.db import HEAD_REVISION
from tests.support.server import write_config

ROOT = Path(__file__).resolve().parents[2]
DEFERRED = {"boto3", "botocore.session", "alembic", "pyarrow", "pyiceberg.io.pyarrow"}
_SCRIPT = """
import json, sys
from pathlib import Path
from tests.support.in_process import in_process

with in_process(Path(sys.argv[1])) as proxy, proxy.client() as http:
    assert http.get("/healthz").status_code == 200
print(json.dumps(sorted(sys.modules)))
"""
_CLI = """
import json, sys
from irc_proxy.cli import main

assert main(sys.argv[1:]) == 0
print(json.dumps(sorted(sys.modules)))
"""


def _python(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("database", ["upgraded", "new"])
def test_the_default_config_starts_without_boto3_alembic_or_pyarrow(tmp_path: Path, database: str) -> None:
    config = write_config(tmp_path)
    if database == "upgraded":
        _python("-m", "irc_proxy", "db", "upgrade", "--config", str(config))  # the first start's schema
    else:
        assert not (tmp_path / "data").exists()  # nothing there yet: the start makes the state database
    loaded = set(json.loads(_python("-c", _SCRIPT, str(tmp_path)).strip().splitlines()[-1]))
    assert loaded & DEFERRED == set()


def test_db_upgrade_makes_a_new_database_without_alembic(tmp_path: Path) -> None:
    """``irc-proxy db upgrade`` on a new database makes it from the models too (tests run it often)."""
    config = write_config(tmp_path)
    printed = _python("-c", _CLI, "db", "upgrade", "--config", str(config)).strip().splitlines()
    assert f"state database upgraded: empty -> {HEAD_REVISION}" in printed
    assert "alembic" not in set(json.loads(printed[-1]))
    status = _python("-m", "irc_proxy", "db", "status", "--config", str(config))  # exit 0: at the newest revision
    assert f"state database revision: {HEAD_REVISION}" in status
