"""The console in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``, installed by
``make test``) against the proxy served by hypercorn.

A table Spark wrote is opened on the session's proxy (no authentication); signing in, walking a nested
namespace and a reader's refusals run on a proxy with ``oauth2``. Every page visited is saved as a
screenshot under ``tests/artifacts/ui/`` (git-ignored) for people to look at after a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.support.console import needs_chromium, root_config, shot
from tests.support.rest import SCHEMA, make_principal, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-the-browser"
AUTH_CONFIG = root_config(ROOT_SECRET)

pytestmark = needs_chromium


def test_a_table_spark_wrote_shows_its_schema_and_one_chart_point_per_snapshot(
    spark: Any, proxy: ProxyProcess, page: Page, ns_name: str
) -> None:
    table = f"irc.{ns_name}.orders"
    spark.sql(f"CREATE NAMESPACE irc.{ns_name}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, region STRING, amount DOUBLE) USING iceberg PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'eu', 10.0), (2, 'us', 20.0)")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'eu', 30.0)")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'apac', 40.0, 'late')")
    snapshots = spark.sql(f"SELECT * FROM {table}.snapshots").count()

    page.goto(f"{proxy.url}/ui/catalogs/local/namespaces/{ns_name}/tables/orders")
    assert page.locator("h1").inner_text().startswith(f"{ns_name}.orders")
    fields = page.locator("table.schema tbody tr td:nth-child(2)").all_inner_texts()
    assert fields == ["id", "region", "amount", "note"]
    timeline = page.locator("svg.snapshot-timeline")
    assert timeline.get_attribute("data-points") == str(snapshots) == "4"
    assert timeline.locator("circle.point").count() == snapshots
    assert page.locator("svg.size-over-time").count() == 1
    assert "added note" in page.locator("ol.history").inner_text()
    assert page.locator("table.snapshots tbody tr").count() == snapshots
    shot(page, "table")

    spark.sql(f"CREATE VIEW irc.{ns_name}.eu AS SELECT id FROM {table} WHERE region = 'eu'")
    spark.sql(f"CREATE OR REPLACE VIEW irc.{ns_name}.eu AS SELECT id, amount FROM {table} WHERE region = 'eu'")
    page.goto(f"{proxy.url}/ui/catalogs/local/namespaces/{ns_name}")
    page.click("ul.views a:text-is('eu')")
    assert "SELECT id, amount" in page.locator("pre.sql").first.inner_text()
    page.select_option("select[name=from]", "2")
    page.select_option("select[name=to]", "1")
    page.click("form.compare button")
    assert "to=1" in page.url
    assert page.locator("pre.diff span.removed").count() >= 1 and page.locator("pre.diff span.added").count() >= 1
    shot(page, "view-diff")

    page.goto(f"{proxy.url}/ui/catalogs/local/namespaces/{ns_name}/tables/missing")
    assert page.locator("section.error").get_attribute("data-status") == "404"
    shot(page, "error-404")


@pytest.mark.parametrize(("version", "kind"), [(2, "position-deletes"), (3, "deletion-vectors")])
def test_a_preview_applies_the_position_deletes_and_deletion_vectors_spark_wrote_and_health_counts_them(
    spark: Any, proxy: ProxyProcess, page: Page, ns_name: str, version: int, kind: str
) -> None:
    table = f"irc.{ns_name}.merged_v{version}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS irc.{ns_name}")
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, city STRING) USING iceberg TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'Oslo'), (2, 'Lima'), (3, 'Kyiv'), (4, 'Pune'), (5, 'Bern')")
    spark.sql(f"DELETE FROM {table} WHERE id IN (2, 4)")
    delete_files = spark.sql(f"SELECT * FROM {table}.delete_files").count()
    assert delete_files >= 1  # merge-on-read: a delete file, not a rewrite
    page.goto(f"{proxy.url}/ui/catalogs/local/namespaces/{ns_name}/tables/merged_v{version}/preview")
    ids = sorted(int(t) for t in page.locator("table.preview td.number").all_inner_texts())
    assert ids == [1, 3, 5], kind
    assert page.locator("p.note").count() == 0
    shot(page, f"preview-{kind}")
    page.goto(f"{proxy.url}/ui/catalogs/local/namespaces/{ns_name}/tables/merged_v{version}/health")
    kinds = ("position-deletes", "deletion-vectors", "equality-deletes")
    counts = {name: int(page.locator(f"dd.delete-files span.{name}").inner_text().split()[0]) for name in kinds}
    assert counts == {name: delete_files if name == kind else 0 for name in kinds}  # as Spark's delete_files table
    assert int(page.locator("dd.data-files").inner_text().split()[0]) >= 1
    shot(page, f"health-{kind}")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, tuple[str, str]]]:
    server = ProxyProcess(tmp_path_factory.mktemp("ui-browser"), AUTH_CONFIG).start()
    with httpx.Client(base_url=server.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        for ns in (["sales"], ["sales", "eu"], ["sales", "eu", "daily"], ["hr"]):
            assert root.post("/v1/local/namespaces", json={"namespace": ns}).status_code == 200
        answer = root.post("/v1/local/namespaces/sales%1Feu%1Fdaily/tables", json={"name": "orders", "schema": SCHEMA})
        assert answer.status_code == 200, answer.text
        assert root.post("/v1/local/namespaces/hr/tables", json={"name": "pay", "schema": SCHEMA}).status_code == 200
        reader = make_principal(
            root,
            "reader",
            {"privilege": "namespace.list", "namespace": ["sales"]},
            {"privilege": "table.list", "namespace": ["sales"]},
            {"privilege": "table.read", "namespace": ["sales"]},
        )
    yield server, reader
    server.stop()


def sign_in(page: Page, url: str, client_id: str, secret: str) -> None:
    page.goto(f"{url}/ui/catalogs")
    assert "/ui/login" in page.url
    page.fill("input[name=client_id]", client_id)
    page.fill("input[name=client_secret]", secret)
    page.click("section.login button")
    assert page.url.endswith("/ui/catalogs"), page.url


def test_signing_in_and_walking_a_nested_namespace_to_a_table(
    secured: tuple[ProxyProcess, tuple[str, str]], page: Page
) -> None:
    server, _ = secured
    page.goto(f"{server.url}/ui/login")
    page.fill("input[name=client_id]", "root")
    page.fill("input[name=client_secret]", "wrong")
    page.click("section.login button")
    assert "wrong secret" in page.locator(".error-text").inner_text()
    shot(page, "login-refused")

    sign_in(page, server.url, "root", ROOT_SECRET)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["irc_ui_session"]["httpOnly"] and cookies["irc_ui_session"]["sameSite"] == "Strict"
    shot(page, "catalogs")
    for level in ("local", "sales", "eu", "daily"):
        page.click(f"main a:text-is('{level}')")
    shot(page, "namespace")
    page.click("ul.tables a:text-is('orders')")
    assert page.locator("h1").inner_text().startswith("sales.eu.daily.orders")
    assert page.locator("p.empty").first.inner_text() == "No snapshots yet."
    page.click("header form.whoami button")
    assert "/ui/login" in page.url
    page.goto(f"{server.url}/ui/catalogs")
    assert "/ui/login" in page.url  # signed out


def test_a_reader_sees_only_its_namespace_and_gets_a_403_page_elsewhere(
    secured: tuple[ProxyProcess, tuple[str, str]], page: Page
) -> None:
    server, reader = secured
    sign_in(page, server.url, *reader)
    page.click("main a:text-is('local')")
    assert page.locator("ul.namespaces a").all_inner_texts() == ["sales"]
    page.goto(f"{server.url}/ui/catalogs/local/namespaces/hr/tables/pay")
    assert page.locator("section.error").get_attribute("data-status") == "403"
    assert "table.read" in page.locator("section.error").inner_text()
    shot(page, "error-403")
