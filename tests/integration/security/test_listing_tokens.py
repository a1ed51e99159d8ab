"""Guarantee 7: listings leak nothing: page tokens are opaque, bound to the caller's filtered view.

A principal that may see only some namespaces (and only some tables of one) pages with
``pageSize=1`` through two replicas sharing one state database. No token decodes to a hidden
name; a tampered token, garbage, and a token of another principal, parent or operation are 400.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.aws import glue_catalog_config
from tests.support.federation import rest_catalog
from tests.support.rest import assert_error, bearer_client, create_table, make_principal, ns_path
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-listing-tokens"
VISIBLE = ["alpha", "charlie", "echo"]
HIDDEN = ["bravo-hidden", "delta-hidden", "foxtrot-hidden", "golf-hidden"]
VISIBLE_TABLES = ["t_one", "t_three"]
HIDDEN_TABLES = ["hidden_payroll", "hidden_salaries", "t_two_hidden"]


@dataclass(frozen=True)
class Deployment:
    """Two replicas of one proxy (one state database) and a principal that sees part of the catalog."""

    replicas: tuple[ProxyProcess, ProxyProcess]
    pager: tuple[str, str]
    other: tuple[str, str]


def _config(workdir: Path, catalog: str) -> str:
    return (
        f'[state]\ndatabase_url = "sqlite:///{workdir / "state.db"}"\n'
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\ngrants_cache_seconds = 0\n'
        f'[[auth.clients]]\nid = "root"\nsecret_hash = "{hash_secret(ROOT_SECRET)}"\n{catalog}'
    )


def _deploy(workdir: Path, catalog: str) -> Iterator[Deployment]:
    config = _config(workdir, catalog)
    for replica in ("a", "b"):
        (workdir / replica).mkdir()
    first, second = ProxyProcess(workdir / "a", config), ProxyProcess(workdir / "b", config)
    first.start()
    try:
        second.start()  # after the first: it finds the page-token key the first one stored
        with bearer_client(first.url, "root", ROOT_SECRET) as root:
            for name in sorted(VISIBLE + HIDDEN):
                assert root.post("/v1/local/namespaces", json={"namespace": [name]}).status_code == 200
            for table in sorted(VISIBLE_TABLES + HIDDEN_TABLES):
                create_table(root, ("alpha",), table)
            grants = [{"privilege": "namespace.use", "namespace": [n]} for n in VISIBLE]
            grants += [{"privilege": "table.read", "namespace": ["alpha"], "table": t} for t in VISIBLE_TABLES]
            pager = make_principal(root, "pager", *grants)
            other = make_principal(root, "other", *grants)
        yield Deployment((first, second), pager, other)
    finally:
        second.stop()
        first.stop()


@pytest.fixture(scope="module", params=["local", "glue"])
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    workdir = tmp_path_factory.mktemp(f"listing-tokens-{request.param}")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    if request.param == "local":
        catalog = (
            f'[catalogs.local]\nwarehouse = "{warehouse.as_uri()}"\n'
            f'database_url = "sqlite:///{workdir / "catalog.db"}"\n'
        )
        yield from _deploy(workdir, catalog)
        return
    moto = request.getfixturevalue("moto")
    yield from _deploy(workdir, glue_catalog_config("local", moto, warehouse.as_uri()))


@pytest.fixture
def pager(deployment: Deployment) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """The partly-seeing principal, once per replica (one token each: same principal)."""
    first, second = deployment.replicas
    with bearer_client(first.url, *deployment.pager) as a, bearer_client(second.url, *deployment.pager) as b:
        yield a, b


def _decodings(token: str) -> list[str]:
    """Every way a client might try to read a token: standard and URL-safe base64, any padding."""
    found = [token]
    for alphabet in (None, b"-_"):
        for padding in range(4):
            try:
                raw = base64.b64decode(token + "=" * padding, altchars=alphabet)
            except (binascii.Error, ValueError):
                continue
            found.append(raw.decode("latin-1"))
    return found


def _page_all(clients: tuple[httpx.Client, httpx.Client], url: str, key: str) -> tuple[list[str], list[str]]:
    """All pages of ``pageSize=1``, alternating replicas; the names shown and the tokens handed out."""
    names: list[str] = []
    tokens: list[str] = []
    token = ""
    for turn in range(5000):  # moto keeps one Glue per process: other modules' namespaces are hidden pages
        response = clients[turn % 2].get(url, params={"pageSize": "1", "pageToken": token})
        assert response.status_code == 200, response.text
        body = response.json()
        names += [entry[-1] if isinstance(entry, list) else entry["name"] for entry in body[key]]
        token = body.get("next-page-token") or ""
        if not token:
            return names, tokens
        tokens.append(token)
    raise AssertionError("listing did not end")


def _assert_opaque(tokens: list[str], hidden: list[str]) -> None:
    assert tokens, "a paged listing hands out tokens"
    for token in tokens:
        for text in _decodings(token):
            assert not any(name in text for name in hidden), (token, text)
            assert not any(name in text for name in VISIBLE + VISIBLE_TABLES), (token, text)


def test_namespace_pages_list_exactly_the_visible_names_and_tokens_reveal_none(
    pager: tuple[httpx.Client, httpx.Client],
) -> None:
    names, tokens = _page_all(pager, "/v1/local/namespaces", "namespaces")
    assert sorted(names) == VISIBLE
    assert len(tokens) >= len(VISIBLE + HIDDEN) - 1  # the store's own pages of one, through hidden names too
    _assert_opaque(tokens, HIDDEN)


def test_table_pages_list_exactly_the_visible_tables_and_tokens_reveal_none(
    pager: tuple[httpx.Client, httpx.Client],
) -> None:
    names, tokens = _page_all(pager, "/v1/local/namespaces/alpha/tables", "identifiers")
    assert sorted(names) == VISIBLE_TABLES
    _assert_opaque(tokens, HIDDEN_TABLES)


def _first_token(client: httpx.Client, url: str = "/v1/local/namespaces") -> str:
    body = client.get(url, params={"pageSize": "1"}).json()
    token: str = body["next-page-token"]
    assert token
    return token


def test_tampered_and_garbage_tokens_are_400(pager: tuple[httpx.Client, httpx.Client]) -> None:
    client = pager[0]
    token = _first_token(client)
    flipped = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    garbage = [
        flipped,
        token[:-4],
        token + "AAAA",
        base64.urlsafe_b64encode(b"bravo-hidden").decode().rstrip("="),
        "!!!",
        "A" * 200,
    ]
    for bad in garbage:
        assert_error(
            client.get("/v1/local/namespaces", params={"pageSize": "1", "pageToken": bad}), 400, "BadRequestException"
        )


def test_a_token_of_another_principal_parent_or_operation_is_400(
    deployment: Deployment, pager: tuple[httpx.Client, httpx.Client]
) -> None:
    client = pager[0]
    namespaces_token = _first_token(client)
    tables_token = _first_token(client, "/v1/local/namespaces/alpha/tables")
    assert client.get("/v1/local/namespaces", params={"pageSize": "1", "pageToken": namespaces_token}).is_success
    with bearer_client(deployment.replicas[1].url, *deployment.other) as other:
        stolen = other.get("/v1/local/namespaces", params={"pageSize": "1", "pageToken": namespaces_token})
        assert_error(stolen, 400, "BadRequestException")
    other_parent = client.get(
        f"/v1/local/namespaces/{ns_path('charlie')}/tables", params={"pageSize": "1", "pageToken": tables_token}
    )
    assert_error(other_parent, 400, "BadRequestException")
    other_operation = client.get("/v1/local/namespaces", params={"pageSize": "1", "pageToken": tables_token})
    assert_error(other_operation, 400, "BadRequestException")


# A federated (REST) catalog: the upstream's own tokens are sealed by the front for filtered listings.
@pytest.fixture(scope="module")
def federated(
    remote: ProxyProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ProxyProcess, dict[str, tuple[str, str]]]]:
    workdir = tmp_path_factory.mktemp("listing-tokens-front")
    front = ProxyProcess(workdir, _config(workdir, rest_catalog("up", remote.url))).start()
    try:
        with bearer_client(front.url, "root", ROOT_SECRET) as root:
            for name in sorted(VISIBLE + HIDDEN):
                assert root.post("/v1/up/namespaces", json={"namespace": [name]}).status_code == 200
            grants = [{"catalog": "up", "privilege": "namespace.use", "namespace": [n]} for n in VISIBLE]
            principals = {who: make_principal(root, who, *grants) for who in ("fed-pager", "fed-other")}
        yield front, principals
    finally:
        front.stop()


def test_federated_filtered_listing_seals_the_upstream_tokens_to_the_caller(
    federated: tuple[ProxyProcess, dict[str, tuple[str, str]]],
) -> None:
    front, principals = federated
    with (
        bearer_client(front.url, *principals["fed-pager"]) as pager,
        bearer_client(front.url, *principals["fed-other"]) as other,
    ):
        names, tokens = _page_all((pager, pager), "/v1/up/namespaces", "namespaces")
        assert sorted(names) == VISIBLE
        _assert_opaque(tokens, HIDDEN)
        stolen = other.get("/v1/up/namespaces", params={"pageSize": "1", "pageToken": tokens[0]})
        assert_error(stolen, 400, "BadRequestException")
        middle = len(tokens[0]) // 2  # the last character may hold only base64 padding bits
        tampered = tokens[0][:middle] + ("A" if tokens[0][middle] != "A" else "B") + tokens[0][middle + 1 :]
        assert_error(
            pager.get("/v1/up/namespaces", params={"pageSize": "1", "pageToken": tampered}), 400, "BadRequestException"
        )
