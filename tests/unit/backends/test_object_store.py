"""``backends.object_store`` against moto's S3 (a real server over HTTP): listing beneath a root only, paginated and
bounded; batched deletes with per-key errors; the S3 client built from FileIO properties (as a Glue catalog's and
a vended credential's)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from irc_proxy.backends.object_store import MAX_KEYS, ObjectStore, ObjectStoreError, lists, split
from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, moto_server

BUCKET = "unit-objects"


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        client("s3", endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint


@pytest.fixture
def s3(moto: str) -> Any:
    return client("s3", moto)


def store(moto: str, **extra: str) -> ObjectStore:
    properties = {
        "s3.endpoint": moto,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
    }
    return ObjectStore(properties | extra, timeout=10)


def test_locations_split_into_bucket_and_exact_key_and_only_s3_is_listed() -> None:
    assert split("s3://b/wh/t/../x") == ("s3", "b", "wh/t/../x")
    assert split("s3a://b") == ("s3a", "b", "")
    assert lists("s3://b/k") and lists("S3A://b/k") and lists("s3n://b/k")
    assert not lists("gs://b/k") and not lists("file:///tmp/x") and not lists("/tmp/x") and not lists("s3:b")


def test_a_root_lists_only_beneath_its_segment_with_sizes_and_modification_times(moto: str, s3: Any) -> None:
    before = time.time() - 2
    for key, body in {"t/a": b"1", "t/d/b": b"22", "t": b"root", "t2/c": b"x", "t.bak": b"x"}.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    found = {o.location: o for o in store(moto).list(f"s3://{BUCKET}/t/", 100)}
    assert set(found) == {f"s3://{BUCKET}/t/a", f"s3://{BUCKET}/t/d/b"}
    assert found[f"s3://{BUCKET}/t/d/b"].size == 2
    assert all(before <= o.modified <= time.time() + 2 for o in found.values())


def test_listing_is_paginated_and_stops_at_the_limit(moto: str, s3: Any) -> None:
    for i in range(12):
        s3.put_object(Bucket=BUCKET, Key=f"many/{i:03}", Body=b"")
    objects = store(moto)
    assert len(list(objects.list(f"s3://{BUCKET}/many", 5))) == 5
    assert len(list(objects.list(f"s3://{BUCKET}/many", 100))) == 12


def test_deletes_go_in_batches_and_report_each_key_that_failed(moto: str, s3: Any) -> None:
    keys = [f"batch/{i:05}" for i in range(MAX_KEYS + 5)]
    for key in keys[:3] + keys[-3:]:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    missing_bucket = "s3://no-such-bucket-here/x"
    failed = store(moto).delete([f"s3://{BUCKET}/{key}" for key in keys] + [missing_bucket])
    assert set(failed) == {missing_bucket} and "NoSuchBucket" in failed[missing_bucket]
    assert not s3.list_objects_v2(Bucket=BUCKET, Prefix="batch/").get("Contents")


def test_an_unreachable_store_fails_the_listing_as_a_whole() -> None:
    unreachable = ObjectStore({"s3.endpoint": "http://127.0.0.1:9", "s3.region": REGION}, timeout=1)
    with pytest.raises(ObjectStoreError, match="ListObjectsV2 failed"):
        list(unreachable.list("s3://b/t", 10))


def test_vended_properties_are_used_as_given(moto: str, s3: Any) -> None:
    """The keys a remote catalog vends (``client.*`` names, path-style) reach the store."""
    s3.put_object(Bucket=BUCKET, Key="vended/x", Body=b"x")
    vended = ObjectStore(
        {
            "s3.endpoint": moto,
            "client.access-key-id": ACCESS_KEY,
            "client.secret-access-key": SECRET_KEY,
            "client.region": REGION,
            "s3.path-style-access": "true",
        },
        timeout=10,
    )
    assert [o.location for o in vended.list(f"s3://{BUCKET}/vended", 10)] == [f"s3://{BUCKET}/vended/x"]
