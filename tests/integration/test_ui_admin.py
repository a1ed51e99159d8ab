"""The console's admin pages over HTTP (tests/e2e/test_ui_admin_browser.py drives them in Chromium): admins only,
principals and roles without secrets, grants added and revoked through a CSRF-checked confirmation, the audit
trail filtered and paged, hostile names escaped.

Served in-process with ``oauth2``: a bootstrap admin ``root`` and a non-admin ``clerk`` made through the admin API.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.support.console import csrf_of, root_config, signed_in
from tests.support.in_process import InProcessProxy, in_process
from tests.support.rest import MGMT, make_principal, token_of

ROOT_SECRET = "root-secret-for-the-admin-pages"
HOSTILE = "<script>x</script>"
CONFIG = root_config(ROOT_SECRET, '[catalogs.local]\nkind = "local"\n[catalogs.other]\nkind = "local"\n')
GRANT = {"privilege": "table.read", "catalog": "local", "namespace": "sales.eu", "kind": "table", "name": "orders"}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessProxy]:
    with in_process(tmp_path_factory.mktemp("ui-admin"), CONFIG) as served:
        with served.client(timeout=60) as anonymous:
            token = token_of(anonymous, "root", ROOT_SECRET)
        with served.client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
            served.clerk = make_principal(root, "clerk", {"privilege": "table.read", "namespace": ["sales"]})  # type: ignore[attr-defined]
            for role in ("analysts", HOSTILE):
                assert root.post(f"{MGMT}/roles", json={"name": role}).status_code == 201
        yield served


@pytest.fixture
def root_api(proxy: InProcessProxy) -> Iterator[httpx.Client]:
    with proxy.client(timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with proxy.client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as api:
        yield api


def grants_of(api: httpx.Client, role: str) -> list[dict[str, Any]]:
    answer = api.get(f"{MGMT}/roles/{quote(role, safe='')}/grants")
    assert answer.status_code == 200, answer.text
    grants: list[dict[str, Any]] = answer.json()["grants"]
    return grants


def confirm_form(page: httpx.Response) -> tuple[str, dict[str, str]]:
    """The confirmation form's action and hidden fields."""
    assert page.status_code == 200, page.text
    form = re.search(r'<form class="confirm" method="post" action="([^"]+)">(.*?)</form>', page.text, re.S)
    assert form, page.text
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2)))
    return html.unescape(form.group(1)), {key: html.unescape(value) for key, value in fields.items()}


def error_status(page: httpx.Response) -> str:
    found = re.search(r'<section class="error" data-status="(\d+)">', page.text)
    return found.group(1) if found else ""


def test_a_non_admin_gets_the_403_page_on_every_admin_page_and_form(
    proxy: InProcessProxy, root_api: httpx.Client
) -> None:
    before = grants_of(root_api, "clerk-role")
    with signed_in(proxy, *proxy.clerk) as browser:  # type: ignore[attr-defined]
        for path in ("principals", "roles", "roles/analysts", "roles/clerk-role", "audit?principal=root"):
            page = browser.get(f"/ui/admin/{path}")
            assert page.status_code == 403 and error_status(page) == "403", path
            assert "administrators only" in page.text and "clerk-role" not in page.text.split("<main>")[1]
        token = csrf_of(browser.get("/ui/catalogs"))
        grant_id = before[0]["id"]
        for path, data in (
            ("roles/clerk-role/grants", GRANT | {"csrf": token, "confirm": "yes", "privilege": "all"}),
            (f"roles/clerk-role/grants/{grant_id}/revoke", {"csrf": token, "confirm": "yes"}),
        ):
            answer = browser.post(f"/ui/admin/{path}", data=data)
            assert answer.status_code == 403 and error_status(answer) == "403", path
    assert grants_of(root_api, "clerk-role") == before


def test_an_admin_sees_principals_and_roles_but_never_a_secret(proxy: InProcessProxy) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        page = browser.get("/ui/admin/principals")
        assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
        row = re.search(r"<td>clerk</td>(.*?)</tr>", page.text, re.S)
        assert row and 'href="/ui/admin/roles/clerk-role"' in row.group(1)
        assert '<td class="credentials">yes</td>' in row.group(1)
        assert proxy.clerk[1] not in page.text and "scrypt" not in page.text  # type: ignore[attr-defined]
        roles = browser.get("/ui/admin/roles")
        assert roles.status_code == 200
        assert ">analysts</a>" in roles.text and ">clerk-role</a>" in roles.text
        assert "<td>clerk</td>" in roles.text  # the principals holding clerk-role


