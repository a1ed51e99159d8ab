"""Authorization in the handler layer: which privilege each operation needs, on which object.

(Being moved here from ``irc_proxy.http.access``; the listing filters below are the first part.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from irc_proxy.handling.authz import TABLE_PRIVILEGES, VIEW_PRIVILEGES, Securable, SecurableType
from irc_proxy.handling.context import RequestContext
from irc_proxy.handling.naming import Namespace, TableIdent


def visible_namespaces(context: RequestContext, catalog: str, children: Sequence[Namespace]) -> list[Namespace]:
    """The children a filtered listing shows: those the caller holds a grant on, above or beneath.

    Unfiltered listings (``context.list_filtered`` false) show everything; a filtered one was
    decided by the listing's authorization step, which loaded the caller's grants.
    """
    if not context.list_filtered:
        return list(children)
    assert context.grants is not None, "a filtered listing is decided with the caller's grants"
    held = context.grants
    return [child for child in children if held.touches(Securable.of_namespace(catalog, child))]


def visible_objects(
    context: RequestContext, catalog: str, idents: Iterable[TableIdent], kind: SecurableType
) -> list[TableIdent]:
    """The tables (or views) a filtered listing shows: those the caller holds a privilege on."""
    if not context.list_filtered:
        return list(idents)
    assert context.grants is not None, "a filtered listing is decided with the caller's grants"
    held = context.grants
    privileges = TABLE_PRIVILEGES if kind is SecurableType.TABLE else VIEW_PRIVILEGES
    return [i for i in idents if held.holds_any(privileges, Securable(kind, catalog, i.namespace, i.name))]
