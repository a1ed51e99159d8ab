"""Management through one handler: the command line and the management API create principals all or nothing,
answer in one JSON shape, and are audited alike (the command line as ``cli:<local user>``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from irc_proxy.cli_trash import cli_principal
from tests.support.console import root_config
from tests.support.rest import MGMT, assert_error, bearer_client, issue_token
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "root-secret-for-management-tests"
CONFIG = root_config(ROOT_SECRET)


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "management")


@pytest.fixture(scope="module")
def root(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with bearer_client(proxy.url, "root", ROOT_SECRET) as client:
        yield client


def cli(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "irc_proxy", *args, "--config", str(proxy.config_path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def printed(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cli_create_with_a_missing_role_creates_nothing(proxy: ProxyProcess, root: httpx.Client) -> None:
    assert root.post(f"{MGMT}/roles", json={"name": "present"}).status_code == 201
    refused = cli(proxy, "principals", "create", "etl-job", "--role", "present", "--role", "analysts")
    assert refused.returncode == 1 and "Roles do not exist: analysts" in refused.stderr
    assert refused.stdout == ""  # no secret of a principal that does not exist
    assert_error(root.get(f"{MGMT}/principals/etl-job"), 404, "NotFoundException")
    assert "etl-job" not in {p["name"] for p in printed(cli(proxy, "principals", "list"))["principals"]}
    # Once the role exists the same command works: nothing was left behind to collide with.
    assert root.post(f"{MGMT}/roles", json={"name": "analysts"}).status_code == 201
    created = printed(cli(proxy, "principals", "create", "etl-job", "--role", "present", "--role", "analysts"))
    assert created["principal"]["roles"] == ["analysts", "present"]
    assert issue_token(proxy.url, created["credentials"]["client-id"], created["credentials"]["client-secret"])


def test_api_create_with_a_missing_role_creates_nothing(root: httpx.Client) -> None:
    assert root.post(f"{MGMT}/roles", json={"name": "api-present"}).status_code == 201
    body = {"name": "api-job", "roles": ["api-present", "api-missing"]}
    assert_error(root.post(f"{MGMT}/principals", json=body), 400, "BadRequestException", "api-missing")
    assert_error(root.get(f"{MGMT}/principals/api-job"), 404, "NotFoundException")


def test_cli_prints_the_management_apis_bodies(proxy: ProxyProcess, root: httpx.Client) -> None:
    assert printed(cli(proxy, "roles", "create", "shape-role")) == {"name": "shape-role", "grants": []}
    added = printed(cli(proxy, "grants", "add", "shape-role", "table.read", "--catalog", "*", "--namespace", "a.b"))
    assert printed(cli(proxy, "grants", "list", "--role", "shape-role")) == {"grants": [added]}
    assert root.get(f"{MGMT}/roles/shape-role/grants").json() == {"grants": [added]}
    via_api = root.post(f"{MGMT}/roles/shape-role/grants", json={"privilege": "table.read", "catalog": "*",
                                                                "namespace": ["a", "b"]})  # fmt: skip
    assert via_api.status_code == 201 and via_api.json() == added  # the same grant, the same object
    table = printed(
        cli(proxy, "grants", "add", "shape-role", "all", "--catalog", "*", "--namespace", "a", "--table", "t")
    )
    assert table == root.get(f"{MGMT}/roles/shape-role").json()["grants"][1] and table["table"] == "t"

    created = printed(cli(proxy, "principals", "create", "shape-user", "--role", "shape-role", "--no-credentials"))
    assert created == {"principal": root.get(f"{MGMT}/principals/shape-user").json()}
    assert printed(cli(proxy, "principals", "list")) == root.get(f"{MGMT}/principals").json()
    assert printed(cli(proxy, "roles", "list")) == root.get(f"{MGMT}/roles").json()
    rotated = printed(cli(proxy, "principals", "rotate", "shape-user"))
    assert set(rotated) == {"credentials"} and rotated["credentials"]["client-id"] == "shape-user"
    assert issue_token(proxy.url, "shape-user", rotated["credentials"]["client-secret"])


def test_cli_refuses_names_the_api_refuses(proxy: ProxyProcess, root: httpx.Client) -> None:
    for name in ("bad\x01name", "x" * 256):
        refused = cli(proxy, "roles", "create", name)
        assert refused.returncode == 1 and "Invalid role name" in refused.stderr
        assert "\x01" not in refused.stderr
    assert not [role for role in root.get(f"{MGMT}/roles").json()["roles"] if role.startswith(("bad", "xxx"))]


def _records(root: httpx.Client, **query: str) -> list[dict[str, Any]]:
    deadline, found = time.monotonic() + 15, list[dict[str, Any]]()
    while time.monotonic() < deadline and not found:
        response = root.get(f"{MGMT}/audit", params={"principal": cli_principal(), **query})
        found = response.json()["records"]
        time.sleep(0.2)
    return list(found)


def test_cli_grant_changes_are_audited_like_the_apis(proxy: ProxyProcess, root: httpx.Client) -> None:
    assert root.post(f"{MGMT}/roles", json={"name": "audited"}).status_code == 201
    grant = printed(cli(proxy, "grants", "add", "audited", "view.read", "--catalog", "*", "--namespace", "n"))
    revoked_now = cli(proxy, "grants", "revoke", "audited", str(grant["id"]))
    assert revoked_now.returncode == 0 and revoked_now.stdout == ""  # 204: no body
    assert cli(proxy, "grants", "add", "no-such-role", "all", "--catalog", "*").returncode == 1
    added = _records(root, operation="management.addGrant", object="roles/audited/grants")
    assert [(r["status"], r["decision"], r["catalog"]) for r in added] == [(201, "allowed", None)]
    revoked = _records(root, operation="management.revokeGrant", object=f"roles/audited/grants/{grant['id']}")
    assert [r["status"] for r in revoked] == [204]
    refused = _records(root, operation="management.addGrant", object="roles/no-such-role/grants")
    assert [r["status"] for r in refused] == [404]
    # The API's record of the same operation: same operation name and object, by the admin.
    assert root.post(f"{MGMT}/roles/audited/grants", json={"privilege": "all", "catalog": "*"}).status_code == 201
    deadline, api = time.monotonic() + 15, list[dict[str, Any]]()
    while time.monotonic() < deadline and not api:
        query = {"principal": "root", "operation": "management.addGrant", "object": "roles/audited/grants"}
        api = root.get(f"{MGMT}/audit", params=query).json()["records"]
        time.sleep(0.2)
    assert [r["status"] for r in api] == [201]
