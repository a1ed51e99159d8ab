"""Table maintenance on object storage (issue 28): both jobs on a Glue catalog whose warehouse is on S3, Glue and S3
being moto's real HTTP server; one real ``irc-proxy serve`` process runs the requested runs.

pyiceberg writes through the proxy's socket (and to moto's S3 directly); assertions are on what is left in the
bucket (boto3 lists it) and on what pyiceberg reads afterwards. moto sets an object's modification time when it
is written and nothing can change it, so old orphans are judged by a clock the test controls: the jobs run in
this process with the served proxy's own configuration (``support.maintenance.run_in_process``); through the
API, with real ages, every planted file is younger than ``orphan_min_age`` and stays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config
from tests.support.fake_sts import FakeSts
from tests.support.federation import FRONT_PRINCIPAL, USER_CLIENT, USER_SECRET, remote_config, rest_catalog, start_front
from tests.support.federation import token as federation_token
from tests.support.maintenance import finished_run, request_run, run_in_process
from tests.support.server import ProxyProcess, Serve
from tests.support.vending import prepare_vending, vending_catalog_config

CATALOG = "glue"
BUCKET = "maint-lake"
WAREHOUSE = f"s3://{BUCKET}/wh"
CONFIG = "[server.maintenance]\npoll_seconds = 0.1\n"
EXPIRE_EVERYTHING = {"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"}
ORPHAN_MIN_AGE = timedelta(days=3)


def rows(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64()), "data": pa.array([f"r{start}", f"r{start + 1}"])})


def checksum(table: Table) -> list[tuple[Any, ...]]:
    data = table.scan().to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["data"].to_pylist(), strict=True))


def keys(s3: Any, prefix: str) -> set[str]:
    """Every key under ``prefix`` (paginated)."""
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        found |= {item["Key"] for item in page.get("Contents") or ()}
    return found


def key_of(location: str) -> str:
    return location.removeprefix(f"s3://{BUCKET}/")


def reached(table: Table) -> set[str]:
    """The keys of every file the table's snapshots reach (manifest lists, manifests, data files)."""
    found: set[str] = set()
    for snapshot in table.metadata.snapshots:
        found.add(key_of(snapshot.manifest_list))
        for manifest in snapshot.manifests(table.io):
            found.add(key_of(manifest.manifest_path))
            found |= {key_of(e.data_file.file_path) for e in manifest.fetch_manifest_entry(table.io, False)}
    return found


def history(iceberg: RestCatalog, ns: str, name: str, appends: int = 3, **create: Any) -> Table:
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=rows(0).schema, **create)
    for i in range(appends):
        table.append(rows(i * 2))
    table.overwrite(rows(1000))
    return table


def put(s3: Any, *planted: str) -> None:
    for key in planted:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" * 10)


def after_a_second_boundary() -> float:
    """A whole second strictly after every object written so far (moto keeps modification times in whole
    seconds): objects written from now on are at least this new."""
    time.sleep(1.1)
    cutoff = float(math.floor(time.time()))
    time.sleep(max(0.0, cutoff + 0.05 - time.time()))
    return cutoff


def clock_at(cutoff: float) -> Any:
    """A clock for which a file modified before ``cutoff`` is older than ``orphan_min_age`` and one after is not."""
    return lambda: cutoff + ORPHAN_MIN_AGE.total_seconds()


@pytest.fixture(scope="module")
def s3(moto: str) -> Any:
    s3 = client("s3", moto)
    s3.create_bucket(Bucket=BUCKET)
    return s3


@pytest.fixture(scope="module")
def proxy(moto: str, s3: Any, serve: Serve) -> ProxyProcess:
    return serve(CONFIG + glue_catalog_config(CATALOG, moto, WAREHOUSE, s3_path_style_access="true"), "objstores")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as session:
        yield session


