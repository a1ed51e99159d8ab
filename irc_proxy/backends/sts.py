"""STS ``AssumeRole`` with an inline session policy: short-lived credentials for one table's storage.

Throttling is retried here with exponential backoff and jitter (the SDK's own retries are off, so the
attempt count is exact); only after ``sts_max_attempts`` does the caller see ServiceUnavailable (503).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from irc_proxy.backends.aws import aws_errors, error_code, session_for
from irc_proxy.errors import BadRequest, ServiceUnavailable
from irc_proxy.metrics import STS_CALLS
from irc_proxy.settings import CatalogSettings, GlueCatalogSettings, VendingSettings
from irc_proxy.threads import ThreadRunner

if TYPE_CHECKING:
    import boto3

log = logging.getLogger("irc_proxy.sts")
STS_THROTTLED = {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}
_POLICY_REJECTED = {"PackedPolicyTooLarge", "MalformedPolicyDocument"}


class _NotRetried(ServiceUnavailable):
    """STS answered with an error that another attempt would not fix."""


@dataclass(frozen=True)
class TemporaryCredentials:
    """One set of STS session credentials (never log these)."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expires_at_ms: int

    def __repr__(self) -> str:
        return f"TemporaryCredentials(access_key_id={self.access_key_id!r}, expires_at_ms={self.expires_at_ms})"


class StsCredentials:
    """Assumes one role for one catalog; blocking boto3 calls run in the thread pool."""

    def __init__(self, settings: VendingSettings, base: boto3.Session, region: str, threads: ThreadRunner) -> None:
        from botocore.config import Config  # deferred: only a catalog with vending needs botocore's client

        self._settings = settings
        self._threads = threads
        self._client: Any = base.client(
            "sts",
            region_name=region,
            endpoint_url=settings.sts_endpoint_url or None,
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=15),
        )
        self.calls = 0
        """AssumeRole requests sent (including throttled ones)."""

    @property
    def settings(self) -> VendingSettings:
        return self._settings

    @property
    def role_arn(self) -> str:
        return self._settings.role_arn

    async def assume(self, policy: str, session_name: str, tags: Mapping[str, str]) -> TemporaryCredentials:
        """Credentials of the role restricted by ``policy`` (a JSON document).

        Raises:
            ServiceUnavailable: STS kept throttling (or failing) after every attempt.
            Forbidden: STS refused to let the proxy assume the role.
        """
        attempts = self._settings.sts_max_attempts
        for attempt in range(attempts):
            try:
                return await self._threads.run(self._assume_once, policy, session_name, tags)
            except ServiceUnavailable as exc:
                if attempt + 1 == attempts or isinstance(exc, _NotRetried):
                    raise
                delay = self._settings.sts_backoff_seconds * 2**attempt
                await asyncio.sleep(delay * (0.5 + random.random()))  # noqa: S311 (jitter, not a secret)
        raise AssertionError("unreachable")

    def _assume_once(self, policy: str, session_name: str, tags: Mapping[str, str]) -> TemporaryCredentials:
        args: dict[str, Any] = {
            "RoleArn": self._settings.role_arn,
            "RoleSessionName": session_name,
            "Policy": policy,
            "DurationSeconds": self._settings.duration_seconds,
        }
        if self._settings.external_id is not None:
            args["ExternalId"] = self._settings.external_id.get_secret_value()
        if tags and self._settings.session_tags:
            args["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
        self.calls += 1
        STS_CALLS.inc()
        try:
            with aws_errors("STS AssumeRole"):
                reply = self._client.assume_role(**args)
        except ClientError as exc:
            code = error_code(exc)
            if code in STS_THROTTLED:
                log.warning("STS AssumeRole throttled (%s)", code)
                raise ServiceUnavailable(f"STS AssumeRole is throttled ({code}); retry later") from exc
            if code in _POLICY_REJECTED:
                raise BadRequest(f"STS rejected the table's session policy ({code})") from exc
            raise _NotRetried(f"STS AssumeRole failed ({code or 'unknown error'})") from exc
        found = reply["Credentials"]
        return TemporaryCredentials(
            access_key_id=found["AccessKeyId"],
            secret_access_key=found["SecretAccessKey"],
            session_token=found["SessionToken"],
            expires_at_ms=int(found["Expiration"].timestamp() * 1000),
        )


def sts_for(settings: CatalogSettings, threads: ThreadRunner) -> StsCredentials | None:
    """The STS client of a catalog with a ``vending`` table (None without one).

    A Glue catalog calls STS with its own credentials (keys, role); a local catalog with the default chain.
    """
    vending: VendingSettings | None = getattr(settings, "vending", None)
    if vending is None:
        return None
    if isinstance(settings, GlueCatalogSettings):
        base = session_for(settings)
        region = vending.sts_region or settings.region
    else:
        import boto3  # deferred (~0.4 s): only a catalog with vending needs it

        base = boto3.Session()
        region = vending.sts_region or base.region_name or "us-east-1"
    return StsCredentials(vending, base, region, threads)
