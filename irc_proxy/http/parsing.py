"""Request parsing: raw path segments, query parameters and JSON bodies -> domain values."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote, unquote_plus

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from irc_proxy.errors import BadRequest, NoSuchWarehouse
from irc_proxy.handling import input_errors
from irc_proxy.handling.catalog import Catalog, Catalogs
from irc_proxy.handling.naming import Namespace, TableIdent, shown, validate_namespace
from irc_proxy.handling.operations.commit_bodies import Offload
from irc_proxy.handling.paging import PageBinding, PageRequest, listing_scope
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.tables.commit_limits import CommitLimits
from irc_proxy.http import request_limits
from irc_proxy.http.app_state import app_state, request_context
from irc_proxy.http.headers import headers_of

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
_ENCODED_UNIT_SEPARATOR = re.compile("%1f", re.IGNORECASE)
# A level as pyiceberg sends it in ``parent``: ``quote(level, safe="")``, i.e. only unreserved characters and %XX.
_QUOTED_LEVEL = re.compile(r"(?:[A-Za-z0-9_.~-]|%[0-9A-Fa-f]{2})+")


@functools.lru_cache(maxsize=4096)
def unquoted(segment: str) -> str:
    """``unquote_plus`` of a path segment, remembered: the same prefixes and names come back request after request,
    and a request decodes each several times (routing, metrics labels, its audit record), ~1 µs each."""
    return unquote_plus(segment)


def catalogs(request: Request) -> Catalogs:
    return app_state(request).catalogs


def catalog(request: Request) -> Catalog:
    """The catalog named by the ``{prefix}`` path segment, or the default one (looked up once per request)."""
    found: Catalog | None = request.scope.get(_CATALOG)
    if found is None:
        prefix = request.path_params.get("prefix")
        name = None if prefix is None else unquoted(prefix)
        try:
            found = request.scope[_CATALOG] = catalogs(request).get(name)
        except NoSuchWarehouse:
            raise no_such_warehouse(name or "") from None
    return found


def no_such_warehouse(name: str) -> NoSuchWarehouse:
    """An unknown ``{prefix}``, named bounded and escaped; ``v1`` is a client's uri that ends in ``/v1``."""
    plain = name.isprintable() and len(name) <= 80  # as before; anything else quoted, escaped and cut
    message = f"Warehouse does not exist: {name if plain else shown(name)}"
    if name == "v1":
        message += (
            " (requests arrive as /v1/v1/...: the client's uri seems to end in /v1; set it to the server's base URL, "
            "scheme://host:port, without /v1)"
        )
    return NoSuchWarehouse(message)


_CATALOG = "irc_proxy.catalog"


context: Callable[[Request], RequestContext] = request_context
"""The request's typed record (``app_state.request_context``), under the name handlers know it by."""


def if_none_match(request: Request) -> str | None:
    """The request's ``If-None-Match`` (found in the edge's one pass over the headers)."""
    value = headers_of(request.scope).if_none_match
    return None if value is None else value.decode("latin-1")


def principal(request: Request) -> str:
    """Who is calling, as the authentication middleware found it (``anonymous`` with ``auth.mode = "none"``)."""
    return context(request).principal


def roles(request: Request) -> tuple[str, ...]:
    """The caller's roles from its token (empty without authentication)."""
    return context(request).roles


@functools.lru_cache(maxsize=4096)  # pure, and the same namespaces come back request after request
def decode_namespace(segment: str, separator: str) -> Namespace:
    """Decode a ``{namespace}`` path segment (routing is done on the raw, still-encoded path).

    Levels are joined by ``%1F`` (the spec's default); a segment without it may use the
    server's separator unencoded (``team:sales``). Each level is decoded form-style, as Java's
    URLEncoder writes it (``+`` is a space).
    """
    if _ENCODED_UNIT_SEPARATOR.search(segment) or "\x1f" in segment:
        parts = _ENCODED_UNIT_SEPARATOR.sub("\x1f", segment).split("\x1f")
    else:
        parts = segment.split(separator)
    namespace = tuple(unquote_plus(part) for part in parts)
    validate_namespace(namespace)
    return namespace


