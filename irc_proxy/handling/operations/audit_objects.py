"""The objects an operation acts on, named in its audit record when its path alone does not name them
(creates, renames, transactions)."""

from __future__ import annotations

from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.security.context import RequestContext


def note(context: RequestContext, *objects: TableIdent | Namespace) -> None:
    """Name ``objects`` in the request's audit note (``a.b.t`` for a table, ``a.b`` for a namespace)."""
    names = [str(o) if isinstance(o, TableIdent) else ".".join(o) for o in objects]
    context.audit.object = ", ".join(names)
