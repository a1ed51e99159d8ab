"""Links to named objects: every name becomes one path segment that a browser keeps as it is.

A name is percent-encoded whole (``quote(name, safe="")``: ``/``, ``%``, ``?``, ``#``, spaces and non-ASCII
become escapes). That is not enough for the names ``.`` and ``..``: a browser resolves them as dot segments
before it sends the request (``/tables/..`` is the namespace's page), and the URL standard treats ``%2E%2E``
and ``.%2E`` the same way, so no escape of the dots survives. Such a segment is written ``~.`` or ``~..``
instead, and ``~`` in any other name is always escaped (``%7E``), so a raw ``~`` followed by dots only can
mean nothing else: :func:`unmarked` turns it back before the page decodes its path as the REST API does.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from urllib.parse import quote

from irc_proxy.handling.naming import Namespace

MARK = "~"
_MARKED = re.compile(r"~\.{1,2}")


def segment(name: str) -> str:
    """``name`` as one path segment: percent-encoded, ``~`` escaped, a dot segment marked (``~..``)."""
    encoded = quote(name, safe="").replace(MARK, "%7E")
    return MARK + encoded if encoded in (".", "..") else encoded


def ns_path(namespace: Namespace) -> str:
    """A namespace as one path segment: levels percent-encoded, joined by ``%1F`` (as the REST API); a
    namespace of one level ``..`` is marked like any other dot segment."""
    joined = "%1F".join(quote(level, safe="").replace(MARK, "%7E") for level in namespace)
    return MARK + joined if joined in (".", "..") else joined


def unmarked(path_params: MutableMapping[str, str]) -> None:
    """Turn marked dot segments (``~..``) of a page's raw path parameters back into the names' own
    encoding (``..``), in place, before they are decoded."""
    for key, value in path_params.items():
        if isinstance(value, str) and _MARKED.fullmatch(value):
            path_params[key] = value[1:]
