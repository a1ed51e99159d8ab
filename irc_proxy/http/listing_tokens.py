"""Page tokens of a remote REST catalog's filtered listings (``forward``).

An upstream's next-page token usually names the last entry it returned; when the caller sees only
part of the listing (``access.listing``) that entry may be hidden from it. So the token is sealed
like our own (``handling.paging``) before it reaches the caller, and opened again before the next
request goes upstream. Unfiltered listings pass the upstream's tokens through unchanged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request

from irc_proxy.http import parsing


def _filtered(request: Request) -> bool:
    return parsing.context(request).list_filtered


def upstream_query(request: Request) -> bytes:
    """The query string to send upstream: a filtered listing's ``pageToken`` opened to the upstream's own.

    Raises:
        BadRequest: the token is not one this server sealed for this listing and caller.
    """
    raw: bytes = request.scope.get("query_string", b"")
    token = request.query_params.get("pageToken")
    if not token or not _filtered(request):
        return raw
    opened = parsing.page_binding(request).open(token)
    pairs = [(key, opened if key == "pageToken" else value) for key, value in request.query_params.multi_items()]
    return urlencode(pairs, quote_via=quote).encode()


def seal_next_token(request: Request, listing: dict[str, Any]) -> None:
    """Replace the upstream's ``next-page-token`` of a filtered listing with a sealed one (in place)."""
    token = listing.get("next-page-token")
    if token and _filtered(request):
        listing["next-page-token"] = parsing.page_binding(request).seal(str(token))
