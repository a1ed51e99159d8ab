"""Reserved principal names (``irc-proxy``, ``anonymous``) as an administrator or a configuration tries to reuse
them in disguise, against a real proxy: audit records by these names must mean the proxy itself or no token."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.rest import MGMT, assert_error, bearer_client
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "root-secret-for-reserved-names"
CONFIG = f'''
[auth]
mode = "oauth2"
admins = ["root"]
[[auth.clients]]
id = "root"
secret_hash = "{hash_secret(ROOT_SECRET)}"
principal = "root"
'''
DISGUISED = [
    "IRC-Proxy",
    "irc-proxy ",
    " anonymous",
    "ANONYMOUS",
    "irc\u200b-proxy",
    "\uff49rc-proxy",
    "anon\u00adymous",
]
"""Case, padding, a zero-width space, a fullwidth letter, a soft hyphen: another principal to the grants, the
proxy itself to a person reading the audit."""


@pytest.fixture(scope="module")
def root(serve: Serve) -> Iterator[httpx.Client]:
    proxy: ProxyProcess = serve(CONFIG, "reserved")
    with bearer_client(proxy.url, "root", ROOT_SECRET) as client:
        yield client


@pytest.mark.parametrize("name", DISGUISED)
def test_a_principal_cannot_be_created_under_a_reserved_name_in_disguise(root: httpx.Client, name: str) -> None:
    assert_error(root.post(f"{MGMT}/principals", json={"name": name}), 400, "BadRequestException", "reserved")


def test_names_that_only_contain_a_reserved_one_are_still_free(root: httpx.Client) -> None:
    for name in ("irc-proxy-reader", "anonymous2"):
        assert root.post(f"{MGMT}/principals", json={"name": name}).status_code == 201
