"""How the proxy authenticates to a remote REST catalog: one small strategy per ``auth.mode``.

    none      nothing is added
    token     a static ``Authorization: Bearer``
    oauth2    client credentials (RFC 6749 4.4) via authlib; the token is cached and fetched again
              ``refresh_margin_seconds`` before it expires, or at once after the upstream answers 401
    sigv4     AWS Signature V4 (botocore) with signing name ``glue``, ``s3tables`` or ``execute-api``

With ``forward_caller_token`` the caller's own bearer header replaces the strategy's credentials
whenever the caller sent one. Secrets are never logged or put into error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any, Protocol

import httpx
from authlib.oauth2.auth import ClientAuth  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.parameters import prepare_token_request  # type: ignore[import-untyped]
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, RefreshableCredentials

from irc_proxy.backends.aws import session_for
from irc_proxy.backends.rest.messages import Answer, sendable
from irc_proxy.errors import BadRequest, ServiceUnavailable
from irc_proxy.settings import RestUpstreamAuthSettings
from irc_proxy.threads import ThreadRunner

CALLER_AUTHORIZATION: ContextVar[str | None] = ContextVar("caller_authorization", default=None)
"""The ``Authorization`` header of the request being served (set by the HTTP layer)."""
PostForm = Callable[[str, dict[str, str], bytes], Awaitable[Answer]]
"""Sends a POST (URL, headers, body) and reads its answer: how ``ClientCredentials`` asks for a token."""


class Signable(Protocol):
    """What a strategy sees of a request (``messages.Outgoing``; an ``httpx.Request`` is one too)."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> object:
        """The full URL (its text is what SigV4 signs)."""

    @property
    def headers(self) -> MutableMapping[str, str]:
        """Lower-case names (``httpx.Headers`` ignores case): strategies set lower-case ones."""

    @property
    def content(self) -> bytes: ...


class UpstreamAuth(Protocol):
    async def apply(self, request: Signable) -> None:
        """Add credentials to an outgoing request. Raises ServiceUnavailable if none can be had."""

    def invalidate(self) -> bool:
        """Forget cached credentials after a 401; True if sending again may succeed."""

    @property
    def proxy_credentials(self) -> bool:
        """Whether the last ``apply`` used the proxy's own credentials (not the caller's token)."""


class NoAuth:
    proxy_credentials = True

    async def apply(self, request: Signable) -> None:
        return None

    def invalidate(self) -> bool:
        return False


class StaticToken:
    proxy_credentials = True

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    async def apply(self, request: Signable) -> None:
        request.headers["authorization"] = self._header

    def invalidate(self) -> bool:
        return False


class ClientCredentials:
    """OAuth2 client credentials against ``endpoint()`` (evaluated at each fetch)."""

    proxy_credentials = True

    def __init__(self, settings: RestUpstreamAuthSettings, endpoint: Callable[[], str], post: PostForm) -> None:
        secret = settings.client_secret.get_secret_value() if settings.client_secret else ""
        self._client_auth = ClientAuth(settings.client_id, secret, settings.token_endpoint_auth_method)
        self._scope = settings.scope
        self._margin = settings.refresh_margin_seconds
        self._endpoint = endpoint
        self._post = post
        self._token: str | None = None
        self._expires_at: float | None = None
        self._lock = asyncio.Lock()

    def _fresh(self) -> str | None:
        """The cached token unless it expires within the margin (no ``expires_in``: until a 401)."""
        if self._expires_at is not None and self._expires_at - self._margin <= time.monotonic():
            return None
        return self._token

    async def apply(self, request: Signable) -> None:
        access = self._fresh()
        if access is None:
            async with self._lock:
                access = self._fresh() or await self._fetch()
        request.headers["authorization"] = f"Bearer {access}"

    def invalidate(self) -> bool:
        self._token = None
        return True

    async def _fetch(self) -> str:
        url = self._endpoint()
        body = prepare_token_request("client_credentials", scope=self._scope or None)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        url, headers, body = self._client_auth.prepare("POST", url, headers, body)
        try:
            response = await self._post(url, headers, body.encode())
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # unreachable, too slow, too large, garbled; a bad URL
            raise ServiceUnavailable(f"The upstream token endpoint did not answer ({type(exc).__name__})") from exc
        data: Any = None
        with contextlib.suppress(ValueError):
            data = response.json()
        if response.status_code != 200 or not isinstance(data, dict) or not data.get("access_token"):
            error = data.get("error", "") if isinstance(data, dict) else ""
            raise ServiceUnavailable(
                f"The upstream token endpoint refused the proxy's client credentials ({response.status_code} {error})"
            )
        token = str(data["access_token"])
        if not (token.isascii() and token.isprintable()) or " " in token:
            # not kept: a token no header can carry would fail every request until it expired
            raise ServiceUnavailable("The upstream token endpoint answered a token no Authorization header can carry")
        lifetime = data.get("expires_in")
        self._expires_at = time.monotonic() + float(lifetime) if isinstance(lifetime, int | float) else None
        self._token = token
        return self._token


