"""One judge of "needs attention" (issue 28): over a real ``irc-proxy serve``, the management API's policy
(``needs-attention``), the console's "tables needing attention" page and each table's health page agree on every
table, under a catalog policy, a namespace override inherited by a child namespace, and table overrides that lower
and raise the threshold; changing a namespace's override changes all three at once. The survey reads each
namespace's properties once, however many of its tables it judges."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import root_config, sign_in
from tests.support.rest import MGMT, token_of
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "root-secret-for-one-judge"
CONFIG = root_config(ROOT_SECRET, '[catalogs.local]\nkind = "local"\n[catalogs.local.maintenance]\nsmall_files = 4\n')
"""The catalog lowers ``small_files`` from 100 to 4: six one-row appends (about 5 small files by the summary's
estimate, 6 counted) need attention unless a namespace or the table raises it."""
KEY = "irc-proxy.maintenance.small_files"
TABLES: dict[tuple[tuple[str, ...], str], tuple[dict[str, str], str]] = {
    (("low",), "inherits"): ({}, "catalog"),
    (("low",), "raised"): ({KEY: "500"}, "table"),
    (("high",), "inherits"): ({}, "namespace high"),
    (("high",), "lowered"): ({KEY: "3"}, "table"),
    (("high", "child"), "inherits"): ({}, "namespace high"),
}
"""Each table: its own properties, and where its ``small_files`` comes from (``high`` raises it to 1000)."""


@dataclass
class Lake:
    proxy: ProxyProcess
    root: httpx.Client
    console: httpx.Client


@pytest.fixture(scope="module")
def lake(serve: Serve) -> Iterator[Lake]:
    proxy = serve(CONFIG, "one-judge")
    with httpx.Client(base_url=proxy.url, timeout=60) as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    iceberg = RestCatalog("judge", uri=proxy.url, warehouse="local", token=token)
    iceberg.create_namespace(("low",))
    iceberg.create_namespace(("high",), properties={KEY: "1000"})
    iceberg.create_namespace(("high", "child"))
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    for (namespace, name), (properties, _) in TABLES.items():
        table = iceberg.create_table((*namespace, name), schema=rows.schema, properties=properties)
        for _ in range(6):
            table.append(rows)
    with (
        httpx.Client(base_url=proxy.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as root,
        httpx.Client(base_url=proxy.url, timeout=60) as browser,
    ):
        yield Lake(proxy, root, sign_in(browser, "root", ROOT_SECRET))


def api_reasons(lake: Lake, namespace: tuple[str, ...], name: str) -> tuple[list[str], str]:
    """The management API's ``needs-attention`` and the source of ``small_files``."""
    query = {"namespace": "\x1f".join(namespace), "table": name}
    answer = lake.root.get(f"{MGMT}/catalogs/local/maintenance/policy", params=query)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return body["needs-attention"], body["policy"]["small_files"]["source"]


def survey(lake: Lake) -> tuple[dict[str, list[str]], str]:
    """The attention page's flagged tables with their reasons, and the page."""
    page = lake.console.get("/ui/catalogs/local/attention")
    assert page.status_code == 200, page.text
    rows = re.findall(r'<tr><td><a href="[^"]*/health">([^<]*)</a></td>.*?<td>([^<]*)</td></tr>', page.text, re.S)
    return {html.unescape(name): html.unescape(why).split("; ") for name, why in rows}, page.text


def health(lake: Lake, namespace: tuple[str, ...], name: str) -> str:
    page = lake.console.get(f"/ui/catalogs/local/namespaces/{'%1F'.join(namespace)}/tables/{name}/health")
    assert page.status_code == 200, page.text
    return page.text


def judged_alike(lake: Lake) -> dict[str, bool]:
    """Assert the API, the attention page and the health pages agree on every table; which need attention."""
    flagged, _ = survey(lake)
    needs = {}
    for namespace, name in TABLES:
        ident = ".".join((*namespace, name))
        reasons, _ = api_reasons(lake, namespace, name)
        assert flagged.get(ident, []) == reasons, ident  # the same judge, the same words
        page = health(lake, namespace, name)
        assert ('<p class="attention">' in page) == bool(reasons), ident
        assert ('<p class="healthy empty">' in page) != bool(reasons), ident
        needs[ident] = bool(reasons)
    return needs


def test_the_api_the_attention_page_and_the_health_page_agree_under_every_layer(lake: Lake) -> None:
    assert judged_alike(lake) == {
        "low.inherits": True,  # the catalog's 4
        "low.raised": False,  # its own 500
        "high.inherits": False,  # the namespace's 1000
        "high.lowered": True,  # its own 3 beats the namespace's 1000
        "high.child.inherits": False,  # the parent namespace's 1000
    }
    for (namespace, name), (_, source) in TABLES.items():
        reasons, shown = api_reasons(lake, namespace, name)
        assert shown == source, name
        page = health(lake, namespace, name)
        assert f"small files <small>({source})</small>" in page, name
    reasons, _ = api_reasons(lake, ("low",), "inherits")
    assert reasons == ["about 5 small data files, threshold 4 (rewrite-data-files)"]
    exact = health(lake, ("low",), "inherits")  # the health page counts the manifests: 6, same threshold
    assert "<li>6 small data files, threshold 4 (rewrite-data-files)</li>" in exact
    assert "<li>6 small data files, threshold 3 (rewrite-data-files)</li>" in health(lake, ("high",), "lowered")


def test_lowering_the_namespaces_threshold_flags_its_tables_everywhere_at_once(lake: Lake) -> None:
    update = {"updates": {KEY: "2"}, "removals": []}
    changed = lake.root.post("/v1/local/namespaces/high/properties", json=update)
    assert changed.status_code == 200, changed.text
    try:
        assert judged_alike(lake) == {
            "low.inherits": True,
            "low.raised": False,
            "high.inherits": True,  # the namespace's 2 now
            "high.lowered": True,  # still its own 3
            "high.child.inherits": True,  # inherits the 2
        }
        assert "<li>6 small data files, threshold 2 (rewrite-data-files)</li>" in health(
            lake, ("high", "child"), "inherits"
        )
    finally:
        lake.root.post("/v1/local/namespaces/high/properties", json={"updates": {KEY: "1000"}, "removals": []})


def test_the_survey_reads_each_namespace_once_whatever_its_tables(lake: Lake) -> None:
    _, page = survey(lake)
    assert 'data-loaded="5"' in page  # five tables judged ...
    assert 'data-namespaces-read="3"' in page  # ... from three namespaces read: low, high, high.child (not 6)
