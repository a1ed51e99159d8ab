"""The console's table preview and search as an attacker meets them (a real server over a socket, ``oauth2``):

- a reader without ``table.read`` gets a 403 page with nothing of the table (no column, no value);
- a principal searching finds only what its listings show it, and a catalog it holds nothing in is a 403;
- both are GET pages that change nothing (a POST is 405) and carry the console's headers (no framing, no
  caching), so a page in a signed-in admin's browser can at most make it run one bounded search or preview;
- cost: a query is at most 200 characters, a search looks at ``server.ui_search_max_entries`` entries at most,
  a preview reads ``server.ui_preview_max_bytes`` at most and a 10,000-column table shows its first 50 columns.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import root_config, sign_in
from tests.support.rest import SCHEMA, make_principal, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-previews"
ROWS = pa.table(
    {
        "id": pa.array(range(150), pa.int64()),
        "secret_column": pa.array([f"<b>value {i}</b>" for i in range(150)]),
        "blob": pa.array([bytes(range(40))] * 150, pa.binary()),
    }
)
Served = tuple[ProxyProcess, dict[str, tuple[str, str]]]
PREVIEW = "/ui/catalogs/local/namespaces/sales/tables/orders/preview"


def served(workdir: Path, extra: str = "") -> ProxyProcess:
    return ProxyProcess(workdir, root_config(ROOT_SECRET, f"[server]\nui_search_max_entries = 100\n{extra}")).start()


def write_orders(server: ProxyProcess) -> None:
    """``sales.orders`` (150 rows, then ids below 10 deleted), ``hr.payroll`` and 150 tables in ``many``."""
    with httpx.Client(base_url=server.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    catalog = RestCatalog("root", uri=server.url, warehouse="local", token=token)
    for namespace in ("sales", "hr", "many"):
        catalog.create_namespace(namespace)
    orders = catalog.create_table("sales.orders", schema=ROWS.schema)
    orders.append(ROWS)
    orders.delete("id < 10")
    catalog.create_table("hr.payroll", schema=ROWS.schema)
    with httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        for i in range(150):
            answer = root.post("/v1/local/namespaces/many/tables", json={"name": f"t{i}", "schema": SCHEMA})
            assert answer.status_code == 200, answer.text


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    proxy = served(tmp_path_factory.mktemp("preview"))
    write_orders(proxy)
    with httpx.Client(base_url=proxy.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with httpx.Client(base_url=proxy.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        listing = [{"privilege": p, "namespace": ["sales"]} for p in ("namespace.list", "table.list")]
        people = {
            "lister": make_principal(root, "lister", *listing),
            "reader": make_principal(root, "reader", *listing, {"privilege": "table.read", "namespace": ["sales"]}),
        }
    yield proxy, people
    proxy.stop()


@contextmanager
def browser(proxy: ProxyProcess, who: tuple[str, str] | None) -> Iterator[httpx.Client]:
    """A client signed in to the console as ``who`` (root when None)."""
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield sign_in(client, *(who or ("root", ROOT_SECRET)))


def test_a_reader_without_table_read_gets_a_403_preview_with_nothing_of_the_table(server: Served) -> None:
    proxy, people = server
    with browser(proxy, people["lister"]) as lister:
        page = lister.get(PREVIEW)
        assert page.status_code == 403
        assert 'data-status="403"' in page.text and "table.read" in page.text
        for leak in ("secret_column", "value 1", "blob", "<th>"):
            assert leak not in page.text
        assert lister.get(PREVIEW.removesuffix("/preview")).status_code == 403


def test_a_reader_sees_100_rows_escaped_deletes_applied_and_binary_as_hex(server: Served) -> None:
    proxy, people = server
    with browser(proxy, people["reader"]) as reader:
        page = reader.get(PREVIEW)
        assert page.status_code == 200, page.text
        cells = re.findall(r'<td class="number">(\d+)</td>', page.text)
        assert len(cells) == 100 and min(int(c) for c in cells) >= 10  # ids 0-9 were deleted
        assert "&lt;b&gt;value 10&lt;/b&gt;" in page.text and "<b>value" not in page.text
        assert "00 01 02 03" in page.text and "(40 bytes)" in page.text
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


def test_preview_and_search_are_get_pages_that_refuse_other_methods(server: Served) -> None:
    proxy, _ = server
    with browser(proxy, None) as root:
        assert root.post(PREVIEW, data={"x": "1"}).status_code == 405
        assert root.post("/ui/catalogs/local/search", data={"q": "orders"}).status_code == 405


def test_a_search_finds_only_what_the_callers_listings_show(server: Served) -> None:
    proxy, people = server
    with browser(proxy, people["lister"]) as lister:
        page = lister.get("/ui/catalogs/local/search", params={"q": "PAY"})
        assert page.status_code == 200 and "payroll" not in page.text and "Nothing you may see" in page.text
        found = lister.get("/ui/catalogs/local/search", params={"q": "ORD"})
        assert "/namespaces/sales/tables/orders" in found.text
    with browser(proxy, None) as root:
        assert "/namespaces/hr/tables/payroll" in root.get("/ui/catalogs/local/search", params={"q": "pay"}).text


def test_a_principal_without_grants_in_the_catalog_gets_a_403_search(server: Served) -> None:
    proxy, _ = server
    with httpx.Client(base_url=proxy.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with httpx.Client(base_url=proxy.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        nobody = make_principal(root, "nobody")
    with browser(proxy, nobody) as outsider:
        page = outsider.get("/ui/catalogs/local/search", params={"q": "a"})
        assert page.status_code == 403 and "orders" not in page.text and "payroll" not in page.text


def test_a_search_stops_at_its_entry_cap_and_a_long_query_is_a_400(server: Served) -> None:
    proxy, _ = server
    with browser(proxy, None) as root:
        page = root.get("/ui/catalogs/local/search", params={"q": "no-such-name"})
        assert page.status_code == 200 and "stopped early" in page.text
        looked_at = int(re.search(r'data-looked-at="(\d+)"', page.text).group(1))  # type: ignore[union-attr]
        assert looked_at == 100
        assert root.get("/ui/catalogs/local/search", params={"q": "x" * 201}).status_code == 400


def test_a_10000_column_table_previews_its_first_50_columns_quickly(server: Served) -> None:
    proxy, _ = server
    wide = {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": i, "name": f"c{i}", "type": "string", "required": False} for i in range(1, 10_001)],
    }
    with browser(proxy, None) as root:
        token = token_of(root, "root", ROOT_SECRET)
        created = root.post(
            "/v1/local/namespaces/sales/tables",
            json={"name": "wide", "schema": wide},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert created.status_code == 200, created.text
        started = time.monotonic()
        page = root.get("/ui/catalogs/local/namespaces/sales/tables/wide/preview")
        assert page.status_code == 200 and time.monotonic() - started < 5
        assert "9,950 more are not read" in page.text and "no snapshot" in page.text


def test_a_preview_stops_at_its_byte_budget_and_says_so(tmp_path: Path) -> None:
    proxy = served(tmp_path, "ui_preview_max_bytes = 1024")
    try:
        write_orders(proxy)
        with browser(proxy, None) as root:
            page = root.get(PREVIEW)
            assert page.status_code == 200
            assert "server.ui_preview_max_bytes" in page.text and 'class="number"' not in page.text
    finally:
        proxy.stop()


def test_a_data_file_outside_the_table_is_never_read_by_a_preview(server: Served, tmp_path: Path) -> None:
    """A writer adds a data file outside every allowed location (pyiceberg's ``add_files`` reads it on the client
    and commits a manifest naming it): the preview names the refusal and shows none of its rows."""
    proxy, _ = server
    outside = tmp_path / "outside" / "secret.parquet"
    outside.parent.mkdir()
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "note": ["do-not-leak-this-line"]}), outside)
    with httpx.Client(base_url=proxy.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    catalog = RestCatalog("root", uri=proxy.url, warehouse="local", token=token)
    planted = catalog.create_table("sales.planted", schema=pa.schema([("id", pa.int64()), ("note", pa.string())]))
    planted.add_files([str(outside)])
    with browser(proxy, None) as root:
        page = root.get("/ui/catalogs/local/namespaces/sales/tables/planted/preview")
        assert page.status_code == 200
        assert "do-not-leak-this-line" not in page.text and 'class="number"' not in page.text
        assert "The preview stopped" in page.text


def test_tables_needing_attention_stop_at_the_entry_cap_and_say_so(server: Served) -> None:
    proxy, _ = server
    with browser(proxy, None) as root:
        page = root.get("/ui/catalogs/local/attention")
        assert page.status_code == 200 and "stopped early" in page.text
        looked_at = int(re.search(r'data-looked-at="(\d+)"', page.text).group(1))  # type: ignore[union-attr]
        assert looked_at == 100
        assert root.post("/ui/catalogs/local/attention").status_code == 405


def test_a_lister_without_table_read_gets_no_health_page_and_no_table_needing_attention(server: Served) -> None:
    proxy, people = server
    with browser(proxy, people["lister"]) as lister:
        health = lister.get(PREVIEW.removesuffix("/preview") + "/health")
        assert health.status_code == 403 and "table.read" in health.text and "secret_column" not in health.text
        survey = lister.get("/ui/catalogs/local/attention")
        assert survey.status_code == 200 and 'data-loaded="0"' in survey.text and "orders" not in survey.text
