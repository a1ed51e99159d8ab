"""What tables and namespaces need to know about views: clashes and emptiness.

Tables and views share one name space, and a namespace holding a view is not empty. The view
store implements this protocol; ``NoViews`` stands in for a catalog that has none.
"""

from __future__ import annotations

from typing import Protocol


class ViewIndex(Protocol):
    async def view_exists(self, namespace: str, name: str) -> bool:
        """Whether a view ``name`` exists in the flat namespace."""

    async def namespace_has_views(self, namespace: str) -> bool:
        """Whether any view lives in the flat namespace."""


class NoViews:
    """A catalog without views."""

    async def view_exists(self, namespace: str, name: str) -> bool:
        return False

    async def namespace_has_views(self, namespace: str) -> bool:
        return False
