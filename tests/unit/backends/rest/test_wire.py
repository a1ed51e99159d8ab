"""``wire`` against h11, the reference it replaces on the plain path: its grammar is h11's, a request it writes
is byte for byte what h11 writes (and one h11 refuses is never written here), and an answer it reads is what h11
reads, with the same keep-alive decision; anything odd (the inputs an untrusted upstream could send) is left to
h11 (None). Fuzzed with hypothesis over realistic pieces mixed with odd bytes, plus the named odd cases."""

from __future__ import annotations

import re

import h11
import pytest
from h11 import _abnf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from irc_proxy import h11_linear
from irc_proxy.backends.rest import wire

LIMIT = 1 << 20


def test_the_grammar_is_h11s() -> None:
    """The copied regexes are h11's (``h11_linear``'s for a header line; a new h11 with another grammar fails
    here, not in production)."""
    pairs = [
        (wire._TOKEN, _abnf.token),
        (wire._FIELD_VALUE, _abnf.field_value),
        (wire._TARGET, _abnf.request_target),
        (wire._STATUS_LINE, _abnf.status_line),
        (wire._HEADER_FIELD, h11_linear.HEADER_FIELD),  # h11's, its blanks after the colon possessive
    ]
    for ours, theirs in pairs:
        assert ours.pattern == re.compile(theirs.encode("ascii")).pattern


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=6) | st.lists(st.sampled_from(b" \t\x00\n\r\x0b\x0c\x1c\x7fa\xff"), max_size=5).map(bytes))
@example(b"")
@example(b"a\x0bb")
def test_a_value_is_checked_as_h11s_grammar_checks_it(value: bytes) -> None:
    assert wire._is_field_value(value) == (wire._FIELD_VALUE.fullmatch(value) is not None)


def test_every_byte_is_checked_as_h11s_grammar_checks_it() -> None:
    for byte in range(256):
        for value in (bytes([byte]), b"a" + bytes([byte]), b"a" + bytes([byte]) + b"b"):
            assert wire._is_field_value(value) == (wire._FIELD_VALUE.fullmatch(value) is not None), value


# Requests ---------------------------------------------------------------------------------------------------------


