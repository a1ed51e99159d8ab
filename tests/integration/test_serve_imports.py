"""When a served process imports pyarrow: not to start, and off the event loop once a table is loaded
(``threads.warm_imports``)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.support.server import Serve


def _mapped(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()


def test_the_first_loaded_table_warms_pyarrow_which_the_start_left_out(serve: Serve) -> None:
    """The first FileIO a request opened (the first scan plan after a start, say) imported pyiceberg's pyarrow
    FileIO on the event loop: ~0.2-0.3 s in which the process answered nothing, paid by that plan. A start still
    imports none of it (``tests/unit/test_import_cost.py``); the first loadTable (which reads its metadata
    without pyarrow) now has it imported on a thread of its own, so pyarrow's library appears in the process
    shortly after that answer with no request needing it."""
    proxy = serve()
    catalog = RestCatalog("p", uri=proxy.url, warehouse="local")
    catalog.create_namespace("ns")
    catalog.create_table(("ns", "t"), Schema(NestedField(1, "id", LongType(), required=False)))
    proxy.stop()
    proxy.start()  # a new process: only /healthz asked so far
    time.sleep(1.0)
    assert not _mapped(proxy.pid, "libarrow.so"), "the start imported pyarrow"
    assert httpx.get(f"{proxy.url}/v1/local/namespaces/ns/tables/t", timeout=30).status_code == 200
    deadline = time.monotonic() + 20
    while not _mapped(proxy.pid, "libarrow.so"):
        assert time.monotonic() < deadline, "pyarrow was not loaded 20 s after the first loadTable"
        time.sleep(0.1)
