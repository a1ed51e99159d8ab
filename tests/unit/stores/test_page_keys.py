"""The page-token key: made once, its bytes read back by every replica, apart from the signing keys."""

from __future__ import annotations

import sqlalchemy as sa

from irc_proxy.stores.keys import shared_signing_keys
from irc_proxy.stores.page_keys import ALGORITHM, shared_page_keys


def test_the_page_key_is_made_once_and_its_bytes_round_trip(state_engine: sa.Engine) -> None:
    page = shared_page_keys(state_engine, lambda: b"\x00\xff" * 16)
    assert page == [b"\x00\xff" * 16]
    assert shared_page_keys(state_engine, lambda: b"another key") == page


def test_the_page_key_is_stored_under_its_own_algorithm(state_engine: sa.Engine) -> None:
    shared_page_keys(state_engine, lambda: b"k" * 32)
    ((kid, _),) = shared_signing_keys(state_engine, ALGORITHM, lambda: ("unused", "unused"))
    assert kid.startswith("page-")