def h11_request(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes | None:
    """What h11 writes for the request, None when it refuses it."""
    parser = h11.Connection(h11.CLIENT)
    try:
        out = [parser.send(h11.Request(method=method, target=target, headers=headers))]
        if body:
            out.append(parser.send(h11.Data(data=body)))
        out.append(parser.send(h11.EndOfMessage()))
    except h11.LocalProtocolError:
        return None
    return b"".join(b for b in out if b)


ODD = st.sampled_from([b"", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x00", b"\x0b", b"\x7f", b"\xff", b":", b",", b"a"])
"""Bytes that matter to HTTP/1.1's grammar, inserted into or replacing parts of otherwise plain messages."""
Mutation = tuple[float, bytes, bool]
MUTATIONS: st.SearchStrategy[list[Mutation]] = st.one_of(
    st.just([]), st.lists(st.tuples(st.floats(0, 1), ODD, st.booleans()), min_size=1, max_size=2)
)
"""Where (a fraction of the length), what, and whether it replaces the byte there or is inserted."""


def mutated(data: bytes, mutations: list[Mutation]) -> bytes:
    for where, what, replace in mutations:
        at = int(where * len(data))
        data = data[:at] + what + data[at + 1 if replace else at :]
    return data


PLAIN_HEADERS = [(b"accept", b"*/*"), (b"User-Agent", b"PyIceberg/0.12.0"), (b"connection", b"keep-alive")]
PLAIN_HEADERS += [(b"authorization", b"Bearer a.b-c"), (b"x-request-id", b"f00"), (b"x-e", b"")]
REQUEST_HEADERS = st.one_of(
    *[st.sampled_from(PLAIN_HEADERS)] * 3,
    st.sampled_from(
        [
            (b"Connection", b"Keep-Alive, Close"),
            (b"connection", b"close"),
            (b"transfer-encoding", b"chunked"),
            (b"expect", b"100-continue"),
            (b"upgrade", b"h2c"),
            (b"content-length", b"02"),
            (b"Host", b"other"),
            (b"content-length", b"2, 2"),
            (b"content-length", b"2"),
        ]
    ),
)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    method=st.one_of(st.just(b"GET"), st.sampled_from([b"HEAD", b"POST", b"DELETE", b"CONNECT", b"G T", b""])),
    target=st.one_of(st.just(b"/v1/t"), st.sampled_from([b"/v1/a%20b?x=1", b"*", b"", b"/\x80"])),
    headers=st.lists(REQUEST_HEADERS, max_size=4),
    mutations=st.tuples(st.integers(0, 3), st.booleans(), MUTATIONS),
    host=st.one_of(st.just(True), st.booleans()),
    body=st.sampled_from([b"", b"{}", b"\r\n\r\n"]),
    framed=st.one_of(st.just(True), st.booleans()),
)
@example(method=b"GET", target=b"/v1/t", headers=[], mutations=(0, False, []), host=True, body=b"", framed=False)
def test_a_request_is_written_as_h11_writes_it_or_left_to_h11(
    method: bytes,
    target: bytes,
    headers: list[tuple[bytes, bytes]],
    mutations: tuple[int, bool, list[Mutation]],
    host: bool,
    body: bytes,
    framed: bool,
) -> None:
    which, in_name, changes = mutations
    if which < len(headers):  # one header's name or value made odd
        name, value = headers[which]
        headers[which] = (mutated(name, changes), value) if in_name else (name, mutated(value, changes))
    if host:
        headers = [(b"host", b"example.com"), *headers]
    if framed:
        headers = [*headers, (b"content-length", b"%d" % len(body))]
    ours = wire.request_bytes(method, target, headers, body)
    if ours is not None:  # never written when h11 would refuse it, and written as h11 writes it
        assert ours == h11_request(method, target, headers, body)


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ([(b"host", b"h"), (b"transfer-encoding", b"chunked")], b""),  # h11 frames it
        ([(b"host", b"h"), (b"connection", b"close")], b""),  # h11 keeps the connection
        ([(b"host", b"h"), (b"Connection", b"Keep-Alive, CLOSE")], b""),
        ([(b"host", b"h"), (b"expect", b"100-continue")], b"{}"),
        ([(b"host", b"h"), (b"upgrade", b"h2c")], b""),
        ([(b"host", b"h"), (b"content-length", b"2"), (b"content-length", b"2")], b"{}"),
        ([(b"host", b"h"), (b"content-length", b"02")], b"{}"),  # h11 reads it as 2
        ([(b"host", b"h"), (b"content-length", b"3")], b"{}"),  # h11 refuses: too little data
        ([(b"host", b"h")], b"{}"),  # unframed body: h11 refuses
        ([(b"host", b"h"), (b"host", b"h")], b""),
        ([(b"user-agent", b"x")], b""),  # no Host
        ([(b"host", b"h"), (b"x", b"a\r\nInjected: 1")], b""),
        ([(b"host", b"h"), (b"x: y", b"z")], b""),
        ([(b"host", b"h"), (b"x", b"a\x0bb")], b""),
        ([(b"host", b"h"), (b"x", b" padded ")], b""),
    ],
)
def test_a_request_that_is_not_the_plain_shape_is_h11s(headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    assert wire.request_bytes(b"POST", b"/v1/t", headers, body) is None


def test_connect_is_h11s() -> None:
    """A 2xx answer to ``CONNECT`` switches protocols whatever its headers say (h11 tracks that)."""
    assert wire.request_bytes(b"CONNECT", b"example.com:443", [(b"host", b"example.com:443")], b"") is None


def test_a_plain_request_puts_host_first_and_keeps_the_order() -> None:
    headers = [(b"accept", b"*/*"), (b"Host", b"h:1"), (b"connection", b"keep-alive"), (b"content-length", b"2")]
    assert wire.request_bytes(b"POST", b"/v1/t?x", headers, b"{}") == (
        b"POST /v1/t?x HTTP/1.1\r\nHost: h:1\r\naccept: */*\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\n{}"
    )


# Answers ----------------------------------------------------------------------------------------------------------


def h11_answer(data: bytes, method: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes, bytes, bool, bool] | None:
    """What h11 reads from ``data`` (all arrived, the connection still open): status, headers, reason, body,
    whether it keeps the connection and whether bytes follow the answer; None when it refuses it or needs more."""
    parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=wire.MAX_HEAD)
    parser.send(h11.Request(method=method, target=b"/", headers=[(b"host", b"h")]))
    parser.send(h11.EndOfMessage())
    parser.receive_data(data)
    head, body = None, b""
    try:
        while True:
            event = parser.next_event()
            if isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.InformationalResponse):
                continue
            else:  # NEED_DATA, PAUSED
                return None
    except h11.RemoteProtocolError:
        return None
    assert head is not None
    keep = parser.their_state is h11.DONE
    extra = bool(parser.trailing_data[0])
    return head.status_code, head.headers.raw_items(), head.reason, body, keep, extra


def wire_answer(
    data: bytes, method: bytes, limit: int = LIMIT
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bytes, bool, bool] | None:
    """What ``Connection._read_plain`` makes of ``data`` arrived at once (None: left to h11, or needs more)."""
    head = wire.read_head(data, method, limit)
    if head is None or len(data) < head.start + head.length:
        return None
    end = head.start + head.length
    return head.status, head.headers, head.reason, data[head.start : end], head.keep_alive, len(data) > end