class SigV4:
    """AWS SigV4 over the body bytes; credentials from static keys, the default chain or a role."""

    proxy_credentials = True

    def __init__(self, settings: RestUpstreamAuthSettings, threads: ThreadRunner) -> None:
        self._threads = threads
        session = session_for(settings)
        credentials = session.get_credentials()
        if credentials is None:
            raise ValueError("sigv4: no AWS credentials found (static keys, the default chain or a role)")
        self._credentials: Credentials = credentials
        self._signing_name = settings.signing_name
        self._region = settings.region

    async def apply(self, request: Signable) -> None:
        credentials = self._credentials
        if isinstance(credentials, RefreshableCredentials) and credentials.refresh_needed():
            frozen = await self._threads.run(credentials.get_frozen_credentials)
        else:
            frozen = credentials.get_frozen_credentials()
        body = request.content
        headers = {
            "Content-Type": request.headers.get("content-type", ""),
            "X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest(),
        }
        aws = AWSRequest(method=request.method, url=str(request.url), data=body, headers=headers)
        SigV4Auth(frozen, self._signing_name, self._region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-SHA256"):
            if name in aws.headers:
                request.headers[name.lower()] = aws.headers[name]

    def invalidate(self) -> bool:
        return False


class CallerToken:
    """The caller's bearer header when it sent one, else ``fallback``'s credentials."""

    def __init__(self, fallback: UpstreamAuth) -> None:
        self._fallback = fallback
        self._used_caller: ContextVar[bool] = ContextVar("used_caller", default=False)

    @property
    def proxy_credentials(self) -> bool:
        return not self._used_caller.get()

    async def apply(self, request: Signable) -> None:
        caller = CALLER_AUTHORIZATION.get()
        if caller and caller.lower().startswith("bearer ") and caller[7:].strip() not in ("", "None"):
            if not sendable(caller):  # h11 would refuse to write it: a commit would look sent (504)
                raise BadRequest("The Authorization header holds a control character: it cannot be sent upstream")
            self._used_caller.set(True)
            request.headers["authorization"] = caller
            return
        self._used_caller.set(False)
        await self._fallback.apply(request)

    def invalidate(self) -> bool:
        return self.proxy_credentials and self._fallback.invalidate()


def build_auth(
    settings: RestUpstreamAuthSettings,
    token_endpoint: Callable[[], str],
    post: PostForm,
    threads: ThreadRunner,
) -> UpstreamAuth:
    """The strategy for ``settings.mode``, wrapped for ``forward_caller_token``; ``post`` sends OAuth2's token
    requests (``RestUpstream._post_form``: bounded as every upstream answer)."""
    auth: UpstreamAuth
    if settings.mode == "token":
        auth = StaticToken(settings.token.get_secret_value() if settings.token else "")
    elif settings.mode == "oauth2":
        auth = ClientCredentials(settings, token_endpoint, post)
    elif settings.mode == "sigv4":
        auth = SigV4(settings, threads)
    else:
        auth = NoAuth()
    return CallerToken(auth) if settings.forward_caller_token else auth
