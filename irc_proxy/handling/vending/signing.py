"""Remote signing: sign a client's S3 request only when it stays inside one table's storage.

The request must go to the configured S3 endpoint (or an AWS S3 host), name a bucket and key under
one of the table's prefixes (a listing: its ``prefix``; DeleteObjects: every key in its body), and
use a method the caller's access allows (GET/HEAD to read; PUT/POST/DELETE to write). It is signed
with the same table-scoped STS credentials vending would hand out, so S3 enforces the scope too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from pyiceberg.table.metadata import TableMetadata

from irc_proxy.backends.s3sign import sign_s3_request
from irc_proxy.errors import BadRequest, Forbidden
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.vending.vending import S3Prefix, Vending, table_locations

READ_METHODS = frozenset({"GET", "HEAD"})
WRITE_METHODS = frozenset({"PUT", "POST", "DELETE"})
_AWS_HOST_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn")


@dataclass(frozen=True)
class SignRequest:
    """The spec's RemoteSignRequest."""

    region: str
    uri: str
    method: str
    headers: Mapping[str, Sequence[str]] = field(default_factory=dict)
    body: str | None = None


@dataclass(frozen=True)
class S3Target:
    bucket: str
    key: str
    query: dict[str, list[str]]


def parse_target(uri: str, endpoint: str, buckets: set[str]) -> S3Target:
    """Bucket, key and query of an S3 URI (virtual-hosted or path-style). Raises Forbidden for other hosts."""
    parts = urlsplit(uri)
    host = (parts.hostname or "").lower()
    endpoint_host = (urlsplit(endpoint).hostname or "").lower() if endpoint else ""
    if parts.scheme not in ("http", "https") or not host:
        raise BadRequest(f"Invalid sign request: {uri!r} is not an http(s) URI")
    virtual = next((b for b in buckets if host.startswith(f"{b.lower()}.") and host != endpoint_host), None)
    on_endpoint = host == endpoint_host or (virtual is not None and host == f"{virtual.lower()}.{endpoint_host}")
    if not on_endpoint and not host.endswith(_AWS_HOST_SUFFIXES):
        raise Forbidden(f"Refusing to sign a request to {host}: not the catalog's S3 endpoint")
    path = unquote(parts.path)
    if virtual is not None:
        bucket, key = virtual, path.lstrip("/")
    else:
        bucket, _, key = path.lstrip("/").partition("/")
    return S3Target(bucket, key, parse_qs(parts.query, keep_blank_values=True))


def _deleted_keys(body: str | None) -> list[str]:
    if not body:
        raise Forbidden("Refusing to sign DeleteObjects without its body (the keys must be checked)")
    try:
        root = ET.fromstring(body)  # noqa: S314 (no entities are expanded by ElementTree)
    except ET.ParseError as exc:
        raise BadRequest(f"Invalid sign request: DeleteObjects body is not XML ({exc})") from None
    return [element.text or "" for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "Key"]


def check_scope(
    target: S3Target, method: str, prefixes: Sequence[S3Prefix], write: bool, body: str | None = None
) -> None:
    """Raises Forbidden unless ``method`` on ``target`` stays inside ``prefixes`` and the access allows it."""
    if method in WRITE_METHODS and not write:
        raise Forbidden(f"Refusing to sign {method}: the caller may only read this table's files")
    if method not in READ_METHODS | WRITE_METHODS:
        raise Forbidden(f"Refusing to sign {method}: not an S3 method a table client uses")
    in_bucket = [p for p in prefixes if p.bucket == target.bucket]
    where = f"s3://{target.bucket}/{target.key}"
    if not in_bucket:
        raise Forbidden(f"Refusing to sign a request for {where}: outside the table's locations")
    if target.key:
        keys = [target.key]
    elif method == "POST" and "delete" in target.query:
        keys = _deleted_keys(body)
    elif method == "GET" and "location" in target.query:
        return
    elif method == "GET":
        keys = [target.query.get("prefix", [""])[0]]
    else:
        raise Forbidden(f"Refusing to sign {method} on bucket {target.bucket}: not a table file operation")
    for key in keys:
        if not any(p.covers(key) for p in in_bucket):
            raise Forbidden(f"Refusing to sign a request for s3://{target.bucket}/{key}: outside the table's locations")


async def sign(
    vending: Vending, ident: TableIdent, metadata: TableMetadata, write: bool, principal: str, request: SignRequest
) -> dict[str, list[str]]:
    """The signed headers for ``request``, after checking it against the table's storage and the caller's access.

    Raises:
        Forbidden: the request leaves the table's locations, or writes with read-only access.
    """
    prefixes = vending.prefixes(table_locations(metadata.location, metadata.properties))
    if not prefixes:
        raise Forbidden(f"Table {ident} is not stored on S3: there is nothing to sign")
    method = request.method.upper()
    endpoint = vending.settings.s3_endpoint_url
    target = parse_target(request.uri, endpoint, {p.bucket for p in prefixes})
    check_scope(target, method, prefixes, write, request.body)
    credentials = await vending.scoped_credentials(ident, prefixes, write, principal)
    region = request.region or vending.client_settings()["client.region"]
    return sign_s3_request(credentials, region, method, request.uri, request.headers)
