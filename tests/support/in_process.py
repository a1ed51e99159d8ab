"""The proxy's ASGI app served in the test process: no socket, no hypercorn, the same app and lifespan.

``irc_proxy.app.create_app`` builds the app from the same config text a ``ProxyProcess`` would get. Its
lifespan runs through the ASGI lifespan protocol (as hypercorn drives it) on an event loop in a
background thread (an anyio blocking portal); each request goes through ``httpx.ASGITransport`` on that
loop with a copy of the lifespan state in its scope, as a server passes it. The clients are ordinary
synchronous ``httpx.Client``s, so a test reads the same whether its proxy is in-process or a real one.

For tests that only check HTTP answers: draining, workers, timeouts, signals and access logs are the
server's and need a ``ProxyProcess``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irc_proxy.app import create_app
from irc_proxy.settings import load_settings
from tests.support.server import write_config

URL = "http://127.0.0.1:8181"
"""The base URL the in-process clients use (the app sees it as the request's host)."""


class InProcessProxy:
    """The app of one config, started; ``client()`` talks to it as ``httpx.Client(base_url=proxy.url)`` would."""

    def __init__(self, workdir: Path, app: ASGIApp, portal: BlockingPortal) -> None:
        self.workdir = workdir
        self.url = URL
        self.config_path = workdir / "irc-proxy.toml"
        self._transport = _PortalTransport(app, portal)

    def client(self, path: str = "", **options: Any) -> httpx.Client:
        """A client for ``URL + path``; ``options`` are ``httpx.Client``'s (headers, timeout, ...)."""
        return httpx.Client(transport=self._transport, base_url=self.url + path, **options)


class ServeInProcess(Protocol):
    """The ``serve_in_process`` fixture (tests/integration/conftest.py): a started ``InProcessProxy``."""

    def __call__(self, config: str = "", label: str = "proxy") -> InProcessProxy: ...


@contextmanager
def in_process(workdir: Path, config: str = "") -> Iterator[InProcessProxy]:
    """Build the app for ``config`` (with ``data_dir`` in ``workdir``, as ``ProxyProcess`` writes it) and run it."""
    settings = load_settings(write_config(workdir, config), environ={})  # IRC_PROXY_* of this process ignored
    app = create_app(settings)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_lifespan(app)) as state:
        yield InProcessProxy(workdir, _WithState(app, state), portal)


@asynccontextmanager
async def _lifespan(app: ASGIApp) -> AsyncIterator[dict[str, Any]]:
    """Startup and shutdown through the ASGI lifespan protocol; yields the state the app filled in."""
    state: dict[str, Any] = {}
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()

    async def send(message: Message) -> None:
        await outbox.put(message)

    async def run() -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}
        await app(scope, inbox.get, send)

    task = asyncio.create_task(run())
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox.get()
    if started["type"] != "lifespan.startup.complete":
        await task  # the app's own exception, if it raised one
        raise RuntimeError(f"the app did not start: {started.get('message', started)}")
    try:
        yield state
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        stopped = await outbox.get()
        await task
        assert stopped["type"] == "lifespan.shutdown.complete", stopped


class _WithState:
    """Each request's scope gets a shallow copy of the lifespan state, as a server hands it over."""

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app({**scope, "state": dict(self._state)}, receive, send)


class _PortalTransport(httpx.BaseTransport):
    """A synchronous transport: each request runs through ``httpx.ASGITransport`` on the portal's loop."""

    def __init__(self, app: ASGIApp, portal: BlockingPortal) -> None:
        self._asgi = httpx.ASGITransport(app=app)  # client address 127.0.0.1, app exceptions raised
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()  # a sync stream cannot be read on the loop: read it here

        async def send() -> tuple[int, httpx.Headers, bytes]:
            copy = httpx.Request(request.method, request.url, headers=request.headers, content=body)
            response = await self._asgi.handle_async_request(copy)
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
            return response.status_code, response.headers, raw

        status, headers, raw = self._portal.call(send)
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(raw), request=request)
