"""Session policies, location checks, the credential cache and the remote-signing scope check."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from irc_proxy.backends.sts import TemporaryCredentials
from irc_proxy.errors import BadRequest, Forbidden
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.vending.signing import S3Target, check_scope, parse_target
from irc_proxy.handling.vending.vending import (
    CredentialCache,
    S3Prefix,
    Vending,
    s3_prefix,
    session_name,
    session_policy,
    session_tags,
    table_locations,
)
from irc_proxy.settings import VendingSettings
from tests.support.iam_policy import allowed, bucket_arn, object_arn

ROLE = "arn:aws:iam::123456789012:role/vended"
TABLE = S3Prefix("lake", "wh/sales/orders")


def test_s3_prefix_parses_s3_schemes_only() -> None:
    assert s3_prefix("s3://lake/wh/sales/orders/") == TABLE
    assert s3_prefix("s3a://lake/wh") == S3Prefix("lake", "wh")
    assert s3_prefix("s3://lake") == S3Prefix("lake", "")
    assert s3_prefix("file:///tmp/wh") is None
    assert s3_prefix("gs://b/x") is None


def test_table_locations_add_write_paths_outside_the_location() -> None:
    base = "s3://lake/wh/sales/orders"
    assert table_locations(base + "/", {}) == [base]
    inside = {"write.data.path": base + "/data", "write.metadata.path": base + "/meta/"}
    assert table_locations(base, inside) == [base]
    outside = {"write.data.path": "s3://data-lake/orders/", "write.metadata.path": "s3://lake/meta/orders"}
    assert table_locations(base, outside) == [base, "s3://data-lake/orders", "s3://lake/meta/orders"]


def test_read_write_policy_is_exact() -> None:
    assert session_policy([TABLE], write=True) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadTableObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": ["arn:aws:s3:::lake/wh/sales/orders/*"],
            },
            {
                "Sid": "WriteTableObjects",
                "Effect": "Allow",
                "Action": ["s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"],
                "Resource": ["arn:aws:s3:::lake/wh/sales/orders/*"],
            },
            {
                "Sid": "ListTablePrefixes2",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": "arn:aws:s3:::lake",
                "Condition": {"StringLike": {"s3:prefix": ["wh/sales/orders", "wh/sales/orders/*"]}},
            },
            {
                "Sid": "BucketLocation",
                "Effect": "Allow",
                "Action": "s3:GetBucketLocation",
                "Resource": ["arn:aws:s3:::lake"],
            },
        ],
    }


def test_read_only_policy_has_no_write_statement() -> None:
    policy = session_policy([TABLE], write=False)
    assert [s["Sid"] for s in policy["Statement"]] == ["ReadTableObjects", "ListTablePrefixes1", "BucketLocation"]
    own = object_arn("lake", "wh/sales/orders/data/f.parquet")
    assert allowed(policy, "s3:GetObject", own)
    assert not allowed(policy, "s3:PutObject", own)
    assert not allowed(policy, "s3:DeleteObject", own)


@pytest.mark.parametrize("write", [False, True])
def test_policy_reaches_the_table_and_not_its_sibling(write: bool) -> None:
    policy = session_policy([TABLE], write=write)
    own = object_arn("lake", "wh/sales/orders/metadata/00001.metadata.json")
    for sibling in ("wh/sales/orders_v2/data/f.parquet", "wh/sales/orders2/x", "wh/sales/other/orders/x", "x"):
        for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
            assert not allowed(policy, action, object_arn("lake", sibling)), (action, sibling)
    assert allowed(policy, "s3:GetObject", own)
    assert allowed(policy, "s3:PutObject", own) is write
    assert not allowed(policy, "s3:GetObject", object_arn("other-bucket", "wh/sales/orders/x"))
    assert allowed(policy, "s3:ListBucket", bucket_arn("lake"), {"s3:prefix": "wh/sales/orders/"})
    assert allowed(policy, "s3:ListBucket", bucket_arn("lake"), {"s3:prefix": "wh/sales/orders/data/"})
    assert not allowed(policy, "s3:ListBucket", bucket_arn("lake"), {"s3:prefix": "wh/sales/"})
    assert not allowed(policy, "s3:ListBucket", bucket_arn("lake"), {"s3:prefix": "wh/sales/orders_v2/"})
    assert not allowed(policy, "s3:ListBucket", bucket_arn("lake"))  # no prefix: the whole bucket
    assert allowed(policy, "s3:GetBucketLocation", bucket_arn("lake"))
    assert not allowed(policy, "s3:GetBucketLocation", bucket_arn("other-bucket"))


def test_policy_covers_write_paths_in_other_buckets_and_uses_the_role_partition() -> None:
    data = S3Prefix("data-lake", "orders")
    policy = session_policy([TABLE, data], write=True, partition="aws-cn")
    assert allowed(policy, "s3:PutObject", "arn:aws-cn:s3:::data-lake/orders/f.parquet")
    assert allowed(policy, "s3:ListBucket", "arn:aws-cn:s3:::data-lake", {"s3:prefix": "orders/"})
    assert not allowed(policy, "s3:ListBucket", "arn:aws-cn:s3:::data-lake", {"s3:prefix": "wh/sales/orders/"})
    assert not allowed(policy, "s3:PutObject", "arn:aws:s3:::data-lake/orders/f.parquet")


def test_session_name_and_tags_fit_sts_limits() -> None:
    assert session_name("alice") == "irc-proxy@alice"
    assert session_name("svc:spark/job 1") == "irc-proxy@svc_spark_job_1"
    assert len(session_name("x" * 200)) == 64
    tags = session_tags("lake", TableIdent(("a", "b#c"), "t$1"))
    assert tags == {"catalog": "lake", "namespace": "a.b_c", "table": "t_1"}


def vending(**extra: object) -> Vending:
    settings = VendingSettings.model_validate({"role_arn": ROLE} | extra)
    return Vending("lake", settings, Source())


def test_allowed_locations_are_the_catalogs_and_default_to_the_warehouse() -> None:
    from irc_proxy.settings import load_settings

    base = {"IRC_PROXY_CATALOGS__LAKE__WAREHOUSE": "s3://lake/wh/", "IRC_PROXY_CATALOGS__LAKE__VENDING__ROLE_ARN": ROLE}
    assert load_settings(environ=base).catalogs["lake"].allowed_locations == ["s3://lake/wh"]
    older = base | {"IRC_PROXY_CATALOGS__LAKE__VENDING__ALLOWED_LOCATIONS": "s3://lake/a, s3://lake/b"}
    assert load_settings(environ=older).catalogs["lake"].allowed_locations == ["s3://lake/a", "s3://lake/b"]
    own = older | {"IRC_PROXY_CATALOGS__LAKE__ALLOWED_LOCATIONS": "s3://lake/c/"}
    assert load_settings(environ=own).catalogs["lake"].allowed_locations == ["s3://lake/c"]


def test_settings_reject_margin_at_or_above_duration() -> None:
    with pytest.raises(ValueError, match="refresh_margin_seconds"):
        VendingSettings.model_validate({"role_arn": ROLE, "duration_seconds": 900, "refresh_margin_seconds": 900})
    with pytest.raises(ValueError, match="not a URI"):
        VendingSettings.model_validate({"role_arn": ROLE, "allowed_locations": "lake/wh"})
    parsed = VendingSettings.model_validate({"role_arn": ROLE, "allowed_locations": "s3://a/x, s3://b"})
    assert parsed.allowed_locations == ["s3://a/x", "s3://b"]


# The cache ------------------------------------------------------------------------------------------
class Source:
    """A credential source that counts calls (the seam's real implementation is STS)."""

    role_arn = ROLE

    def __init__(self, lifetime_ms: int = 900_000, delay: float = 0.05, fail: bool = False) -> None:
        self.calls = 0
        self.lifetime_ms = lifetime_ms
        self.delay = delay
        self.fail = fail
        self.now_ms = 1_000_000

    async def assume(self, policy: str, session_name: str, tags: Mapping[str, str]) -> TemporaryCredentials:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise Forbidden("denied")
        return TemporaryCredentials(f"ASIA{self.calls}", "secret", "token", self.now_ms + self.lifetime_ms)


def test_concurrent_misses_share_one_call_and_hits_reuse_it() -> None:
    source = Source()
    cache = CredentialCache(margin_seconds=60, entries=10, clock=lambda: source.now_ms / 1000)
    key = (ROLE, (TABLE,), True, "alice")

    async def burst() -> list[TemporaryCredentials]:
        return await asyncio.gather(*(cache.get(key, lambda: source.assume("", "", {})) for _ in range(200)))

    results = asyncio.run(burst())
    assert source.calls == 1
    assert {r.access_key_id for r in results} == {"ASIA1"}
    assert (cache.misses, cache.hits) == (1, 199)


def test_credentials_are_refreshed_inside_the_margin_and_errors_are_not_cached() -> None:
    source = Source(lifetime_ms=900_000)
    cache = CredentialCache(margin_seconds=300, entries=10, clock=lambda: source.now_ms / 1000)
    key = (ROLE, (TABLE,), False, "alice")

    def get() -> TemporaryCredentials:
        return asyncio.run(cache.get(key, lambda: source.assume("", "", {})))

    assert get().access_key_id == "ASIA1"
    source.now_ms += 599_000  # 301 s left: still outside the margin
    assert get().access_key_id == "ASIA1"
    source.now_ms += 2_000  # 299 s left: refreshed
    assert get().access_key_id == "ASIA2"
    source.fail = True
    source.now_ms += 900_000
    with pytest.raises(Forbidden):
        get()
    source.fail = False
    assert get().access_key_id == "ASIA4"


def test_keys_differ_by_access_and_principal_and_the_cache_is_bounded() -> None:
    source = Source(delay=0)
    cache = CredentialCache(margin_seconds=0, entries=2, clock=lambda: source.now_ms / 1000)

    async def get(write: bool, principal: str) -> str:
        found = await cache.get((ROLE, (TABLE,), write, principal), lambda: source.assume("", "", {}))
        return found.access_key_id

    async def scenario() -> list[str]:
        return [await get(True, "a"), await get(False, "a"), await get(True, "b"), await get(True, "a")]

    assert asyncio.run(scenario()) == ["ASIA1", "ASIA2", "ASIA3", "ASIA4"]  # ("a", write) was evicted


# Remote-signing scope -------------------------------------------------------------------------------
ENDPOINT = "http://127.0.0.1:5000"


def test_parse_target_path_style_and_virtual_hosted() -> None:
    path_style = parse_target(f"{ENDPOINT}/lake/wh/sales/orders/a%20b.parquet?x=1", ENDPOINT, {"lake"})
    assert (path_style.bucket, path_style.key, path_style.query) == (
        "lake",
        "wh/sales/orders/a b.parquet",
        {"x": ["1"]},
    )
    virtual = parse_target("https://lake.s3.us-east-1.amazonaws.com/wh/sales/orders/f", ENDPOINT, {"lake"})
    assert (virtual.bucket, virtual.key) == ("lake", "wh/sales/orders/f")
    with pytest.raises(Forbidden, match=r"evil\.example"):
        parse_target("https://evil.example/lake/wh/sales/orders/f", ENDPOINT, {"lake"})
    with pytest.raises(BadRequest):
        parse_target("ftp://lake/x", ENDPOINT, {"lake"})


def target(uri: str) -> S3Target:
    return parse_target(f"{ENDPOINT}/{uri}", ENDPOINT, {"lake"})


def test_scope_allows_the_table_and_refuses_siblings_and_writes_without_privilege() -> None:
    check_scope(target("lake/wh/sales/orders/data/f.parquet"), "GET", [TABLE], write=False)
    check_scope(target("lake/wh/sales/orders/data/f.parquet"), "PUT", [TABLE], write=True)
    check_scope(target("lake?list-type=2&prefix=wh/sales/orders/"), "GET", [TABLE], write=False)
    check_scope(target("lake?location"), "GET", [TABLE], write=False)
    refused = [
        ("lake/wh/sales/orders_v2/f.parquet", "GET", True),
        ("lake/wh/sales/orders/data/f.parquet", "PUT", False),
        ("lake/wh/sales/orders/data/f.parquet", "DELETE", False),
        ("lake?list-type=2&prefix=wh/sales/", "GET", True),
        ("lake?list-type=2", "GET", True),
        ("other/wh/sales/orders/f", "GET", True),
        ("lake/wh/sales/orders/f", "PATCH", True),
        ("lake", "PUT", True),
    ]
    for uri, method, write in refused:
        with pytest.raises(Forbidden):
            check_scope(target(uri), method, [TABLE], write=write)


def test_delete_objects_is_checked_key_by_key() -> None:
    inside = (
        "<Delete><Object><Key>wh/sales/orders/a</Key></Object><Object><Key>wh/sales/orders/b</Key></Object></Delete>"
    )
    outside = "<Delete><Object><Key>wh/sales/orders/a</Key></Object><Object><Key>wh/sales/x</Key></Object></Delete>"
    delete = target("lake?delete")
    check_scope(delete, "POST", [TABLE], write=True, body=inside)
    with pytest.raises(Forbidden, match="s3://lake/wh/sales/x"):
        check_scope(delete, "POST", [TABLE], write=True, body=outside)
    with pytest.raises(Forbidden, match="body"):
        check_scope(delete, "POST", [TABLE], write=True)
