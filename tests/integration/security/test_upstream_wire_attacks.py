"""The hand-written HTTP/1.1 reader and writer (``irc_proxy/backends/rest/wire.py``) and h11 behind it, attacked
over real sockets: a hostile remote catalog whose answer head costs seconds of CPU to refuse, and an anonymous
client whose request head costs the same at the front (hypercorn reads it with h11).

Why: h11's header-line regex (copied into ``wire``) backtracks quadratically on a run of blanks followed by a
byte no header may hold (``name:`` + 60,000 spaces + NUL: ~10 s of CPU). The event loop is blocked meanwhile, so
every other caller of the front waits, and no timeout fires. ``wire`` ran it once and h11 again on the fallback.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.federation import rest_catalog, start_front
from tests.support.hostile_remote import HostileRemote, answer, raw
from tests.support.server import ProxyProcess

TABLE = "/v1/fed/namespaces/mine/tables/t"
BLANKS = 60_000
"""Spaces before the NUL: ~10 s of CPU per regex pass before the fix, well under the 100 KiB head bound."""


@pytest.fixture(scope="module")
def remote() -> Iterator[HostileRemote]:
    remote = HostileRemote()
    yield remote
    remote.close()


@pytest.fixture(scope="module")
def front(remote: HostileRemote, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    fed = rest_catalog("fed", remote.url, auth={"mode": "none"}, timeout_seconds=2, total_timeout_seconds=5)
    front = start_front(tmp_path_factory.mktemp("front"), fed)
    yield front
    front.stop()


def test_an_answer_head_of_blanks_then_a_nul_is_refused_at_once(remote: HostileRemote, front: ProxyProcess) -> None:
    """A remote's header line ``x-pad:`` + blanks + NUL is refused (503) in well under a second, not after the
    regex's quadratic backtracking (twice: ``wire``, then h11 on the fallback) with the event loop blocked."""
    poisoned = b"x-pad:" + b" " * BLANKS + b"\x00"
    with remote.replying(raw(answer(b"{}", poisoned)), under="/v1/p/namespaces/mine/tables/t"):
        started = time.monotonic()
        got = httpx.get(front.url + TABLE, timeout=120)
        elapsed = time.monotonic() - started
    assert got.status_code == 503, got.text
    assert elapsed < 3, f"{elapsed:.1f} s to refuse one answer head"


def test_a_folded_answer_head_of_blanks_is_refused_at_once(remote: HostileRemote, front: ProxyProcess) -> None:
    """The same blanks behind bare LFs and an obs-fold (h11's grammar, never ``wire``'s): h11 alone is as slow."""
    head = b"HTTP/1.1 200 OK\ncontent-length: 2\nx-pad:" + b" " * BLANKS + b"\n \x00\n\n{}"
    with remote.replying(raw(head), under="/v1/p/namespaces/mine/tables/t"):
        started = time.monotonic()
        got = httpx.get(front.url + TABLE, timeout=120)
        elapsed = time.monotonic() - started
    assert got.status_code == 503, got.text
    assert elapsed < 3, f"{elapsed:.1f} s to refuse one answer head"


def test_an_anonymous_request_head_of_blanks_then_a_nul_is_refused_at_once(front: ProxyProcess) -> None:
    """Before any authentication: one write of a request head with ``x-pad:`` + blanks + NUL. Hypercorn reads up
    to 64 KiB at once and h11 bounds only an incomplete head (16 KiB), so the whole line reached the regex."""
    host, port = front.url.removeprefix("http://").split(":")
    head = b"GET /v1/config HTTP/1.1\r\nHost: x\r\nx-pad:" + b" " * BLANKS + b"\x00\r\n\r\n"
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.sendall(head)
        status = sock.recv(64)
    elapsed = time.monotonic() - started
    assert status.startswith(b"HTTP/1.1 400"), status
    assert elapsed < 3, f"{elapsed:.1f} s to refuse one request head"
    assert httpx.get(front.url + "/v1/config?warehouse=fed", timeout=10).status_code in (200, 401)


def test_an_answer_head_over_the_bound_is_refused_when_it_arrives_whole(
    remote: HostileRemote, front: ProxyProcess
) -> None:
    """A 110 KB head in one write: h11's bound (100 KiB) held only for a head still incomplete, so the whole one
    was read (and its 4,000 headers kept). Refused (503) like a head that trickles past the bound."""
    headers = [b"x-%05d: %s" % (n, b"v" * 16) for n in range(4000)]
    with remote.replying(raw(answer(b"{}", *headers)), under="/v1/p/namespaces/mine/tables/t"):
        got = httpx.get(front.url + TABLE, timeout=60)
    assert got.status_code == 503, (got.status_code, len(got.headers))
    assert "RemoteProtocolError" in got.json()["error"]["message"]
