"""Attacks on table maintenance over object storage: a Glue catalog whose warehouse is on moto's S3 (real HTTP
servers), a writer who controls its table's metadata and can put any object in the bucket.

* a manifest naming another bucket's object and an object of the same bucket outside the table: expiry never
  deletes them (they are not under the table's roots), orphan removal never lists them;
* keys with ``..`` (also percent-encoded) and ``//`` under the table's prefix, and a manifest naming such a key
  that would resolve into another directory: none is deleted, nor what it would resolve to;
* a table location with a trailing ``/``: its prefix still ends at the segment (``…/tt/`` never lists ``…/tt2/``,
  ``…/tt.bak`` or the object named ``…/tt`` itself).

Old orphans are judged with a clock the test controls (moto's modification times cannot be set): the jobs run in
this process with the served proxy's configuration (``support.maintenance.run_in_process``).
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config
from tests.support.maintenance import run_in_process
from tests.support.server import ProxyProcess, Serve

CATALOG = "glue"
BUCKET = "attack-lake"
OTHER_BUCKET = "attack-victim"
WAREHOUSE = f"s3://{BUCKET}/wh"
EXPIRE_EVERYTHING = {"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"}


def rows(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64())})


def parquet(s3: Any, bucket: str, key: str) -> str:
    buffer = io.BytesIO()
    pq.write_table(rows(7), buffer)
    s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
    return f"s3://{bucket}/{key}"


def keys(s3: Any, bucket: str = BUCKET) -> set[str]:
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        found |= {item["Key"] for item in page.get("Contents") or ()}
    return found


def old_clock() -> Callable[[], float]:
    """After a whole-second boundary past every object written so far: each of them is older than the default
    ``orphan_min_age`` (3 days) by this clock."""
    time.sleep(1.1)
    cutoff = math.floor(time.time())
    return lambda: cutoff + timedelta(days=3).total_seconds()


@pytest.fixture(scope="module")
def s3(moto: str) -> Any:
    s3 = client("s3", moto)
    s3.create_bucket(Bucket=BUCKET)
    s3.create_bucket(Bucket=OTHER_BUCKET)
    return s3


@pytest.fixture(scope="module")
def proxy(moto: str, s3: Any, serve: Serve) -> ProxyProcess:
    return serve(glue_catalog_config(CATALOG, moto, WAREHOUSE, s3_path_style_access="true"), "objstore-attacks")


@pytest.fixture
def iceberg(proxy: ProxyProcess, moto: str) -> RestCatalog:
    storage = {"s3.endpoint": moto, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
    return RestCatalog("attacker", uri=proxy.url, warehouse=CATALOG, **storage, **{"s3.region": REGION})


def test_a_manifest_naming_another_buckets_object_or_one_outside_the_table_never_makes_it_go(
    proxy: ProxyProcess, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    iceberg.create_namespace(ns_name)
    table = iceberg.create_table((ns_name, "thief"), schema=rows(0).schema, properties=EXPIRE_EVERYTHING)
    victims = [
        parquet(s3, OTHER_BUCKET, "finance/secret.parquet"),
        parquet(s3, BUCKET, f"wh/{ns_name}/victim/data/precious.parquet"),
    ]
    table.add_files(victims)  # the writer's manifest names them as its own data files
    table.overwrite(rows(100))  # ... and then drops them: only the expired snapshot reaches them
    table.append(rows(200))
    before_other, before_lake = keys(s3, OTHER_BUCKET), keys(s3)
    clock = old_clock()

    results = run_in_process(
        proxy.config_path, CATALOG, ns_name, "thief", ["expire-snapshots", "remove-orphan-files"], clock
    )

    expiry = results["expire-snapshots"]
    assert expiry["status"] == "succeeded" and expiry["snapshots-expired"] >= 2, expiry
    assert expiry["files-refused"] == len(victims), expiry
    assert expiry["files-deleted"] > 0  # the table's own expired files went
    assert keys(s3, OTHER_BUCKET) == before_other
    assert f"wh/{ns_name}/victim/data/precious.parquet" in keys(s3)
    assert results["remove-orphan-files"]["status"] == "succeeded", results
    assert {k for k in before_lake if not k.startswith(f"wh/{ns_name}/thief/")} <= keys(s3)


def test_keys_with_dot_segments_or_empty_segments_are_never_deleted_nor_what_they_resolve_to(
    proxy: ProxyProcess, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    iceberg.create_namespace(ns_name)
    table = iceberg.create_table((ns_name, "dots"), schema=rows(0).schema, properties=EXPIRE_EVERYTHING)
    table.append(rows(1))
    prefix = f"wh/{ns_name}/dots/"
    resolved = f"wh/{ns_name}/victim/x.parquet"
    tricks = [prefix + "data/../../victim/x.parquet", prefix + "data/%2E%2E/%2E%2E/victim/x.parquet", prefix + "a//b"]
    for key in [*tricks, resolved]:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    # A manifest (through add_files) that names a dotted key resolving to the victim's directory.
    dotted = parquet(s3, BUCKET, prefix + "data/../../victim/y.parquet")
    parquet(s3, BUCKET, f"wh/{ns_name}/victim/y.parquet")
    table.add_files([dotted])
    table.overwrite(rows(50))
    clock = old_clock()

    results = run_in_process(
        proxy.config_path, CATALOG, ns_name, "dots", ["expire-snapshots", "remove-orphan-files"], clock
    )

    assert results["expire-snapshots"]["status"] == "succeeded", results
    assert results["remove-orphan-files"]["status"] == "succeeded", results
    left = keys(s3)
    assert {*tricks, resolved, f"wh/{ns_name}/victim/y.parquet", dotted.removeprefix(f"s3://{BUCKET}/")} <= left
    assert results["remove-orphan-files"]["files-listed"] >= len(tricks)


def test_a_trailing_slash_location_lists_only_beneath_its_own_segment(
    proxy: ProxyProcess, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    iceberg.create_namespace(ns_name)
    location = f"{WAREHOUSE}/{ns_name}/tt/"
    table = iceberg.create_table((ns_name, "tt"), schema=rows(0).schema, location=location)
    table.append(rows(1))
    base = f"wh/{ns_name}/tt"
    orphan = base + "/data/orphan.parquet"
    neighbours = [base, base + "2/data/a.parquet", base + ".bak", base + "-x/y.parquet", f"wh/{ns_name}/t"]
    for key in [orphan, *neighbours]:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    before = keys(s3)
    clock = old_clock()

    orphans = run_in_process(proxy.config_path, CATALOG, ns_name, "tt", ["remove-orphan-files"], clock)[
        "remove-orphan-files"
    ]

    assert orphans["status"] == "succeeded", orphans
    assert before - keys(s3) == {orphan}
    assert orphans["files-deleted"] == 1