def namespace_param(request: Request) -> Namespace:
    return decode_namespace(request.path_params["namespace"], catalog(request).codec.separator)


def name_param(request: Request, key: str) -> str:
    return unquoted(request.path_params[key])


def table_param(request: Request, key: str = "table") -> TableIdent:
    params = request.path_params
    return _table_ident(params["namespace"], params[key], catalog(request).codec.separator)


@functools.lru_cache(maxsize=4096)  # pure (a TableIdent is immutable); the same tables are loaded over and over
def _table_ident(namespace: str, name: str, separator: str) -> TableIdent:
    return TableIdent(decode_namespace(namespace, separator), unquoted(name))


def parent_param(request: Request) -> Namespace:
    """The ``parent`` query parameter: levels joined by 0x1F (already query-decoded)."""
    raw = request.query_params.get("parent", "")
    if not raw:
        return ()
    levels = raw.split("\x1f")
    # Java and DuckDB send the levels raw; pyiceberg percent-encodes each level first
    # (``quote(level, safe="")``), so ``("a b",)`` arrives as ``a%20b``. Decode a parent whose
    # every level looks percent-encoded (ambiguous only for a raw name that itself contains %XX).
    if any("%" in level for level in levels) and all(_QUOTED_LEVEL.fullmatch(level) for level in levels):
        levels = [unquote(level) for level in levels]
    namespace = tuple(levels)
    validate_namespace(namespace)
    return namespace


def page_param(request: Request) -> PageRequest:
    """Paginate only when the client sent ``pageToken`` (Java sends an empty one) or ``pageSize``."""
    params = request.query_params
    token, size = params.get("pageToken"), params.get("pageSize")
    if token is None and size is None:
        return PageRequest()
    settings = app_state(request).settings.server
    limit = settings.default_page_size
    if size:
        try:
            limit = int(size)
        except ValueError:
            raise BadRequest(f"Invalid pageSize: {size!r} is not an integer") from None
        if limit < 1:
            raise BadRequest(f"Invalid pageSize: {limit} (must be at least 1)")
    binding = page_binding(request)
    opened = binding.open(token) if token else None
    return PageRequest(token=opened, limit=min(limit, settings.max_page_size), binding=binding)


def page_binding(request: Request) -> PageBinding:
    """Page tokens of this listing: bound to the caller, catalog, operation and parent (``paging``)."""
    tokens = app_state(request).page_tokens
    parent = namespace_param(request) if "namespace" in request.path_params else parent_param(request)
    operation = context(request).audit.operation or request.url.path
    return PageBinding(tokens, listing_scope(principal(request), catalog(request).name, operation, parent))


def bool_param(request: Request, key: str, default: bool = False) -> bool:
    raw = request.query_params.get(key)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise BadRequest(f"Invalid {key}: {raw!r} (expected true or false)")


INLINE_BODY_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (about a millisecond); larger ones in a worker thread."""


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A ``\\uD800``-``\\uDFFF`` escape: only a body holding one can decode to a lone surrogate."""