@pytest.fixture
def iceberg(proxy: ProxyProcess, moto: str) -> RestCatalog:
    storage = {"s3.endpoint": moto, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
    return RestCatalog("objstores", uri=proxy.url, warehouse=CATALOG, **storage, **{"s3.region": REGION})


def run(http: httpx.Client, ns: str, name: str, jobs: list[str], dry_run: bool = False) -> dict[str, Any]:
    return finished_run(http, request_run(http, ns, name, jobs, dry_run, catalog=CATALOG), CATALOG)


# Expire snapshots -----------------------------------------------------------------------------------------
def test_expiry_on_glue_deletes_the_expired_files_from_s3_and_keeps_what_is_reached(
    http: httpx.Client, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    table = history(iceberg, ns_name, "events", properties=EXPIRE_EVERYTHING)
    prefix = key_of(table.location()) + "/"
    before_rows, head = checksum(table), table.metadata.current_snapshot_id
    stored, live_before = keys(s3, prefix), reached(table)
    dry = run(http, ns_name, "events", ["expire-snapshots"], dry_run=True)["results"]["expire-snapshots"]
    assert keys(s3, prefix) == stored and dry["files-to-delete"] > 0, dry

    result = run(http, ns_name, "events", ["expire-snapshots"])

    expiry = result["results"]["expire-snapshots"]
    assert result["status"] == "succeeded", result
    table = iceberg.load_table((ns_name, "events"))
    assert [s.snapshot_id for s in table.metadata.snapshots] == [head]
    live_after, left = reached(table), keys(s3, prefix)
    gone = stored - left
    assert live_after <= left
    assert gone and gone == live_before - live_after  # exactly what only the expired snapshots reached went
    assert expiry["files-deleted"] == len(gone) == dry["files-to-delete"] and expiry["files-not-deleted"] == 0
    assert expiry["bytes-deleted"] > 0  # the sizes the manifests give (an S3 delete answers none)
    assert checksum(table) == before_rows


# The rewrite jobs ------------------------------------------------------------------------------------------
def appended(iceberg: RestCatalog, ns: str, name: str, appends: int) -> Table:
    """A table of ``appends`` small appends: as many data files and manifests."""
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=rows(0).schema)
    for i in range(appends):
        table.append(rows(i * 2))
    return table


def data_file_count(table: Table) -> int:
    return len(list(table.scan().plan_files()))


def manifest_count(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return len(snapshot.manifests(table.io))


def test_rewrite_data_files_on_glue_writes_the_compacted_files_to_s3_and_keeps_every_row(
    http: httpx.Client, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    table = appended(iceberg, ns_name, "compacted", 6)
    prefix = key_of(table.location()) + "/"
    before_rows, before_keys = checksum(table), keys(s3, prefix)
    assert data_file_count(table) == 6

    result = run(http, ns_name, "compacted", ["rewrite-data-files"])

    rewrite = result["results"]["rewrite-data-files"]
    assert result["status"] == "succeeded" and rewrite["status"] == "succeeded", result
    assert rewrite["data-files-rewritten"] == 6 and rewrite["data-files-added"] == 1, rewrite
    table = iceberg.load_table((ns_name, "compacted"))
    assert checksum(table) == before_rows and data_file_count(table) == 1
    (added,) = (task.file.file_path for task in table.scan().plan_files())
    assert added.startswith(f"s3://{BUCKET}/") and key_of(added) in keys(s3, prefix) - before_keys


def test_rewrite_manifests_on_glue_merges_them_into_one_on_s3_and_keeps_every_row(
    http: httpx.Client, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    table = appended(iceberg, ns_name, "merged", 5)
    prefix = key_of(table.location()) + "/"
    before_rows, before_keys = checksum(table), keys(s3, prefix)
    assert manifest_count(table) == 5

    result = run(http, ns_name, "merged", ["rewrite-manifests"])

    rewrite = result["results"]["rewrite-manifests"]
    assert result["status"] == "succeeded" and rewrite["status"] == "succeeded", result
    assert rewrite["manifests-rewritten"] == 5 and rewrite["manifests-added"] == 1, rewrite
    table = iceberg.load_table((ns_name, "merged"))
    assert checksum(table) == before_rows and manifest_count(table) == 1
    snapshot = table.current_snapshot()
    assert snapshot is not None
    (manifest,) = snapshot.manifests(table.io)
    assert key_of(manifest.manifest_path) in keys(s3, prefix) - before_keys


# Remove orphan files ---------------------------------------------------------------------------------------
def test_through_the_api_s3_is_listed_and_files_younger_than_orphan_min_age_stay(
    http: httpx.Client, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    table = history(iceberg, ns_name, "young", appends=1)
    prefix = key_of(table.location()) + "/"
    put(s3, prefix + "data/just-written.parquet")
    stored = keys(s3, prefix)

    result = run(http, ns_name, "young", ["remove-orphan-files"])

    orphans = result["results"]["remove-orphan-files"]
    assert result["status"] == "succeeded", result
    assert orphans["files-listed"] == len(stored) and orphans["orphans-found"] == 0, orphans
    assert keys(s3, prefix) == stored


def test_only_old_unreached_objects_under_the_tables_roots_go(
    proxy: ProxyProcess, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    """Old orphans (also nested, also under ``write.data.path``) go; new ones, live files as old as the orphans,
    a table sharing the name's prefix, an object named like the table's directory, a sibling directory, another
    bucket and a table in the trash stay."""
    table = history(iceberg, ns_name, "orders", appends=2)
    data_root = f"{WAREHOUSE}/{ns_name}/orders_data"
    with table.transaction() as tx:
        tx.set_properties({"write.data.path": data_root})
    table = iceberg.load_table((ns_name, "orders"))
    table.append(rows(500))  # a live data file under the second root
    before_rows = checksum(table)
    prefix = key_of(table.location()) + "/"
    cousin = history(iceberg, ns_name, "orders2", appends=1)  # "orders" is a prefix of its name
    dropped = history(iceberg, ns_name, "orders_dropped", appends=1)
    iceberg.drop_table((ns_name, "orders_dropped"))  # kept in the trash
    s3.create_bucket(Bucket="maint-other")
    s3.put_object(Bucket="maint-other", Key=prefix + "data/old.parquet", Body=b"x")
    old = [prefix + "data/old-orphan.parquet", prefix + "metadata/deep/stale.avro", key_of(data_root) + "/old.parquet"]
    beside = [prefix.rstrip("/"), prefix.rstrip("/") + "-backup/keep.parquet", prefix.rstrip("/") + "2/x.parquet"]
    put(s3, *old, *beside)
    cutoff = after_a_second_boundary()
    new = [prefix + "data/new-orphan.parquet", key_of(data_root) + "/new.parquet"]
    put(s3, *new)
    everything = keys(s3, "")
    protected = {k for k in everything if k.startswith((key_of(cousin.location()), key_of(dropped.location())))}
    live = reached(table) | {key_of(table.metadata_location)}

    results = run_in_process(proxy.config_path, CATALOG, ns_name, "orders", ["remove-orphan-files"], clock_at(cutoff))

    orphans = results["remove-orphan-files"]
    assert orphans["status"] == "succeeded", orphans
    left = keys(s3, "")
    assert everything - left == set(old)
    assert orphans["files-deleted"] == orphans["orphans-found"] == len(old) and orphans["bytes-deleted"] == 30
    assert set(new) | set(beside) | protected | live <= left
    assert client_keys(s3, "maint-other") == {prefix + "data/old.parquet"}
    assert checksum(iceberg.load_table((ns_name, "orders"))) == before_rows


def client_keys(s3: Any, bucket: str) -> set[str]:
    return {item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents") or ()}


def test_a_bounded_s3_listing_stops_and_says_so(
    proxy: ProxyProcess, iceberg: RestCatalog, s3: Any, ns_name: str
) -> None:
    """The listing is paginated and stops at ``max_files_per_run`` (set low here), deleting within it."""
    table = history(iceberg, ns_name, "many", appends=1)
    prefix = key_of(table.location()) + "/"
    planted = [f"{prefix}data/orphan-{i:04}.parquet" for i in range(30)]
    put(s3, *planted)
    cutoff = after_a_second_boundary()
    bounded = proxy.workdir / "bounded.toml"
    bounded.write_text(
        proxy.config_path.read_text().replace("poll_seconds = 0.1", "poll_seconds = 0.1\nmax_files_per_run = 20")
    )

    orphans = run_in_process(bounded, CATALOG, ns_name, "many", ["remove-orphan-files"], clock_at(cutoff))[
        "remove-orphan-files"
    ]

    assert orphans["listing-truncated"] is True and orphans["files-listed"] == 20, orphans
    left = keys(s3, prefix)
    assert 0 < orphans["files-deleted"] == len(set(planted) - left) <= 20
    assert checksum(iceberg.load_table((ns_name, "many"))) == [(1000, "r1000"), (1001, "r1001")]


# A catalog forwarded to a remote catalog that vends S3 credentials ---------------------------------------------
VENDED_BUCKET = "maint-vended"


def test_a_forwarded_catalog_expires_and_removes_orphans_upstream_with_the_storage_access_it_vends(
    moto: str, sts: FakeSts, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    """The front proxy forwards ``fed`` to a second proxy whose Glue catalog on S3 vends credentials: the expiry
    commits upstream (as the front's principal) and deletes the expired objects, and orphan removal lists the
    bucket, with the credentials vended to the front (never its own ambient access)."""
    prepare_vending(moto, VENDED_BUCKET)
    remote_text = remote_config() + vending_catalog_config("local", moto, sts.url, VENDED_BUCKET)
    remote = ProxyProcess(tmp_path_factory.mktemp("vended-remote"), remote_text).start()
    front = start_front(tmp_path_factory.mktemp("vended-front"), rest_catalog("fed", remote.url), CONFIG)
    s3 = client("s3", moto)
    try:
        storage = {"s3.endpoint": moto, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
        user = federation_token(remote.url, USER_CLIENT, USER_SECRET)
        writer = RestCatalog("w", uri=remote.url, warehouse="local", token=user, **storage, **{"s3.region": REGION})
        table = history(writer, ns_name, "sales", properties=EXPIRE_EVERYTHING)
        prefix = key_of_in(VENDED_BUCKET, table.location()) + "/"
        head, before_rows = table.metadata.current_snapshot_id, checksum(table)
        stored = keys_in(s3, VENDED_BUCKET, prefix)
        sts.reset()

        with httpx.Client(base_url=front.url, timeout=60) as http:
            queued = request_run(http, ns_name, "sales", ["expire-snapshots"], catalog="fed")
            result = finished_run(http, queued, "fed")

        expiry = result["results"]["expire-snapshots"]
        assert expiry["status"] == "succeeded" and expiry["files-deleted"] > 0, result
        upstream = writer.load_table((ns_name, "sales"))
        assert [s.snapshot_id for s in upstream.metadata.snapshots] == [head]
        left = keys_in(s3, VENDED_BUCKET, prefix)
        assert len(stored - left) == expiry["files-deleted"] and checksum(upstream) == before_rows
        assert {c["RoleSessionName"] for c in sts.assume_role_calls()} == {f"irc-proxy@{FRONT_PRINCIPAL}"}

        old = prefix + "data/old-orphan.parquet"
        s3.put_object(Bucket=VENDED_BUCKET, Key=old, Body=b"x")
        cutoff = after_a_second_boundary()
        new = prefix + "data/new-orphan.parquet"
        s3.put_object(Bucket=VENDED_BUCKET, Key=new, Body=b"x")
        orphans = run_in_process(front.config_path, "fed", ns_name, "sales", ["remove-orphan-files"], clock_at(cutoff))

        assert orphans["remove-orphan-files"]["files-deleted"] == 1, orphans
        assert keys_in(s3, VENDED_BUCKET, prefix) == left | {new}
        assert checksum(writer.load_table((ns_name, "sales"))) == before_rows

        # The rewrite jobs: written with the vended credentials, committed upstream.
        table = writer.load_table((ns_name, "sales"))
        for i in range(5):
            table.append(rows(2000 + i * 2))
        before_rows, files_before, manifests_before = checksum(table), data_file_count(table), manifest_count(table)
        with httpx.Client(base_url=front.url, timeout=60) as http:
            queued = request_run(http, ns_name, "sales", ["rewrite-data-files", "rewrite-manifests"], catalog="fed")
            result = finished_run(http, queued, "fed")

        assert result["status"] == "succeeded", result
        assert result["results"]["rewrite-data-files"]["data-files-added"] == 1, result
        upstream = writer.load_table((ns_name, "sales"))
        assert checksum(upstream) == before_rows
        assert data_file_count(upstream) == 1 < files_before and manifest_count(upstream) < manifests_before
    finally:
        front.stop()
        remote.stop()


def key_of_in(bucket: str, location: str) -> str:
    return location.removeprefix(f"s3://{bucket}/")


def keys_in(s3: Any, bucket: str, prefix: str) -> set[str]:
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found |= {item["Key"] for item in page.get("Contents") or ()}
    return found
