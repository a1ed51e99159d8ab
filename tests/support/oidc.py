"""A tiny real OIDC issuer: an http.server thread publishing discovery and a JWKS, signing with joserfc."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey


class OidcIssuer:
    """Serves ``/.well-known/openid-configuration`` and ``/jwks.json``; ``rotate()`` swaps the key."""

    def __init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": uuid.uuid4().hex, "alg": "RS256", "use": "sig"})
        self.jwks_requests = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks.json"}
                elif self.path == "/jwks.json":
                    issuer.jwks_requests += 1
                    body = {"keys": [issuer.key.as_dict(private=False)]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

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
