"""The console's reads in the audit trail: each names the catalog and object it showed, and browsing does not
flood the trail (one record per principal, page, catalog, object and status per
``server.ui_audit_every_seconds`` in a replica); refusals are always recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.console import root_config, sign_in
from tests.support.rest import MGMT, SCHEMA, bearer_client
from tests.support.server import ProxyProcess

SECRET = "root-secret-for-console-audit"
OTHER = "/ui/catalogs/other/namespaces/sales"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("console-audit")
    catalogs = ""
    for name in ("local", "other"):
        (workdir / name).mkdir()
        catalogs += f'[catalogs.{name}]\nwarehouse = "{(workdir / name).as_uri()}"\n'
    served = ProxyProcess(workdir, root_config(SECRET, catalogs)).start()
    try:
        with bearer_client(served.url, "root", SECRET) as root:
            for catalog in ("local", "other"):
                assert root.post(f"/v1/{catalog}/namespaces", json={"namespace": ["sales"]}).status_code == 200
            for table in ("orders", "secret"):
                created = root.post("/v1/other/namespaces/sales/tables", json={"name": table, "schema": SCHEMA})
                assert created.status_code == 200, created.text
            assert root.post(f"{MGMT}/roles", json={"name": "reader-role"}).status_code == 201
            for grant in (
                {"privilege": "table.read", "namespace": ["sales"], "table": "orders"},
                {"privilege": "namespace.use", "namespace": ["sales"]},
            ):
                added = root.post(f"{MGMT}/roles/reader-role/grants", json={"catalog": "other"} | grant)
                assert added.status_code == 201, added.text
            made = root.post(f"{MGMT}/principals", json={"name": "reader", "roles": ["reader-role"]})
            assert made.status_code == 201, made.text
            credentials = made.json()["credentials"]
        served.reader = (credentials["client-id"], credentials["client-secret"])  # type: ignore[attr-defined]
        yield served
    finally:
        served.stop()


@contextmanager
def browsing(server: ProxyProcess, client_id: str, secret: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as browser:
        yield sign_in(browser, client_id, secret)


def records(server: ProxyProcess, until: httpx.Response, **query: str) -> list[dict[str, Any]]:
    """The audit records matching ``query``, once the record of ``until`` (a refusal: always recorded) is
    written: records are written in order, so every earlier request's record is there too."""
    request_id = until.headers["x-request-id"]
    deadline = time.monotonic() + 15
    with bearer_client(server.url, "root", SECRET) as root:
        while time.monotonic() < deadline:
            everything = root.get(f"{MGMT}/audit", params={"limit": "1000"})
            assert everything.status_code == 200, everything.text
            if any(r["request_id"] == request_id for r in everything.json()["records"]):
                listed = root.get(f"{MGMT}/audit", params={"limit": "1000"} | query)
                return list(listed.json()["records"])
            time.sleep(0.2)
    raise AssertionError(f"no audit record for request {request_id}")


def test_a_table_page_is_audited_under_its_catalog_and_object_once_per_window(server: ProxyProcess) -> None:
    with browsing(server, *server.reader) as browser:  # type: ignore[attr-defined]
        shown = [browser.get(f"{OTHER}/tables/orders", params={"properties": str(i)}) for i in (0, 100, 0)]
        assert [page.status_code for page in shown] == [200, 200, 200]
        refused = browser.get(f"{OTHER}/tables/secret")
        assert refused.status_code == 403
    trail = records(server, refused, principal="reader", operation="ui.table")
    reads = [r for r in trail if r["status"] == 200]
    assert [(r["catalog"], r["object"], r["decision"]) for r in reads] == [("other", "sales.orders", "allowed")]
    assert reads[0]["request_id"] == shown[0].headers["x-request-id"]
    denied = [(r["catalog"], r["object"], r["decision"], r["status"]) for r in trail if r["status"] == 403]
    assert denied == [("other", "sales.secret", "denied", 403)]


def test_refusals_are_recorded_every_time(server: ProxyProcess) -> None:
    with browsing(server, *server.reader) as browser:  # type: ignore[attr-defined]
        refusals = [browser.get(f"{OTHER}/tables/secret", params={"n": str(i)}) for i in range(3)]
    assert [page.status_code for page in refusals] == [403, 403, 403]
    trail = records(server, refusals[-1], principal="reader", operation="ui.table", decision="denied")
    ids = {r["request_id"] for r in trail}
    assert {page.headers["x-request-id"] for page in refusals} <= ids


def test_each_object_and_catalog_has_its_own_record(server: ProxyProcess) -> None:
    with browsing(server, "root", SECRET) as browser:
        pages = [
            browser.get(f"{OTHER}/tables/orders"),
            browser.get(f"{OTHER}/tables/secret"),
            browser.get("/ui/catalogs/local/namespaces/sales"),
            browser.get("/ui/catalogs/other/namespaces/sales"),
            browser.get("/ui/catalogs/other/namespaces/sales"),
            browser.get("/ui/catalogs/other/namespaces/sales/tables/missing"),
            browser.get("/ui/catalogs"),
        ]
        assert [page.status_code for page in pages] == [200, 200, 200, 200, 200, 404, 200]
    with browsing(server, *server.reader) as browser:  # type: ignore[attr-defined]
        marker = browser.get(f"{OTHER}/tables/secret", params={"marker": "1"})
    trail = records(server, marker, principal="root")
    operations = {"ui.catalogs", "ui.namespace", "ui.table"}
    seen = sorted(
        (r["operation"], r["catalog"] or "", r["object"] or "", r["status"])
        for r in trail
        if r["operation"] in operations
    )
    assert seen == [
        ("ui.catalogs", "", "", 200),  # the list of catalogs belongs to none of them
        ("ui.namespace", "local", "sales", 200),
        ("ui.namespace", "other", "sales", 200),  # once: shown twice
        ("ui.table", "other", "sales.missing", 404),
        ("ui.table", "other", "sales.orders", 200),
        ("ui.table", "other", "sales.secret", 200),
    ]


def test_sampling_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    config = f'[server]\nui_audit_every_seconds = 0\n[catalogs.local]\nwarehouse = "{(tmp_path / "wh").as_uri()}"\n'
    served = ProxyProcess(tmp_path, root_config(SECRET, config)).start()
    try:
        with bearer_client(served.url, "root", SECRET) as root:
            assert root.post("/v1/local/namespaces", json={"namespace": ["sales"]}).status_code == 200
        with browsing(served, "root", SECRET) as browser:
            shown = [browser.get("/ui/catalogs/local/namespaces/sales") for _ in range(3)]
            marker = browser.get("/ui/catalogs/local/namespaces/nowhere")
        assert marker.status_code == 404
        trail = records(served, marker, principal="root", operation="ui.namespace", object="sales")
        assert {page.headers["x-request-id"] for page in shown} <= {r["request_id"] for r in trail}
    finally:
        served.stop()
