"""Storage access delegation over HTTP: the ``X-Iceberg-Access-Delegation`` header, and the endpoints
that only delegate: ``GET …/tables/{table}/credentials`` (loadCredentials), ``POST …/tables/{table}/sign``
and the deprecated ``POST /v1/aws/s3/sign`` (which finds the table in the request's ``properties``, as
the ``remote-signing-config`` handed out with the table tells the client to send).

What a caller may be delegated, and what it gets, is ``irc_proxy.handling.operations.delegation``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.operations import delegation
from irc_proxy.handling.operations.delegation import SIGNER_CATALOG, SIGNER_NAMESPACE, SIGNER_TABLE
from irc_proxy.handling.vending import signing
from irc_proxy.http import access, parsing
from irc_proxy.http.headers import headers_of
from irc_proxy.http.responses import json_response

HEADER = "x-iceberg-access-delegation"
CACHEABLE = frozenset({"GET", "HEAD"})


class RemoteSignRequest(BaseModel):
    """The spec's RemoteSignRequest (``provider`` is new; the legacy signer spec has no such field)."""

    model_config = ConfigDict(frozen=True)

    region: StrictStr
    uri: StrictStr
    method: Literal["PUT", "GET", "HEAD", "POST", "DELETE", "PATCH", "OPTIONS"]
    headers: dict[StrictStr, list[StrictStr]] = Field(default_factory=dict)
    properties: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    body: StrictStr | None = None
    provider: StrictStr | None = None


def asked(request: Request) -> delegation.Asked:
    """The delegation modes the client asked for (comma-separated header values), and where it signs."""
    sent = headers_of(request.scope).delegation  # found in the edge's one pass over the headers
    header = None if sent is None else sent.decode("latin-1")
    if not header:  # most loads ask for nothing: no URL is built (Starlette's base_url costs ~10 µs a request)
        return NOTHING_ASKED
    modes = {mode.strip().lower() for mode in header.split(",") if mode.strip()}
    return delegation.Asked(frozenset(modes), base_url(request))


NOTHING_ASKED = delegation.Asked()
_BASE_URLS: dict[tuple[Any, ...], str] = {}
_BASE_URLS_KEPT = 64


def base_url(request: Request) -> str:
    """``str(request.base_url)``, remembered for what it is made of (scheme, server, root path, the first ``Host``):
    pyiceberg asks for delegation on every load, and Starlette builds and parses a URL for it each time (~10 µs)."""
    scope = request.scope
    host = next((value for name, value in scope["headers"] if name == b"host"), None)
    key = (scope.get("scheme"), scope.get("server"), scope.get("app_root_path"), scope.get("root_path"), host)
    found = _BASE_URLS.get(key)
    if found is None:
        if len(_BASE_URLS) >= _BASE_URLS_KEPT:  # Host is the client's: keep a few
            _BASE_URLS.clear()
        found = _BASE_URLS[key] = str(request.base_url)
    return found


def with_fields(response: Response, fields: Mapping[str, Any]) -> Response:
    """``response`` (a JSON object) with ``fields`` added at the top level; status and headers kept."""
    if not fields:
        return response
    head = json.dumps(fields, separators=(",", ":"))[:-1].encode()
    body = head + b"," + bytes(response.body)[1:]
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return Response(body, status_code=response.status_code, media_type="application/json", headers=headers)


# Endpoints ------------------------------------------------------------------------------------------
async def load_credentials(request: Request) -> Response:
    """``GET …/tables/{table}/credentials``: fresh (or still fresh cached) credentials for the table."""
    found = await delegation.credentials(access.of(request), parsing.catalog(request), parsing.table_param(request))
    return json_response({"storage-credentials": found})


async def _sign(request: Request, catalog: Catalog, ident: TableIdent, body: RemoteSignRequest) -> Response:
    sign_request = signing.SignRequest(body.region, body.uri, body.method, body.headers, body.body)
    headers = await delegation.sign(access.of(request, catalog.name), catalog, ident, sign_request, body.provider)
    cache = "private" if body.method in CACHEABLE else "no-cache"
    return json_response({"uri": body.uri, "headers": headers}, headers={"Cache-Control": cache})


async def sign_request(request: Request) -> Response:
    """``POST …/tables/{table}/sign``: sign one S3 request inside the table's storage."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    return await _sign(request, catalog, ident, await parsing.body_model(request, RemoteSignRequest))


async def sign_legacy(request: Request) -> Response:
    """``POST /v1/aws/s3/sign`` (deprecated signer spec): the table comes from the request's ``properties``."""
    audit = parsing.context(request).audit
    audit.name("signS3Request")
    body = await parsing.body_model(request, RemoteSignRequest)
    names = [body.properties.get(key) for key in (SIGNER_CATALOG, SIGNER_NAMESPACE, SIGNER_TABLE)]
    if not all(names):
        raise BadRequest(
            "Invalid sign request: properties must name the table "
            f"({SIGNER_CATALOG}, {SIGNER_NAMESPACE}, {SIGNER_TABLE} from its remote-signing-config)"
        )
    catalog_name, namespace, name = (str(n) for n in names)
    ident = TableIdent(tuple(namespace.split("\x1f")), name)
    validate_namespace(ident.namespace)
    audit.params = {"prefix": catalog_name, "namespace": namespace, "table": name}
    catalog = parsing.catalogs(request).get(catalog_name)
    request.scope.setdefault("path_params", {})["prefix"] = catalog.name  # authorization resolves the catalog here
    return await _sign(request, catalog, ident, body)
