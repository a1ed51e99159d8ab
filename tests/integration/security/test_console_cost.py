"""The console's pages have bounded cost: a reader who can open a page cannot freeze the server with it.

The attacks: a table with a million properties (one ``set-properties``, 14 MB), a very wide schema and a view
whose two versions are 2,000 lines each (difflib took 8-97 s per diff). Each page shows windows of its lists
(``?properties=``, ``?columns=``, ...), is built in a worker thread within ``server.ui_page_budget_seconds``
and answers 503 past it; ``/healthz`` keeps answering in well under half a second while the pages are
opened concurrently.

The default ``server.max_commit_updates`` refuses a million property keys in one commit; this server raises
it (a registered metadata file could bring them anyway). Its metadata cache is large enough to hold the
million-property metadata file: what is measured is the console's own work. (With the default 64 MB cache
that 14 MB file is parsed again on every load, the REST API's ``loadTable`` included, which holds the
interpreter for most of a second: that is the metadata loader's cost, not the console's.)
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.console import root_config, sign_in
from tests.support.rest import SCHEMA, bearer_client, commit, snapshot
from tests.support.server import ProxyProcess

SECRET = "root-secret-for-console-cost"
PROPERTIES = 1_000_000
COLUMNS = 190_000
SQL_LINES = 2_000
HEALTHY_SECONDS = 0.5
TABLES = "/ui/catalogs/local/namespaces/big/tables"
DASH = "\N{EN DASH}"


@dataclass(frozen=True)
class Heavy:
    server: ProxyProcess

    @contextmanager
    def browser(self) -> Iterator[httpx.Client]:
        with httpx.Client(base_url=self.server.url, timeout=120) as browser:
            yield sign_in(browser, "root", SECRET)


def _sql(seed: int) -> str:
    """2,000 lines drawn from ten: the worst case of difflib's SequenceMatcher (many equal lines)."""
    pick = random.Random(seed)
    return "\n".join(f"select col{pick.randrange(10)} from t" for _ in range(SQL_LINES))


