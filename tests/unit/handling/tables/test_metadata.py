"""The metadata cache: bounded by estimated bytes, least recently used out first, serialised once."""

from __future__ import annotations

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from irc_proxy.handling.storage.storage_reads import local_path
from irc_proxy.handling.tables.metadata import CachedMetadata, MetadataCache


def metadata(location: str = "file:///wh/t") -> TableMetadata:
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    return new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location, {})


def test_entry_holds_the_metadata_and_its_json() -> None:
    entry = CachedMetadata.of(metadata())
    assert TableMetadataUtil.parse_raw(entry.json) == entry.metadata  # type: ignore[arg-type]  # bytes parse too
    assert entry.weight > len(entry.json)


def test_cache_stays_within_its_byte_budget_evicting_least_recently_used() -> None:
    weight = CachedMetadata.of(metadata()).weight
    cache = MetadataCache(max_bytes=weight * 3)
    for i in range(3):
        cache.put(f"s3://b/{i}.metadata.json", metadata())
    assert cache.get("s3://b/0.metadata.json") is not None  # 0 is now the most recently used
    cache.put("s3://b/3.metadata.json", metadata())
    assert len(cache) == 3 and cache.bytes <= cache.max_bytes
    assert cache.get("s3://b/1.metadata.json") is None
    assert cache.get("s3://b/0.metadata.json") is not None


def test_entry_larger_than_the_budget_is_served_but_not_kept() -> None:
    cache = MetadataCache(max_bytes=10)
    entry = cache.put("s3://b/big.metadata.json", metadata())
    assert entry.metadata.location == "file:///wh/t"
    assert len(cache) == 0 and cache.bytes == 0


def test_discard_and_replace_keep_the_byte_count_exact() -> None:
    cache = MetadataCache()
    cache.put("a", metadata())
    cache.put("a", metadata("file:///wh/other"))
    assert len(cache) == 1 and cache.bytes == CachedMetadata.of(metadata("file:///wh/other")).weight
    cache.discard("a")
    assert len(cache) == 0 and cache.bytes == 0


def test_local_path_of_file_uris_and_paths_only() -> None:
    assert local_path("file:///wh/a%20b/m.json") == "/wh/a b/m.json"
    assert local_path("/wh/m.json") == "/wh/m.json"
    assert local_path("s3://bucket/m.json") is None


def test_storage_failures_are_classified_for_clients() -> None:
    """An outage is retryable (503), a refusal 403, a missing bucket 400; never a 400 for an outage."""
    from irc_proxy.errors import BadRequest, Forbidden, ServiceUnavailable
    from irc_proxy.handling.storage.storage_reads import storage_error

    outage = OSError("When reading information for key 'm.json' in bucket 'b': AWS Error NETWORK_CONNECTION")
    assert isinstance(storage_error("Cannot read", outage), ServiceUnavailable)
    denied = OSError("When reading information for key 'm.json' in bucket 'b': AWS Error ACCESS_DENIED")
    assert isinstance(storage_error("Cannot read", denied), Forbidden)
    assert isinstance(storage_error("Cannot write", PermissionError("nope")), Forbidden)
    missing = OSError("When reading information for key 'm.json' in bucket 'b': AWS Error NO_SUCH_BUCKET")
    error = storage_error("Cannot read", missing)
    assert isinstance(error, BadRequest) and "bucket does not exist" in error.message
    directory = OSError("Cannot open for reading: path '/tmp/x' is a directory")
    assert isinstance(storage_error("Cannot read", directory), BadRequest)
