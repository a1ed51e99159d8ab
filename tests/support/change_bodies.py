"""Plain commit bodies with the shapes ``handling.operations.commit_bodies`` reads (its protocols), for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Ident:
    namespace: list[str]
    name: str


@dataclass(frozen=True)
class Change:
    identifier: Ident | None = None
    requirements: list[Any] = field(default_factory=list)
    updates: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Transaction:
    table_changes: list[Change]
