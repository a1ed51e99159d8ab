"""The console's maintenance pages over a real ``irc-proxy serve``: a table's health numbers (asserted against files
pyiceberg wrote through the server), the tables needing attention (only those the caller may see), requesting a
run from the console (CSRF, ``table.write``), the run's page, and the request's audit record."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import csrf_of, root_config, sign_in
from tests.support.rest import MGMT, make_principal, token_of
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "root-secret-for-the-health-pages"
CONFIG = root_config(
    ROOT_SECRET,
    '[server.maintenance]\npoll_seconds = 0.1\n[catalogs.local]\nkind = "local"\n'
    "[catalogs.local.maintenance]\nsmall_files = 5\n",
)
"""The catalog's policy: a table needs attention at 5 small files (the default, 100, would flag none here)."""
TARGET = 40_000
"""The tables' ``write.target-file-size-bytes``: small files are those under 30,000 bytes."""
HEALTH = "/ui/catalogs/local/namespaces/shop/tables/orders/health"


@dataclass
class Shop:
    proxy: ProxyProcess
    root: httpx.Client
    writer: tuple[str, str]
    reader: tuple[str, str]
    sizes: list[int]
    """The sizes of orders' data files, as pyiceberg reads them from its manifests."""


def small(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64())})


def big() -> pa.Table:
    return pa.table({"id": pa.array([(i * 7919) % 1_000_003 * 1_000_003 for i in range(20_000)], pa.int64())})


