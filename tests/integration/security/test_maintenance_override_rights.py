"""Who may set maintenance overrides on a namespace (``irc-proxy.maintenance.*``), on an ``oauth2`` proxy with
grants: they decide what maintenance does to every table below the namespace (how many snapshots expire, and
their data files with them), so ``namespace.properties`` alone is not enough; ``table.write`` on the whole
namespace is needed too, for an update, a removal, or a namespace created with them."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.console import root_config
from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.rest import make_principal, token_of

ROOT_SECRET = "root-secret-override-rights"
KEY = "irc-proxy.maintenance.max_snapshot_age"


@pytest.fixture(scope="module")
def proxy(serve_in_process: ServeInProcess) -> InProcessProxy:
    return serve_in_process(root_config(ROOT_SECRET), "override-rights")


@pytest.fixture(scope="module")
def clients(proxy: InProcessProxy) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """A holder of ``namespace.properties`` and ``namespace.create`` on ``shared`` (others' tables in it), and a
    holder of those and ``table.write`` on it."""
    with proxy.client() as root:
        root.headers["Authorization"] = f"Bearer {token_of(root, 'root', ROOT_SECRET)}"
        assert root.post("/v1/local/namespaces", json={"namespace": ["shared"]}).status_code == 200
        rights = [{"privilege": p, "namespace": ["shared"]} for p in ("namespace.properties", "namespace.create")]
        props = make_principal(root, "props-only", *rights)
        owner = make_principal(root, "owner", *rights, {"privilege": "table.write", "namespace": ["shared"]})
        with proxy.client() as first, proxy.client() as second:
            first.headers["Authorization"] = f"Bearer {token_of(first, *props)}"
            second.headers["Authorization"] = f"Bearer {token_of(second, *owner)}"
            yield first, second


def update(http: httpx.Client, updates: dict[str, str], removals: list[str] | None = None) -> httpx.Response:
    body = {"updates": updates, "removals": removals or []}
    return http.post("/v1/local/namespaces/shared/properties", json=body)


def test_namespace_properties_alone_cannot_set_maintenance_overrides(
    clients: tuple[httpx.Client, httpx.Client],
) -> None:
    props, owner = clients
    assert update(props, {"comment": "fine"}).status_code == 200
    for refused in (
        update(props, {KEY: "PT0S"}),
        update(props, {}, [KEY]),
        props.post("/v1/local/namespaces", json={"namespace": ["shared", "child"], "properties": {KEY: "PT0S"}}),
    ):
        assert refused.status_code == 403, refused.text
        assert "table.write" in refused.text
    assert update(owner, {KEY: "P10D"}).status_code == 200
    assert update(props, {}, [KEY]).status_code == 403  # nor take the owner's away
    created = owner.post("/v1/local/namespaces", json={"namespace": ["shared", "kid"], "properties": {KEY: "P9D"}})
    assert created.status_code == 200, created.text
