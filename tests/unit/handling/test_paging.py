"""Page tokens: sealed to one listing scope, opened by any replica holding the key, opaque otherwise."""

from __future__ import annotations

import asyncio
import base64

import pytest

from irc_proxy.errors import BadRequest
from irc_proxy.handling.paging import PageBinding, PageRequest, PageTokens, collect, listing_scope, new_key

SCOPE = listing_scope("alice", "local", "listNamespaces", ())


def test_a_sealed_token_opens_to_the_resume_key_on_another_replica_with_the_same_keys() -> None:
    key = new_key()
    token = PageTokens([key]).seal("hidden-namespace", SCOPE)
    assert PageTokens([key]).open(token, SCOPE) == "hidden-namespace"
    assert "hidden" not in base64.urlsafe_b64decode(token + "==").decode("latin-1")


def test_a_token_of_another_scope_or_key_or_changed_is_a_bad_request() -> None:
    tokens = PageTokens([new_key()])
    token = tokens.seal("n", SCOPE)
    others = [
        listing_scope("bob", "local", "listNamespaces", ()),
        listing_scope("alice", "other", "listNamespaces", ()),
        listing_scope("alice", "local", "listTables", ()),
        listing_scope("alice", "local", "listNamespaces", ("a",)),
    ]
    for scope in others:
        with pytest.raises(BadRequest):
            tokens.open(token, scope)
    with pytest.raises(BadRequest):
        PageTokens([new_key()]).open(token, SCOPE)
    middle = len(token) // 2  # not the last character: its low bits may be base64 padding, ignored when decoding
    changed = token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]
    for bad in (changed, "", "!!", "bg", base64.b64encode(b"n" * 64).decode()):
        with pytest.raises(BadRequest):
            tokens.open(bad, SCOPE)


def test_every_stored_key_opens_and_the_first_seals() -> None:
    old, new = new_key(), new_key()
    sealed_by_other_replica = PageTokens([new]).seal("x", SCOPE)
    assert PageTokens([old, new]).open(sealed_by_other_replica, SCOPE) == "x"


def test_token_length_does_not_reveal_the_length_of_short_names() -> None:
    tokens = PageTokens([new_key()])
    assert len({len(tokens.seal(name, SCOPE)) for name in ("a", "ab" * 5, "x" * 30)}) == 1


def test_collect_seals_the_store_token_and_an_unbound_request_gets_none() -> None:
    async def fetch(token: str | None, limit: int) -> tuple[list[str], str | None]:
        return (["a"], "a") if token is None else (["b"], None)

    binding = PageBinding(PageTokens([new_key()]), SCOPE)
    page = asyncio.run(collect(fetch, PageRequest(limit=1, binding=binding)))
    assert page.items == ["a"] and page.next_token and binding.open(page.next_token) == "a"
    assert asyncio.run(collect(fetch, PageRequest(limit=1))).next_token is None