def test_adding_a_grant_asks_for_confirmation_and_then_applies_it(
    proxy: InProcessProxy, root_api: httpx.Client
) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        role_page = browser.get("/ui/admin/roles/analysts")
        assert role_page.status_code == 200 and "This role holds no grants." in role_page.text
        assert '<option value="*">' in role_page.text and '<option value="other">' in role_page.text
        assert '<option value="credentials.write">' in role_page.text
        token = csrf_of(role_page)
        review = browser.post("/ui/admin/roles/analysts/grants", data=GRANT | {"csrf": token})
        assert "table.read" in review.text and "table local.sales.eu.orders" in review.text
        assert grants_of(root_api, "analysts") == []  # the first POST changes nothing
        action, fields = confirm_form(review)
        assert action == "/ui/admin/roles/analysts/grants"
        assert fields == GRANT | {"csrf": token, "confirm": "yes"}

        applied = browser.post(action, data=fields)
        assert applied.status_code == 303 and applied.headers["location"] == "/ui/admin/roles/analysts"
        stored = grants_of(root_api, "analysts")
        assert [(g["privilege"], g["type"], g["catalog"], g["namespace"], g.get("table")) for g in stored] == [
            ("table.read", "table", "local", ["sales", "eu"], "orders")
        ]
        listed = browser.get("/ui/admin/roles/analysts").text
        assert f'<tr data-grant="{stored[0]["id"]}">' in listed and "<td>sales.eu</td>" in listed


def test_a_wrong_csrf_token_is_403_and_changes_nothing(proxy: InProcessProxy, root_api: httpx.Client) -> None:
    before = grants_of(root_api, "analysts")
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        browser.get("/ui/admin/roles/analysts")  # the CSRF cookie
        forged = {"csrf": "x" * 43, "confirm": "yes"}
        answer = browser.post("/ui/admin/roles/analysts/grants", data=GRANT | forged | {"privilege": "all"})
        assert answer.status_code == 403 and "CSRF" in answer.text
        missing = browser.post("/ui/admin/roles/analysts/grants", data=GRANT | {"confirm": "yes", "privilege": "all"})
        assert missing.status_code == 403
        if before:
            revoke = browser.post(f"/ui/admin/roles/analysts/grants/{before[0]['id']}/revoke", data=forged)
            assert revoke.status_code == 403 and "CSRF" in revoke.text
    assert grants_of(root_api, "analysts") == before


def test_revoking_a_grant_asks_for_confirmation(proxy: InProcessProxy, root_api: httpx.Client) -> None:
    body = {"privilege": "view.read", "catalog": "other", "namespace": ["hr"], "view": "pay"}
    added = root_api.post(f"{MGMT}/roles/analysts/grants", json=body)
    assert added.status_code == 201, added.text
    grant_id = added.json()["id"]
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        page = browser.get("/ui/admin/roles/analysts")
        action = f"/ui/admin/roles/analysts/grants/{grant_id}/revoke"
        assert f'action="{action}"' in page.text
        review = browser.post(action, data={"csrf": csrf_of(page)})
        assert "Revoke this grant?" in review.text and "view other.hr.pay" in review.text
        assert grant_id in [g["id"] for g in grants_of(root_api, "analysts")]
        confirmed_action, fields = confirm_form(review)
        assert confirmed_action == action and fields["confirm"] == "yes"
        done = browser.post(confirmed_action, data=fields)
        assert done.status_code == 303 and done.headers["location"] == "/ui/admin/roles/analysts"
        assert grant_id not in [g["id"] for g in grants_of(root_api, "analysts")]
        again = browser.post(confirmed_action, data=fields)
        assert again.status_code == 404 and error_status(again) == "404"


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"privilege": "nope"}, 400, "Unknown privilege"),
        ({"kind": "", "name": "orders"}, 400, "table or a view"),
        ({"kind": "shelf"}, 400, "Invalid kind"),
        ({"namespace": ""}, 400, "needs its namespace and name"),
        ({"namespace": "sales..eu"}, 400, "must be non-empty"),
        ({"privilege": "table.write", "kind": "view"}, 400, "cannot be granted on a view"),
        ({"privilege": "catalog.use", "kind": "", "name": ""}, 400, "catalog.use can only be granted on a catalog"),
        ({"catalog": "nowhere"}, 404, "nowhere"),
    ],
)
def test_an_invalid_grant_is_an_error_page_not_a_500(
    proxy: InProcessProxy, change: dict[str, str], status: int, message: str
) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        token = csrf_of(browser.get("/ui/admin/roles/analysts"))
        for confirm in ("", "yes"):
            answer = browser.post(
                "/ui/admin/roles/analysts/grants", data=GRANT | change | {"csrf": token, "confirm": confirm}
            )
            assert answer.status_code == status and error_status(answer) == str(status), answer.text
            assert message in html.unescape(answer.text)


def test_unknown_roles_and_grants_are_404_and_bad_ids_400(proxy: InProcessProxy) -> None:
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        assert browser.get("/ui/admin/roles/nobody").status_code == 404
        token = csrf_of(browser.get("/ui/admin/roles"))
        missing_role = browser.post("/ui/admin/roles/nobody/grants", data=GRANT | {"csrf": token})
        assert missing_role.status_code == 404 and "Role does not exist" in missing_role.text
        assert browser.post("/ui/admin/roles/analysts/grants/999999/revoke", data={"csrf": token}).status_code == 404
        for bad in ("x1", "-1"):
            assert (
                browser.post(f"/ui/admin/roles/analysts/grants/{bad}/revoke", data={"csrf": token}).status_code == 400
            )