STATUS_LINES = st.one_of(
    st.just(b"HTTP/1.1 200 OK"),
    st.sampled_from(
        [
            b"HTTP/1.1 204 No Content",
            b"HTTP/1.1 304 ",
            b"HTTP/1.1 404",
            b"HTTP/1.0 200 OK",
            b"HTTP/1.1 100 Continue",
            b"HTTP/1.1 101 Switching",
            b"HTTP/1.1 200 \xe9t\xe9",
            b"HTTP/2 200",
            b"http/1.1 200",
            b"HTTP/1.1 099",
        ]
    ),
)
LINES = st.sampled_from(
    [
        b"Content-Type: application/json",
        b'ETag: "a b"',
        b"Content-Type:  text  ",
        b"X-Empty:",
        b"X: \x01",
        b"Connection: keep-alive",
        b"Cache-Control:\tno-store",
        b"X:\xff",
        b"Set-Cookie: a=b; Path=/",
    ]
)
ODD_LINES = st.sampled_from(
    [
        b"content-length:2",
        b"Content-Length: 02",
        b"Content-Length: 2, 2",
        b"content-length: x",
        b"Content-Length: 0",
        b"Content-Length: 99999999999999999999999",
        b"Transfer-Encoding: chunked",
        b"Connection: close",
        b"connection: Keep-Alive, Close",
        b" folded",
        b"no colon",
        b": no name",
        b"Content-Length: 2",
    ]
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    status=STATUS_LINES,
    lines=st.lists(st.one_of(LINES, LINES, ODD_LINES), max_size=4),
    length=st.tuples(st.integers(0, 4), st.one_of(st.just(b"Content-Length: 2"), ODD_LINES)),
    body=st.one_of(st.just(b"{}"), st.sampled_from([b"", b"{}\r\n", b"HTTP/1.1 200 OK\r\n\r\n", b"0\r\n\r\n"])),
    method=st.sampled_from([b"GET", b"HEAD", b"POST"]),
    mutations=MUTATIONS,
)
@example(status=b"HTTP/1.1 200 OK", lines=[], length=(0, b"Content-Length: 2"), body=b"{}", method=b"GET", mutations=[])
def test_an_answer_is_read_as_h11_reads_it_or_left_to_h11(
    status: bytes, lines: list[bytes], length: tuple[int, bytes], body: bytes, method: bytes, mutations: list[Mutation]
) -> None:
    lines.insert(*length)
    data = mutated(b"\r\n".join([status, *lines]) + b"\r\n\r\n" + body, mutations)
    ours = wire_answer(data, method)
    if ours is not None:
        assert ours == h11_answer(data, method)


def test_the_plain_answer_is_read_here() -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Type:  application/json \r\nContent-Length: 2\r\n\r\n{}"
    assert wire_answer(data, b"GET") == (
        200,
        [(b"Content-Type", b"application/json"), (b"Content-Length", b"2")],
        b"OK",
        b"{}",
        True,
        False,
    )
    assert wire_answer(data, b"GET") == h11_answer(data, b"GET")


@pytest.mark.parametrize(
    ("data", "method"),
    [
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", b"GET"),  # not kept
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n\r\n", b"GET"),  # smuggled: not kept
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", b"HEAD"),  # HEAD: no body
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}", b"GET"),  # 204: no body; {} follows it
        (b"HTTP/1.1 304\r\n\r\n", b"GET"),
    ],
)
def test_what_is_read_here_matches_h11(data: bytes, method: bytes) -> None:
    assert wire_answer(data, method) is not None
    assert wire_answer(data, method) == h11_answer(data, method)


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",  # head not complete
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",  # HTTP/1.0: h11 closes the connection
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",  # informational
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",  # chunked
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",  # framed twice
        b"HTTP/1.1 200 OK\r\n\r\n{}",  # read until the connection closes
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",  # repeated
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n{}",  # a list
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",  # conflicting
        b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: a\r\n folded\r\n\r\n{}",  # obsolete line folding
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",  # bare LF lines
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 2\r\n\r\n{}",  # bare CR
        b"HTTP/1.1 200 OK\r\nX : a\r\nContent-Length: 2\r\n\r\n{}",  # blank before the colon
        b"HTTP/1.1 200 OK\r\nX: a\x00\r\nContent-Length: 2\r\n\r\n{}",  # NUL
        b"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n{}",  # past the bound
        b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",  # a blank line first
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + b"X: " + b"a" * wire.MAX_HEAD + b"\r\n\r\n{}",  # head too large
    ],
)
def test_an_answer_that_is_not_the_plain_shape_is_h11s(data: bytes) -> None:
    assert wire.read_head(data, b"GET", LIMIT) is None
