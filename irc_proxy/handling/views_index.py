"""What tables and namespaces need to know about views: clashes, emptiness and how many there are.

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

    async def count_views(self, namespace: str, cap: int) -> int:
        """How many views (stored and engine views) live in the flat namespace, counting no further than ``cap``."""


class NoViews:
    """A catalog without views."""

    async def view_exists(self, namespace: str, name: str) -> bool:
        return False

    async def namespace_has_views(self, namespace: str) -> bool:
        return False

    async def count_views(self, namespace: str, cap: int) -> int:
        return 0
