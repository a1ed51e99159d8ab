"""The console's admin pages in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``)
against the proxy served by hypercorn with ``oauth2``.

The admin ``root`` opens a role, adds a grant through the confirmation page, sees it listed, revokes it the
same way, then filters the audit trail by principal. Screenshots go to ``tests/artifacts/ui/admin-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page

from tests.support.console import needs_chromium, root_config, shot
from tests.support.rest import MGMT, make_principal, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-the-admin-browser"
AUTH_CONFIG = root_config(ROOT_SECRET)

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    served = ProxyProcess(tmp_path_factory.mktemp("ui-admin-browser"), AUTH_CONFIG).start()
    with httpx.Client(base_url=served.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with httpx.Client(base_url=served.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        make_principal(root, "reader", {"privilege": "table.read", "namespace": ["sales"]})
    yield served
    served.stop()


def sign_in(page: Page, url: str) -> None:
    page.goto(f"{url}/ui/admin/roles")
    assert "/ui/login" in page.url
    page.fill("input[name=client_id]", "root")
    page.fill("input[name=client_secret]", ROOT_SECRET)
    page.click("section.login button")
    assert page.url.endswith("/ui/admin/roles"), page.url


def grant_rows(page: Page) -> list[str]:
    return page.locator("table.admin-grants tbody tr[data-grant]").all_inner_texts()


def test_an_admin_adds_and_revokes_a_grant_with_confirmation_then_reads_the_audit(
    server: ProxyProcess, page: Page
) -> None:
    sign_in(page, server.url)
    page.click("table.admin-roles a:text-is('reader-role')")
    assert page.locator("h1").inner_text().startswith("reader-role")
    assert len(grant_rows(page)) == 1

    page.select_option("form.grant-add select[name=privilege]", "table.write")
    page.select_option("form.grant-add select[name=catalog]", "local")
    page.fill("form.grant-add input[name=namespace]", "sales.eu")
    page.select_option("form.grant-add select[name=kind]", "table")
    page.fill("form.grant-add input[name=name]", "orders")
    shot(page, "admin-role")
    page.click("form.grant-add button")
    assert "Add this grant?" in page.locator("section.confirm h1").inner_text()
    assert "table local.sales.eu.orders" in page.locator("section.confirm dl").inner_text()
    shot(page, "admin-confirm")
    page.click("form.confirm button")
    assert page.url.endswith("/ui/admin/roles/reader-role")
    rows = grant_rows(page)
    assert len(rows) == 2 and any("table.write" in row and "sales.eu" in row and "orders" in row for row in rows)

    page.locator("table.admin-grants tr", has_text="table.write").locator("form.revoke button").click()
    assert "Revoke this grant?" in page.locator("section.confirm h1").inner_text()
    page.click("section.confirm a:text-is('Cancel')")
    assert len(grant_rows(page)) == 2  # cancelling changes nothing
    page.locator("table.admin-grants tr", has_text="table.write").locator("form.revoke button").click()
    page.click("form.confirm button")
    assert page.url.endswith("/ui/admin/roles/reader-role")
    assert len(grant_rows(page)) == 1 and "table.write" not in " ".join(grant_rows(page))
    with httpx.Client(base_url=server.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
        grants = anonymous.get(f"{MGMT}/roles/reader-role/grants", headers={"Authorization": f"Bearer {token}"})
    assert [g["privilege"] for g in grants.json()["grants"]] == ["table.read"]

    page.click("header nav.crumbs a:text-is('audit')")
    page.fill("form.audit-filter input[name=principal]", "root")
    page.fill("form.audit-filter input[name=operation]", "ui.admin.*")
    page.click("form.audit-filter button")
    assert "principal=root" in page.url
    for _ in range(50):  # the audit sink writes asynchronously
        operations = page.locator("table.admin-audit td.operation").all_inner_texts()
        if "ui.admin.grants.revoke" in operations:
            break
        page.wait_for_timeout(300)
        page.reload()
    assert {"ui.admin.grants.add", "ui.admin.grants.add.review", "ui.admin.grants.revoke"} <= set(operations)
    assert set(page.locator("table.admin-audit td.principal").all_inner_texts()) == {"root"}
    shot(page, "admin-audit")
