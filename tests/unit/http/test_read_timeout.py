"""The read loop of ``http/read_timeout.py``: swapped into hypercorn only where it was checked, and over a real
socket it keeps hypercorn's guarantee (a silent read ends the connection after ``read_timeout``; a client that
keeps sending is not cut), the same as hypercorn's own ``wait_for`` loop, which is run side by side."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import socket
import struct
import threading
import time
from collections.abc import Iterator
from functools import partial
from importlib.metadata import version
from typing import Any, cast

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
import uvloop
from h2.connection import H2Connection
from hypercorn.asyncio import run as hypercorn_run
from hypercorn.asyncio.run import worker_serve
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.config import Config
from hypercorn.protocol import h2 as hypercorn_h2
from hypercorn.protocol.h2 import H2Protocol, StreamBuffer
from hypercorn.utils import wrap_app

from irc_proxy.http.h2_stall import TakenStreamBuffer
from irc_proxy.http.read_timeout import CHECKED_VERSIONS, TimedReadTCPServer, install

READ_TIMEOUT = 0.6
KEEP_ALIVE = 2.0
"""Longer than the read timeout, so a close at ``READ_TIMEOUT`` is the read timeout's doing."""
REPLACED_SOURCE = "8e7ad8f4bfca2fd27e8f698634a32519d2512b258e9168917455fada224b7e1e"
SERVER_SOURCE = "3bfa72b319509f2b02a757c59348721eb890e6db97fe21ccd7fd08541f2f4ee5"
"""The whole ``TCPServer``: how it uses ``idle_task`` (``keep_alive.IdleTimer`` takes its place)."""


def test_hypercorn_is_the_one_the_loop_was_checked_against() -> None:
    """A hypercorn upgrade lands here: compare its new ``TCPServer._read_data`` (and how ``run.py`` builds
    connections) with ``TimedReadTCPServer._read_data``, and its use of ``idle_task`` with ``keep_alive.IdleTimer``,
    then update ``CHECKED_VERSIONS`` and these digests."""
    assert version("hypercorn") in CHECKED_VERSIONS
    source = inspect.getsource(TCPServer._read_data)
    assert hashlib.sha256(source.encode()).hexdigest() == REPLACED_SOURCE, source
    whole = inspect.getsource(TCPServer)  # its idle task: restarted when idle, stopped when busy and at close
    assert hashlib.sha256(whole.encode()).hexdigest() == SERVER_SOURCE, whole
    assert "await TCPServer(app, loop, config, context, lifespan_state, reader, writer)" in inspect.getsource(
        hypercorn_run.worker_serve
    )


def built_class() -> object:
    """The class ``hypercorn.asyncio.run`` builds each connection with (a name it does not export)."""
    return cast(object, getattr(hypercorn_run, "TCPServer"))


def test_install_swaps_the_server_hypercorn_builds() -> None:
    try:
        assert install() is True
        assert built_class() is TimedReadTCPServer
        assert install() is True  # idempotent
    finally:
        setattr(hypercorn_run, "TCPServer", TCPServer)
        setattr(hypercorn_h2, "StreamBuffer", StreamBuffer)


def test_install_keeps_hypercorn_loop_when_the_name_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hypercorn_run, "TCPServer", object)
    assert install() is False
    assert built_class() is object


