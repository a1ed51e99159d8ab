"""Listing and batched deletes on S3 (and S3-compatible stores) with the storage access a FileIO is configured with.

Table maintenance lists a table's storage (``remove-orphan-files``) and deletes many files at once. pyiceberg's
FileIO does neither (no listing; one request per delete), so this builds a boto3 S3 client from the same
properties the catalog's FileIO reads the table with: a Glue catalog's ``s3_endpoint_url`` and credentials, the
storage credentials a remote catalog vended for the table, or the default chain for a local catalog. Whoever
asks passes those properties (``Backend.file_io(...).properties``); nothing here knows which catalog they are of.

Blocking: call it in a worker thread. Every request has connect and read timeouts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

S3_SCHEMES = ("s3", "s3a", "s3n")
MAX_KEYS = 1000
"""The most keys one ``ListObjectsV2`` page answers and one ``DeleteObjects`` request deletes."""


@dataclass(frozen=True)
class StoredObject:
    """One listed object: its location as ``scheme://bucket/key``, size and last modification (epoch seconds)."""

    location: str
    size: int
    modified: float


class ObjectStoreError(OSError):
    """A listing or delete request failed as a whole (unreachable, denied, no such bucket)."""


def split(location: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)`` of an ``s3://bucket/key`` location, the key exactly as written (no decoding)."""
    scheme, _, rest = location.partition("://")
    bucket, _, key = rest.partition("/")
    return scheme, bucket, key


def lists(location: str) -> bool:
    """Whether this module can list and delete at ``location`` (an S3 location)."""
    return location.partition("://")[0].lower() in S3_SCHEMES and "://" in location


def _first(properties: Mapping[str, str], *keys: str) -> str | None:
    return next((value for key in keys if (value := properties.get(key))), None)


class ObjectStore:
    """An S3 client with the storage access of FileIO ``properties`` (see the module)."""

    def __init__(self, properties: Mapping[str, str], timeout: float) -> None:
        # deferred (~0.4 s at start-up): only maintenance on S3 tables builds a client
        import boto3
        from botocore.config import Config

        endpoint = _first(properties, "s3.endpoint")
        virtual = (properties.get("s3.force-virtual-addressing") or "").lower() == "true"
        path_style = (properties.get("s3.path-style-access") or "").lower() == "true" or (endpoint and not virtual)
        config = Config(
            connect_timeout=max(timeout / 2, 0.5),
            read_timeout=timeout,
            retries={"max_attempts": 2, "mode": "standard"},
            s3={"addressing_style": "path" if path_style else "auto"},
        )
        session = boto3.Session(
            aws_access_key_id=_first(properties, "s3.access-key-id", "client.access-key-id"),
            aws_secret_access_key=_first(properties, "s3.secret-access-key", "client.secret-access-key"),
            aws_session_token=_first(properties, "s3.session-token", "client.session-token"),
            region_name=_first(properties, "s3.region", "client.region"),
        )
        self._client: Any = session.client("s3", endpoint_url=endpoint or None, config=config)

    def close(self) -> None:
        self._client.close()

    def list(self, root: str, limit: int) -> Iterator[StoredObject]:
        """The objects beneath ``root`` (a directory: listed with a trailing ``/``, so ``s3://b/t`` never lists
        ``s3://b/t2/…`` nor an object named ``t`` itself), at most ``limit``, paginated. Raises ObjectStoreError."""
        scheme, bucket, key = split(root.rstrip("/"))
        prefix = key + "/" if key else ""
        token: str | None = None
        listed = 0
        while listed < limit:
            arguments: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": min(MAX_KEYS, limit - listed)}
            if token:
                arguments["ContinuationToken"] = token
            page = self._call("ListObjectsV2", self._client.list_objects_v2, **arguments)
            for item in page.get("Contents") or ():
                listed += 1
                yield StoredObject(
                    f"{scheme}://{bucket}/{item['Key']}", int(item.get("Size") or 0), item["LastModified"].timestamp()
                )
                if listed >= limit:
                    return
            token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
            if not token:
                return

    def delete(self, locations: Sequence[str]) -> dict[str, str]:
        """Delete ``locations`` in batches of at most ``MAX_KEYS`` per bucket; each one that could not be deleted,
        with why (a failed batch fails each of its keys; the other batches go on). Deleting a missing key is no
        error in S3."""
        failed: dict[str, str] = {}
        by_bucket: dict[str, list[tuple[str, str]]] = {}
        for location in locations:
            _, bucket, key = split(location)
            by_bucket.setdefault(bucket, []).append((key, location))
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), MAX_KEYS):
                batch = dict(keys[start : start + MAX_KEYS])
                objects = [{"Key": key} for key in batch]
                try:
                    answer = self._call(
                        "DeleteObjects",
                        self._client.delete_objects,
                        Bucket=bucket,
                        Delete={"Objects": objects, "Quiet": True},
                    )
                except ObjectStoreError as exc:
                    failed.update((location, str(exc)) for location in batch.values())
                    continue
                for error in answer.get("Errors") or ():
                    location = batch.get(str(error.get("Key")), f"s3://{bucket}/{error.get('Key')}")
                    failed[location] = str(error.get("Code") or "error")
        return failed

    @staticmethod
    def _call(operation: str, method: Any, **arguments: Any) -> Any:
        try:
            return method(**arguments)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code") or "error"
            raise ObjectStoreError(f"{operation} failed: {code}") from exc
        except BotoCoreError as exc:
            raise ObjectStoreError(f"{operation} failed: {type(exc).__name__}") from exc
