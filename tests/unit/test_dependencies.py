"""Every third-party module the package imports is declared in pyproject.toml's dependencies."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _top_level_imports(folder: Path) -> set[str]:
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


RUNTIME_EXTRAS = ("spark",)
"""Extras the package itself imports from, in a module only that feature loads (``maintenance_spark``: pyspark)."""


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"]]
    requirements += [r for extra in RUNTIME_EXTRAS for r in project["optional-dependencies"][extra]]
    return {re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def _normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_every_third_party_import_of_the_package_is_a_declared_dependency() -> None:
    """A module that only arrives with another dependency can vanish with that dependency's next release."""
    distributions = importlib.metadata.packages_distributions()
    declared = {_normal(name) for name in _declared()}
    imported = _top_level_imports(ROOT / "irc_proxy") - set(sys.stdlib_module_names) - {"irc_proxy"}
    undeclared = {
        module: distributions.get(module, ["?"])
        for module in sorted(imported)
        if not {_normal(d) for d in distributions.get(module, [])} & declared
    }
    assert not undeclared
