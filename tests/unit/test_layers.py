"""The layer order http -> handling -> backends -> stores holds: nothing imports upward or sideways."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "irc_proxy"
FORBIDDEN = {
    "http": ("irc_proxy.backends", "irc_proxy.stores", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    "handling": ("irc_proxy.http", "starlette", "boto3"),
    "backends": ("irc_proxy.http", "irc_proxy.handling", "starlette"),
    "stores": ("irc_proxy.http", "irc_proxy.handling", "irc_proxy.backends", "starlette"),
}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer: str) -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith(FORBIDDEN[layer])
    ]
    assert not offenders