async def echo_length(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the whole body, then answers its length (``/size/N``: N bytes); a disconnect while reading ends it
    without an answer."""
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": message["type"] + ".complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["path"] == "/slow":  # answers after longer than the keep-alive timeout
        await asyncio.sleep(KEEP_ALIVE * 1.5)
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(size).encode()
    if scope["path"].startswith("/size/"):  # an answer of that many bytes
        body = b"x" * int(scope["path"].removeprefix("/size/"))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(
    params=[
        (TCPServer, "asyncio"),
        (TimedReadTCPServer, "asyncio"),
        (TCPServer, "uvloop"),
        (TimedReadTCPServer, "uvloop"),
    ],
    ids=["hypercorn-asyncio", "timed-asyncio", "hypercorn-uvloop", "timed-uvloop"],
)
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A hypercorn on a free port in a thread, building connections with the given class on the given event
    loop (``serve`` runs uvloop when it is installed); yields the port."""
    server_class, loop_kind = request.param
    with serving(server_class, loop_kind, monkeypatch) as (port, _stop):
        yield port


@contextlib.contextmanager
def serving(
    server_class: type,
    loop_kind: str,
    monkeypatch: pytest.MonkeyPatch,
    read_timeout: float = READ_TIMEOUT,
    send_buffer: int | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yields the port and a function that starts the worker's graceful shutdown (once). ``send_buffer``: the
    listening socket's ``SO_SNDBUF``, which accepted connections inherit (small: an unread answer stays in the
    server's transport buffer instead of the kernel's)."""
    monkeypatch.setattr(hypercorn_run, "TCPServer", server_class)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.read_timeout = read_timeout  # type: ignore[assignment]
    config.keep_alive_timeout = KEEP_ALIVE
    sockets = config.create_sockets()
    port = sockets.insecure_sockets[0].getsockname()[1]
    if send_buffer is not None:
        sockets.insecure_sockets[0].setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    loop = uvloop.new_event_loop() if loop_kind == "uvloop" else asyncio.new_event_loop()
    loop.set_task_factory(count_read_tasks)
    TASK_FACTORY_LOOPS.append(loop)
    READ_TASKS.clear()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete,
        args=(
            worker_serve(
                wrap_app(cast(Any, echo_length), 0, "asgi"), config, sockets=sockets, shutdown_trigger=stop.wait
            ),
        ),
        daemon=True,
    )
    thread.start()
    try:
        yield port, partial(loop.call_soon_threadsafe, stop.set)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


READ_TASKS: list[str] = []
TASK_FACTORY_LOOPS: list[asyncio.AbstractEventLoop] = []
"""The loops ``serving`` made, the last one running."""
"""Tasks made to run a ``StreamReader.read`` (what ``wait_for`` wraps each socket read in) since the fixture began."""


def count_read_tasks(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    if getattr(coro, "__qualname__", "") == "StreamReader.read":
        READ_TASKS.append(coro.__qualname__)
    return asyncio.Task(coro, loop=loop, **kwargs)


def recording_tasks(made: list[str], loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    """A task factory that notes the name of each coroutine it makes a task for in ``made``."""
    made.append(getattr(coro, "__qualname__", "?"))
    return asyncio.Task(coro, loop=loop, **kwargs)


def connect(port: int) -> socket.socket:
    deadline = time.monotonic() + 5
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def answer(sock: socket.socket) -> bytes:
    data = b""
    while not (b"\r\n\r\n" in data and data.split(b"\r\n\r\n", 1)[1]):
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    return data


def test_a_stalled_body_is_cut_after_the_read_timeout(server: int) -> None:
    """The slowloris case: a request whose body stops coming ends ``READ_TIMEOUT`` after its last byte."""
    with connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(READ_TIMEOUT / 2)  # half-way: the deadline counts from the last byte, not the first
        sock.sendall(b"{")
        started = time.monotonic()
        data = sock.recv(65536)
        elapsed = time.monotonic() - started
    assert READ_TIMEOUT - 0.05 <= elapsed < READ_TIMEOUT + 0.5, elapsed
    assert data == b"", data


def test_a_silent_connection_is_closed_by_the_keep_alive_timeout(server: int) -> None:
    """hypercorn 0.18's read loop ends at the read timeout, but the connection waits for its keep-alive timer
    (the idle task in the same task group) to close: unchanged by the swap."""
    with connect(server) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""
        elapsed = time.monotonic() - started
    assert KEEP_ALIVE - 0.05 <= elapsed < KEEP_ALIVE + 0.5, elapsed


def test_a_slow_but_steady_client_is_not_cut(server: int) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n")
        for piece in (b"a", b"b", b"c", b"d", b"e", b"f"):
            time.sleep(READ_TIMEOUT * 0.5)
            sock.sendall(piece)
        assert time.monotonic() - started > 2 * READ_TIMEOUT
        data = answer(sock)
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n6"), data
        for _ in range(3):  # keep-alive: further requests on the same connection, each after a pause
            time.sleep(READ_TIMEOUT * 0.5)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            data = answer(sock)
            assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n0"), data


@pytest.mark.parametrize(
    ("server_class", "tasks"), [(TCPServer, "one per read"), (TimedReadTCPServer, "none")], ids=["hypercorn", "timed"]
)
def test_reads_run_without_a_task_each(server_class: type, tasks: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the swap: hypercorn's loop makes a task per socket read, the timed loop none."""
    monkeypatch.setattr(hypercorn_run, "TCPServer", server_class)
    loop = asyncio.new_event_loop()
    loop.set_task_factory(count_read_tasks)
    READ_TASKS.clear()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.read_timeout = 60
    sockets = config.create_sockets()
    port = sockets.insecure_sockets[0].getsockname()[1]
    stop = asyncio.Event()
    serving = worker_serve(
        wrap_app(cast(Any, echo_length), 0, "asgi"), config, sockets=sockets, shutdown_trigger=stop.wait
    )
    thread = threading.Thread(target=loop.run_until_complete, args=(serving,), daemon=True)
    thread.start()
    try:
        with connect(port) as sock:
            for _ in range(5):
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                assert answer(sock).startswith(b"HTTP/1.1 200")
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
    assert (len(READ_TASKS) >= 5) if tasks == "one per read" else (READ_TASKS == []), READ_TASKS


def closed_after(sock: socket.socket) -> float:
    """Seconds until the server closes ``sock`` (no byte may come before)."""
    started = time.monotonic()
    assert sock.recv(1) == b""
    return time.monotonic() - started


def test_an_idle_connection_is_closed_keep_alive_after_its_last_answer(server: int) -> None:
    """Requests spaced closer than the keep-alive keep the connection past it; after the last answer it closes
    ``KEEP_ALIVE`` later (the read loop ends at the read timeout, the connection at the keep-alive: as before)."""
    with connect(server) as sock:
        started = time.monotonic()
        while time.monotonic() - started < KEEP_ALIVE * 1.3:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")
            time.sleep(READ_TIMEOUT * 0.5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 200")
        elapsed = closed_after(sock)
    assert KEEP_ALIVE - 0.05 <= elapsed < KEEP_ALIVE + 0.5, elapsed


@pytest.mark.parametrize("server_class", [TCPServer, TimedReadTCPServer], ids=["hypercorn", "timed"])
def test_an_answer_slower_than_the_keep_alive_is_not_cut(server_class: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keep-alive counts idle time only: a request whose answer takes 1.5x ``KEEP_ALIVE`` gets it and the
    connection serves the next one (with a read timeout longer than that: hypercorn's read loop, waiting for a next
    request meanwhile, would end at its read timeout, and the connection after the answer, with either class)."""
    with serving(server_class, "uvloop", monkeypatch, read_timeout=KEEP_ALIVE * 3) as (port, _), connect(port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # the timer is armed while idle ...
        assert answer(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")  # ... and fires while this one runs
        assert answer(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("server_class", [TCPServer, TimedReadTCPServer], ids=["hypercorn", "timed"])
def test_a_graceful_shutdown_closes_idle_connections_at_once_and_a_busy_one_after_its_answer(
    server_class: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        serving(server_class, "uvloop", monkeypatch, read_timeout=KEEP_ALIVE * 3) as (port, shut_down),
        connect(port) as idle,
        connect(port) as busy,
    ):
        idle.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(idle).startswith(b"HTTP/1.1 200")
        busy.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)
        started = time.monotonic()
        shut_down()
        assert closed_after(idle) < KEEP_ALIVE / 2
        assert answer(busy).startswith(b"HTTP/1.1 200")  # the running request still gets its answer ...
        assert closed_after(busy) < KEEP_ALIVE / 2  # ... and then the connection closes
        assert time.monotonic() - started < KEEP_ALIVE * 2


@pytest.mark.parametrize(
    ("server_class", "most"), [(TCPServer, None), (TimedReadTCPServer, 1)], ids=["hypercorn", "timed"]
)
def test_a_keep_alive_request_makes_no_task_but_the_apps(
    server_class: type, most: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The point of ``IdleTimer``: hypercorn makes ~3 tasks a request (the app's, the idle task, ``wait_for``'s),
    the timer one (the app's)."""
    made: list[str] = []
    counting = partial(recording_tasks, made)

    with serving(server_class, "asyncio", monkeypatch) as (port, _stop), connect(port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 200")
        asyncio_loop = TASK_FACTORY_LOOPS[-1]
        asyncio_loop.call_soon_threadsafe(asyncio_loop.set_task_factory, counting)
        time.sleep(0.1)
        for _ in range(20):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(0.1)
        during = list(made)
    per_request = len(during) / 20
    assert (per_request >= 2.5) if most is None else (per_request <= most), (len(during), sorted(set(during)))


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
@pytest.mark.parametrize("server_class", [TCPServer, TimedReadTCPServer], ids=["hypercorn", "timed"])
def test_a_keep_alive_close_of_an_unread_answer_ends_the_connection_once_read(
    server_class: type, loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that leaves the tail of its answer unread past the keep-alive: the keep-alive's close waits for
    the tail to be sent (the socket stays open, as with hypercorn), and once the client has read it the
    connection's task ends. It once stayed waiting for a keep-alive that had already fired (``IdleTimer.held``
    after the close): a task and its connection's objects per such client, for as long as the worker ran,
    and a graceful shutdown that waited its whole timeout (hypercorn's default, 3 s) for them."""
    with serving(server_class, loop_kind, monkeypatch, read_timeout=KEEP_ALIVE * 3, send_buffer=4096) as (
        port,
        shut_down,
    ):
        connect(port).close()  # listening
        clients = []
        for size in range(8192, 200_000, 8192):  # some of them leave the server idle with bytes still to send
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers
            sock.settimeout(10)
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /size/%d HTTP/1.1\r\nHost: x\r\n\r\n" % size)
            clients.append((size, sock))
        time.sleep(KEEP_ALIVE * 1.3)
        for size, sock in clients:
            with sock:
                received = b""
                while not received.endswith(b"\r\n\r\n" + b"x" * size) and (piece := sock.recv(1 << 20)):
                    received += piece
                assert received.startswith(b"HTTP/1.1 200") and received.endswith(b"\r\n\r\n" + b"x" * size)
        time.sleep(0.2)
        loop = TASK_FACTORY_LOOPS[-1]
        started = time.monotonic()
        shut_down()
        while loop.is_running() and time.monotonic() - started < 10:
            time.sleep(0.02)
        elapsed = time.monotonic() - started
    assert elapsed < 1, elapsed  # no connection left to wait for


@pytest.mark.parametrize("server_class", [TCPServer, TimedReadTCPServer], ids=["hypercorn", "timed"])
def test_a_read_timeout_while_an_answer_waits_for_its_reader_raises_nothing_in_the_app(
    server_class: type, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that asks for a large answer and does not read it for longer than the read timeout: the read
    times out and the connection ends (with hypercorn's loop too), the app's pending writes are dropped. The
    timer's ``TimeoutError`` was left on the connection's ``StreamReader``, where ``StreamWriter.drain`` raises it
    too: the app's next write failed with it and hypercorn logged "Error in ASGI Framework" with a traceback, an
    error line per such client (an authenticated loadTable of large metadata, read slowly)."""
    with serving(server_class, "uvloop", monkeypatch, send_buffer=4096) as (port, _stop):
        connect(port).close()  # listening
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers
        sock.settimeout(10)
        sock.connect(("127.0.0.1", port))
        with sock:
            sock.sendall(b"GET /size/4000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(READ_TIMEOUT * 2)  # the read times out while the answer waits for the client
            while sock.recv(1 << 20):  # the client reads at last: the rest is sent, or the connection ends
                pass
        time.sleep(0.3)
    assert "Error in ASGI Framework" not in caplog.text, caplog.text[:2000]


WRITE_TIMEOUT = 0.5
BIG = 8_000_000
"""An answer far past what the kernel's buffers on both ends hold with the small ones set here."""


def unread_client(port: int, size: int = BIG) -> socket.socket:
    """A client that asks for ``size`` bytes and offers a 4 KiB window: the answer stays in the server."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /size/%d HTTP/1.1\r\nHost: x\r\n\r\n" % size)
    return sock


def received_by(sock: socket.socket, pause: float = 0.0) -> int:
    """Bytes the client gets until the connection ends (reading 64 KiB every ``pause`` seconds)."""
    total = 0
    with contextlib.suppress(ConnectionResetError):
        while piece := sock.recv(65536):
            total += len(piece)
            time.sleep(pause)
    return total


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
@pytest.mark.parametrize("server_class", [TCPServer, TimedReadTCPServer], ids=["hypercorn", "timed"])
def test_a_client_that_reads_nothing_of_its_answer_is_cut_after_the_write_timeout(
    server_class: type, loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hypercorn waits for ever on a client that does not read: its connection, its request's task and the unsent
    answer stay while it likes (here: the read timeout is long and the client sends nothing more, as a client
    blocked on its own writes would). With ``write_timeout`` the connection ends and the answer is dropped."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    with serving(server_class, loop_kind, monkeypatch, read_timeout=30, send_buffer=4096) as (port, _stop):
        connect(port).close()  # listening
        with unread_client(port) as sock:
            time.sleep(WRITE_TIMEOUT * 4)
            got = received_by(sock)
        time.sleep(0.2)
        if server_class is TCPServer:
            assert got > BIG  # hypercorn held all of it until the client read
        else:
            assert got < BIG // 2, got  # cut: the rest was dropped
            deadline = time.monotonic() + KEEP_ALIVE + 1  # the probe connection lasts until its keep-alive
            while TimedReadTCPServer.open_connections and time.monotonic() < deadline:
                time.sleep(0.05)
            assert TimedReadTCPServer.open_connections == 0  # the cut connection's task ended too


def test_a_slow_reader_that_keeps_reading_is_never_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write timeout's deadline is on the client taking no byte, not on each wait for the transport to drain:
    a client reading a few KiB every 0.05 s (slower than the buffer drains within one write timeout) takes its
    400 KB answer over several write timeouts, and read timeouts (the read loop ends meanwhile, as hypercorn's
    does, but the answer is still sent to its end), and gets all of it."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    with serving(TimedReadTCPServer, "uvloop", monkeypatch, send_buffer=4096) as (port, _stop):
        connect(port).close()
        with unread_client(port, 400_000) as sock:
            started = time.monotonic()
            got = 0
            with contextlib.suppress(ConnectionResetError):
                while got < 400_000 and (piece := sock.recv(65536)):
                    got += len(piece)
                    time.sleep(0.05)
            elapsed = time.monotonic() - started
    assert got >= 400_000 and elapsed > WRITE_TIMEOUT * 3, (got, elapsed)


def test_connections_past_max_connections_are_closed_before_anything_is_read(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(TimedReadTCPServer, "max_connections", 3)
    monkeypatch.setattr(TimedReadTCPServer, "_refusal_logged", -float("inf"))
    with serving(TimedReadTCPServer, "uvloop", monkeypatch, read_timeout=30) as (port, _stop):
        held = [connect(port) for _ in range(3)]
        for sock in held:  # each served (and counted) before the next one connects
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")
        with connect(port) as extra:
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                extra.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert received_by(extra) == 0  # closed: no answer
        held.pop().close()  # its place is free once its connection ends (at once: its client closed it)
        deadline, served = time.monotonic() + KEEP_ALIVE + 2, b""
        while not served.startswith(b"HTTP/1.1 200") and time.monotonic() < deadline:
            time.sleep(0.2)
            with connect(port) as again, contextlib.suppress(ConnectionResetError, BrokenPipeError):
                again.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                served = answer(again)
        assert served.startswith(b"HTTP/1.1 200")
        for sock in held:
            sock.close()
    assert "server.max_connections (3)" in caplog.text


def left(port: int, how: str) -> None:
    """A client that connects and leaves without a request: ``fin`` closes, ``rst`` resets once the server reads."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if how == "rst":
        time.sleep(0.01)  # past accept and getpeername: the reset reaches the read loop
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("how", ["fin", "rst"])
@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_connections_their_clients_left_while_idle_do_not_fill_max_connections(
    how: str, loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connect-and-close ten times the cap in well under the keep-alive: each such connection once held its place
    until its keep-alive ended (hypercorn's task group waited for its idle task), so ``max_connections /
    keep_alive_timeout`` connections a second, with nothing held by the client, refused every other client. They
    end at once now, and the next client is served."""
    monkeypatch.setattr(TimedReadTCPServer, "max_connections", 5)
    with serving(TimedReadTCPServer, loop_kind, monkeypatch, read_timeout=30) as (port, _stop):
        connect(port).close()  # listening (this one leaves too)
        started = time.monotonic()
        for _ in range(50):
            left(port, how)
        time.sleep(0.3)  # the server has taken them all from the listening socket's backlog
        while TimedReadTCPServer.open_connections and time.monotonic() - started < KEEP_ALIVE:
            time.sleep(0.02)
        assert TimedReadTCPServer.open_connections == 0
        assert time.monotonic() - started < KEEP_ALIVE / 2
        with connect(port) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")
            time.sleep(KEEP_ALIVE / 4)  # a client that keeps its connection open idle keeps it: not cut early
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")


TAIL = 50_000
"""An answer whose unsent rest stays below the transport's high-water mark (64 KiB): ``protocol_send`` never waits."""


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_an_unread_tail_below_the_high_water_mark_is_cut_after_the_keep_alive_and_the_write_timeout(
    loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keep-alive's close waited for the transport to send the tail, for ever when the client read nothing:
    its connection (and its place under ``max_connections``) outlived the keep-alive, the read timeout and the
    write timeout. The close now has the write timeout's rule."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    with serving(TimedReadTCPServer, loop_kind, monkeypatch, read_timeout=1, send_buffer=4096) as (port, _stop):
        connect(port).close()
        time.sleep(0.1)
        clients = [unread_client(port, TAIL) for _ in range(3)]
        try:
            started = time.monotonic()
            time.sleep(0.3)
            assert TimedReadTCPServer.open_connections == 3  # the tails wait in the server
            while TimedReadTCPServer.open_connections and time.monotonic() - started < KEEP_ALIVE * 3:
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            assert TimedReadTCPServer.open_connections == 0, elapsed
            assert elapsed < KEEP_ALIVE + WRITE_TIMEOUT * 2 + 0.5, elapsed
            assert received_by(clients[0]) < TAIL  # cut: the rest was dropped
        finally:
            for sock in clients:
                sock.close()


def test_a_tail_read_slowly_after_the_keep_alive_is_sent_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The close's deadline is on the client taking no byte, as the write timeout's: a client that starts reading
    its tail after the keep-alive, 4 KiB every 0.1 s (over several write timeouts), gets all of it."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    with serving(TimedReadTCPServer, "uvloop", monkeypatch, read_timeout=30, send_buffer=4096) as (port, _stop):
        connect(port).close()
        with unread_client(port, TAIL) as sock:
            time.sleep(KEEP_ALIVE + WRITE_TIMEOUT / 2)  # the close has begun, the tail unsent
            started = time.monotonic()
            received = b""
            while piece := sock.recv(4096):
                received += piece
                time.sleep(0.1)
            assert received.startswith(b"HTTP/1.1 200") and received.endswith(b"\r\n\r\n" + b"x" * TAIL)
            assert time.monotonic() - started > WRITE_TIMEOUT * 2


def shut_window_h2_client(port: int, path: str, streams: int = 100) -> tuple[socket.socket, H2Connection]:
    """An h2c client (prior knowledge) that offers a flow-control window of 0 and asks for ``path`` ``streams``
    times: no answer's body can be sent until it opens the window."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    client = H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    for _ in range(streams):
        headers = [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")]
        client.send_headers(client.get_next_available_stream_id(), headers, end_stream=True)
    sock.sendall(client.data_to_send())
    return sock, client


def shut_window_h2(port: int, path: str, streams: int = 100) -> socket.socket:
    return shut_window_h2_client(port, path, streams)[0]


def tasks_of(loop: asyncio.AbstractEventLoop) -> int:
    async def count() -> int:
        return len(asyncio.all_tasks())

    return asyncio.run_coroutine_threadsafe(count(), loop).result(5)


@pytest.mark.parametrize("path", ["/", "/size/1000000"])
@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_h2_answers_blocked_on_a_shut_window_end_with_their_connection(
    path: str, loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hypercorn's h2 sender stops at the close and nothing woke the app tasks waiting on it: an h2c client that
    shut its window, asked 100 times and reset the connection left 100 tasks with their answers, and the
    connection's place under ``max_connections``, for as long as the worker ran."""
    with serving(TimedReadTCPServer, loop_kind, monkeypatch, read_timeout=30) as (port, _stop):
        connect(port).close()
        time.sleep(KEEP_ALIVE + 0.3)  # that probe's connection has ended
        loop = TASK_FACTORY_LOOPS[-1]
        before = tasks_of(loop)
        for _ in range(3):
            sock = shut_window_h2(port, path)
            time.sleep(0.2)
            assert tasks_of(loop) >= before + 100  # the answers wait for the window
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        deadline = time.monotonic() + 2
        while (TimedReadTCPServer.open_connections or tasks_of(loop) > before) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert TimedReadTCPServer.open_connections == 0
        assert tasks_of(loop) <= before


def test_the_bounds_add_no_task_to_a_keep_alive_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``write_timeout`` and ``max_connections`` set (as ``irc-proxy serve`` sets them), a request whose answer
    fits the transport's buffer still makes only the app's task: the drain's task is made only when it must wait,
    the close's only for an unsent tail."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", 60.0)
    monkeypatch.setattr(TimedReadTCPServer, "max_connections", 100)
    made: list[str] = []
    counting = partial(recording_tasks, made)

    with serving(TimedReadTCPServer, "asyncio", monkeypatch) as (port, _stop):
        with connect(port) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(sock).startswith(b"HTTP/1.1 200")
            loop = TASK_FACTORY_LOOPS[-1]
            loop.call_soon_threadsafe(loop.set_task_factory, counting)
            time.sleep(0.1)
            for _ in range(20):
                sock.sendall(b"GET /size/20000 HTTP/1.1\r\nHost: x\r\n\r\n")
                received = b""
                while not received.endswith(b"x" * 100) and (piece := sock.recv(65536)):
                    received += piece
            time.sleep(0.1)
        time.sleep(0.3)  # the client closed while idle: its connection ends at once, with no task
        during = list(made)
    assert len(during) <= 20, sorted(set(during))


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_h2_answers_on_a_window_kept_shut_are_reset_after_the_write_timeout(
    loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An h2c client that keeps its window shut and pings (so the read timeout never comes) held 100 app tasks and
    their answers per connection for as long as it liked: the transport's buffer, where the write timeout waits,
    never fills. Each stream is reset once its answer waited ``write_timeout`` with no byte taken."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    monkeypatch.setattr(hypercorn_h2, "StreamBuffer", TakenStreamBuffer)
    with serving(TimedReadTCPServer, loop_kind, monkeypatch, read_timeout=30) as (port, _stop):
        connect(port).close()
        time.sleep(KEEP_ALIVE + 0.3)
        loop = TASK_FACTORY_LOOPS[-1]
        before = tasks_of(loop)
        sock, client = shut_window_h2_client(port, "/size/100000")
        with sock:
            time.sleep(0.2)
            assert tasks_of(loop) >= before + 100
            started = time.monotonic()
            resets = 0
            sock.settimeout(0.05)
            alive = before + 2  # the connection's task and its h2 sender's, the connection being alive
            while (tasks_of(loop) > alive or resets < 100) and time.monotonic() - started < WRITE_TIMEOUT * 4:
                client.ping(b"12345678")  # the connection is alive: only its answers stall
                sock.sendall(client.data_to_send())
                with contextlib.suppress(TimeoutError):
                    events = client.receive_data(sock.recv(1 << 20))
                    resets += sum(isinstance(event, h2.events.StreamReset) for event in events)
            elapsed = time.monotonic() - started
            assert tasks_of(loop) <= alive, elapsed
            assert resets == 100, (resets, elapsed)
            assert elapsed > WRITE_TIMEOUT * 0.8  # not before the timeout


def test_an_h2_client_that_reads_slowly_is_never_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is on no byte taken: a client that opens its window 16 KiB every 0.1 s takes a 400 KB answer
    over several write timeouts, and gets all of it."""
    monkeypatch.setattr(TimedReadTCPServer, "write_timeout", WRITE_TIMEOUT)
    monkeypatch.setattr(hypercorn_h2, "StreamBuffer", TakenStreamBuffer)
    with serving(TimedReadTCPServer, "uvloop", monkeypatch, read_timeout=30) as (port, _stop):
        connect(port).close()
        sock, client = shut_window_h2_client(port, "/size/400000", streams=1)
        with sock:
            started, got, ended = time.monotonic(), 0, False
            sock.settimeout(0.1)
            while not ended and time.monotonic() - started < 15:
                client.increment_flow_control_window(16384)
                client.increment_flow_control_window(16384, stream_id=1)
                sock.sendall(client.data_to_send())
                time.sleep(0.1)
                with contextlib.suppress(TimeoutError):
                    for event in client.receive_data(sock.recv(1 << 20)):
                        if isinstance(event, h2.events.DataReceived):
                            got += len(event.data)
                        ended = ended or isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset))
                        assert not isinstance(event, h2.events.StreamReset), got
            assert got == 400_000
            assert time.monotonic() - started > WRITE_TIMEOUT * 2


H2_SOURCES = {
    "H2Protocol": "7257f8bafccaa2e5677c63696eef2777854fd65f2721f3408c6c963398a15145",
    "StreamBuffer": "bc347b7c78068613befe675f8fb3779ff3a4385312aa46c031e335b33d281be9",
}
"""What ``h2_stall`` relies on: ``StreamBuffer``'s push and pop, and ``H2Protocol``'s ``stream_buffers``,
``_close_stream``, ``_window_updated``, ``_flush`` and how it handles ``Closed`` (``_release_h2_answers``)."""


def test_hypercorn_h2_is_the_one_h2_stall_was_checked_against() -> None:
    """A hypercorn upgrade lands here: check ``h2_stall`` and ``TimedReadTCPServer._release_h2_answers`` against
    its new h2 protocol, then update these digests."""
    for thing in (H2Protocol, StreamBuffer):
        source = inspect.getsource(thing)
        assert hashlib.sha256(source.encode()).hexdigest() == H2_SOURCES[thing.__name__], source


def test_install_makes_h2_buffers_that_note_the_client_taking_bytes() -> None:
    try:
        assert install() is True
        assert hypercorn_h2.StreamBuffer is TakenStreamBuffer
    finally:
        setattr(hypercorn_run, "TCPServer", TCPServer)
        setattr(hypercorn_h2, "StreamBuffer", StreamBuffer)
