"""A writer's data file that is tiny on storage but huge once decoded, previewed by someone else (a real server
over a socket, ``oauth2``).

The preview's byte budget (``server.ui_preview_max_bytes``) counts file bytes; Parquet dictionary-encodes
and compresses, so a 283-byte file can hold 1,000 rows of one 1 MB string: 1 GB once decoded. Before the
preview measured what it decodes, opening that table's preview took the server from about 200 MB to 1.7 GB
of RSS (10,000 such rows, still a few hundred bytes, would exhaust the machine). It now decodes in small
batches and stops at the budget, saying so.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.rest import RestCatalog

from tests.support.console import root_config, sign_in
from tests.support.rest import make_principal, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-decoding"
VALUE_BYTES = 1 << 20
ROWS = 1000


def test_a_tiny_data_file_decoding_to_a_gigabyte_is_previewed_within_the_budget(tmp_path: Path) -> None:
    proxy = ProxyProcess(tmp_path, root_config(ROOT_SECRET)).start()
    try:
        with httpx.Client(base_url=proxy.url, timeout=60) as client:
            token = token_of(client, "root", ROOT_SECRET)
            client.headers["Authorization"] = f"Bearer {token}"
            RestCatalog("root", uri=proxy.url, warehouse="local", token=token).create_namespace("own")
            writer = make_principal(client, "writer", {"privilege": "all", "namespace": ["own"]})
            writer_token = token_of(client, *writer)
        catalog = RestCatalog("writer", uri=proxy.url, warehouse="local", token=writer_token)
        table = catalog.create_table("own.bomb", schema=pa.schema([("s", pa.string())]))
        data = Path(table.location().removeprefix("file://")) / "data" / "bomb.parquet"
        data.parent.mkdir(parents=True, exist_ok=True)
        one_value = pa.array(["a" * VALUE_BYTES])
        column = pa.DictionaryArray.from_arrays(pa.array([0] * ROWS, pa.int32()), one_value)
        pq.write_table(pa.table({"s": column}), data, compression="zstd", store_schema=False)
        assert data.stat().st_size < 4096  # a few hundred bytes on storage, a gigabyte decoded
        table.add_files([data.as_uri()])

        before = proxy.peak_rss_kib()
        with httpx.Client(base_url=proxy.url, timeout=120) as browser:
            sign_in(browser, "root", ROOT_SECRET)
            started = time.monotonic()
            page = browser.get("/ui/catalogs/local/namespaces/own/tables/bomb/preview")
            took = time.monotonic() - started
        grew_mib = (proxy.peak_rss_kib() - before) / 1024
        assert page.status_code == 200, page.text
        assert "decode within" in page.text and "server.ui_preview_max_bytes" in page.text
        assert 0 < page.text.count('<td class="text">') < 100  # the first rows that fit in 32 MiB
        assert took < 5, took
        assert grew_mib < 300, f"the server's peak RSS grew by {grew_mib:.0f} MiB"
        assert httpx.get(f"{proxy.url}/healthz", timeout=5).status_code == 200
    finally:
        proxy.stop()
