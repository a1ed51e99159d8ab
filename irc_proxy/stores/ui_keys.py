"""The console's CSRF key, shared by every replica through the state database.

Stored beside the signing keys (``auth_signing_key``) under its own algorithm tag, with the same rules:
the first replica to need one creates it, racing replicas may each store one, the oldest signs and all
of them are accepted. The key is kept base64-encoded in the row's ``private_pem`` column.
"""

from __future__ import annotations

import base64
import secrets
import uuid

from sqlalchemy import Engine

from irc_proxy.stores.keys import shared_signing_keys

ALGORITHM = "ui-csrf-HS256"


def shared_csrf_keys(engine: Engine) -> list[bytes]:
    """Every stored CSRF key, the one to sign with first (one is made if there is none)."""

    def generate() -> tuple[str, str]:
        return f"csrf-{uuid.uuid4().hex}", base64.b64encode(secrets.token_bytes(32)).decode()

    return [base64.b64decode(stored) for _kid, stored in shared_signing_keys(engine, ALGORITHM, generate)]
