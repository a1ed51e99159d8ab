"""The console's sign-in for ``auth.mode = "oidc"``: the authorization-code flow with PKCE (S256).

    GET /ui/oidc/start?next=  discover the provider's endpoints; make state, nonce and a code verifier;
                              keep them in the ``irc_ui_oidc`` cookie; 303 to the authorization endpoint
    GET /ui/oidc/callback     check state; exchange the code with the verifier; verify the access token
                              as every REST call is verified; set the session cookie; go on to ``next``

The flow cookie is sealed (AES-GCM) with the page-token keys every replica shares through the state
database, under its own associated data, so any replica finishes a flow another began, and nobody can
read or change it; it carries its own expiry, and its state is recorded as used in the state database
when its callback runs, so a replayed callback is refused on every replica. Failures are error pages
(4xx; 503 when the provider cannot be reached) that never show the code, a token or the client secret.
Only authlib's OAuth2 primitives are used: its httpx integration warns on import (it wants ``httpx2``).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

import httpx
from authlib.common.security import generate_token  # type: ignore[import-untyped]
from authlib.oauth2.auth import ClientAuth  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request  # type: ignore[import-untyped]
from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]
from joserfc import jws
from joserfc.errors import JoseError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from irc_proxy.errors import BadRequest, CatalogError, NotAuthenticated, NotFound, ServiceUnavailable
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.console_cookie import cookie_name
from irc_proxy.http.errors import classify
from irc_proxy.numbers import is_number
from irc_proxy.settings import OidcSettings
from irc_proxy.ui.pages import SECURITY_HEADERS, render
from irc_proxy.ui.session import UI_PREFIX, safe_next, set_console_cookie, set_session

log = logging.getLogger("irc_proxy.auth")

FLOW_COOKIE = "irc_ui_oidc"
USED_FLOW = "oidc-flow"
FLOW_PATH = f"{UI_PREFIX}/oidc"
FLOW_SECONDS = 600
MAX_SESSION_SECONDS = 12 * 3600
DISCOVERY_SECONDS = 3600.0
_SEALED_FOR = b"ui.oidc.flow"
"""The seal's associated data: a page token never opens as a flow cookie, nor a flow cookie as a page token
(page tokens are bound to JSON arrays)."""


@dataclass(frozen=True)
class Provider:
    authorization_endpoint: str
    token_endpoint: str


_PROVIDERS: dict[str, tuple[Provider, float]] = {}
"""Discovered endpoints by issuer (each process discovers once an hour; failures are not kept)."""


@dataclass(frozen=True)
class Flow:
    """One sign-in under way: what the callback checks and sends, and where it goes afterwards."""

    state: str
    nonce: str
    verifier: str
    next: str
    expires: int


def _console_oidc(request: Request) -> OidcSettings:
    auth = app_state(request).settings.auth
    if auth.mode != "oidc" or not auth.oidc.console_client_id:
        raise NotFound('No console sign-in here: it needs auth.mode = "oidc" and auth.oidc.console_client_id')
    return auth.oidc


async def _provider(oidc: OidcSettings) -> Provider:
    """The provider's endpoints from ``<issuer>/.well-known/openid-configuration`` (cached)."""
    cached = _PROVIDERS.get(oidc.issuer)
    if cached is not None and time.monotonic() - cached[1] < DISCOVERY_SECONDS:
        return cached[0]
    try:
        async with httpx.AsyncClient(timeout=oidc.timeout_seconds) as http:
            answer = await http.get(oidc.issuer.rstrip("/") + "/.well-known/openid-configuration")
        answer.raise_for_status()
        body = answer.json()
        if not isinstance(body, dict) or str(body.get("issuer", oidc.issuer)).rstrip("/") != oidc.issuer.rstrip("/"):
            raise ValueError("not the issuer's discovery document")
        provider = Provider(_endpoint(body, "authorization_endpoint"), _endpoint(body, "token_endpoint"))
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("cannot discover the endpoints of %s: %s", oidc.issuer, type(exc).__name__)
        raise ServiceUnavailable("The identity provider cannot be reached; try again later") from exc
    _PROVIDERS[oidc.issuer] = (provider, time.monotonic())
    return provider


def _endpoint(discovery: dict[str, Any], key: str) -> str:
    url = discovery.get(key)
    if not isinstance(url, str) or not re.match(r"^https?://", url):
        raise ValueError(f"the discovery document has no {key}")
    return url


