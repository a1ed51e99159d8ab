"""The console at /ui over HTTP (no browser: tests/e2e/test_ui_browser.py drives Chromium): sign-in and the
session cookie, CSRF, the security headers, the same grants as the REST API, error pages, escaping.

Served in-process with ``oauth2`` (a bootstrap admin ``root`` and principals made through the admin API)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import csrf_of, root_config, signed_in
from tests.support.federation import rest_catalog, start_front, start_remote
from tests.support.federation import token as federation_token
from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.rest import SCHEMA, make_principal, ns_path, token_of

ROOT_SECRET = "root-secret-for-the-console"
CONFIG = root_config(ROOT_SECRET, '[catalogs.local]\nkind = "local"\n[catalogs.other]\nkind = "local"\n')
VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def view_version(sql: str) -> dict[str, Any]:
    return {
        "version-id": 1,
        "timestamp-ms": 1_700_000_000_000,
        "schema-id": 0,
        "summary": {"engine-name": "spark"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["sales"],
    }


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessProxy]:
    from tests.support.in_process import in_process

    with in_process(tmp_path_factory.mktemp("ui"), CONFIG) as served:
        with served.client(timeout=60) as anonymous:
            token = token_of(anonymous, "root", ROOT_SECRET)
        with served.client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
            for ns in (["sales"], ["sales", "eu"], ["hr"]):
                assert root.post("/v1/local/namespaces", json={"namespace": ns}).status_code == 200
            body = {"name": "orders", "schema": SCHEMA, "properties": {"note": "<script>alert(1)</script>"}}
            assert root.post(f"/v1/local/namespaces/{ns_path('sales', 'eu')}/tables", json=body).status_code == 200
            assert (
                root.post("/v1/local/namespaces/hr/tables", json={"name": "salaries", "schema": SCHEMA}).status_code
                == 200
            )
            view = {
                "name": "v",
                "schema": VIEW_SCHEMA,
                "view-version": view_version("select 1 as id"),
                "properties": {},
            }
            created = root.post("/v1/local/namespaces/sales/views", json=view)
            assert created.status_code == 200, created.text
            change = {
                "requirements": [{"type": "assert-view-uuid", "uuid": created.json()["metadata"]["view-uuid"]}],
                "updates": [
                    {"action": "add-view-version", "view-version": view_version("select 1 as id\nfrom orders")},
                    {"action": "set-current-view-version", "view-version-id": -1},
                ],
            }
            assert root.post("/v1/local/namespaces/sales/views/v", json=change).status_code == 200
            reader = make_principal(root, "reader", {"privilege": "table.read", "namespace": ["sales"]})
            reader_lister = {"privilege": "table.list", "namespace": ["sales"]}
            assert (
                root.post(
                    "/management/v1/roles/reader-role/grants", json={"catalog": "local"} | reader_lister
                ).status_code
                == 201
            )
        served.reader = reader  # type: ignore[attr-defined]
        yield served


def test_pages_need_a_session_and_send_people_to_the_sign_in_form(proxy: InProcessProxy) -> None:
    with proxy.client(timeout=60) as browser:
        answer = browser.get("/ui/catalogs/local/namespaces/sales?namespaces=x")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/login?next=/ui/catalogs/local/namespaces/sales%3Fnamespaces%3Dx"
        form = browser.get("/ui/login")
        assert form.status_code == 200 and 'name="client_secret"' in form.text
        assert browser.get("/ui/static/console.css").status_code == 200
        garbage = browser.get("/ui/catalogs", headers={"Cookie": "irc_ui_session=not-a-token"})
        assert garbage.status_code == 303


def test_sign_in_sets_a_strict_http_only_cookie_and_rejects_bad_secrets_and_missing_csrf(proxy: InProcessProxy) -> None:
    with proxy.client(timeout=60) as browser:
        form = browser.get("/ui/login")
        token = csrf_of(form)
        cookie = form.headers["set-cookie"]
        assert (
            "irc_ui_csrf=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        )
        wrong = browser.post("/ui/login", data={"csrf": token, "client_id": "root", "client_secret": "nope"})
        assert (
            wrong.status_code == 401
            and "wrong secret" in wrong.text
            and "irc_ui_session" not in wrong.headers.get("set-cookie", "")
        )
        assert "nope" not in wrong.text
        forged = browser.post("/ui/login", data={"csrf": "x" * 43, "client_id": "root", "client_secret": ROOT_SECRET})
        assert forged.status_code == 403 and "CSRF" in forged.text
        evil = browser.post(
            "/ui/login",
            data={"csrf": token, "client_id": "root", "client_secret": ROOT_SECRET, "next": "//evil.example/x"},
        )
        assert evil.status_code == 303 and evil.headers["location"] == "/ui/"
        session = evil.headers["set-cookie"]
        assert session.startswith("irc_ui_session=") and "HttpOnly" in session and "SameSite=strict" in session
        assert "Path=/ui" in session and "Max-Age=" in session
        page = browser.get("/ui/catalogs")
        assert page.status_code == 200 and "root" in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
        assert page.headers["cache-control"] == "no-store" and page.headers["x-content-type-options"] == "nosniff"

        no_csrf = browser.post("/ui/logout", data={})
        assert no_csrf.status_code == 403
        assert browser.post("/ui/logout", data={"csrf": token}).status_code == 403  # bound to no session: stale
        out = browser.post("/ui/logout", data={"csrf": csrf_of(page)})
        assert out.status_code == 303 and 'irc_ui_session=""' in out.headers["set-cookie"]


def test_an_admin_browses_catalogs_namespaces_a_table_and_a_view_with_a_diff(proxy: InProcessProxy) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        catalogs = browser.get("/ui/catalogs").text
        assert ">local</a>" in catalogs and ">other</a>" in catalogs and "ok" in catalogs
        assert 'class="admin-link" href="/ui/admin/principals"' in catalogs
        top = browser.get("/ui/catalogs/local").text
        assert ">sales</a>" in top and ">hr</a>" in top
        sales = browser.get("/ui/catalogs/local/namespaces/sales").text
        assert ">eu</a>" in sales and ">v</a>" in sales
        table = browser.get(f"/ui/catalogs/local/namespaces/{ns_path('sales', 'eu')}/tables/orders")
        assert table.status_code == 200, table.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in table.text and "<script>" not in table.text
        assert "No snapshots yet." in table.text
        view = browser.get("/ui/catalogs/local/namespaces/sales/views/v")
        assert view.status_code == 200, view.text
        assert 'class="added">+ from orders</span>' in view.text  # version 1 -> 2
        again = browser.get("/ui/catalogs/local/namespaces/sales/views/v", params={"from": "2", "to": "1"})
        assert 'class="removed">- from orders</span>' in again.text
        bad = browser.get("/ui/catalogs/local/namespaces/sales/views/v", params={"from": "1", "to": "9"})
        assert bad.status_code == 400 and "No such view version" in bad.text


def test_a_reader_sees_only_what_its_grants_let_it_list_and_read(proxy: InProcessProxy) -> None:
    with signed_in(proxy, *proxy.reader) as browser:  # type: ignore[attr-defined]
        catalogs = browser.get("/ui/catalogs").text
        assert ">local</a>" in catalogs and ">other</a>" not in catalogs and "admin-link" not in catalogs
        top = browser.get("/ui/catalogs/local").text
        assert ">sales</a>" in top and ">hr</a>" not in top
        assert browser.get(f"/ui/catalogs/local/namespaces/{ns_path('sales', 'eu')}/tables/orders").status_code == 200
        refused = browser.get("/ui/catalogs/local/namespaces/hr/tables/salaries")
        assert refused.status_code == 403 and "table.read" in refused.text
        missing = browser.get("/ui/catalogs/local/namespaces/sales/tables/nope")
        assert missing.status_code == 404 and "does not exist" in missing.text
        assert browser.get("/ui/catalogs/local/namespaces/hr").status_code == 403
        assert browser.get("/ui/catalogs/other").status_code == 403


def test_the_console_can_be_turned_off(serve_in_process: ServeInProcess) -> None:
    served = serve_in_process("[server]\nui = false\n", "ui-off")
    with served.client(timeout=60) as browser:
        assert browser.get("/ui/catalogs").status_code == 404
        assert browser.get("/v1/config").status_code == 200


def test_a_view_page_names_who_made_each_version(proxy: InProcessProxy) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        page = browser.get("/ui/catalogs/local/namespaces/sales/views/v").text
        assert page.count('<td class="author">root</td>') == 2


def test_the_trash_page_lists_what_the_caller_could_drop_and_restores_from_a_form(proxy: InProcessProxy) -> None:
    with proxy.client(timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with proxy.client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        body = {"name": "dropped_one", "schema": SCHEMA}
        assert root.post("/v1/local/namespaces/hr/tables", json=body).status_code == 200
        assert root.delete("/v1/local/namespaces/hr/tables/dropped_one").status_code == 204
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        page = browser.get("/ui/catalogs/local/trash")
        assert page.status_code == 200 and "<code>hr.dropped_one</code>" in page.text
        action = re.search(r'action="(/ui/catalogs/local/trash/[0-9a-f]+/restore)"', page.text)
        assert action, page.text
        forged = browser.post(action.group(1), data={"csrf": "x" * 43})
        assert forged.status_code == 403 and "CSRF" in forged.text
        moved = browser.post(action.group(1), data={"csrf": csrf_of(page), "namespace": "sales", "name": "kept"})
        assert moved.status_code == 303
        assert moved.headers["location"] == "/ui/catalogs/local/namespaces/sales/tables/kept"
        assert browser.get(moved.headers["location"]).status_code == 200
        assert "dropped_one" not in browser.get("/ui/catalogs/local/trash").text
    with signed_in(proxy, *proxy.reader) as browser:  # type: ignore[attr-defined]
        assert browser.get("/ui/catalogs/local/trash").status_code == 200
        assert "Nothing in the trash that you could have dropped." in browser.get("/ui/catalogs/local/trash").text


def test_a_federated_catalogs_tables_and_views_are_loaded_from_its_remote_catalog(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    remote = start_remote(tmp_path_factory.mktemp("ui-remote"))
    front = start_front(tmp_path_factory.mktemp("ui-front"), rest_catalog("fed", remote.url))
    try:
        upstream = httpx.Client(
            base_url=remote.url, headers={"Authorization": f"Bearer {federation_token(remote.url)}"}
        )
        with upstream:
            assert upstream.post("/v1/local/namespaces", json={"namespace": ["a"]}).status_code == 200
            table = upstream.post("/v1/local/namespaces/a/tables", json={"name": "t", "schema": SCHEMA})
            assert table.status_code == 200
            view = {
                "name": "v",
                "schema": VIEW_SCHEMA,
                "view-version": view_version("select 7 as id"),
                "properties": {},
            }
            assert upstream.post("/v1/local/namespaces/a/views", json=view).status_code == 200
        with httpx.Client(base_url=front.url, timeout=60) as browser:
            listed = browser.get("/ui/catalogs/fed/namespaces/a").text
            assert ">t</a>" in listed and ">v</a>" in listed
            page = browser.get("/ui/catalogs/fed/namespaces/a/tables/t")
            assert page.status_code == 200 and table.json()["metadata-location"] in page.text
            shown = browser.get("/ui/catalogs/fed/namespaces/a/views/v")
            assert shown.status_code == 200 and "select 7 as id" in shown.text
            missing = browser.get("/ui/catalogs/fed/namespaces/a/tables/nope")
            assert missing.status_code == 404 and "nope" in missing.text
    finally:
        front.stop()
        remote.stop()


def test_a_federated_v3_tables_page_shows_the_encryption_keys_pyicebergs_parser_would_drop(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The upstream's LoadTableResult is read by the proxy's v3-aware model: the key pyiceberg's parser drops
    is counted, and row lineage shown."""
    remote = start_remote(tmp_path_factory.mktemp("ui-v3-remote"))
    front = start_front(tmp_path_factory.mktemp("ui-v3-front"), rest_catalog("fed", remote.url))
    try:
        upstream = httpx.Client(
            base_url=remote.url, headers={"Authorization": f"Bearer {federation_token(remote.url)}"}
        )
        with upstream:
            assert upstream.post("/v1/local/namespaces", json={"namespace": ["a"]}).status_code == 200
            create = {"name": "t", "schema": SCHEMA, "properties": {"format-version": "3"}}
            assert upstream.post("/v1/local/namespaces/a/tables", json=create).status_code == 200
            key = {"key-id": "k1", "encrypted-key-metadata": "AAEC"}
            commit = {"requirements": [], "updates": [{"action": "add-encryption-key", "encryption-key": key}]}
            committed = upstream.post("/v1/local/namespaces/a/tables/t", json=commit)
            assert committed.status_code == 200 and committed.json()["metadata"]["encryption-keys"] == [key]
        with httpx.Client(base_url=front.url, timeout=60) as browser:
            page = browser.get("/ui/catalogs/fed/namespaces/a/tables/t")
        assert page.status_code == 200 and committed.json()["metadata-location"] in page.text
        assert "<dt>Format version</dt><dd>3</dd>" in page.text
        assert "<dt>Encryption keys</dt><dd>1</dd>" in page.text
        assert "<dt>Next row id</dt><dd>0</dd>" in page.text
    finally:
        front.stop()
        remote.stop()


def test_a_federated_catalogs_table_is_previewed_with_what_its_remote_catalog_answers(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The preview asks the catalog to open the table, as scan planning does: a remote catalog's table is read
    through the storage access the upstream answers with, rows and deletes as the upstream's metadata says."""
    remote = start_remote(tmp_path_factory.mktemp("ui-preview-remote"))
    front = start_front(tmp_path_factory.mktemp("ui-preview-front"), rest_catalog("fed", remote.url))
    try:
        writer = RestCatalog("w", uri=remote.url, warehouse="local", token=federation_token(remote.url))
        writer.create_namespace("a")
        rows = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "name": ["one", "two", "three", "four"]})
        table = writer.create_table("a.t", schema=rows.schema)
        table.append(rows)
        table.delete("id = 2")
        with httpx.Client(base_url=front.url, timeout=60) as browser:
            page = browser.get("/ui/catalogs/fed/namespaces/a/tables/t/preview")
        assert page.status_code == 200, page.text
        assert sorted(re.findall(r'<td class="number">(\d+)</td>', page.text)) == ["1", "3", "4"]
        assert "three" in page.text and ">two<" not in page.text
    finally:
        front.stop()
        remote.stop()
