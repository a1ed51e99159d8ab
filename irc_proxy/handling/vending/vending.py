"""Credential vending: a session policy scoped to one table's storage, cached per (role, prefixes, access).

The policy (``session_policy``) allows, on the table's prefixes only: object reads, object writes and
deletes when the caller may write, ``s3:ListBucket`` limited by ``s3:prefix``, and
``s3:GetBucketLocation``. STS intersects it with the role's own policy, so the credentials can never
do more than either. Credentials are reused until ``refresh_margin_seconds`` before they expire;
concurrent misses for one key share one STS call (``CredentialCache``).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from irc_proxy.backends.sts import TemporaryCredentials
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.storage.locations import table_paths
from irc_proxy.settings import VendingSettings

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload")
_SESSION_NAME_UNSAFE = re.compile(r"[^\w+=,.@-]")
_TAG_UNSAFE = re.compile(r"[^\w .:/=+@-]")


@dataclass(frozen=True, order=True)
class S3Prefix:
    """A bucket and a key prefix without leading or trailing ``/`` (``""`` is the whole bucket)."""

    bucket: str
    key: str

    def covers(self, key: str) -> bool:
        """Whether object ``key`` lies at or under this prefix."""
        return not self.key or key == self.key or key.startswith(self.key + "/")

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"


def s3_prefix(location: str) -> S3Prefix | None:
    """``s3://bucket/a/b/`` -> S3Prefix("bucket", "a/b"); None for other schemes."""
    parts = urlsplit(location)
    if parts.scheme.lower() not in S3_SCHEMES or not parts.netloc:
        return None
    return S3Prefix(parts.netloc, parts.path.strip("/"))


def table_locations(location: str, properties: Mapping[str, str]) -> list[str]:
    """The table's location plus any ``write.*.path`` set elsewhere (credentials must reach all of them)."""
    return table_paths(location, properties)


