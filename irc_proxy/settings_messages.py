"""What a refused configuration says: one line per problem, naming the key as the user wrote it.

- a key is dotted as in the TOML file (``catalogs.lake.warehouse``); the backend kind pydantic puts
  in the location of a catalog's error is not a key the user wrote, so it is left out;
- an unknown key gets the nearest known key at its level (``did you mean warehouse?``, difflib);
- a key that came from an ``IRC_PROXY_*`` environment variable names that variable, and an unknown
  key there gets the variable spelt right (``did you mean IRC_PROXY_SERVER__PORT?``): a typo in the
  environment is otherwise hard to find, since the file looks fine.

Unknown keys are refused the same way from both sources (the settings models forbid extra keys).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

CATALOG_KINDS = ("local", "glue", "rest")
Location = tuple[str | int, ...]
EnvPaths = Mapping[tuple[str, ...], str]
"""Each key path set by the environment (lower-case segments) -> the variable that set it."""


def describe(exc: ValidationError, root: type[BaseModel], env: EnvPaths, env_prefix: str) -> str:
    """The ``invalid configuration:`` message of a failed validation of ``root``."""
    lines = []
    for error in exc.errors():
        raw: Location = tuple(error["loc"])
        loc = list(raw)
        if len(loc) > 2 and loc[0] == "catalogs" and loc[2] in CATALOG_KINDS:
            del loc[2]  # the union's tag, not a key the user wrote
        key = ".".join(str(part) for part in loc)
        message = error["msg"]
        if error["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        path = tuple(str(part) for part in loc)
        if error["type"] == "extra_forbidden":
            lines.append(f"{key}: {_unknown(raw, path, root, env, env_prefix)}")
            continue
        variables = [var for set_path, var in env.items() if set_path and path[: len(set_path)] == set_path]
        if variables:
            message += f" (environment variable {', '.join(variables)})"
        lines.append(f"{key}: {message}" if loc else message)  # model-level messages name their keys
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _unknown(raw: Location, path: tuple[str, ...], root: type[BaseModel], env: EnvPaths, env_prefix: str) -> str:
    known = known_keys(root, raw[:-1])
    near = difflib.get_close_matches(str(raw[-1]), known, n=1)
    variables = [var for set_path, var in env.items() if set_path[: len(path)] == path]
    if not variables:
        return "unknown key" + (f" (did you mean {near[0]}?)" if near else "")
    message = f"unknown key in environment variable{'s' if len(variables) > 1 else ''} {', '.join(variables)}"
    if near and len(variables) == 1:
        segments = variables[0][len(env_prefix) :].split("__")
        segments[len(path) - 1] = near[0].upper()
        return f"{message} (did you mean {env_prefix}{'__'.join(segments)}?)"
    return message + (f" (did you mean {near[0]}?)" if near else "")


def known_keys(root: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The keys a table at ``loc`` (pydantic's location, catalog kind tags included) may hold."""
    current: list[Any] = [root]
    for part in loc:
        following: list[Any] = []
        for node in current:
            if _is_model(node):
                kind = node.model_fields.get("kind")
                if part in CATALOG_KINDS and kind is not None:  # a catalog's tag: the model of that kind
                    following += [node] if part in get_args(kind.annotation) else []
                elif isinstance(part, str) and part in node.model_fields:
                    following += _nodes(node.model_fields[part].annotation)
            elif get_origin(node) in (dict, list):
                following += _nodes(get_args(node)[-1])
        current = following
    return sorted({name for node in current if _is_model(node) for name in node.model_fields})


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _nodes(annotation: Any) -> list[Any]:
    """The models, dicts and lists an annotation may hold (through Annotated, Optional and unions)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _nodes(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [node for arg in get_args(annotation) for node in _nodes(arg)]
    if _is_model(annotation) or origin in (dict, list):
        return [annotation]
    return []
