"""Authentication over HTTP: the bearer-token check, ``POST /v1/oauth/tokens`` and the JWKS.

The check (run by ``http.gate.Gate``) asks the lifespan's ``authenticator`` (``irc_proxy.handling.security.authn``)
who a token names and puts the answer in the request's record (``RequestContext.principal``, ``.roles``). Health,
token and JWKS endpoints stay open. Tokens and secrets are never logged or echoed. Every token request is
audited (``oauth.token``; refusals as denied, with the reason and source address) and its client id
goes to the access log (``client=``); throttling itself lives in ``irc_proxy.handling.security.throttle``.
"""

from __future__ import annotations

import base64
import binascii
import json
from urllib.parse import parse_qs, quote, unquote_plus

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from irc_proxy.errors import BadRequest, NotAuthenticated, ServiceUnavailable, TokenRequestError
from irc_proxy.handling.security.authn import ANONYMOUS, TOKEN_EXCHANGE_GRANT, TokenService
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state, require, scope_context
from irc_proxy.http.console_cookie import (
    OPEN_UI_PATHS,
    UI_PREFIX,
    cookie_from_headers,
    is_console_path,
    session_cookie,
)
from irc_proxy.http.errors import NO_STORE, response_for
from irc_proxy.http.headers import headers_of
from irc_proxy.http.responses import json_response

TOKEN_PATH = "/v1/oauth/tokens"  # noqa: S105 (a path)
JWKS_PATH = "/.well-known/jwks.json"
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics", TOKEN_PATH, JWKS_PATH})
MAX_LOGGED_ID = 255
"""Client ids are the caller's text: at most this much of one goes into the audit trail."""


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer`` header; pyiceberg's literal ``Bearer None`` is no token."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or token == "None":  # noqa: S105
        return None
    return token


class Authentication:
    """Who sent the request (its bearer token, or the console's session cookie); a request without a valid token is
    refused with a 401 when the mode requires one. A check the ``Gate`` runs on every request but the open paths."""

    async def admit(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Note the caller in the request's record and return True, or answer the request and return False."""
        path = scope["path"]
        if path in OPEN_PATHS:
            return True
        shared = require(scope)
        authenticator = shared.authenticator
        sent = headers_of(scope)
        authorization = sent.authorization.decode("latin-1") if sent.authorization else None
        token = bearer_token(authorization) if authorization else None
        console = is_console_path(path)
        if console and token is None:  # the console's pages: the session cookie carries the token
            token = cookie_from_headers(scope["headers"], session_cookie(scope["scheme"]))
            if path in OPEN_UI_PATHS:
                return True
        principal = ANONYMOUS
        try:
            if sent.authorizations > 1:  # a singleton field (RFC 9110): which one is the caller's?
                raise BadRequest("Send one Authorization header, not several")
            if token is not None:
                principal = await authenticator.authenticate(token)
                revocations = shared.revocations
                if revocations is not None:  # a session signed out (the console's sign-out) before it expired
                    await revocations.check(token)
            elif authenticator.required:
                raise NotAuthenticated("Authentication required: send an OAuth2 bearer token")
        except NotAuthenticated as exc:
            if console:  # a person: to the sign-in form, then back here
                target = quote(path + ("?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""))
                await RedirectResponse(f"{UI_PREFIX}/login?next={target}", status_code=303)(scope, receive, send)
                return False
            challenge = 'Bearer realm="irc-proxy"' + (', error="invalid_token"' if token else "")
            response = response_for(Request(scope), exc)
            response.headers["WWW-Authenticate"] = challenge
            await response(scope, receive, send)
            return False
        except (ServiceUnavailable, BadRequest) as exc:
            await response_for(Request(scope), exc)(scope, receive, send)
            return False
        context = scope_context(scope)
        context.principal, context.roles = principal.name, principal.roles
        if principal.grants is not None:  # a run credential: exactly its own grants
            context.grants = principal.grants
        context.authorization = authorization
        return True


def _token_service(request: Request) -> TokenService:
    service = app_state(request).token_service
    assert service is not None, "the token endpoints are routed only with auth.mode = oauth2"
    return service


def _basic_credentials(authorization: str) -> tuple[str, str] | None:
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, _, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote_plus(client_id), unquote_plus(secret)


def _audit(request: Request, client_id: str, principal: str, refusal: TokenRequestError | None) -> None:
    """Name the request's audit record (``oauth.token``) and the client for the access log.

    A refusal is recorded as denied with its reason and the source address (never the secret).
    """
    context = parsing.context(request)
    context.audit.name("oauth.token")
    context.audit.object = client_id[:MAX_LOGGED_ID] or None
    context.principal = (principal or client_id or ANONYMOUS.name)[:MAX_LOGGED_ID]
    context.client_id = client_id
    if refusal is not None:
        context.audit.note("denied", f"{refusal.error}: {refusal.description} (address {_address(request)})")


def _address(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


async def issue_token(request: Request) -> Response:
    """``POST /v1/oauth/tokens`` (deprecated in the spec, still what pyiceberg and Spark call)."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return _refused(
            request, "", TokenRequestError("invalid_request", "the body must be application/x-www-form-urlencoded")
        )
    try:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode(), keep_blank_values=True).items()}
    except UnicodeDecodeError:
        return _refused(request, "", TokenRequestError("invalid_request", "the body is not valid UTF-8"))
    client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
    basic = _basic_credentials(request.headers.get("authorization", ""))
    if basic is not None:
        client_id, secret = basic
    service, grant, scope = _token_service(request), form.get("grant_type", ""), form.get("scope", "")
    try:
        if grant == TOKEN_EXCHANGE_GRANT:
            subject_type = form.get("subject_token_type", "")
            subject = form.get("subject_token", "")
            issued = await service.exchange(subject, subject_type, scope, client_id, secret, _address(request))
        else:
            issued = await service.issue(grant, client_id, secret, scope, _address(request))
    except TokenRequestError as exc:
        return _refused(request, exc.client_id or client_id, exc)
    _audit(request, issued.client_id, issued.principal, None)
    return json_response(issued.body, headers=NO_STORE)


def _refused(request: Request, client_id: str, refusal: TokenRequestError) -> Response:
    _audit(request, client_id, "", refusal)
    return response_for(request, refusal)


async def jwks(request: Request) -> Response:
    """The public keys tokens of this proxy are signed with (RFC 7517)."""
    body = json.dumps(_token_service(request).jwks())
    return Response(body, media_type="application/jwk-set+json", headers={"Cache-Control": "max-age=300"})
