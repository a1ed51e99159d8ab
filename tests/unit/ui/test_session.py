"""The console's cookies: reading the session from raw headers, and where a sign-in may send people next."""

from __future__ import annotations

import pytest

from irc_proxy.http.console_cookie import SESSION_COOKIE, cookie_from_headers
from irc_proxy.ui.session import safe_next


def test_the_session_cookie_is_read_from_raw_headers_and_garbage_is_no_session() -> None:
    headers = [(b"cookie", b"a=1; irc_ui_session=tok.en.value; b=2")]
    assert cookie_from_headers(headers, SESSION_COOKIE) == "tok.en.value"
    assert cookie_from_headers([(b"cookie", b"\xff\xfe;;;=")], SESSION_COOKIE) is None
    assert cookie_from_headers([(b"authorization", b"Bearer x")], SESSION_COOKIE) is None
    two = [(b"cookie", b"irc_ui_session=first"), (b"cookie", b"other=1"), (b"cookie", b"irc_ui_session=last")]
    assert cookie_from_headers(two, SESSION_COOKIE) == "last"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/ui/catalogs/local", "/ui/catalogs/local"),
        ("/ui/catalogs?x=1", "/ui/catalogs?x=1"),
        ("//evil.example/ui/", "/ui/"),
        ("https://evil.example/ui/", "/ui/"),
        ("/ui\\@evil.example", "/ui/"),
        ("/v1/config", "/ui/"),
        ("", "/ui/"),
    ],
)
def test_after_signing_in_only_console_paths_are_followed(target: str, expected: str) -> None:
    assert safe_next(target) == expected