def session_policy(prefixes: Sequence[S3Prefix], write: bool, partition: str = "aws") -> dict[str, Any]:
    """The inline session policy for ``prefixes``; read-only unless ``write``."""
    objects = [f"arn:{partition}:s3:::{p.bucket}/{p.key + '/' if p.key else ''}*" for p in prefixes]
    statements: list[dict[str, Any]] = [
        {"Sid": "ReadTableObjects", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": objects}
    ]
    if write:
        statements.append(
            {"Sid": "WriteTableObjects", "Effect": "Allow", "Action": list(WRITE_ACTIONS), "Resource": objects}
        )
    for bucket in sorted({p.bucket for p in prefixes}):
        keys = sorted(p.key for p in prefixes if p.bucket == bucket)
        listed = ["*"] if "" in keys else [pattern for key in keys for pattern in (key, f"{key}/*")]
        statements.append(
            {
                "Sid": f"ListTablePrefixes{len(statements)}",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:{partition}:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": listed}},
            }
        )
    buckets = [f"arn:{partition}:s3:::{bucket}" for bucket in sorted({p.bucket for p in prefixes})]
    statements.append(
        {"Sid": "BucketLocation", "Effect": "Allow", "Action": "s3:GetBucketLocation", "Resource": buckets}
    )
    return {"Version": "2012-10-17", "Statement": statements}


def session_name(principal: str) -> str:
    """A RoleSessionName (2..64 of ``[\\w+=,.@-]``) that names the principal, for CloudTrail."""
    return ("irc-proxy@" + _SESSION_NAME_UNSAFE.sub("_", principal))[:64]


def session_tags(catalog: str, ident: TableIdent) -> dict[str, str]:
    """Session tags naming the table (values reduced to STS's allowed characters and length)."""
    raw = {"catalog": catalog, "namespace": ".".join(ident.namespace), "table": ident.name}
    return {key: _TAG_UNSAFE.sub("_", value)[:256] for key, value in raw.items()}


class CredentialSource(Protocol):
    """Where credentials come from (``irc_proxy.backends.sts.StsCredentials``)."""

    @property
    def role_arn(self) -> str: ...

    async def assume(self, policy: str, session_name: str, tags: Mapping[str, str]) -> TemporaryCredentials: ...


CacheKey = tuple[str, tuple[S3Prefix, ...], bool, str]


class CredentialCache:
    """Credentials by key, reused until ``margin`` seconds before expiry; one fetch per key at a time."""

    def __init__(self, margin_seconds: float, entries: int, clock: Callable[[], float] = time.time) -> None:
        self._margin_ms = margin_seconds * 1000
        self._entries = entries
        self._clock = clock
        self._cached: OrderedDict[CacheKey, TemporaryCredentials] = OrderedDict()
        self._flights: dict[CacheKey, asyncio.Future[TemporaryCredentials]] = {}
        self.hits = 0
        self.misses = 0

    def _fresh(self, key: CacheKey) -> TemporaryCredentials | None:
        found = self._cached.get(key)
        if found is not None and found.expires_at_ms - self._margin_ms > self._clock() * 1000:
            self._cached.move_to_end(key)
            return found
        return None

    async def get(self, key: CacheKey, fetch: Callable[[], Awaitable[TemporaryCredentials]]) -> TemporaryCredentials:
        """Cached credentials for ``key``, or the result of the one ``fetch`` in flight for it."""
        found = self._fresh(key)
        if found is not None:
            self.hits += 1
            return found
        flight = self._flights.get(key)
        if flight is None:
            self.misses += 1
            flight = asyncio.ensure_future(self._fill(key, fetch))
            self._flights[key] = flight
        else:
            self.hits += 1
        return await asyncio.shield(flight)  # a cancelled waiter does not cancel the shared fetch

    async def _fill(self, key: CacheKey, fetch: Callable[[], Awaitable[TemporaryCredentials]]) -> TemporaryCredentials:
        try:
            credentials = await fetch()
            self._cached[key] = credentials
            self._cached.move_to_end(key)
            while len(self._cached) > self._entries:
                self._cached.popitem(last=False)
            return credentials
        finally:
            del self._flights[key]


@dataclass(frozen=True)
class StorageAccess:
    """Vended credentials for one table: ``prefix`` (the table location) and the client ``config``."""

    prefix: str
    config: dict[str, str]
    credentials: TemporaryCredentials


class Vending:
    """One catalog's delegation: scoped credentials and the client settings (the locations a client may name
    are the catalog's ``allowed_locations``, checked by ``StorageLocations`` before anything is vended)."""

    def __init__(self, catalog: str, settings: VendingSettings, source: CredentialSource) -> None:
        self.catalog = catalog
        self.settings = settings
        self._source = source
        self._partition = source.role_arn.split(":")[1]
        self.cache = CredentialCache(settings.refresh_margin_seconds, settings.cache_entries)

    def client_settings(self) -> dict[str, str]:
        """S3 client settings handed out with credentials or signing (region, endpoint, path style)."""
        config = {"client.region": self.settings.s3_region or self.settings.sts_region or "us-east-1"}
        if self.settings.s3_endpoint_url:
            config["s3.endpoint"] = self.settings.s3_endpoint_url
        if self.settings.s3_path_style_access:
            config["s3.path-style-access"] = "true"
        return config

    @staticmethod
    def prefixes(locations: Sequence[str]) -> list[S3Prefix] | None:
        """The S3 prefixes of ``locations``, or None when any of them is not on S3."""
        found = [s3_prefix(location) for location in locations]
        return None if any(p is None for p in found) else sorted(p for p in found if p is not None)

    async def scoped_credentials(
        self, ident: TableIdent, prefixes: Sequence[S3Prefix], write: bool, principal: str
    ) -> TemporaryCredentials:
        """Credentials limited to ``prefixes`` (cached; one STS call per key at a time)."""
        key: CacheKey = (self._source.role_arn, tuple(prefixes), write, principal)
        policy = json.dumps(session_policy(prefixes, write, self._partition), separators=(",", ":"))

        def fetch() -> Awaitable[TemporaryCredentials]:
            return self._source.assume(policy, session_name(principal), session_tags(self.catalog, ident))

        return await self.cache.get(key, fetch)

    async def vend(
        self, ident: TableIdent, locations: Sequence[str], write: bool, principal: str
    ) -> StorageAccess | None:
        """Credentials and client config for a table at ``locations`` (its location first, then
        ``write.data.path``/``write.metadata.path``); None when they are not all on S3."""
        prefixes = self.prefixes(locations)
        if not prefixes:
            return None
        credentials = await self.scoped_credentials(ident, prefixes, write, principal)
        config = self.client_settings() | {
            "s3.access-key-id": credentials.access_key_id,
            "s3.secret-access-key": credentials.secret_access_key,
            "s3.session-token": credentials.session_token,
            "s3.session-token-expires-at-ms": str(credentials.expires_at_ms),
        }
        return StorageAccess(locations[0].rstrip("/"), config, credentials)
