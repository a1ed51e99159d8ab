"""The layer order http (and ui, the console) -> handling -> backends -> stores holds: nothing imports upward or
sideways, and handling imports no backend implementation (it uses their protocols, ``backends/base.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "irc_proxy"
IMPLEMENTATIONS = ("irc_proxy.backends.rest", "irc_proxy.backends.local", "irc_proxy.backends.glue")
"""Backends the handling layer knows only by their protocols (``Backend``, ``Upstream``, ...)."""
FORBIDDEN = {
    "http": ("irc_proxy.backends", "irc_proxy.stores", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    "ui": ("irc_proxy.backends", "irc_proxy.stores", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    "handling": ("irc_proxy.http", "irc_proxy.ui", "starlette", "boto3", *IMPLEMENTATIONS),
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


def _backend_names(tree: ast.AST) -> set[str]:
    """Names a module imports from ``irc_proxy.backends`` (classes it could ask ``isinstance`` about)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("irc_proxy.backends")
        for alias in node.names
    }


def _type_questions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    backend_names, where = _backend_names(tree), path.relative_to(PACKAGE)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
            if node.func.id in ("isinstance", "issubclass"):
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                found += [f"{where}:{node.lineno} asks for {name}" for name in sorted(named & backend_names)]
        elif isinstance(node, ast.Name) and node.id == "runtime_checkable":
            found.append(f"{where}:{node.lineno} declares a runtime-checkable protocol")
    return found


@pytest.mark.parametrize("layer", ["http", "handling"])
def test_no_layer_above_the_backends_asks_for_a_backends_type(layer: str) -> None:
    """Federation and the other optional abilities are capabilities (``Capability``), never types:
    no ``isinstance``/``issubclass`` against a backend's class or protocol, no runtime-checkable protocol."""
    assert not [found for path in sorted((PACKAGE / layer).rglob("*.py")) for found in _type_questions(path)]
