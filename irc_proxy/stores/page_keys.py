"""The page-token key, shared by every replica through the state database.

Stored beside the signing keys (``auth_signing_key``) under its own algorithm tag, with the same
rules: the first replica to need one creates it, racing replicas may each store one, the oldest
seals and all of them open. The key is kept base64-encoded in the row's ``private_pem`` column.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

from sqlalchemy import Engine

from irc_proxy.stores.keys import shared_signing_keys

ALGORITHM = "page-A256GCM"


def shared_page_keys(engine: Engine, new_key: Callable[[], bytes]) -> list[bytes]:
    """Every stored page-token key, the one to seal with first (``new_key()`` makes one if there is none)."""

    def generate() -> tuple[str, str]:
        return f"page-{uuid.uuid4().hex}", base64.b64encode(new_key()).decode()

    return [base64.b64decode(stored) for _kid, stored in shared_signing_keys(engine, ALGORITHM, generate)]
