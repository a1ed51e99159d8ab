"""Nested namespaces on flat storage: levels <-> one backend name joined by the separator.

``("team", "sales")`` is stored as ``team:sales`` with the default separator. Each level is
escaped first, so the mapping is reversible for any level: ``%`` and the separator are
percent-encoded, and so are ``.`` and ``/`` (backends and warehouse paths treat them specially)
and control characters. ``("a:b",)`` is stored as ``a%3Ab``; ``("new.db",)`` as ``new%2Edb``.

Name lengths. A namespace's flat name is at most 255 UTF-8 bytes (Glue's limit for a database).
A new namespace level, table or view name must also fit its default directory: ``path_part``
(handling/storage/storage.py) spells every character outside ``A-Z a-z 0-9 _ . = -`` as ``~xx`` per UTF-8
byte, and a taken default location gets a ``-xxxxxxxx`` suffix, so the spelt name may be at most
``MAX_DIRECTORY_NAME`` = 255 - 9 = 246 characters: a file name fits the 255 bytes every common file
system allows, and no create is a 5xx from the file system. That is 246 plain ASCII characters, or
82 UTF-8 bytes of other characters (27 CJK characters, 41 accented Latin ones). The limit applies on
every backend, where a name is made (create, register, rename, restore), so a name that works in one
catalog works in all; existing longer names made by other engines stay readable and droppable.
The spelling is kept reversible (no hashing): a location is recognised as a namespace's directory by
reading the levels back (``path_name``), which stops a table from taking a namespace's directory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from irc_proxy.errors import BadRequest

Namespace = tuple[str, ...]
MAX_NAME_LENGTH = 255
MAX_DIRECTORY_NAME = 255 - len("-0123abcd")
"""The longest default directory name (``path_part``) of a new namespace level, table or view."""
DIRECTORY_SAFE = re.compile(r"[A-Za-z0-9_.=-]")
"""The characters ``path_part`` keeps as they are (every other one is ``~xx`` per UTF-8 byte)."""


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


_FLAT_NAMES_KEPT = 4096


class NamespaceCodec:
    """Maps namespace levels to flat backend names and back."""

    def __init__(self, separator: str) -> None:
        self.separator = separator
        self._reserved = {"%", ".", "/", separator}
        self._flat: dict[tuple[str, ...], str] = {}
        """Recent ``to_flat`` answers (every pointer read asks; escaping walks each character)."""

    def _escape(self, level: str) -> str:
        return "".join(
            f"%{ord(ch):02X}" if ch in self._reserved or ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in level
        )

    def to_flat(self, namespace: Sequence[str]) -> str:
        """Return the backend name of ``namespace``.

        Raises:
            BadRequest: the namespace is empty, a level is empty or not a string, or the name is too long.
        """
        key = tuple(namespace)
        try:
            flat = self._flat.get(key)
        except TypeError:  # an unhashable level (a client's JSON): validate_namespace refuses it below
            flat = None
        if flat is not None:
            return flat
        validate_namespace(namespace)
        flat = self.separator.join(self._escape(level) for level in namespace)
        if len(flat.encode()) > MAX_NAME_LENGTH:
            shown = display(namespace)
            shown = shown if len(shown) <= 80 else shown[:80] + "..."
            raise BadRequest(f"Namespace name is too long (over {MAX_NAME_LENGTH} bytes): {shown}")
        if len(self._flat) >= _FLAT_NAMES_KEPT:
            self._flat.clear()
        self._flat[key] = flat
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


_UNIT_SEPARATOR = re.compile("%1F", re.IGNORECASE)


def typed_namespace(text: str, separator: str = ":") -> Namespace:
    """A namespace as a person types it on the command line (docs/cli.md, "Namespaces"), one rule everywhere:

    * with ``%1F``, the ``separator`` (``:``) or any ``%`` in it, it is written as in a REST URL: ``%1F`` splits
      levels, else the separator does, and each level's ``%XX`` escapes are decoded (``+`` stays a plus): so
      ``sales:eu``, ``sales%1Feu``, ``new%2Edb`` (one level ``new.db``) and ``a:b.c`` (levels ``a``, ``b.c``);
    * otherwise ``.`` splits levels, as Iceberg, the console and every message print them: ``sales.eu``.

    A level containing ``.`` therefore needs ``:`` between levels or its dot written ``%2E``; a level containing
    ``:`` or ``%`` is written ``%3A``/``%25``. Raises BadRequest for an empty level (``a..b``, ``a:``).
    """
    joined = _UNIT_SEPARATOR.sub("\x1f", text)
    if "\x1f" in joined:
        namespace = tuple(unquote(level) for level in joined.split("\x1f"))
    elif "%" in text or separator in text:
        namespace = tuple(unquote(level) for level in text.split(separator))
    else:
        namespace = tuple(text.split("."))
    validate_namespace(namespace)
    return namespace


def typed_identifier(text: str, separator: str = ":") -> TableIdent:
    """A table or view as a person types it: a namespace (``typed_namespace``'s rule) whose last level is the name."""
    *levels, name = typed_namespace(text, separator)
    if not levels:
        raise BadRequest(
            f"Invalid identifier {shown(text)}: name the namespace too (sales.eu.orders or sales:eu:orders)"
        )
    return TableIdent(tuple(levels), name)


def validate_name(name: str, kind: str = "table") -> str:
    """Return ``name`` if it is a valid name for a new table or view; raise BadRequest otherwise."""
    if not isinstance(name, str) or not name:
        raise BadRequest(f"Invalid {kind} name: must be a non-empty string")
    if len(name.encode()) > MAX_NAME_LENGTH:
        raise BadRequest(f"Invalid {kind} name: longer than {MAX_NAME_LENGTH} bytes")
    if any(ord(ch) < 0x20 for ch in name):
        raise BadRequest(f"Invalid {kind} name {shown(name)}: control characters are not allowed")
    _check_directory_name(name, f"{kind} name")
    return name


def validate_new_namespace(namespace: Sequence[str]) -> None:
    """Raise BadRequest unless every level of a namespace about to be created fits its default directory."""
    validate_namespace(namespace)
    for level in namespace:
        _check_directory_name(level, "namespace level")


def directory_name_length(name: str) -> int:
    """``len(path_part(name))``: 1 per kept character, 3 per UTF-8 byte of any other (``.``/``..``: 3 per dot)."""
    if name in (".", ".."):
        return 3 * len(name)
    return sum(1 if DIRECTORY_SAFE.fullmatch(ch) else 3 * len(ch.encode()) for ch in name)


def _check_directory_name(name: str, what: str) -> None:
    length = directory_name_length(name)
    if length > MAX_DIRECTORY_NAME:
        raise BadRequest(
            f"Invalid {what} {shown(name)}: its directory name would be {length} bytes, over the limit of "
            f"{MAX_DIRECTORY_NAME} (characters other than A-Z a-z 0-9 _ . = - count 3 bytes per UTF-8 byte: "
            f"at most {MAX_DIRECTORY_NAME // 3} UTF-8 bytes of them)"
        )


def shown(name: str, limit: int = 80) -> str:
    """A client's name as messages quote it: ``repr``-escaped (no raw control character) and bounded."""
    return repr(name if len(name) <= limit else name[:limit] + "...")
