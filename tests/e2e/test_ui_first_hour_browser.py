"""The console as a new user meets it in the first hour (issue 27), in Debian's Chromium: a table written by
pyiceberg through the proxy (nine snapshots within a second, a delete, a doc change), names that are hard to
link (``..``, ``.``, ``/``, ``%``, ``?``, ``#``, spaces, non-ASCII), the search box, a preview of rows, the dark
colour scheme and a 390-pixel-wide phone screen. No page carries a script.

Screenshots go to ``tests/artifacts/ui/`` (git-ignored); with ``IRC_DOC_SHOTS=1`` the small ones shown in
``docs/console.md`` are written to ``docs/console/`` as well.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from playwright.sync_api import Page
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import needs_chromium, shot
from tests.support.rest import SCHEMA
from tests.support.server import ProxyProcess

pytestmark = needs_chromium
DOCS = Path(__file__).resolve().parents[2] / "docs" / "console"
ODD = ["..", ".", "a/b", "100%", "what?", "#1", "two words", "Zürich 東京"]
"""Names a link must carry whole: each one a namespace holding a table of the same name."""
ROWS = pa.table({"id": pa.array(range(30), pa.int64()), "city": pa.array([f"<i>city {i}</i>" for i in range(30)])})


def doc_shot(page: Page, name: str) -> None:
    """The viewport (not the full page) as ``docs/console/<name>.png`` when ``IRC_DOC_SHOTS=1``."""
    shot(page, name)
    if os.environ.get("IRC_DOC_SHOTS") == "1":
        from PIL import Image  # a palette of 64 colours keeps each image a few tens of kilobytes

        target = DOCS / f"{name}.png"
        page.screenshot(path=str(target))
        Image.open(target).convert("RGB").quantize(colors=64).save(target, optimize=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    server = ProxyProcess(tmp_path_factory.mktemp("first-hour")).start()
    catalog = RestCatalog("first-hour", uri=server.url, warehouse="local")
    catalog.create_namespace("shop")
    catalog.create_namespace("empty")
    orders = catalog.create_table("shop.orders", schema=ROWS.schema)
    for i in range(9):  # nine snapshots within about a second
        orders.append(ROWS.slice(i * 3, 3))
    orders.delete("id < 3")
    with orders.update_schema() as update:
        update.update_column("city", doc="where the order goes")
    with httpx.Client(base_url=server.url, timeout=60) as client:  # pyiceberg's URLs lose a `..` on the way
        for name in ODD:
            assert client.post("/v1/local/namespaces", json={"namespace": [name]}).status_code == 200
            path = f"/v1/local/namespaces/{quote(name, safe='').replace('.', '%2E')}/tables"
            created = client.post(path, json={"name": name, "schema": SCHEMA})
            assert created.status_code == 200, (name, created.text)
    yield server
    server.stop()


def no_scripts(page: Page) -> None:
    assert page.locator("script").count() == 0


def test_the_snapshot_chart_spaces_snapshots_by_order_and_keeps_off_its_axes(served: ProxyProcess, page: Page) -> None:
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto(f"{served.url}/ui/catalogs/local/namespaces/shop/tables/orders")
    no_scripts(page)
    timeline = page.locator("svg.snapshot-timeline")
    xs = [float(c.get_attribute("cx") or "") for c in timeline.locator("circle.point").all()]
    assert len(xs) == 10  # nine appends and a delete
    assert len({round(b - a, 1) for a, b in itertools.pairwise(xs)}) == 1
    axis = timeline.locator("line.axis").bounding_box()
    assert axis is not None
    labels = [b for label in timeline.locator("text.axis-label").all() if (b := label.bounding_box())]
    under = sorted((b for b in labels if b["y"] > axis["y"]), key=lambda b: b["x"])
    assert under and all(a["x"] + a["width"] <= b["x"] for a, b in itertools.pairwise(under))
    for bar in timeline.locator("rect.bar").all():
        box = bar.bounding_box()
        assert box is not None
        assert axis["x"] <= box["x"] and box["x"] + box["width"] <= axis["x"] + axis["width"] + 0.5
        assert box["y"] + box["height"] <= axis["y"] + 0.5
    sizes = page.locator("svg.size-over-time")
    assert sizes.locator("text.legend-label").count() == sizes.locator("polyline.series").count()
    doc_shot(page, "first-hour-table")

    headers = page.locator("table.snapshots thead").inner_text()
    assert "removed" in headers and "Delete files" in headers
    delete_row = page.locator("table.snapshots tbody tr").first
    assert "3" in delete_row.locator("td.num.removed").first.inner_text()
    assert "doc set to 'where the order goes'" in page.locator("ol.history").inner_text()
    log = page.locator("ol.metadata-log code").first
    assert (log.get_attribute("title") or "").endswith(log.inner_text()) and "/" not in log.inner_text()
    assert (log.get_attribute("title") or "").startswith("file:")


def test_hard_names_link_to_their_own_pages(served: ProxyProcess, page: Page) -> None:
    for name in ODD:
        page.goto(f"{served.url}/ui/catalogs/local")
        page.locator("ul.namespaces a", has_text=name).filter(has_text=name).first.click()
        assert page.locator("h1").inner_text() == name, (name, page.url)
        page.locator("ul.tables a").first.click()
        assert page.locator("h1").inner_text().startswith(f"{name}.{name}"), (name, page.url)
        assert page.locator("section.error").count() == 0
    page.goto(f"{served.url}/ui/catalogs/local/namespaces/empty")
    assert page.locator("p.empty").all_inner_texts() == [
        "No properties.",
        "No namespaces in empty.",
        "No tables.",
        "No views.",
    ]
    assert page.locator("li.empty").count() == 0


def test_search_then_preview(served: ProxyProcess, page: Page) -> None:
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto(f"{served.url}/ui/catalogs/local")
    page.fill("form.search input[name=q]", "ORDE")
    page.click("form.search button")
    assert "/ui/catalogs/local/search?q=ORDE" in page.url
    assert page.locator("table.search-results a").all_inner_texts() == ["orders"]
    doc_shot(page, "first-hour-search")
    page.click("table.search-results a")
    page.click("a.preview-link")
    no_scripts(page)
    ids = [int(t) for t in page.locator("table.preview td.number").all_inner_texts()]
    assert sorted(ids) == list(range(3, 27))  # nine appends of three rows, ids 0-2 deleted
    assert "<i>city 3</i>" in page.locator("table.preview").inner_text()  # shown as text, not markup
    assert page.locator("table.preview i").count() == 0
    doc_shot(page, "first-hour-preview")
    page.goto(f"{served.url}/ui/catalogs/local/trash")
    assert "for 7 days and" in page.locator("main").inner_text()


def test_dark_mode_and_a_390_pixel_screen(served: ProxyProcess, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    try:
        for path in (
            "/ui/catalogs/local/namespaces/shop/tables/orders",
            "/ui/catalogs/local/namespaces/shop/tables/orders/preview",
            "/ui/catalogs/local/namespaces/shop",
            "/ui/catalogs/local/search?q=o",
            "/ui/catalogs/local/trash",
        ):
            page.goto(f"{served.url}{path}")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(13, 17, 23)"
        page.goto(f"{served.url}/ui/catalogs/local/namespaces/shop/tables/orders")
        wide = page.locator("table.snapshots").first.evaluate(
            "t => t.parentElement.scrollWidth > t.parentElement.clientWidth"
        )
        assert wide  # the snapshots table scrolls inside its own box
        doc_shot(page, "first-hour-phone-dark")
    finally:
        context.close()
