"""New request ids: 32 hex digits of the operating system's randomness, as ``secrets.token_hex(16)`` gives.

Every request without a usable ``X-Request-Id`` gets one. ``token_hex`` makes one ``getrandom`` system call per
id (~1.4 µs with its wrappers); here the randomness is drawn 4 KiB at a time and each id takes the next 16
bytes of it, so a request pays a slice and a ``hex`` (~0.3 µs). The bytes are the same kind (``os.urandom``),
never handed out twice: a lock guards the position (ids are drawn on event loops, and tests run several in
threads), and a forked child starts with a fresh block (``os.register_at_fork``) so that two worker processes
never share one.
"""

from __future__ import annotations

import os
from threading import Lock

_ID_BYTES = 16
_BLOCK_BYTES = _ID_BYTES * 256


class _Ids:
    def __init__(self) -> None:
        self._lock = Lock()
        self._block = b""
        self._at = 0

    def next(self) -> str:
        with self._lock:
            at = self._at
            if at >= len(self._block):
                self._block, at = os.urandom(_BLOCK_BYTES), 0
            self._at = at + _ID_BYTES
            block = self._block
        return block[at : at + _ID_BYTES].hex()

    def forget(self) -> None:
        """Drop the unused rest of the block (in a forked child: the parent may hand it out too)."""
        self._lock = Lock()
        self._block, self._at = b"", 0


_IDS = _Ids()
os.register_at_fork(after_in_child=_IDS.forget)


def new_request_id() -> str:
    """A fresh request id (32 lower-case hex digits)."""
    return _IDS.next()
