"""The console's reads in the audit trail: one record per (principal, operation, catalog, object, status) per
``server.ui_audit_every_seconds`` in each replica, so browsing does not flood the trail.

A page's record names the catalog and object it shows (``ui.table`` of ``sales.orders`` in catalog
``local``), like the REST operation it stands for. Refusals (403) and every form the console posts are
always recorded; a page shown again within the window leaves no second record. Each replica keeps its own
memory of the last ``REMEMBERED`` reads: forgetting one only means one more record, never one less.
"""

from __future__ import annotations

import hashlib
import time
from urllib.parse import unquote_plus

from starlette.requests import Request

from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.ui.lru import Lru

REMEMBERED = 10_000
_SEEN: Lru[bytes, float] = Lru(REMEMBERED)
"""When each read was last recorded, by a digest of its key (16 bytes however long the names)."""


def sample(request: Request, status: int) -> None:
    """Leave ``request`` unrecorded when the same read was recorded less than the window ago."""
    context = parsing.context(request)
    note = context.audit
    every = app_state(request).settings.server.ui_audit_every_seconds
    if request.method != "GET" or every <= 0 or note.operation is None or status == 403 or note.decision == "denied":
        return
    prefix = note.params.get("prefix")
    catalog = unquote_plus(prefix) if prefix is not None else None
    # The object by its path parameters, not its dotted name: table c of a.b and table b.c of a print alike
    # (a.b.c), and a read of one must not pass for a repeat of the other.
    where = sorted(note.params.items())
    named = (context.principal, note.operation, catalog, note.object, where, status)
    key = hashlib.blake2b(repr(named).encode(), digest_size=16).digest()
    now = time.monotonic()
    last = _SEEN.get(key)
    if last is not None and now - last < every:
        note.operation = None  # the request reached no new operation: no record (irc_proxy.http.audit)
        return
    _SEEN.put(key, now)
