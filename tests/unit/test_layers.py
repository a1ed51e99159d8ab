"""The layer order http (and ui, the console) -> handling -> backends -> stores holds: nothing imports upward or
sideways, and handling imports no backend implementation (it uses their protocols, ``backends/base.py``).

``planning`` (the scan planner) is a library under ``handling``: it imports no layer of the server. No two
top-level parts of the package (its packages and its modules: ``http``, ``ui``, ``handling``, ``planning``,
``backends``, ``stores``, ``settings``, ...) import each other, directly or round a longer loop."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Set
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "irc_proxy"
IMPLEMENTATIONS = ("irc_proxy.backends.rest", "irc_proxy.backends.local", "irc_proxy.backends.glue")
"""Backends the handling layer knows only by their protocols (``Backend``, ``Upstream``, ...)."""
FORBIDDEN = {
    "http": ("irc_proxy.ui", "irc_proxy.backends", "irc_proxy.stores", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    "ui": ("irc_proxy.backends", "irc_proxy.stores", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    "planning": (
        *("irc_proxy.http", "irc_proxy.ui", "irc_proxy.handling", "irc_proxy.backends", "irc_proxy.stores"),
        *("starlette", "sqlalchemy", "sqlmodel", "boto3", "alembic"),
    ),
    "handling": ("irc_proxy.http", "irc_proxy.ui", "starlette", "boto3", *IMPLEMENTATIONS),
    "backends": ("irc_proxy.http", "irc_proxy.handling", "starlette"),
    "stores": ("irc_proxy.http", "irc_proxy.handling", "irc_proxy.backends", "starlette"),
}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (also inside functions, and ``from irc_proxy import x``
    and ``import_module("irc_proxy.x")`` as ``irc_proxy.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "irc_proxy":
                names.update(f"irc_proxy.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_module"
        ):
            names.update(
                arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return names


def part_of(path: Path) -> str:
    """The top-level part of the package a file belongs to: its package (``http``) or its module (``settings``)."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


PARTS = {part_of(path) for path in PACKAGE.rglob("*.py")} - {"__init__"}


def part_graph() -> dict[str, set[str]]:
    """Which top-level parts each part imports (itself and the package's ``__init__`` left out)."""
    graph: dict[str, set[str]] = {part: set() for part in PARTS}
    for path in PACKAGE.rglob("*.py"):
        source = part_of(path)
        for name in imported_modules(path):
            pieces = name.split(".")
            if pieces[0] == "irc_proxy" and len(pieces) > 1 and pieces[1] in PARTS and pieces[1] != source:
                graph[source].add(pieces[1])
    return graph


def cycles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm): each is a set of parts
    that import each other, directly or round a loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_cycles_are_found() -> None:
    """The cycle finder sees a direct loop, a longer one, and none in a layered graph."""
    assert cycles({"http": {"ui"}, "ui": {"http", "handling"}, "handling": set()}) == [["http", "ui"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"http": {"handling", "stores"}, "handling": {"stores"}, "stores": set()}) == []


def test_the_parts_of_the_package_form_no_cycle() -> None:
    graph = part_graph()
    assert {"http", "ui", "handling", "planning", "backends", "stores", "settings"} <= graph.keys()
    assert "planning" in graph["handling"] and "http" in graph["ui"]  # the edges the layers are drawn by
    loops = cycles(graph)
    assert not loops, [
        f"{' <-> '.join(loop)}: " + "; ".join(f"{a} imports {b}" for a in loop for b in sorted(graph[a] & set(loop)))
        for loop in loops
    ]


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


HANDLING = PACKAGE / "handling"


def test_the_rooms_of_handling_form_no_cycle() -> None:
    """``handling``'s subpackages (one per concern: ``operations``, ``security``, ``tables``, ...) import no sibling
    that imports them back, directly or round a loop; its top-level modules (the catalog, naming, paging) are shared."""
    rooms = {path.parent.name for path in HANDLING.glob("*/__init__.py")}
    graph: dict[str, set[str]] = {room: set() for room in rooms}
    for room in rooms:
        for path in (HANDLING / room).rglob("*.py"):
            for name in imported_modules(path):
                pieces = name.split(".")
                if pieces[:2] == ["irc_proxy", "handling"] and len(pieces) > 2 and pieces[2] in rooms - {room}:
                    graph[room].add(pieces[2])
    assert {"operations", "security", "tables", "views", "storage"} <= rooms
    assert "security" in graph["operations"]  # the edges the rooms are drawn by
    assert not cycles(graph)


PLACEMENT_BLIND = ("http", "ui", "planning", "handling/operations/scan_plans.py")
"""The parts that ask a catalog and never where it runs (served here or forwarded to a remote catalog)."""
PLACEMENT_NAMES = frozenset({"Placement", "placement", "serving", "forwarder", "remote", "RemoteReads", "Forwarder"})


def placement_questions(source: str, where: str = "<source>") -> list[str]:
    """Where ``source`` asks where a catalog's operation runs: imports ``handling.federation.serving`` or
    ``remote_reads``, names ``Placement`` (or the forwarder), or reads a catalog's ``placement``, ``serving``,
    ``forwarder`` or ``remote``. Asking whether a catalog serves an endpoint at all (``serves``) is no such question."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names = {alias.name for alias in node.names}
            asked = [m for m in modules if m.endswith(("federation.serving", "federation.remote_reads"))]
            asked += sorted(names & PLACEMENT_NAMES)
            found += [f"{where}:{node.lineno} imports {name}" for name in asked]
        elif isinstance(node, ast.Attribute) and node.attr in PLACEMENT_NAMES:
            found.append(f"{where}:{node.lineno} reads .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in PLACEMENT_NAMES - {"remote", "serving", "placement"}:
            found.append(f"{where}:{node.lineno} names {node.id}")
    return found


def test_placement_questions_are_found() -> None:
    asking = (
        "from irc_proxy.handling.federation.serving import Placement\n"
        "if catalog.placement(endpoint) is Placement.FORWARDED:\n"
        "    reply = await catalog.forwarder.send(context, call)\n"
    )
    assert sorted(placement_questions(asking)) == [
        "<source>:1 imports Placement",
        "<source>:1 imports irc_proxy.handling.federation.serving",
        "<source>:2 names Placement",
        "<source>:2 reads .placement",
        "<source>:3 reads .forwarder",
    ]
    assert placement_questions("import irc_proxy.handling.federation.remote_reads\n")
    assert not placement_questions("if not catalog.serves(endpoint):\n    raise Unsupported(endpoint)\n")


def test_http_ui_and_the_planner_never_ask_where_a_catalog_runs() -> None:
    """One catalog API answers loads, listings and plans whether served here or forwarded (``Catalog``): the HTTP
    side, the console and the scan planner never branch on placement."""
    paths = [p for part in PLACEMENT_BLIND for p in sorted((PACKAGE / part).rglob("*.py")) or [PACKAGE / part]]
    assert len(paths) > 20
    found = [q for path in paths for q in placement_questions(path.read_text("utf-8"), str(path.relative_to(PACKAGE)))]
    assert not found