def _version(version_id: int, sql: str) -> dict[str, Any]:
    return {
        "version-id": version_id,
        "timestamp-ms": 1_700_000_000_000 + version_id,
        "schema-id": 0,
        "summary": {"engine-name": "spark"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["big"],
    }


def _populate(root: httpx.Client) -> None:
    assert root.post("/v1/local/namespaces", json={"namespace": ["big"]}).status_code == 200
    assert root.post("/v1/local/namespaces/big/tables", json={"name": "props", "schema": SCHEMA}).status_code == 200
    many = {f"k{i:07d}": "v" for i in range(PROPERTIES)}  # 14 MB: under the 16 MB body limit
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": many}]}
    committed = root.post("/v1/local/namespaces/big/tables/props", json=body)
    assert committed.status_code == 200, committed.text[:500]
    fields = [{"id": i, "name": f"c{i}", "type": "string", "required": False} for i in range(1, COLUMNS + 1)]
    wide = {"name": "wide", "schema": {"type": "struct", "schema-id": 0, "fields": fields}}
    assert root.post("/v1/local/namespaces/big/tables", json=wide).status_code == 200
    view_schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long"}]}
    view = {"name": "v", "schema": view_schema, "view-version": _version(1, _sql(1)), "properties": {}}
    created = root.post("/v1/local/namespaces/big/views", json=view)
    assert created.status_code == 200, created.text[:500]
    change = {
        "requirements": [{"type": "assert-view-uuid", "uuid": created.json()["metadata"]["view-uuid"]}],
        "updates": [
            {"action": "add-view-version", "view-version": _version(2, _sql(2))},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    assert root.post("/v1/local/namespaces/big/views/v", json=change).status_code == 200


def _serve(workdir: Path, extra: str = "") -> ProxyProcess:
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    server = f"[server]\nmetadata_cache_mb = 1024\nmax_commit_updates = {PROPERTIES}\n{extra}\n"
    catalogs = f'{server}[catalogs.local]\nwarehouse = "{warehouse.as_uri()}"\n'
    return ProxyProcess(workdir, root_config(SECRET, catalogs)).start()


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Heavy]:
    server = _serve(tmp_path_factory.mktemp("console-cost"))
    try:
        with bearer_client(server.url, "root", SECRET) as root:
            root.timeout = httpx.Timeout(180)
            _populate(root)
        yield Heavy(server)
    finally:
        server.stop()


class HealthProbe:
    """Polls ``/healthz`` from a thread and keeps the slowest answer."""

    def __init__(self, url: str) -> None:
        self.url, self.slowest, self.answers = url, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self._stop.is_set():
                started = time.monotonic()
                assert http.get("/healthz").status_code == 200
                self.slowest = max(self.slowest, time.monotonic() - started)
                self.answers += 1
                time.sleep(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def _open_all(heavy: Heavy, paths: list[str]) -> list[tuple[int, float, str]]:
    """Open ``paths`` concurrently (one thread each): (status, seconds, body) per path."""
    results: list[tuple[int, float, str]] = [(0, 0.0, "")] * len(paths)

    def open_one(i: int) -> None:
        with heavy.browser() as browser:
            started = time.monotonic()
            page = browser.get(paths[i])
            results[i] = (page.status_code, time.monotonic() - started, page.text)

    threads = [threading.Thread(target=open_one, args=(i,)) for i in range(len(paths))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    return results


def test_heavy_pages_opened_together_leave_healthz_fast_and_answer_within_the_budget(heavy: Heavy) -> None:
    paths = [
        f"{TABLES}/props",
        f"{TABLES}/props?properties=500000",
        f"{TABLES}/wide",
        f"{TABLES}/wide?columns={COLUMNS - 50}",
        "/ui/catalogs/local/namespaces/big/views/v",
        f"{TABLES}/props",
        "/ui/catalogs/local/namespaces/big/views/v?from=2&to=1",
    ]
    with HealthProbe(heavy.server.url) as probe:
        results = _open_all(heavy, paths)
        results += _open_all(heavy, paths)  # again: drawn pages and diffs come from the caches
    assert probe.answers > 10
    assert probe.slowest < HEALTHY_SECONDS, f"/healthz took {probe.slowest:.2f} s while console pages were built"
    for path, (status, seconds, body) in zip(paths * 2, results, strict=True):
        assert status in (200, 503), (path, status, body[:300])
        assert seconds < 5 + 5, (path, seconds)  # the budget, plus a wait for one of the two build slots
        assert len(body) < 500_000, (path, len(body))
    assert [status for status, _, _ in results].count(200) >= len(paths), "most pages are answered, not refused"


def test_a_million_properties_are_shown_a_hundred_at_a_time(heavy: Heavy) -> None:
    total = f"{PROPERTIES + 1:,}"  # and the table's default write.parquet.compression-codec, stored first
    with heavy.browser() as browser:
        first = browser.get(f"{TABLES}/props")
        assert first.status_code == 200, first.text[:300]
        assert f"Properties 1{DASH}100 of {total}." in first.text and ">k0000098</th>" in first.text
        assert ">k0000099</th>" not in first.text and len(first.content) < 100_000
        more = re.search(r'<a class="next" href="(\?properties=100)">More properties</a>', first.text)
        assert more, first.text[-3000:]
        second = browser.get(f"{TABLES}/props{more.group(1)}")
        assert ">k0000099</th>" in second.text and ">k0000098</th>" not in second.text
        assert f"Properties 101{DASH}200 of {total}." in second.text and 'class="first" href="?"' in second.text
        last = browser.get(f"{TABLES}/props", params={"properties": "999951"})
        assert ">k0999999</th>" in last.text and ">k0999949</th>" not in last.text
        assert "More properties" not in last.text
        past = browser.get(f"{TABLES}/props", params={"properties": "5000000"})
        assert past.status_code == 200 and "No properties past 5,000,000" in past.text


def test_a_wide_schema_is_shown_a_hundred_fields_at_a_time(heavy: Heavy) -> None:
    with heavy.browser() as browser:
        page = browser.get(f"{TABLES}/wide")
        assert page.status_code == 200, page.text[:300]
        assert f"Fields 1{DASH}100 of {COLUMNS:,}." in page.text and "<code>c100</code>" in page.text
        assert "<code>c101</code>" not in page.text
        assert f"and {COLUMNS - 50:,} more" in page.text  # schema history: the first schema adds every field
        tail = browser.get(f"{TABLES}/wide", params={"columns": str(COLUMNS - 1)})
        assert f"<code>c{COLUMNS}</code>" in tail.text and "<code>c1</code>" not in tail.text


def test_a_diff_of_two_2000_line_versions_is_quick_and_marks_changes(heavy: Heavy) -> None:
    with heavy.browser() as browser:
        started = time.monotonic()
        page = browser.get("/ui/catalogs/local/namespaces/big/views/v", params={"from": "1", "to": "2"})
        assert page.status_code == 200, page.text[:300]
        assert time.monotonic() - started < 5
        diff = page.text[page.text.index('<pre class="diff">') :]
        assert diff.count('class="added"') > 100 and diff.count('class="removed"') > 100
        assert diff.count('class="same"') > 100  # lines common to both are matched, not all replaced


@pytest.mark.parametrize(
    "query",
    [
        {"properties": "abc"},
        {"properties": "²"},
        {"columns": "-1"},
        {"snapshots": "1" * 5000},
        {"log": "1e9"},
    ],
)
def test_a_window_offset_that_is_not_a_number_is_a_400_page(heavy: Heavy, query: dict[str, str]) -> None:
    with heavy.browser() as browser:
        page = browser.get(f"{TABLES}/props", params=query)
    assert page.status_code == 400 and 'data-status="400"' in page.text and "offset" in page.text


@pytest.mark.parametrize("query", [{"from": "1" * 5000, "to": "1"}, {"from": "1", "to": "²"}, {"from": "1"}])
def test_a_diff_of_versions_that_are_not_numbers_is_a_400_page(heavy: Heavy, query: dict[str, str]) -> None:
    with heavy.browser() as browser:
        page = browser.get("/ui/catalogs/local/namespaces/big/views/v", params=query)
    assert page.status_code == 400 and 'data-status="400"' in page.text


def test_a_page_over_its_budget_is_a_503_page_and_the_server_stays_up(tmp_path: Path) -> None:
    server = _serve(tmp_path, "ui_page_budget_seconds = 0.001")
    try:
        with bearer_client(server.url, "root", SECRET) as root:
            assert root.post("/v1/local/namespaces", json={"namespace": ["big"]}).status_code == 200
            created = root.post("/v1/local/namespaces/big/tables", json={"name": "t", "schema": SCHEMA})
            assert created.status_code == 200
        with httpx.Client(base_url=server.url, timeout=60) as browser:
            sign_in(browser, "root", SECRET)
            for _ in range(2):
                page = browser.get(f"{TABLES}/t")
                assert page.status_code == 503 and 'data-status="503"' in page.text, page.text[:300]
                assert "ui_page_budget_seconds" in page.text
            assert browser.get("/ui/catalogs").status_code == 200  # light pages are rendered as before
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        server.stop()


def test_a_namespace_with_thousands_of_properties_is_shown_a_hundred_at_a_time(heavy: Heavy) -> None:
    with bearer_client(heavy.server.url, "root", SECRET) as root:
        body = {"namespace": ["wideprops"], "properties": {f"p{i:05d}": "v" for i in range(5000)}}
        assert root.post("/v1/local/namespaces", json=body).status_code == 200
    with heavy.browser() as browser:
        page = browser.get("/ui/catalogs/local/namespaces/wideprops")
        assert page.status_code == 200, page.text[:300]
        assert f"Properties 1{DASH}100 of 5,000." in page.text and ">p00099</th>" in page.text
        assert ">p00100</th>" not in page.text
        later = browser.get("/ui/catalogs/local/namespaces/wideprops", params={"properties": "4900"})
        assert ">p04999</th>" in later.text and "More properties" not in later.text


def test_megabytes_of_sql_on_one_line_are_cut_and_not_compared(heavy: Heavy) -> None:
    long_line = "select " + ", ".join(f"c{i}" for i in range(400_000))  # ~3 MB, one line
    with bearer_client(heavy.server.url, "root", SECRET) as root:
        view_schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long"}]}
        view = {"name": "oneline", "schema": view_schema, "view-version": _version(1, long_line), "properties": {}}
        created = root.post("/v1/local/namespaces/big/views", json=view)
        assert created.status_code == 200, created.text[:300]
        change = {
            "requirements": [],
            "updates": [
                {"action": "add-view-version", "view-version": _version(2, long_line + " from t")},
                {"action": "set-current-view-version", "view-version-id": -1},
            ],
        }
        assert root.post("/v1/local/namespaces/big/views/oneline", json=change).status_code == 200
    with heavy.browser() as browser:
        page = browser.get("/ui/catalogs/local/namespaces/big/views/oneline")
    assert page.status_code == 200, page.text[:300]
    assert len(page.content) < 500_000 and "more characters not shown" in page.text
    assert "too long to compare here" in page.text


def test_megabyte_property_values_and_docs_are_cut(heavy: Heavy) -> None:
    long_text = "y" * 1_000_000
    field = {"id": 1, "name": "id", "type": "long", "required": False, "doc": long_text}
    body = {
        "name": "longtexts",
        "schema": {"type": "struct", "schema-id": 0, "fields": [field]},
        "properties": {"big": long_text, long_text: "long key"},
    }
    with bearer_client(heavy.server.url, "root", SECRET) as root:
        assert root.post("/v1/local/namespaces/big/tables", json=body).status_code == 200
    with heavy.browser() as browser:
        page = browser.get(f"{TABLES}/longtexts")
    assert page.status_code == 200, page.text[:300]
    assert len(page.content) < 50_000 and page.text.count("(998,000 more characters)") == 3


def test_snapshots_refs_and_the_metadata_log_are_windows(heavy: Heavy) -> None:
    with bearer_client(heavy.server.url, "root", SECRET) as root:
        keep = {"write.metadata.previous-versions-max": "500"}
        created = root.post(
            "/v1/local/namespaces/big/tables", json={"name": "busy", "schema": SCHEMA, "properties": keep}
        )
        assert created.status_code == 200
        location = created.json()["metadata"]["location"]
        url = "/v1/local/namespaces/big/tables/busy"
        snapshots = [{"action": "add-snapshot", "snapshot": snapshot(i, i - 1, i, location)} for i in range(1, 251)]
        tags = [
            {"action": "set-snapshot-ref", "ref-name": f"t{i:03d}", "type": "tag", "snapshot-id": i}
            for i in range(1, 151)
        ]
        commit(root, url, *snapshots, *tags)
        for i in range(120):  # one metadata file per commit: a long metadata log
            commit(root, url, {"action": "set-properties", "updates": {"n": str(i)}})
    with heavy.browser() as browser:
        page = browser.get(f"{TABLES}/busy").text
        assert f"Snapshots 1{DASH}100 of 250." in page and "<code>250</code>" in page and "<code>150</code>" not in page
        assert f"Branches and tags 1{DASH}100 of 150." in page and ">t100</td>" in page and ">t101</td>" not in page
        assert f"Metadata files 1{DASH}100 of 121." in page
        older = browser.get(f"{TABLES}/busy", params={"snapshots": "200", "refs": "100"}).text
        assert "<code>1</code>" in older and "<code>51</code>" not in older and ">t150</td>" in older
        # each list's links keep the other lists' offsets
        assert 'class="first" href="?refs=100"' in older and 'href="?refs=100&amp;snapshots=200&amp;log=100"' in older
