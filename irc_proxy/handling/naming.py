"""Nested namespaces on flat storage: levels <-> one backend name joined by the separator.

``("team", "sales")`` is stored as ``team:sales`` with the default separator. Each level is
escaped first, so the mapping is reversible for any level: ``%`` and the separator are
percent-encoded, and so are ``.`` and ``/`` (backends and warehouse paths treat them specially)
and control characters. ``("a:b",)`` is stored as ``a%3Ab``; ``("new.db",)`` as ``new%2Edb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from irc_proxy.errors import BadRequest

Namespace = tuple[str, ...]
MAX_NAME_LENGTH = 255


@dataclass(frozen=True)
class TableIdent:
    """A table or view: its namespace levels and its name."""

    namespace: Namespace
    name: str

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.name))


def display(namespace: Sequence[str]) -> str:
    """Namespaces in messages are levels joined with ``.``, as Iceberg Java prints them."""
    return ".".join(namespace)


class NamespaceCodec:
    """Maps namespace levels to flat backend names and back."""

    def __init__(self, separator: str) -> None:
        self.separator = separator
        self._reserved = {"%", ".", "/", separator}

    def _escape(self, level: str) -> str:
        return "".join(
            f"%{ord(ch):02X}" if ch in self._reserved or ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in level
        )

    def to_flat(self, namespace: Sequence[str]) -> str:
        """Return the backend name of ``namespace``.

        Raises:
            BadRequest: the namespace is empty, a level is empty or not a string, or the name is too long.
        """
        validate_namespace(namespace)
        flat = self.separator.join(self._escape(level) for level in namespace)
        if len(flat.encode()) > MAX_NAME_LENGTH:
            shown = display(namespace)
            shown = shown if len(shown) <= 80 else shown[:80] + "..."
            raise BadRequest(f"Namespace name is too long (over {MAX_NAME_LENGTH} bytes): {shown}")
        return flat

    def from_flat(self, flat: str) -> Namespace:
        """Return the levels of a backend name."""
        return tuple(unquote(level) for level in flat.split(self.separator))

    def children_prefix(self, namespace: Sequence[str]) -> str:
        """The flat-name prefix every descendant of ``namespace`` starts with ("" for the root)."""
        return self.to_flat(namespace) + self.separator if namespace else ""


def validate_namespace(namespace: Sequence[str]) -> None:
    """Raise BadRequest unless ``namespace`` is a non-empty sequence of non-empty strings."""
    if not namespace:
        raise BadRequest("Invalid namespace: the empty namespace is not supported")
    for level in namespace:
        if not isinstance(level, str) or not level:
            raise BadRequest(f"Invalid namespace {list(namespace)!r}: level {level!r} must be a non-empty string")
        if "\x1f" in level or "\x00" in level:
            raise BadRequest(f"Invalid namespace level {level!r}: control characters 0x00 and 0x1F are not allowed")


def validate_name(name: str, kind: str = "table") -> str:
    """Return ``name`` if it is a valid table or view name; raise BadRequest otherwise."""
    if not isinstance(name, str) or not name:
        raise BadRequest(f"Invalid {kind} name: must be a non-empty string")
    if len(name.encode()) > MAX_NAME_LENGTH:
        raise BadRequest(f"Invalid {kind} name: longer than {MAX_NAME_LENGTH} bytes")
    if any(ord(ch) < 0x20 for ch in name):
        raise BadRequest(f"Invalid {kind} name {name!r}: control characters are not allowed")
    return name
