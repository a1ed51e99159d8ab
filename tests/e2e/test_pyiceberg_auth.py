"""pyiceberg's ``credential`` (client id:secret) against the oauth2 mode, end to end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import OAuthError, UnauthorizedError

from irc_proxy.handling.security.authn import hash_secret
from tests.support.server import ProxyProcess

SECRET = "pyiceberg-secret"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = (
        '[auth]\nmode = "oauth2"\nadmins = ["svc-etl"]\n[[auth.clients]]\nid = "etl"\n'
        f'secret_hash = "{hash_secret(SECRET)}"\nprincipal = "svc-etl"\n'
    )
    server = ProxyProcess(tmp_path_factory.mktemp("secured-pyiceberg"), config).start()
    yield server
    server.stop()


def connect(proxy: ProxyProcess, **props: str) -> RestCatalog:
    return RestCatalog(
        "secured", uri=proxy.url, warehouse="local", **{"oauth2-server-uri": f"{proxy.url}/v1/oauth/tokens"} | props
    )


def test_credential_gets_a_token_and_writes_a_table(secured: ProxyProcess) -> None:
    catalog = connect(secured, credential=f"etl:{SECRET}")
    ns = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    table = catalog.create_table((ns, "t"), schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))
    assert catalog.load_table((ns, "t")).scan().to_arrow().num_rows == 3
    assert (ns,) in catalog.list_namespaces()


def test_wrong_credential_and_no_credential_are_refused(secured: ProxyProcess) -> None:
    with pytest.raises(OAuthError, match="invalid_client"):
        connect(secured, credential="etl:nope")
    with pytest.raises(UnauthorizedError):
        connect(secured)
