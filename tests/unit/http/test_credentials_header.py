"""The delegation header and the base URL a signing config names, read without Starlette's per-request URL."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from irc_proxy.http import credentials


def request(headers: list[tuple[bytes, bytes]], **scope: Any) -> Request:
    base = {"type": "http", "method": "GET", "path": "/v1/x", "query_string": b"", "headers": headers}
    return Request(base | {"scheme": "http", "server": ("127.0.0.1", 8181)} | scope)


@pytest.mark.parametrize(
    ("headers", "scope"),
    [
        ([(b"host", b"proxy.example:8181")], {}),
        ([(b"host", b"other.example")], {"scheme": "https"}),
        ([(b"host", b"a.example"), (b"host", b"b.example")], {}),  # the first Host, as Starlette reads it
        ([], {}),  # no Host: the server's address
        ([], {"server": ("10.0.0.1", 80)}),  # the default port left out
        ([(b"host", b"proxy.example")], {"root_path": "/catalog"}),
        ([(b"host", b"proxy.example")], {"root_path": "/catalog", "app_root_path": "/api"}),
        ([(b"host", b"bad host!")], {}),  # not a valid authority: Starlette falls back to the server
    ],
)
def test_the_base_url_is_starlettes_for_every_request_shape(headers: list[tuple[bytes, bytes]], scope: Any) -> None:
    # Asked twice (the second answer remembered) and after other shapes: always the request's own.
    for _ in range(2):
        made = request(headers, **scope)
        assert credentials.base_url(made) == str(request(headers, **scope).base_url)


def test_the_delegation_header_is_the_first_sent_and_nothing_asked_builds_no_url() -> None:
    asked = credentials.asked(
        request([(b"host", b"h"), (b"x-iceberg-access-delegation", b"Vended-Credentials, remote-signing")])
    )
    assert asked.modes == {"vended-credentials", "remote-signing"} and asked.base_url == "http://h/"
    assert credentials.asked(request([(b"host", b"h")])) is credentials.NOTHING_ASKED
    twice = [(b"x-iceberg-access-delegation", b"remote-signing"), (b"x-iceberg-access-delegation", b"other")]
    assert credentials.asked(request([(b"host", b"h"), *twice])).modes == {"remote-signing"}