def decode_json(raw: bytes, max_depth: int) -> Any:
    """Parse a JSON body whose nesting is checked first (deeper than ``max_depth`` is a 400).

    A lone surrogate escape (``"\\ud800"``) is valid JSON but no text: Python decodes it into a ``str`` that
    cannot be encoded as UTF-8, so a name holding one failed deep inside (a 500), and its audit record made the
    database sink drop the whole batch it was in (other callers' records with it). Such a body is a 400 here.
    """
    request_limits.check_depth(raw, max_depth)
    try:
        try:
            data = json.loads(raw)
        except UnicodeDecodeError:
            # Iceberg Java's HTTPClient sends bodies as ISO-8859-1 (`new StringEntity(body)`, unfixed as of
            # 2026-08, apache/iceberg#17646): `café` arrives as one 0xE9 byte. Read it as Java wrote it.
            data = json.loads(raw.decode("latin-1"))
        if _SURROGATE_ESCAPE.search(raw):  # rare (a pair is fine): then check the text exactly
            try:
                json.dumps(data, ensure_ascii=False).encode()
            except UnicodeEncodeError:
                raise BadRequest("Malformed request body: a string holds a lone UTF-16 surrogate") from None
        return data
    except json.JSONDecodeError as exc:
        raise BadRequest(f"Malformed request body: not valid JSON ({exc})") from None
    except RecursionError:  # not reached after the depth check; kept so that it can never be a 500
        raise BadRequest("Malformed request body: JSON nested too deeply") from None


async def parsed_body(request: Request, parse: Callable[[Any], R]) -> R:
    """The JSON body, decoded once per request, passed through ``parse`` (e.g. model validation).

    Both steps run in the shared worker pool for bodies over INLINE_BODY_BYTES, so that a large
    commit does not hold the event loop; small ones stay inline (a thread hop costs more than they do).
    """
    raw = await request.body()
    cached = request.scope.get(_JSON, _MISSING)
    max_depth = app_state(request).settings.server.max_json_depth

    def run() -> R:
        data = decode_json(raw, max_depth) if cached is _MISSING else cached
        request.scope[_JSON] = data
        return parse(data)

    if len(raw) <= INLINE_BODY_BYTES:
        return run()
    threads = app_state(request).threads
    return await threads.run(run)


_JSON = "irc_proxy.json_body"
_MODELS = "irc_proxy.body_models"
_MISSING = object()


async def json_body(request: Request) -> Any:
    return await parsed_body(request, lambda data: data)


async def body_model(request: Request, model: type[M]) -> M:
    """Parse the JSON body into ``model``; any problem is a 400 naming the field.

    Parsed once per request: the authorization step and the handler read the same model.
    """
    models: dict[type[BaseModel], BaseModel] = request.scope.setdefault(_MODELS, {})
    found = models.get(model)
    if found is None:
        found = models[model] = await parsed_body(request, functools.partial(validate_model, model))
    assert isinstance(found, model)
    return found


async def off_loop(request: Request, work: Callable[[], R]) -> R:
    """``work()`` on the event loop for a small body, in the shared worker pool for a large one."""
    if len(await request.body()) <= INLINE_BODY_BYTES:
        return work()
    threads = app_state(request).threads
    return await threads.run(work)


def commit_limits(request: Request) -> CommitLimits:
    """The entries one commit may carry, from ``server.max_commit_*``."""
    server = app_state(request).settings.server
    return CommitLimits(server.max_commit_updates, server.max_commit_requirements, server.max_commit_metadata_adds)


def offload(request: Request) -> Offload:
    """Where a handler parses this request's body: ``off_loop`` (the worker pool for a large body)."""

    async def run(work: Callable[[], R]) -> R:
        return await off_loop(request, work)

    return run


def validate_model(model: type[M], data: Any) -> M:
    """``data`` as ``model``; any problem is a 400 naming the field (and never quoting large input)."""
    if not isinstance(data, dict):
        raise BadRequest("Malformed request body: expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe(exc)) from None
    except input_errors.INPUT_ERRORS as exc:  # pyiceberg's validators raise these (KeyError: list without element)
        raise BadRequest(f"Invalid request body: {input_errors.explain(exc)}") from None


def describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_input=False, include_url=False)[:5]:
        where = input_errors.clip(".".join(str(p) for p in error["loc"]) or "body")
        problems.append(f"{where}: {input_errors.clip(error['msg'].removeprefix('Value error, '))}")
    return "Invalid request body: " + "; ".join(problems)