def _redirect_uri(request: Request) -> str:
    return str(request.url_for("ui_oidc_callback"))


def _set_flow(response: Response, request: Request, value: str, max_age: int) -> None:
    # SameSite=Lax, not Strict: the provider sends the browser back with a cross-site top-level GET,
    # which carries Lax cookies but never Strict ones. Over plain HTTP, Path limits it to these two
    # routes; under TLS it is a __Host- cookie (Path=/), which no other site can set.
    set_console_cookie(response, request, FLOW_COOKIE, value, max_age, FLOW_PATH, "lax")


def _open_flow(request: Request) -> Flow:
    stale = BadRequest("This sign-in expired or was begun in another browser or tab; sign in again")
    sealed = request.cookies.get(cookie_name(request.url.scheme, FLOW_COOKIE))
    if not sealed:
        raise stale
    tokens = app_state(request).page_tokens
    try:
        flow = Flow(**json.loads(tokens.open(sealed, _SEALED_FOR)))
    except (BadRequest, TypeError, ValueError):  # changed, or sealed by another version
        raise stale from None
    if flow.expires < time.time():
        raise stale
    return flow


async def start(request: Request) -> Response:
    """Begin a sign-in at the identity provider (``next``: the console page to show afterwards)."""
    parsing.context(request).audit.name("ui.oidc.start")
    try:
        oidc = _console_oidc(request)
        provider = await _provider(oidc)
    except CatalogError as exc:
        return _refused(request, exc)
    target = safe_next(request.query_params.get("next", ""))
    flow = Flow(generate_token(32), generate_token(32), generate_token(64), target, int(time.time()) + FLOW_SECONDS)
    query = {"redirect_uri": _redirect_uri(request), "scope": oidc.console_scope, "state": flow.state}
    pkce = {"code_challenge": create_s256_code_challenge(flow.verifier), "code_challenge_method": "S256"}
    url = prepare_grant_uri(
        provider.authorization_endpoint, oidc.console_client_id, "code", nonce=flow.nonce, **query, **pkce
    )
    response = RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)
    tokens = app_state(request).page_tokens
    _set_flow(response, request, tokens.seal(json.dumps(asdict(flow)), _SEALED_FOR), FLOW_SECONDS)
    return response


async def callback(request: Request) -> Response:
    """Where the provider sends the browser back: finish the sign-in, or show why it failed."""
    parsing.context(request).audit.name("ui.oidc.callback")
    try:
        response = await _finish(request)
    except CatalogError as exc:
        response = _refused(request, exc)
    _set_flow(response, request, "", 0)  # a flow is finished once, whatever the outcome
    return response


_REPLAYED = "This sign-in was already finished (a replayed answer); sign in again"


async def _finish(request: Request) -> Response:
    oidc = _console_oidc(request)
    flow = _open_flow(request)
    if not hmac.compare_digest(flow.state.encode(), request.query_params.get("state", "").encode()):
        raise BadRequest("This answer does not belong to the sign-in begun in this browser (state); sign in again")
    # Once only, on every replica: a replayed callback (the same flow cookie and state) is refused, here
    # before the provider is asked and below for good once it has answered with tokens (only then is the
    # flow recorded: anyone can start one and come back with its state and a made-up code).
    revocations = app_state(request).revocations
    assert revocations is not None, "kept with every auth.mode but none"
    if await revocations.used(USED_FLOW, flow.state):
        raise BadRequest(_REPLAYED)
    if "error" in request.query_params:  # its description is the provider's (or anyone's) text: not shown
        raise NotAuthenticated(f"The identity provider did not sign you in ({_word(request.query_params['error'])})")
    code = request.query_params.get("code", "")
    if not code:
        raise BadRequest("The identity provider sent no authorization code")
    answer = await _exchange(oidc, await _provider(oidc), code, _redirect_uri(request), flow.verifier)
    if not await revocations.use_once(USED_FLOW, flow.state, flow.expires):
        raise BadRequest(_REPLAYED)
    access, id_token = answer.get("access_token"), answer.get("id_token")
    # The session holds what a REST client would send: the access token, whose audience is this proxy.
    # Only a provider that issues none gets the ID token used instead (accepted only where its audience,
    # the console's client id, is auth.oidc.audience).
    token = access if isinstance(access, str) and access else id_token
    if not isinstance(token, str) or not token:
        raise NotAuthenticated("The identity provider sent no token")
    if isinstance(id_token, str) and id_token:
        # Not verified here: it came straight from the token endpoint over our own connection (OIDC Core
        # 3.1.3.7); the nonce ties it to this browser's sign-in.
        nonce = str(_claims(id_token).get("nonce", ""))
        if not hmac.compare_digest(nonce.encode(), flow.nonce.encode()):
            raise NotAuthenticated("The ID token does not belong to this sign-in (nonce)")
    principal = await app_state(request).authenticator.authenticate(token)  # issuer, audience, signature, expiry
    parsing.context(request).principal = principal.name
    lifetime = min(_lifetime(answer.get("expires_in"), _claims(token).get("exp")), MAX_SESSION_SECONDS)
    if lifetime <= 0:
        raise NotAuthenticated("The identity provider's token has expired")
    # A 200 page that moves on by itself, not a 303: after a cross-site arrival a redirect would still be
    # cross-site, and the Strict session cookie would not be sent to the next page.
    response = render(request, "oidc_continue.html", next=flow.next)
    response.headers["Refresh"] = "0;url=" + quote(flow.next, safe=":/?#[]@!$&()*+,;=%-._~")
    set_session(response, request, token, lifetime)
    return response