def test_hostile_role_names_are_escaped_and_reachable(proxy: InProcessProxy, root_api: httpx.Client) -> None:
    escaped = "&lt;script&gt;x&lt;/script&gt;"
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        roles = browser.get("/ui/admin/roles")
        assert escaped in roles.text and HOSTILE not in roles.text
        url = f"/ui/admin/roles/{quote(HOSTILE, safe='')}"
        assert f'href="{url}"' in roles.text
        page = browser.get(url)
        assert page.status_code == 200 and escaped in page.text and HOSTILE not in page.text
        review = browser.post(f"{url}/grants", data=GRANT | {"csrf": csrf_of(page), "namespace": HOSTILE})
        assert review.status_code == 200 and HOSTILE not in review.text
        action, fields = confirm_form(review)
        assert action == f"{url}/grants" and fields["namespace"] == HOSTILE
        assert browser.post(url + "/grants", data=fields).headers["location"] == url
    assert [g["namespace"] for g in grants_of(root_api, HOSTILE)] == [[HOSTILE]]


def audit_rows(page: httpx.Response) -> list[dict[str, str]]:
    """Each row's principal, operation and decision."""
    assert page.status_code == 200, page.text
    cell = r'<td class="principal">(.*?)</td>.*?<code>(.*?)</code>.*?<td class="decision \w+">(.*?)</td>'
    rows = re.findall(rf'<tr data-id="\d+">\s*<td class="time">.*?</td>\s*{cell}', page.text, re.S)
    return [{"principal": p, "operation": o, "decision": d} for p, o, d in rows]


def poll(browser: httpx.Client, params: dict[str, str], enough: int) -> list[dict[str, str]]:
    """The audit page's rows for ``params`` once at least ``enough`` are there (the sink is asynchronous)."""
    deadline = time.monotonic() + 15
    while True:
        rows = audit_rows(browser.get("/ui/admin/audit", params=params))
        if len(rows) >= enough or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_the_audit_page_filters_by_principal_operation_and_decision(proxy: InProcessProxy) -> None:
    with signed_in(proxy, *proxy.clerk) as browser:  # type: ignore[attr-defined]
        assert browser.get("/ui/admin/principals").status_code == 403
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        denied = poll(browser, {"principal": "clerk", "decision": "denied", "operation": "ui.admin.*"}, 1)
        assert denied and {r["principal"] for r in denied} == {"clerk"}
        assert {r["decision"] for r in denied} == {"denied"} and "ui.admin.principals" in {
            r["operation"] for r in denied
        }
        mine = poll(browser, {"principal": "root", "operation": "ui.admin.principals"}, 1)
        assert mine and {(r["principal"], r["operation"], r["decision"]) for r in mine} == {
            ("root", "ui.admin.principals", "allowed")
        }
        reviews = poll(browser, {"operation": "ui.admin.grants.add.review", "decision": "allowed"}, 1)
        assert reviews and {r["operation"] for r in reviews} == {"ui.admin.grants.add.review"}
        page = browser.get("/ui/admin/audit", params={"principal": "root", "since": "2020-01-01T00:00"})
        assert page.status_code == 200 and 'value="2020-01-01T00:00:00"' in page.text
        future = browser.get("/ui/admin/audit", params={"since": "2999-01-01T00:00:00+02:00"})
        assert "No audit records match." in future.text and 'value="2998-12-31T22:00:00"' in future.text
        for bad in (
            {"since": "yesterday"},
            {"until": "2020-13-01T00:00"},
            {"decision": "maybe"},
            {"older": "x@y"},
            {"older": "\u00b2@2020-01-01T00:00"},  # "²" is a digit to str.isdigit, not to int()
            {"principal": "p" * 300},
            {"since": "0001-01-01T00:00+01:00"},
            {"older": "1@9999-12-31T23:59:59.999999"},
        ):
            answer = browser.get("/ui/admin/audit", params=bad)
            assert answer.status_code == 400 and error_status(answer) == "400", bad


def test_the_audit_page_pages_older_records_without_gaps_or_repeats(
    proxy: InProcessProxy, root_api: httpx.Client
) -> None:
    for _ in range(130):
        assert root_api.get(f"{MGMT}/privileges").status_code == 200
    wanted = {"principal": "root", "operation": "management.listPrivileges"}
    with signed_in(proxy, "root", ROOT_SECRET) as browser:
        assert len(poll(browser, wanted, 100)) == 100
        deadline = time.monotonic() + 15
        query = {"principal": "root", "object": "privileges", "limit": "1000"}
        while len(root_api.get(f"{MGMT}/audit", params=query).json()["records"]) < 130:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        seen: list[str] = []
        page = browser.get("/ui/admin/audit", params=wanted)
        while True:
            ids = re.findall(r'<tr data-id="(\d+)">', page.text)
            assert 0 < len(ids) <= 100
            seen += ids
            older = re.search(r'<a class="older" href="\?([^"]+)">', page.text)
            if older is None:
                break
            page = browser.get("/ui/admin/audit?" + html.unescape(older.group(1)))
        assert len(seen) == len(set(seen)) == 130 and seen == sorted(seen, key=int, reverse=True)