@pytest.fixture(scope="module")
def shop(serve: Serve) -> Iterator[Shop]:
    proxy = serve(CONFIG, "ui-health")
    with httpx.Client(base_url=proxy.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with httpx.Client(base_url=proxy.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root:
        iceberg = RestCatalog("health", uri=proxy.url, warehouse="local", token=token)
        for ns in ("shop", "hr"):
            iceberg.create_namespace(ns)
        properties = {"write.target-file-size-bytes": str(TARGET)}
        orders = iceberg.create_table(("shop", "orders"), schema=small(0).schema, properties=properties)
        for i in range(6):
            orders.append(small(i * 2))
        orders.append(big())
        iceberg.create_table(("shop", "fine"), schema=small(0).schema, properties=properties).append(big())
        hidden = iceberg.create_table(("hr", "salaries"), schema=small(0).schema, properties=properties)
        for i in range(6):
            hidden.append(small(i * 2))
        sizes = [int(f["file_size_in_bytes"]) for f in orders.inspect.files().to_pylist()]
        writer = make_principal(
            root,
            "writer",
            {"privilege": "table.write", "namespace": ["shop"]},
            {"privilege": "table.list", "namespace": ["shop"]},
        )
        reader = make_principal(
            root,
            "reader",
            {"privilege": "table.read", "namespace": ["shop"]},
            {"privilege": "table.list", "namespace": ["shop"]},
            {"privilege": "namespace.list", "namespace": []},
        )
        yield Shop(proxy, root, writer, reader, sizes)


@contextmanager
def browser(shop: Shop, who: tuple[str, str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=shop.proxy.url, timeout=60) as client:
        yield sign_in(client, *who)


def fact(html: str, name: str) -> str:
    found = re.search(rf'<dd class="{name}">([^<]*)', html)
    assert found, html
    return found.group(1).strip()


def test_the_health_panel_counts_the_files_pyiceberg_wrote(shop: Shop) -> None:
    small_files = [size for size in shop.sizes if size < TARGET * 0.75]
    assert len(small_files) == 6 and len(shop.sizes) > 6  # pyiceberg cut the big append at the target size
    with browser(shop, shop.writer) as page:
        html = page.get(HEALTH)
        assert html.status_code == 200, html.text
        text = html.text
    files = len(shop.sizes)
    assert fact(text, "data-files") == f"{files} ({_size(sum(shop.sizes))}, 20,012 records)"
    assert fact(text, "small-files") == "6"
    assert fact(text, "average-size") == _size(sum(shop.sizes) // files)
    assert fact(text, "delete-files").startswith("0 (0 bytes)")
    assert fact(text, "manifests") == "7"
    assert fact(text, "snapshots").startswith("7, the oldest")
    assert "6 small data files, threshold 5 (rewrite-data-files)" in text
    assert re.search(r'class="policy">needs attention at 5 small files <small>\(catalog\)', text), text
    assert "No maintenance runs yet." in text and 'class="request-run"' in text


def _size(count: int) -> str:
    from irc_proxy.ui.models import size_text

    return size_text(count)


def test_a_writer_requests_a_dry_run_from_the_console_and_follows_it(shop: Shop) -> None:
    with browser(shop, shop.writer) as page:
        form = csrf_of(page.get(HEALTH))
        action = HEALTH.removesuffix("/health") + "/maintenance"
        data = {"csrf": form, "job-expire-snapshots": "yes", "dry_run": "yes"}
        assert page.post(action, data={k: v for k, v in data.items() if k != "csrf"}).status_code == 403  # no CSRF
        assert page.post(action, data=data, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        queued = page.post(action, data=data)
        assert queued.status_code == 303, queued.text
        run_url = queued.headers["location"]
        run_id = run_url.rsplit("/", 1)[-1]
        assert run_url == f"/ui/catalogs/local/maintenance/runs/{run_id}"
        deadline = time.monotonic() + 60
        while "not yet" in (shown := page.get(run_url)).text and time.monotonic() < deadline:
            time.sleep(0.1)
        assert shown.status_code == 200 and 'class="run-status status-succeeded">succeeded (dry run' in shown.text
        assert "snapshots-expired" in shown.text and "writer" in shown.text
        listed = page.get(HEALTH).text
        assert f'href="/ui/catalogs/local/maintenance/runs/{run_id}"' in listed and "dry run" in listed
    records = shop.root.get(f"{MGMT}/audit", params={"operation": "ui.maintenance.request"}).json()["records"]
    queued_records = [r for r in records if r["status"] == 303]
    assert [(r["principal"], r["object"]) for r in queued_records] == [("writer", "shop.orders")]
    assert f"run {run_id}: expire-snapshots (dry run)" in queued_records[0]["reason"]


def test_a_reader_sees_the_numbers_but_neither_runs_nor_the_form_and_cannot_post(shop: Shop) -> None:
    with browser(shop, shop.writer) as page:
        form = csrf_of(page.get(HEALTH))
        queued = page.post(
            HEALTH.removesuffix("/health") + "/maintenance", data={"csrf": form, "job-expire-snapshots": "yes"}
        )
        run_url = queued.headers["location"]
    with browser(shop, shop.reader) as page:
        html = page.get(HEALTH)
        assert html.status_code == 200 and fact(html.text, "small-files") == "6"
        assert "needs table.write" in html.text and 'class="request-run"' not in html.text
        assert 'class="policy">' in html.text and "executor" not in html.text  # thresholds, not the operator's keys
        refused = page.post(
            HEALTH.removesuffix("/health") + "/maintenance", data={"csrf": csrf_of(html), "job-expire-snapshots": "yes"}
        )
        assert refused.status_code == 403 and "table.write" in refused.text
        assert page.get(run_url).status_code == 403
        assert page.get("/ui/catalogs/local/namespaces/hr/tables/salaries/health").status_code == 403
    deadline, seen = time.monotonic() + 10, list[tuple[str, int]]()
    while not seen and time.monotonic() < deadline:  # records reach the database in batches
        query = {"operation": "ui.table.health", "principal": "reader"}
        seen = [(r["decision"], r["status"]) for r in shop.root.get(f"{MGMT}/audit", params=query).json()["records"]]
    assert ("allowed", 200) in seen and ("denied", 200) not in seen  # not showing the runs is no refusal


def test_tables_needing_attention_lists_only_what_the_caller_may_see(shop: Shop) -> None:
    with browser(shop, shop.reader) as page:
        html = page.get("/ui/catalogs/local/attention")
        assert html.status_code == 200, html.text
    assert ">shop.orders</a>" in html.text and "small data files, threshold 5 (rewrite-data-files)" in html.text
    assert "shop.fine" not in html.text and "salaries" not in html.text
    with browser(shop, ("root", ROOT_SECRET)) as page:
        everything = page.get("/ui/catalogs/local/attention").text
    assert ">shop.orders</a>" in everything and ">hr.salaries</a>" in everything and "shop.fine" not in everything
