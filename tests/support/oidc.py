"""A tiny real OIDC issuer: an http.server thread publishing discovery and a JWKS, signing with joserfc.

It also plays the provider of the console's sign-in: ``/authorize`` approves ``login_as`` at once (or
answers ``access_denied`` when it is empty) and ``/token`` redeems a code once, checking the client,
the redirect URI and the PKCE verifier (S256) as a real provider does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey


@dataclass(frozen=True)
class Grant:
    """What an authorization code stands for until it is redeemed."""

    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    subject: str


class OidcIssuer:
    """Serves discovery, ``/jwks.json``, ``/authorize`` and ``/token``; ``rotate()`` swaps the key.

    ``host`` names the issuer in its URL (it always listens on 127.0.0.1): ``localhost`` makes it
    another site than a proxy at ``127.0.0.1`` for a browser.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": uuid.uuid4().hex, "alg": "RS256", "use": "sig"})
        self.jwks_requests = 0
        self.login_as = "alice"
        """Who ``/authorize`` signs in (empty: it answers ``access_denied``)."""
        self.client_id = "irc-console"
        self.client_secret = ""
        """When set, ``/token`` wants it (HTTP Basic or ``client_secret`` in the form)."""
        self.redirect_uri = ""
        """The registered redirect URI (empty: any)."""
        self.access_audience = "irc-proxy"
        self.consent = False
        """``/authorize`` shows a page with an Approve link instead of redirecting at once."""
        self.codes: dict[str, Grant] = {}
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {
                        "issuer": issuer.url,
                        "jwks_uri": f"{issuer.url}/jwks.json",
                        "authorization_endpoint": f"{issuer.url}/authorize",
                        "token_endpoint": f"{issuer.url}/token",
                        "code_challenge_methods_supported": ["S256"],
                    }
                elif path == "/jwks.json":
                    issuer.jwks_requests += 1
                    body = {"keys": [issuer.key.as_dict(private=False)]}
                elif path == "/authorize":
                    location = issuer.authorize({k: v[0] for k, v in parse_qs(query).items()})
                    if issuer.consent and location is not None:  # the person clicks: a navigation from here
                        self._page(f'<a id="approve" href="{html.escape(location)}">Approve</a>')
                    else:
                        self._redirect(location)
                    return
                else:
                    self.send_error(404)
                    return
                self._json(200, body)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != "/token":
                    self.send_error(404)
                    return
                form = {k: v[0] for k, v in parse_qs(raw).items()}
                status, body = issuer.redeem(form, self.headers.get("Authorization", ""))
                self._json(status, body)

            def _redirect(self, location: str | None) -> None:
                if location is None:  # no trusted redirect URI: the error stays here (RFC 6749 4.1.2.1)
                    self.send_error(400, "unknown client_id or redirect_uri")
                    return
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _page(self, body: str) -> None:
                data = f"<!doctype html><title>Sign in</title>{body}".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._lock = threading.Lock()

    def start(self) -> OidcIssuer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def rotate(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": uuid.uuid4().hex, "alg": "RS256", "use": "sig"})

    def token(self, audience: str = "irc-proxy", lifetime: int = 300, key: RSAKey | None = None, **claims: Any) -> str:
        key = key or self.key
        now = int(time.time())
        payload = {"iss": self.url, "aud": audience, "sub": "alice", "iat": now, "exp": now + lifetime} | claims
        return jwt.encode({"alg": "RS256", "kid": key.kid}, payload, key)

    def authorize(self, query: dict[str, str]) -> str | None:
        """Where ``/authorize`` sends the browser: back with a code, or with an error (None: nowhere)."""
        redirect_uri = query.get("redirect_uri", "")
        known = query.get("client_id") == self.client_id and redirect_uri.startswith(("http://", "https://"))
        if not known or (self.redirect_uri and redirect_uri != self.redirect_uri) or urlsplit(redirect_uri).fragment:
            return None
        back = {"state": query["state"]} if "state" in query else {}
        if query.get("response_type") != "code":
            back["error"] = "unsupported_response_type"
        elif query.get("code_challenge_method") != "S256" or len(query.get("code_challenge", "")) != 43:
            back |= {"error": "invalid_request", "error_description": "PKCE with S256 is required"}
        elif not self.login_as:
            back |= {"error": "access_denied", "error_description": "<b>the user said no</b>"}
        else:
            code = secrets.token_urlsafe(24)
            with self._lock:
                self.codes[code] = Grant(
                    self.client_id, redirect_uri, query["code_challenge"], query.get("nonce", ""), self.login_as
                )
            back["code"] = code
        return f"{redirect_uri}{'&' if '?' in redirect_uri else '?'}{urlencode(back)}"

    def redeem(self, form: dict[str, str], authorization: str) -> tuple[int, dict[str, Any]]:
        """``/token``'s answer to an authorization-code grant: tokens, or an OAuth2 error (400/401)."""
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "basic":
            user, _, password = base64.b64decode(value).decode().partition(":")
            client_id, secret = unquote_plus(user), unquote_plus(password)
        if client_id != self.client_id or not hmac.compare_digest(secret.encode(), self.client_secret.encode()):
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}
        with self._lock:
            grant = self.codes.pop(form.get("code", ""), None)  # single use
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if grant is None or grant.client_id != client_id or grant.redirect_uri != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant", "error_description": "unknown, used or mismatched code"}
        if not hmac.compare_digest(challenge, grant.challenge):
            return 400, {"error": "invalid_grant", "error_description": "code_verifier does not match"}
        access = self.token(audience=self.access_audience, sub=grant.subject)
        id_token = self.token(audience=client_id, sub=grant.subject, nonce=grant.nonce)
        return 200, {"access_token": access, "id_token": id_token, "token_type": "Bearer", "expires_in": 300}
