"""Attacks on run credentials (``handling/security/run_tokens.py``), the tokens a ``spark`` maintenance run's driver
calls the proxy with: whoever obtains one (a Spark executor's memory, a cluster's logs) must be able to do no more
than the run itself — read and commit to its one table, while the run is running and until it expires — on an
``oauth2`` proxy with grants.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, insert, update

from irc_proxy.handling.maintenance.spark import SparkExecutor, SparkSettings
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.paging import new_key
from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.handling.security.run_tokens import PREFIX, RunCredentials
from irc_proxy.stores.db import create_state_engine
from irc_proxy.stores.maintenance import RUNS, new_run
from irc_proxy.stores.page_keys import shared_page_keys
from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.maintenance import runs_url
from tests.support.rest import MGMT

ROOT_SECRET = "root-secret-run-credentials"
CONFIG = f"""
[server.maintenance]
max_concurrent_runs = 0
[auth]
mode = "oauth2"
admins = ["root"]
[[auth.clients]]
id = "root"
secret_hash = "{hash_secret(ROOT_SECRET)}"
[catalogs.local]
kind = "local"
"""
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture(scope="module")
def proxy(serve_in_process: ServeInProcess) -> InProcessProxy:
    return serve_in_process(CONFIG, "run-credentials")


@pytest.fixture(scope="module")
def state(proxy: InProcessProxy) -> Iterator[Engine]:
    """The proxy's state database (its worker runs nothing here: ``max_concurrent_runs = 0``)."""
    engine = create_state_engine(f"sqlite:///{Path(proxy.workdir) / 'data' / 'state.db'}")
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def credentials(state: Engine) -> RunCredentials:
    """Minting as the proxy does: with the page-token key the replicas share through the state database."""
    return RunCredentials(shared_page_keys(state, new_key))


def running(state: Engine, ident: TableIdent) -> str:
    """A run of ``ident`` as a worker holds it while its Spark driver works: its id."""
    run = replace(
        new_run("local", ident.namespace, ident.name, ["rewrite-data-files"], False, "root"), status="running"
    )
    with state.begin() as conn:
        conn.execute(
            insert(RUNS).values(
                id=run.id,
                catalog=run.catalog,
                namespace=json.dumps(list(run.namespace)),
                name=run.name,
                jobs=json.dumps(list(run.jobs)),
                dry_run=False,
                status=run.status,
                requested_by=run.requested_by,
                created_at=run.created_at,
            )
        )
    return run.id


@pytest.fixture(scope="module")
def root(proxy: InProcessProxy) -> Iterator[httpx.Client]:
    with proxy.client() as http:
        token = issue_token_in(http)
        http.headers["Authorization"] = f"Bearer {token}"
        for ns, name in (("mine", "t"), ("mine", "other"), ("theirs", "t")):
            http.post("/v1/local/namespaces", json={"namespace": [ns]})
            created = http.post(f"/v1/local/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA})
            assert created.status_code == 200, created.text
        yield http


def issue_token_in(http: httpx.Client) -> str:
    data = {"grant_type": "client_credentials", "client_id": "root", "client_secret": ROOT_SECRET}
    response = http.post("/v1/oauth/tokens", data=data)
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def as_run(proxy: InProcessProxy, token: str) -> httpx.Client:
    return proxy.client(headers={"Authorization": f"Bearer {token}"})


def properties_commit(value: str) -> dict[str, object]:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {"touched": value}}]}


def test_a_run_credential_reads_and_commits_to_its_own_table_only(
    proxy: InProcessProxy, root: httpx.Client, credentials: RunCredentials, state: Engine
) -> None:
    ident = TableIdent(("mine",), "t")
    token = credentials.mint(running(state, ident), "local", ident, 60)
    with as_run(proxy, token) as run:
        assert run.get("/v1/local/namespaces/mine/tables/t").status_code == 200
        assert run.post("/v1/local/namespaces/mine/tables/t", json=properties_commit("yes")).status_code == 200
        for path in ("/v1/local/namespaces/mine/tables/other", "/v1/local/namespaces/theirs/tables/t"):
            assert run.get(path).status_code == 403
            assert run.post(path, json=properties_commit("no")).status_code == 403
        created = run.post("/v1/local/namespaces/mine/tables", json={"name": "new", "schema": SCHEMA})
        assert created.status_code == 403
        assert run.delete("/v1/local/namespaces/mine/tables/t").status_code == 403
    assert root.get("/v1/local/namespaces/mine/tables/other").json()["metadata"]["properties"].get("touched") is None


def test_a_run_credential_cannot_use_the_admin_api_or_request_runs(
    proxy: InProcessProxy, root: httpx.Client, credentials: RunCredentials, state: Engine
) -> None:
    ident = TableIdent(("mine",), "t")
    token = credentials.mint(running(state, ident), "local", ident, 60)
    with as_run(proxy, token) as run:
        assert run.get(f"{MGMT}/principals").status_code == 403
        assert run.post(f"{MGMT}/roles", json={"name": "escalate"}).status_code == 403
        body = {"table": {"namespace": ["mine"], "name": "t"}, "jobs": ["rewrite-data-files"]}
        assert run.post(runs_url(), json=body).status_code == 403


