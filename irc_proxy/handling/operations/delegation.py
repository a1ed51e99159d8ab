"""Storage access delegation for one table: which access a caller may be delegated, and what it gets.

* A load, create or register that asks for ``vended-credentials`` gets ``storage-credentials`` (and
  the same keys in ``config``); ``remote-signing`` gets the signer settings and
  ``remote-signing-config``. A caller without a delegation privilege simply gets neither (the spec
  lets a server supply "any or none"): :func:`offered`.
* The explicit endpoints (loadCredentials, signRequest, the legacy signer) refuse instead: :func:`required`.

Read-write needs ``credentials.write`` and ``table.write``; read needs ``credentials.read`` and
``table.read`` (each implied by its write). The header and the response fields are HTTP's
(``http/credentials.py``); the decisions are here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from irc_proxy.errors import BadRequest, Unsupported
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.access import Access, Delegation
from irc_proxy.handling.security.authz import Privilege
from irc_proxy.handling.vending import signing
from irc_proxy.handling.vending.vending import Vending, table_locations

VENDED = "vended-credentials"
SIGNING = "remote-signing"
SIGNER_CATALOG = "irc-proxy.catalog"
SIGNER_NAMESPACE = "irc-proxy.namespace"
SIGNER_TABLE = "irc-proxy.table"


@dataclass(frozen=True)
class Asked:
    """What a table load asked for: the delegation modes, and this server's URL (where clients sign)."""

    modes: frozenset[str] = frozenset()
    base_url: str = ""


@dataclass(frozen=True)
class Granted:
    """What a table load hands out: keys added to its ``config``, and top-level result ``fields``."""

    config: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)


async def offered(access: Access, ident: TableIdent) -> Delegation | None:
    """The storage access the caller may be delegated for ``ident``; None instead of a refusal."""
    held, target = await access.grants(), access.table(ident)
    if held.check(Privilege.CREDENTIALS_WRITE, target).allowed and held.check(Privilege.TABLE_WRITE, target).allowed:
        return Delegation.READ_WRITE
    if held.check(Privilege.CREDENTIALS_READ, target).allowed and held.check(Privilege.TABLE_READ, target).allowed:
        return Delegation.READ
    return None


async def required(access: Access, ident: TableIdent) -> Delegation:
    """Like :func:`offered`, for the endpoints that only delegate.

    Raises:
        Forbidden: the caller holds no credential-delegation privilege on the table.
    """
    delegation = await offered(access, ident)
    if delegation is None:
        await access.require(Privilege.CREDENTIALS_READ, access.table(ident))
        await access.require(Privilege.TABLE_READ, access.table(ident))
    return delegation or Delegation.READ


def table_path(catalog: Catalog, ident: TableIdent) -> str:
    """``v1/{prefix}/namespaces/{namespace}/tables/{table}``, relative to the catalog URI."""
    namespace = "%1F".join(quote(level, safe="") for level in ident.namespace)
    return f"v1/{quote(catalog.name, safe='')}/namespaces/{namespace}/tables/{quote(ident.name, safe='')}"


def require_vending(catalog: Catalog) -> Vending:
    if catalog.vending is None:
        raise Unsupported(f"Catalog {catalog.name} does not delegate storage access")
    return catalog.vending


async def table_access(
    access: Access, catalog: Catalog, ident: TableIdent, locations: Sequence[str], asked: Asked
) -> Granted:
    """The delegation ``asked`` for, to the table at ``locations`` (its location first, then
    ``write.data.path``/``write.metadata.path``). Nothing when no mode is asked, the catalog does not
    delegate, the table is not on S3, or the caller holds no delegation privilege."""
    vending = catalog.vending
    if vending is None or not asked.modes & {VENDED, SIGNING} or not vending.prefixes(locations):
        return Granted()
    delegation = await offered(access, ident)
    if delegation is None:
        return Granted()
    write = delegation is Delegation.READ_WRITE
    path = table_path(catalog, ident)
    if VENDED in asked.modes:
        vended = await vending.vend(ident, locations, write, access.context.principal)
        if vended is not None:
            config = vended.config | {"client.refresh-credentials-endpoint": f"{path}/credentials"}
            return Granted(config, {"storage-credentials": [{"prefix": vended.prefix, "config": config}]})
    base = asked.base_url.rstrip("/")
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
    return Granted(config, {"remote-signing-config": {"properties": properties, "headers": {}}})


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


async def credentials(access: Access, catalog: Catalog, ident: TableIdent) -> list[dict[str, Any]]:
    """loadCredentials: fresh (or still fresh cached) credentials for the table, as ``storage-credentials``."""
    vending = require_vending(catalog)
    loaded = await catalog.tables.load(ident)
    write = await required(access, ident) is Delegation.READ_WRITE
    locations = table_locations(loaded.metadata.location, loaded.metadata.properties)
    vended = await vending.vend(ident, locations, write, access.context.principal)
    return [] if vended is None else [{"prefix": vended.prefix, "config": vended.config}]


async def sign(
    access: Access, catalog: Catalog, ident: TableIdent, request: signing.SignRequest, provider: str | None
) -> dict[str, list[str]]:
    """signRequest: the signed headers of one S3 request inside the table's storage."""
    if provider not in (None, "s3"):
        raise BadRequest(f"Invalid sign request: provider {provider!r} is not supported (only s3)")
    vending = require_vending(catalog)
    loaded = await catalog.tables.load(ident)
    write = await required(access, ident) is Delegation.READ_WRITE
    return await signing.sign(vending, ident, loaded.metadata, write, access.context.principal, request)
