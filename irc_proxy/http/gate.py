"""Pure ASGI: every check a request must pass before routing, in one layer of plain function calls.

In order: the cross-site guard (``http.cross_site``: Host, Origin, JSON-only writes), the console redirect of a
browser opening ``/`` (``http.front_door``, when the console is on), authentication (``http.auth``), then the body
limit (``BodyLimit``) and ``Idempotency-Key`` (``http.idempotency``).

They used to be five middleware layers, each a coroutine frame and, for some, ``receive``/``send`` wrappers on
every request. Here a check that cannot apply costs a comparison: a request without a body skips the body limit's
wrappers, and only a POST or DELETE reaches the idempotency layer (which looks for the key).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from irc_proxy.http.auth import Authentication
from irc_proxy.http.cross_site import CrossSiteGuard
from irc_proxy.http.front_door import redirect_to_console, to_console
from irc_proxy.http.headers import headers_of
from irc_proxy.http.idempotency import KEYED_METHODS, Idempotency
from irc_proxy.http.middleware import BodyLimit


class Gate:
    """Refuse what must not reach the routes (see the module docstring); pass the rest to ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str],
        allowed_origins: Iterable[str],
        max_body_bytes: int,
        console: bool = False,
    ) -> None:
        self.app = app
        self.guard = CrossSiteGuard(allowed_hosts, allowed_origins)
        self.console = console
        self.authentication = Authentication()
        self.keyed = Idempotency(app)
        self.limited = BodyLimit(self.keyed, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.guard.refusal(scope)  # before any token work
        if refusal is not None:
            await self.guard.refuse(scope, receive, send, refusal)
            return
        if self.console and to_console(scope):  # before authentication: the console signs a person in itself
            await redirect_to_console(send)
            return
        if not await self.authentication.admit(scope, receive, send):
            return
        if headers_of(scope).has_body:  # the body limit, then the key (which needs the principal)
            await self.limited(scope, receive, send)
        elif scope["method"] in KEYED_METHODS:
            await self.keyed(scope, receive, send)
        else:
            await self.app(scope, receive, send)
