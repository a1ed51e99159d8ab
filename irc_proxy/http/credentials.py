"""Storage access delegation over HTTP: vended credentials and remote signing.

* ``X-Iceberg-Access-Delegation: vended-credentials`` on create/register/load adds ``storage-credentials``
  (and the same keys in ``config``); ``remote-signing`` adds the signer settings and ``remote-signing-config``.
  A caller without the delegation privilege simply gets no access settings there (the spec lets a
  server supply "any or none"); the explicit endpoints below answer 403 instead.
* ``GET …/tables/{table}/credentials`` (loadCredentials), ``POST …/tables/{table}/sign`` and the
  deprecated ``POST /v1/aws/s3/sign`` (which finds the table in the request's ``properties``, as the
  ``remote-signing-config`` handed out with the table tells the client to send).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest, Unsupported
from irc_proxy.handling import signing
from irc_proxy.handling.access import Delegation
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.vending import Vending, table_locations
from irc_proxy.http import access, parsing
from irc_proxy.http.responses import json_response

HEADER = "x-iceberg-access-delegation"
VENDED = "vended-credentials"
SIGNING = "remote-signing"
SIGNER_CATALOG = "irc-proxy.catalog"
SIGNER_NAMESPACE = "irc-proxy.namespace"
SIGNER_TABLE = "irc-proxy.table"
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


def requested_modes(request: Request) -> set[str]:
    """The delegation modes the client asked for (comma-separated header values)."""
    return {mode.strip().lower() for mode in request.headers.get(HEADER, "").split(",") if mode.strip()}


def table_path(catalog: Catalog, ident: TableIdent) -> str:
    """``v1/{prefix}/namespaces/{namespace}/tables/{table}``, relative to the catalog URI."""
    namespace = "%1F".join(quote(level, safe="") for level in ident.namespace)
    return f"v1/{quote(catalog.name, safe='')}/namespaces/{namespace}/tables/{quote(ident.name, safe='')}"


def require_vending(catalog: Catalog) -> Vending:
    if catalog.vending is None:
        raise Unsupported(f"Catalog {catalog.name} does not delegate storage access")
    return catalog.vending


async def _writable(request: Request, ident: TableIdent) -> bool:
    return await access.of(request).table_delegation(ident) is Delegation.READ_WRITE


async def table_access(
    request: Request, catalog: Catalog, ident: TableIdent, locations: Sequence[str]
) -> tuple[dict[str, str], dict[str, Any]]:
    """Config keys and extra LoadTableResult fields for the delegation the request asks for.

    ``locations``: the table location first, then ``write.data.path``/``write.metadata.path``.
    Nothing (``{}, {}``) when no mode is requested, the catalog does not delegate, the table is not
    on S3, or the caller holds no delegation privilege.
    """
    modes = requested_modes(request)
    vending = catalog.vending
    if vending is None or not modes & {VENDED, SIGNING} or not vending.prefixes(locations):
        return {}, {}
    delegation = await access.of(request, catalog.name).optional_delegation(ident)
    if delegation is None:
        return {}, {}
    write = delegation is Delegation.READ_WRITE
    path = table_path(catalog, ident)
    if VENDED in modes:
        vended = await vending.vend(ident, locations, write, parsing.principal(request))
        if vended is not None:
            config = vended.config | {"client.refresh-credentials-endpoint": f"{path}/credentials"}
            return config, {"storage-credentials": [{"prefix": vended.prefix, "config": config}]}
    base = str(request.base_url).rstrip("/")
    config = vending.client_settings() | {
        "s3.remote-signing-enabled": "true",
        "s3.signer.uri": base,
        "s3.signer.endpoint": f"{path}/sign",
        "signer.uri": base,
        "signer.endpoint": f"{path}/sign",
    }
    properties = {
        SIGNER_CATALOG: catalog.name,
        SIGNER_NAMESPACE: "\x1f".join(ident.namespace),
        SIGNER_TABLE: ident.name,
    }
    return config, {"remote-signing-config": {"properties": properties, "headers": {}}}


def with_fields(response: Response, fields: Mapping[str, Any]) -> Response:
    """``response`` (a JSON object) with ``fields`` added at the top level; status and headers kept."""
    if not fields:
        return response
    head = json.dumps(fields, separators=(",", ":"))[:-1].encode()
    body = head + b"," + bytes(response.body)[1:]
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return Response(body, status_code=response.status_code, media_type="application/json", headers=headers)


async def create_locations(catalog: Catalog, location: str, properties: Mapping[str, str]) -> list[str]:
    """Where a table about to be created at ``location`` (already resolved) will keep files ([] without vending).

    Raises:
        Forbidden: naming a location outside the catalog's ``allowed_locations``.
    """
    if catalog.vending is None:
        return []
    return catalog.tables.storage.confine_paths(location, properties)


async def register_locations(catalog: Catalog, metadata_location: str) -> list[str]:
    """Where a table about to be registered keeps files ([] without vending); Forbidden outside the allowed ones."""
    if catalog.vending is None:
        return []
    metadata_location = catalog.tables.storage.confine(metadata_location, "Metadata location")  # before any I/O
    metadata = await catalog.tables.files.read(metadata_location)
    return catalog.tables.storage.confine_paths(metadata.location, metadata.properties)


# Endpoints ------------------------------------------------------------------------------------------
async def load_credentials(request: Request) -> Response:
    """``GET …/tables/{table}/credentials``: fresh (or still fresh cached) credentials for the table."""
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    vending = require_vending(catalog)
    loaded = await catalog.tables.load(ident)
    write = await _writable(request, ident)
    locations = table_locations(loaded.metadata.location, loaded.metadata.properties)
    vended = await vending.vend(ident, locations, write, parsing.principal(request))
    credentials = [] if vended is None else [{"prefix": vended.prefix, "config": vended.config}]
    return json_response({"storage-credentials": credentials})


async def _sign(request: Request, catalog: Catalog, ident: TableIdent, body: RemoteSignRequest) -> Response:
    if body.provider not in (None, "s3"):
        raise BadRequest(f"Invalid sign request: provider {body.provider!r} is not supported (only s3)")
    vending = require_vending(catalog)
    loaded = await catalog.tables.load(ident)
    write = await _writable(request, ident)
    sign_request = signing.SignRequest(body.region, body.uri, body.method, body.headers, body.body)
    headers = await signing.sign(vending, ident, loaded.metadata, write, parsing.principal(request), sign_request)
    cache = "private" if body.method in CACHEABLE else "no-cache"
    return json_response({"uri": body.uri, "headers": headers}, headers={"Cache-Control": cache})


async def sign_request(request: Request) -> Response:
    """``POST …/tables/{table}/sign``: sign one S3 request inside the table's storage."""
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
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
