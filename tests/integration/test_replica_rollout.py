"""Replicas that start together on one fresh PostgreSQL database all start (issue 30).

Schema changes (the state database's migrations, the local catalog's tables) run under the database's
schema lock, so eight ``irc-proxy serve`` started at the same moment on a database prepared with
``irc-proxy db upgrade`` (and four on one never upgraded) all serve, and the catalog they share works.
``IRC_PROXY_TEST_ROLLOUT_ROUNDS`` repeats each case (default 1), ``IRC_PROXY_TEST_FRESH_REPLICAS`` sets the
never-upgraded count.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess, write_config

pytestmark = pytest.mark.postgres

REPLICAS = 8
FRESH_REPLICAS = int(os.environ.get("IRC_PROXY_TEST_FRESH_REPLICAS", "4"))
"""Starts on a never-upgraded database (fewer by default: every start costs seconds of CPU in CI)."""
ROUNDS = int(os.environ.get("IRC_PROXY_TEST_ROLLOUT_ROUNDS", "1"))


def _config(url: str, warehouse: Path) -> str:
    return (
        f'[state]\ndatabase_url = "{url}"\n'
        f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}"\n'
    )


def _db_upgrade(workdir: Path, config: str) -> subprocess.CompletedProcess[str]:
    path = write_config(workdir, config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")}
    command = [sys.executable, "-m", "irc_proxy", "db", "upgrade", "--config", str(path)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)


def _start_together(tmp_path: Path, config: str, count: int) -> list[ProxyProcess | str]:
    """Start ``count`` proxies at once; each is a started process or the log of one that failed."""
    proxies = [ProxyProcess(tmp_path / f"replica{i}", config) for i in range(count)]

    def start(proxy: ProxyProcess) -> ProxyProcess | str:
        try:
            return proxy.start(timeout=90)
        except RuntimeError as exc:
            return str(exc)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(start, proxies))


@pytest.mark.parametrize("upgraded", [True, False], ids=["after-db-upgrade", "never-upgraded"])
def test_eight_replicas_started_together_on_a_fresh_database_all_start(tmp_path: Path, upgraded: bool) -> None:
    count = REPLICAS if upgraded else FRESH_REPLICAS
    for round_ in range(ROUNDS):
        root = tmp_path / f"round{round_}"
        with scratch_database() as url:
            root.mkdir()
            (root / "wh").mkdir()
            config = _config(url, root / "wh")
            if upgraded:
                (root / "cli").mkdir()
                done = _db_upgrade(root / "cli", config)
                assert done.returncode == 0, done.stderr
                assert "catalog local: tables created" in done.stdout, done.stdout
                tables = set(sa.inspect(sa.create_engine(url, poolclass=sa.pool.NullPool)).get_table_names())
                assert {"iceberg_tables", "iceberg_namespace_properties", "alembic_version"} <= tables
            for i in range(count):
                (root / f"replica{i}").mkdir()
            started = _start_together(root, config, count)
            try:
                failed = [log for log in started if isinstance(log, str)]
                print(f"\nround {round_} ({'upgraded' if upgraded else 'fresh'}): {count - len(failed)}/{count}")
                assert not failed, failed[0]
                live = [p for p in started if isinstance(p, ProxyProcess)]
                # They share one catalog: a namespace created through one is seen through every other.
                namespace = f"rollout{round_}"
                created = httpx.post(f"{live[0].url}/v1/local/namespaces", json={"namespace": [namespace]}, timeout=30)
                assert created.status_code == 200, created.text
                for replica in live:
                    assert httpx.head(f"{replica.url}/v1/local/namespaces/{namespace}", timeout=30).status_code == 204
            finally:
                for outcome in started:
                    if isinstance(outcome, ProxyProcess):
                        outcome.stop()
