"""The console's CSRF key: 32 random bytes made once and shared, apart from the page-token key."""

from __future__ import annotations

import sqlalchemy as sa

from irc_proxy.stores.page_keys import shared_page_keys
from irc_proxy.stores.ui_keys import shared_csrf_keys


def test_the_csrf_key_is_32_bytes_made_once(state_engine: sa.Engine) -> None:
    csrf = shared_csrf_keys(state_engine)
    assert len(csrf) == 1 and len(csrf[0]) == 32
    assert shared_csrf_keys(state_engine) == csrf


def test_the_csrf_key_is_not_the_page_key(state_engine: sa.Engine) -> None:
    assert shared_csrf_keys(state_engine) != shared_page_keys(state_engine, lambda: b"p" * 32)
