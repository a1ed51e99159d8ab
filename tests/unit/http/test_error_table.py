"""Every (status, Iceberg type) the server answers comes from the one table, ``irc_proxy.errors.ANSWERS``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import irc_proxy
from irc_proxy import errors
from irc_proxy.http.errors import classify, type_for_status

PACKAGE = Path(__file__).resolve().parents[3] / "irc_proxy"
TABLE = PACKAGE / "errors.py"


def _pairs(path: Path) -> list[str]:
    """Calls, tuples and dict entries in ``path`` holding both a status literal and a "...Exception" literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            parts = [*node.args, *(keyword.value for keyword in node.keywords)]
        elif isinstance(node, ast.Tuple | ast.List):
            parts = list(node.elts)
        elif isinstance(node, ast.Dict):
            parts = [part for pair in zip(node.keys, node.values, strict=True) for part in pair if part is not None]
        else:
            continue
        constants = [part.value for part in parts if isinstance(part, ast.Constant)]
        status = any(isinstance(c, int) and not isinstance(c, bool) and 400 <= c < 600 for c in constants)
        type_name = any(isinstance(c, str) and c.endswith("Exception") for c in constants)
        if status and type_name:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_status_type_pair_outside_the_table() -> None:
    offenders = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != TABLE for hit in _pairs(path)]
    assert not offenders


def test_the_table_holds_pairs() -> None:
    assert len(_pairs(TABLE)) == len(errors.ANSWERS)


@pytest.mark.parametrize("status", sorted({status for status, _ in errors.ANSWERS.values()} | {500, 502}))
def test_every_status_has_a_type(status: int) -> None:
    assert type_for_status(status).endswith("Exception")


def _tree(cls: type[errors.CatalogError]) -> list[type[errors.CatalogError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


NOT_IMPORTED = ("irc_proxy.__main__", "irc_proxy.asgi", "irc_proxy.stores.migrations")
"""Modules that do something when imported (run the CLI, build an app from the environment, run Alembic)."""
for _module in pkgutil.walk_packages(irc_proxy.__path__, "irc_proxy."):
    if not _module.name.startswith(NOT_IMPORTED):
        importlib.import_module(_module.name)  # every error class exists, whichever tests run in this process


ANSWERED_ELSEWHERE = {errors.TokenRequestError}
"""Token refusals are answered in RFC 6749's shape (``http.errors.oauth_response``)."""


@pytest.mark.parametrize(
    "cls", [c for c in _tree(errors.CatalogError)[1:] if c not in ANSWERED_ELSEWHERE], ids=lambda cls: cls.__name__
)
def test_every_domain_error_is_answered_from_the_table(cls: type[errors.CatalogError]) -> None:
    status, type_name = classify(cls.__new__(cls))  # subclasses may take other arguments
    assert status != 500 and type_name.endswith("Exception")


@pytest.mark.parametrize(
    ("status", "type_name"),
    [
        (400, "BadRequestException"),
        (401, "NotAuthorizedException"),
        (403, "ForbiddenException"),
        (404, "NotFoundException"),
        (405, "MethodNotAllowedException"),
        (406, "UnsupportedOperationException"),
        (409, "ConflictException"),
        (413, "RequestEntityTooLargeException"),
        (503, "ServiceUnavailableException"),
        (500, "RESTException"),
        (504, "RESTException"),
    ],
)
def test_bare_status_types(status: int, type_name: str) -> None:
    assert type_for_status(status) == type_name


def test_upstream_answers_read_back_through_the_table() -> None:
    for cls, (status, type_name) in errors.ANSWERS.items():
        assert errors.for_answer(status, type_name) is cls
    assert errors.for_answer(404, "") is errors.NotFound
    assert errors.for_answer(504, "") is None