async def _exchange(oidc: OidcSettings, provider: Provider, code: str, redirect_uri: str, verifier: str) -> Any:
    """The token endpoint's answer to the code and its verifier (the client secret in HTTP Basic)."""
    secret = oidc.console_client_secret.get_secret_value() if oidc.console_client_secret else ""
    auth = ClientAuth(oidc.console_client_id, secret, "client_secret_basic" if secret else "none")
    body = prepare_token_request("authorization_code", code=code, redirect_uri=redirect_uri, code_verifier=verifier)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    url, headers, body = auth.prepare("POST", provider.token_endpoint, headers, body)
    try:
        async with httpx.AsyncClient(timeout=oidc.timeout_seconds) as http:
            answer = await http.post(url, content=body.encode(), headers=headers)
        data = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("the token endpoint of %s failed: %s", oidc.issuer, type(exc).__name__)
        raise ServiceUnavailable("The identity provider cannot be reached; try again later") from exc
    if answer.status_code >= 500:
        raise ServiceUnavailable("The identity provider cannot be reached; try again later")
    if answer.status_code != 200 or not isinstance(data, dict) or "error" in data:
        error = data.get("error") if isinstance(data, dict) else None
        raise NotAuthenticated(f"The identity provider refused the sign-in ({_word(error)})")
    return data


def _claims(token: str) -> dict[str, Any]:
    """A JWT's claims, unverified (the caller says why that is enough)."""
    try:
        claims = json.loads(jws.extract_compact(token.encode()).payload)
    except (JoseError, ValueError) as exc:
        raise NotAuthenticated("The identity provider sent a token that is not a JWT") from exc
    return claims if isinstance(claims, dict) else {}


def _lifetime(expires_in: object, exp: object) -> int:
    """Seconds the session may last: ``expires_in`` when given, else the token's own ``exp``."""
    if isinstance(expires_in, str) and is_number(expires_in):
        expires_in = int(expires_in)
    if isinstance(expires_in, int) and not isinstance(expires_in, bool):
        return expires_in
    return int(exp - time.time()) if isinstance(exp, int) and not isinstance(exp, bool) else MAX_SESSION_SECONDS


def _word(error: object) -> str:
    """An OAuth2 error code worth showing (``access_denied``), never arbitrary text."""
    return error if isinstance(error, str) and re.fullmatch(r"[a-z_]{1,64}", error) else "error"


def _refused(request: Request, exc: CatalogError) -> Response:
    status, kind = classify(exc)
    if status < 500:
        parsing.context(request).audit.note("denied", exc.message)
    return render(request, "error.html", status, status=status, kind=kind, message=exc.message)


OIDC_UI_ROUTES: list[BaseRoute] = [
    Route(f"{FLOW_PATH}/start", start, methods=["GET"], name="ui_oidc_start"),
    Route(f"{FLOW_PATH}/callback", callback, methods=["GET"], name="ui_oidc_callback"),
]
