"""STS AssumeRole for vended credentials, against moto's STS behind a recording, throttling HTTP front:
the exact request sent, throttling retried a bounded number of times, refusals not retried."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import boto3
import pytest

from irc_proxy.backends.sts import StsCredentials, TemporaryCredentials, sts_for
from irc_proxy.errors import ServiceUnavailable
from irc_proxy.settings import GlueCatalogSettings, LocalCatalogSettings, VendingSettings
from irc_proxy.threads import ThreadRunner
from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, moto_server
from tests.support.fake_sts import FakeSts, fake_sts

ROLE = "arn:aws:iam::123456789012:role/reader"
POLICY = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
)


@pytest.fixture(scope="module")
def sts() -> Iterator[FakeSts]:
    with moto_server() as endpoint, fake_sts(endpoint) as front:
        yield front


def credentials(endpoint: str, **vending: object) -> StsCredentials:
    settings = VendingSettings.model_validate(
        {"role_arn": ROLE, "sts_endpoint_url": endpoint, "sts_backoff_seconds": 0, "sts_max_attempts": 3} | vending
    )
    base = boto3.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION)
    return StsCredentials(settings, base, REGION, ThreadRunner(2))


def test_assume_role_sends_the_policy_tags_duration_and_external_id(sts: FakeSts) -> None:
    sts.reset()
    source = credentials(sts.url, external_id="ext-1", duration_seconds=900)
    got = asyncio.run(source.assume(POLICY, "irc-proxy-alice", {"catalog": "lake", "table": "orders"}))
    assert isinstance(got, TemporaryCredentials) and got.access_key_id and got.session_token
    assert 0 < got.expires_at_ms - time.time() * 1000 <= 900_000 + 5_000
    (call,) = sts.assume_role_calls()
    assert (call["RoleArn"], call["RoleSessionName"], call["DurationSeconds"]) == (ROLE, "irc-proxy-alice", "900")
    assert json.loads(call["Policy"]) == json.loads(POLICY)
    assert call["ExternalId"] == "ext-1"
    assert {
        (call["Tags.member.1.Key"], call["Tags.member.1.Value"]),
        (call["Tags.member.2.Key"], call["Tags.member.2.Value"]),
    } == {("catalog", "lake"), ("table", "orders")}
    assert got.secret_access_key not in repr(got)


def test_session_tags_can_be_turned_off(sts: FakeSts) -> None:
    sts.reset()
    asyncio.run(credentials(sts.url, session_tags=False).assume(POLICY, "session", {"catalog": "lake"}))
    assert not any(key.startswith("Tags") for key in sts.assume_role_calls()[0])


def test_throttling_is_retried_until_an_attempt_succeeds(sts: FakeSts) -> None:
    sts.reset()
    sts.throttle_next = 2
    source = credentials(sts.url)
    assert asyncio.run(source.assume(POLICY, "session", {})).access_key_id
    assert source.calls == 3


def test_throttling_on_every_attempt_is_service_unavailable_after_exactly_max_attempts(sts: FakeSts) -> None:
    sts.reset()
    sts.throttle_next = 5
    source = credentials(sts.url)
    with pytest.raises(ServiceUnavailable, match="STS AssumeRole is throttled"):
        asyncio.run(source.assume(POLICY, "session", {}))
    assert source.calls == 3
    sts.throttle_next = 0


def test_an_unreachable_sts_is_service_unavailable_after_every_attempt() -> None:
    source = credentials("http://127.0.0.1:9")
    with pytest.raises(ServiceUnavailable, match="unreachable for STS AssumeRole"):
        asyncio.run(source.assume(POLICY, "session", {}))
    assert source.calls == 3


def test_only_catalogs_with_a_vending_table_get_an_sts_client() -> None:
    assert sts_for(LocalCatalogSettings(), ThreadRunner(1)) is None
    glue = GlueCatalogSettings(
        kind="glue", warehouse="s3://b/wh", region="eu-west-1", catalog_id="123456789012",
        vending=VendingSettings(role_arn=ROLE),
    )  # fmt: skip
    source = sts_for(glue, ThreadRunner(1))
    assert source is not None and source.role_arn == ROLE
    assert source._client.meta.region_name == "eu-west-1"  # the Glue catalog's region unless sts_region says