@pytest.mark.parametrize("kind", ["expired", "forged", "edited", "other-proxy", "unknown-run"])
def test_expired_forged_or_edited_run_credentials_are_401(
    proxy: InProcessProxy, root: httpx.Client, credentials: RunCredentials, state: Engine, kind: str
) -> None:
    ident = TableIdent(("mine",), "t")
    run_id = running(state, ident)
    token = credentials.mint(run_id, "local", ident, 60)
    if kind == "expired":
        token = credentials.mint(run_id, "local", ident, -1)
    elif kind == "unknown-run":  # signed by this proxy for a run that does not exist
        token = credentials.mint("run-3", "local", ident, 60)
    elif kind == "forged":
        token = f"{PREFIX}{token[len(PREFIX) :].split('.')[0]}.{base64.urlsafe_b64encode(b'x' * 32).decode()}"
    elif kind == "edited":  # the same signature over a body naming another table
        body, signature = token[len(PREFIX) :].split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        claims["ns"] = ["theirs"]
        edited = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        token = f"{PREFIX}{edited}.{signature}"
    else:  # minted with another proxy's key
        token = RunCredentials([new_key()]).mint(run_id, "local", ident, 60)
    with as_run(proxy, token) as run:
        assert run.get("/v1/local/namespaces/mine/tables/t").status_code == 401
        assert run.get("/v1/local/namespaces/theirs/tables/t").status_code == 401


def test_a_run_credential_dies_with_its_run(
    proxy: InProcessProxy, root: httpx.Client, credentials: RunCredentials, state: Engine
) -> None:
    """Read from a cluster's logs after the run finished, the credential is refused though it has not expired."""
    ident = TableIdent(("mine",), "t")
    run_id = running(state, ident)
    token = credentials.mint(run_id, "local", ident, 3600)
    with as_run(proxy, token) as run:
        assert run.get("/v1/local/namespaces/mine/tables/t").status_code == 200
        with state.begin() as conn:
            conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(status="succeeded"))
        assert run.get("/v1/local/namespaces/mine/tables/t").status_code == 401
        assert run.post("/v1/local/namespaces/mine/tables/t", json=properties_commit("late")).status_code == 401
    other = running(state, TableIdent(("theirs",), "t"))  # a live run of another table: not this credential's
    with as_run(proxy, credentials.mint(other, "local", ident, 3600)) as run:
        assert run.get("/v1/local/namespaces/mine/tables/t").status_code == 401


FAKE_DRIVER = """#!/bin/sh
env > "$FAKE_OUT/env"; echo "$0 $@" > "$FAKE_OUT/args"; cat > "$FAKE_OUT/stdin"; sleep "$FAKE_SLEEP"
echo 'IRC-PROXY-RESULT {"jobs": {"rewrite-data-files": {"status": "succeeded", "data-files-added": 1}}}'
"""


def fake_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleep: float, timeout: float) -> SparkExecutor:
    """The spark executor with a stand-in for the driver's Python: it records what a process listing would show."""
    driver = tmp_path / "python"
    driver.write_text(FAKE_DRIVER)
    driver.chmod(0o755)
    monkeypatch.setenv("FAKE_OUT", str(tmp_path))
    monkeypatch.setenv("FAKE_SLEEP", str(sleep))
    monkeypatch.setenv("IRC_PROXY_STATE__DATABASE_URL", "postgresql://u:database-password@db/state")
    settings = SparkSettings(uri="http://127.0.0.1:1", warehouse="local", python=str(driver), timeout_seconds=timeout)
    return SparkExecutor(settings, RunCredentials([new_key()]))


def test_a_spark_run_hands_its_credential_over_on_stdin_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a process listing (``ps``, ``/proc/*/cmdline``, ``/proc/*/environ``) shows of the child holds no
    credential, and the proxy's own ``IRC_PROXY_*`` settings (database passwords, secrets) are not passed on."""
    executor = fake_executor(tmp_path, monkeypatch, 0, 30)
    found = asyncio.run(executor.run("run-4", "local", TableIdent(("mine",), "t"), ["rewrite-data-files"], 2))
    assert found == {"rewrite-data-files": {"status": "succeeded", "data-files-added": 1}}
    token = json.loads((tmp_path / "stdin").read_text())["token"]
    assert token.startswith(PREFIX)
    assert token not in (tmp_path / "args").read_text() and token not in (tmp_path / "env").read_text()
    assert "database-password" not in (tmp_path / "env").read_text()


def test_a_spark_run_past_its_timeout_is_killed_and_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    executor = fake_executor(tmp_path, monkeypatch, 60, 0.5)
    started = time.monotonic()
    found = asyncio.run(executor.run("run-5", "local", TableIdent(("mine",), "t"), ["rewrite-data-files"], 2))
    assert time.monotonic() - started < 10
    assert found["rewrite-data-files"]["status"] == "failed"
    assert "spark_timeout" in found["rewrite-data-files"]["error"]
