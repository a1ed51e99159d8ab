"""A forwarded catalog's table naming the proxy's own files (real servers over sockets).

The proxy reads a forwarded table's manifests and data files itself (the console's preview, scan planning)
at the paths the remote catalog's metadata names, with the storage access the remote vends, or, for a
local path, with the proxy's own file-system access. A writer on a remote catalog that confines locations
less than the proxy (here ``allowed_locations = ["file:///tmp"]``) makes its table's ``write.data.path`` cover
the proxy's own warehouse and adds another catalog's data file to it: the proxy must not read it, whoever
asks. What the proxy keeps for itself (its data directory, every served catalog's allowed locations, its
view warehouses) is never read for a forwarded table.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog

from tests.support.federation import remote_config, rest_catalog, start_front
from tests.support.federation import token as federation_token
from tests.support.server import ProxyProcess

SECRET_ROW = "front-local-secret-row"


def test_a_forwarded_table_cannot_make_the_proxy_read_its_own_catalogs_files(tmp_path: Path) -> None:
    permissive = '[catalogs.local]\nkind = "local"\nallowed_locations = ["file:///tmp"]\n'
    (tmp_path / "remote").mkdir()
    (tmp_path / "front").mkdir()
    remote = ProxyProcess(tmp_path / "remote", remote_config() + permissive).start()
    front = start_front(tmp_path / "front", rest_catalog("fed", remote.url))
    try:
        own = RestCatalog("front", uri=front.url, warehouse="local")
        own.create_namespace("private")
        secret = own.create_table("private.t", schema=pa.schema([("note", pa.string())]))
        secret.append(pa.table({"note": [SECRET_ROW]}))
        secret_file = next(iter(secret.inspect.files().column("file_path").to_pylist()))

        writer = RestCatalog("w", uri=remote.url, warehouse="local", token=federation_token(remote.url))
        writer.create_namespace("a")
        front_warehouse = (tmp_path / "front").as_uri()
        steal = writer.create_table(
            "a.steal", schema=pa.schema([("note", pa.string())]), properties={"write.data.path": front_warehouse}
        )
        steal.add_files([secret_file])

        with httpx.Client(base_url=front.url, timeout=60) as browser:
            page = browser.get("/ui/catalogs/fed/namespaces/a/tables/steal/preview")
        assert page.status_code == 200, page.text
        assert SECRET_ROW not in page.text
        assert "The preview stopped" in page.text
    finally:
        front.stop()
        remote.stop()
