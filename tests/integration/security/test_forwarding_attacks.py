"""Forwarding to a remote REST catalog attacked from both ends over real sockets, part two: what a caller puts into
headers, names and queries (HTTP/1.1 and HTTP/2 without TLS), and what a hostile remote answers (cookies, ``1xx``
answers, a body dripped a byte at a time).

The front is a real ``irc-proxy serve`` with two forwarded catalogs on the same remote (``tests/support/
hostile_remote.py``, which records every request byte for byte): ``fed`` with the proxy's own (no) credentials and
short upstream timeouts, ``tok`` forwarding each caller's own token (``forward_caller_token``).
"""

from __future__ import annotations

import json
import socket
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.federation import rest_catalog, start_front
from tests.support.h2c import h2c_request
from tests.support.hostile_remote import HostileRemote, answer, drip, raw
from tests.support.server import ProxyProcess

COMMIT = b'{"requirements": [], "updates": []}'
TABLE = "/v1/fed/namespaces/mine/tables/t"
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def remote() -> Iterator[HostileRemote]:
    remote = HostileRemote()
    yield remote
    remote.close()


@pytest.fixture(scope="module")
def front(remote: HostileRemote, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    fed = rest_catalog("fed", remote.url, auth={"mode": "none"}, timeout_seconds=1, total_timeout_seconds=3)
    tok = rest_catalog("tok", remote.url, auth={"mode": "none", "forward_caller_token": True})
    front = start_front(tmp_path_factory.mktemp("front"), fed, tok, _oauth("bomb", remote), _oauth("drip", remote))
    yield front
    front.stop()


def _oauth(name: str, remote: HostileRemote) -> str:
    """A catalog that logs in at ``/token/<name>`` on the remote (its first request fetches a token); answers are
    read up to 16 MiB (as in test_upstream_attacks.py)."""
    auth = {"mode": "oauth2", "client_id": "c", "client_secret": "s", "token_endpoint": f"{remote.url}/token/{name}"}
    return rest_catalog(name, remote.url, auth=auth, timeout_seconds=1, total_timeout_seconds=3, max_response_mb=16)


def _error(status: int, body: bytes) -> tuple[int, str]:
    return status, json.loads(body)["error"]["type"]


def _http1(front: ProxyProcess, method: str, path: str, headers: str = "", body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.1 request over a plain socket, the request line and headers exactly as given."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", front.port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1") + body)
        reply = b"".join(iter(lambda: sock.recv(65536), b""))
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


# A caller's headers, names and queries -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("over", "path", "header"),
    [
        ("h2c", TABLE, (b"user-agent", b"spark\x0bx")),
        ("h2c", TABLE.replace("/fed/", "/tok/"), (b"authorization", b"Bearer a\x0bb")),  # the caller's own token
        ("http/1.1", TABLE, (b"x-client-version", b"1\x01\x1b[2J")),
    ],
)
def test_a_header_value_with_a_control_character_is_a_400_and_nothing_is_sent(
    front: ProxyProcess, remote: HostileRemote, over: str, path: str, header: tuple[bytes, bytes]
) -> None:
    """Over h2c a vertical tab made h11 refuse to write the commit: a 504 CommitStateUnknown for a commit that never
    left. Over HTTP/1.1 (whose parser lets ``\\x01`` and escapes through) the value reached the remote raw."""
    remote.seen.clear()
    if over == "h2c":
        reply = h2c_request(
            front.port, b"POST", path.encode(), [(b"content-type", b"application/json"), header], COMMIT
        )
        status, body = reply.status, reply.body
    else:
        status, body = _http1(front, "POST", path, f"{header[0].decode()}: {header[1].decode()}\r\n", COMMIT)
    assert _error(status, body) == (400, "BadRequestException")
    assert remote.forwarded() == []
    fine = httpx.post(f"{front.url}{path}", content=COMMIT, headers=JSON, timeout=30)
    assert fine.status_code == 200  # the catalog is fine: only that request was refused


@pytest.mark.parametrize(
    ("method", "path", "sent"),
    [  # a "#" ended the path: "..#x" was sent as "..", which httpx resolved to the namespace (a namespace drop)
        ("DELETE", "/v1/fed/namespaces/mine/tables/..#x", "DELETE /v1/p/namespaces/mine/tables/..%23x"),
        ("GET", "/v1/fed/namespaces/mine/tables/secret#mine", "GET /v1/p/namespaces/mine/tables/secret%23mine"),
        ("GET", "/v1/fed/namespaces/mine/tables/secret;mine", "GET /v1/p/namespaces/mine/tables/secret%3Bmine"),
        ("GET", "/v1/fed/namespaces/mine/tables/..;x", "GET /v1/p/namespaces/mine/tables/..%3Bx"),
        ("GET", "/v1/fed/namespaces/mine/tables/a\\..\\b", "GET /v1/p/namespaces/mine/tables/a%5C..%5Cb"),
    ],
)
def test_a_name_cannot_cut_or_redirect_the_path_sent_upstream(
    front: ProxyProcess, remote: HostileRemote, method: str, path: str, sent: str
) -> None:
    remote.seen.clear()
    status, body = _http1(front, method, path)
    assert status == 200, body
    assert [f"{seen.method} {seen.path}" for seen in remote.forwarded()] == [sent]


@pytest.mark.parametrize("method", [b"GET", b"POST"])
def test_a_control_character_in_the_query_is_a_400_not_a_500(
    front: ProxyProcess, remote: HostileRemote, method: bytes
) -> None:
    """httpx refuses to build such a URL: that was a 500, which a client reads as a commit of unknown state."""
    remote.seen.clear()
    body = COMMIT if method == b"POST" else b""
    reply = h2c_request(front.port, method, TABLE.encode() + b"?x=\x0b", [(b"content-type", b"application/json")], body)
    assert _error(reply.status, reply.body) == (400, "BadRequestException")
    assert remote.forwarded() == []


# A hostile remote ---------------------------------------------------------------------------------------------------
def test_a_cookie_that_cannot_be_sent_back_does_not_take_the_catalog_down(
    front: ProxyProcess, remote: HostileRemote
) -> None:
    """A ``Set-Cookie`` of UTF-8 bytes went into the client's shared jar, and every later request to the catalog
    was a 500 (the Cookie header built from it is not latin-1) until a restart."""
    poisoned = answer(b"{}", "set-cookie: s=\u20ac; Path=/".encode(), b"set-cookie: lb=node-1; Path=/")
    with remote.replying(raw(poisoned)):
        assert httpx.get(f"{front.url}{TABLE}", timeout=30).status_code == 200
    remote.seen.clear()
    for _ in range(2):
        reply = httpx.get(f"{front.url}{TABLE}", timeout=30)
        assert reply.status_code == 200, reply.text  # was a 500, for every request after the cookie
    cookies = [value for seen in remote.forwarded() for name, value in seen.headers if name.lower() == "cookie"]
    assert cookies == ["lb=node-1", "lb=node-1"]  # the sendable one is kept (sticky load balancers)


def test_a_cookie_set_for_one_caller_is_not_sent_for_another(front: ProxyProcess, remote: HostileRemote) -> None:
    """With ``forward_caller_token`` the remote knows each caller; a session cookie it sets for one must not ride
    along with every other caller's requests (the jar is the catalog's, shared by all callers)."""
    path = f"{front.url}/v1/tok/namespaces/mine/tables/t"
    with remote.replying(raw(answer(b"{}", b"set-cookie: session=alice-session; Path=/"))):
        assert httpx.get(path, headers={"authorization": "Bearer alice"}, timeout=30).status_code == 200
    remote.seen.clear()
    assert httpx.get(path, headers={"authorization": "Bearer bob"}, timeout=30).status_code == 200
    [seen] = remote.forwarded()
    assert ("authorization", "Bearer bob") in seen.headers
    assert [value for name, value in seen.headers if name.lower() == "cookie"] == []  # was alice's session


def test_more_than_8_informational_answers_is_a_malformed_answer(front: ProxyProcess, remote: HostileRemote) -> None:
    """Each ``1xx`` restarted the wait for the final answer: a remote could hold a request with them for ever."""
    with remote.replying(raw(b"HTTP/1.1 102 Processing\r\n\r\n" * 8 + answer())):
        assert httpx.get(f"{front.url}{TABLE}", timeout=30).status_code == 200  # a few are fine
    with remote.replying(raw(b"HTTP/1.1 102 Processing\r\n\r\n" * 9 + answer())):
        reply = httpx.get(f"{front.url}{TABLE}", timeout=30)
    assert _error(reply.status_code, reply.content) == (503, "ServiceUnavailableException")


@pytest.mark.parametrize(("method", "expected"), [("GET", 503), ("POST", 504)])
def test_an_answer_dripped_a_byte_at_a_time_ends_at_total_timeout_seconds(
    front: ProxyProcess, remote: HostileRemote, method: str, expected: int
) -> None:
    """One byte every half second never lets ``timeout_seconds`` (1 s, per wait) pass: the 200-byte answer would
    hold the request for 100 s. ``total_timeout_seconds`` (3 s) ends it: a 503, or for a commit (which was sent) a
    504 CommitStateUnknown."""
    with remote.replying(drip(200, 0.5)):
        content = COMMIT if method == "POST" else None
        reply = httpx.request(method, f"{front.url}{TABLE}", content=content, headers=JSON, timeout=30)
    kind = "CommitStateUnknownException" if method == "POST" else "ServiceUnavailableException"
    assert _error(reply.status_code, reply.content) == (expected, kind)


def test_a_token_endpoints_gzip_bomb_is_refused_without_inflating_it(
    front: ProxyProcess, remote: HostileRemote
) -> None:
    """The token was fetched through the client's own read, which inflated a gzip answer whole (and under the lock
    every request of the catalog waits on); now it is read as the catalog's answers are."""
    gzipper = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(gzipper.compress(bytes(1 << 20)) for _ in range(512)) + gzipper.flush()  # 512 MiB inflated
    Path(f"/proc/{front.pid}/clear_refs").write_text("5")  # the peak restarts here
    before = front.peak_rss_kib()
    with remote.replying(raw(answer(bomb, b"content-encoding: gzip")), under="/token/bomb"):
        reply = httpx.get(f"{front.url}/v1/bomb/namespaces/mine/tables/t", timeout=60)
    assert _error(reply.status_code, reply.content) == (503, "ServiceUnavailableException")
    grown_mib = (front.peak_rss_kib() - before) >> 10
    assert grown_mib < 100, f"the front peaked {grown_mib} MiB higher for one token answer"


def test_a_token_answer_dripped_a_byte_at_a_time_ends_at_total_timeout_seconds(
    front: ProxyProcess, remote: HostileRemote
) -> None:
    with remote.replying(drip(200, 0.5), under="/token/drip"):
        reply = httpx.get(f"{front.url}/v1/drip/namespaces/mine/tables/t", timeout=30)  # was held for 100 s
    assert _error(reply.status_code, reply.content) == (503, "ServiceUnavailableException")
