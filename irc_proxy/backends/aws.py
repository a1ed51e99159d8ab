"""AWS sessions and clients from a catalog's settings, and boto errors mapped to domain errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ParamValidationError,
    ReadTimeoutError,
)

from irc_proxy.errors import BadRequest, CatalogError, CommitStateUnknown, Forbidden, ServiceUnavailable
from irc_proxy.settings import AwsCredentialSettings, GlueCatalogSettings

if TYPE_CHECKING:
    import boto3
    from botocore.config import Config

THROTTLED = {"ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded", "SlowDown"}
DENIED = {"AccessDeniedException", "AccessDenied", "UnauthorizedOperation", "UnrecognizedClientException"}


def session_for(settings: AwsCredentialSettings) -> boto3.Session:
    """Static keys, else the default chain; with ``role_arn``, credentials of that role (auto-refreshed)."""
    # deferred (~0.4 s at start-up): boto3 is needed only by a catalog that calls AWS
    import boto3
    import botocore.session
    from botocore.credentials import AssumeRoleCredentialFetcher, DeferredRefreshableCredentials

    base = boto3.Session(
        region_name=settings.region,
        aws_access_key_id=settings.access_key_id.get_secret_value() if settings.access_key_id else None,
        aws_secret_access_key=settings.secret_access_key.get_secret_value() if settings.secret_access_key else None,
        aws_session_token=settings.session_token.get_secret_value() if settings.session_token else None,
    )
    if not settings.role_arn:
        return base
    extra: dict[str, Any] = {"RoleSessionName": settings.role_session_name}
    if settings.role_external_id:
        extra["ExternalId"] = settings.role_external_id.get_secret_value()

    def create_client(service: str, **kwargs: Any) -> Any:
        if service == "sts" and settings.sts_endpoint_url:
            kwargs["endpoint_url"] = settings.sts_endpoint_url
        return base.client(service, **kwargs)

    fetcher = AssumeRoleCredentialFetcher(
        client_creator=create_client,
        source_credentials=base.get_credentials(),
        role_arn=settings.role_arn,
        extra_args=extra,
    )
    core = botocore.session.get_session()
    core._credentials = DeferredRefreshableCredentials(method="assume-role", refresh_using=fetcher.fetch_credentials)
    return boto3.Session(botocore_session=core, region_name=settings.region)


def client_config(settings: GlueCatalogSettings) -> Config:
    from botocore.config import Config  # deferred: only a Glue catalog needs botocore's client

    return Config(
        retries={"max_attempts": settings.max_attempts, "mode": settings.retry_mode},
        max_pool_connections=settings.max_concurrency,
        connect_timeout=min(settings.timeout_seconds, 10.0),
        read_timeout=settings.timeout_seconds,
    )


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def aws_errors(operation: str, *, mutation_sent: bool = False) -> Iterator[None]:
    """Translate what boto raises after its own retries.

    Throttling, 5xx and unreachable endpoints are 503 (nothing happened). Access denied is 403 and
    names the operation, never the credentials. With ``mutation_sent``, a timeout or dropped
    connection after the request went out is CommitStateUnknown: the change may have happened.
    """
    try:
        yield
    except CatalogError:
        raise
    except ClientError as exc:
        code = error_code(exc)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in DENIED or status == 403:  # an IAM or endpoint-policy denial may come back unparsed
            raise Forbidden(f"The backend denied {operation}") from exc
        if code in THROTTLED or status >= 500:
            if mutation_sent and status >= 500:
                raise CommitStateUnknown(
                    f"{operation} failed with {code or status}; the commit state is unknown"
                ) from exc
            raise ServiceUnavailable(f"{operation} is throttled or failing ({code or status}); retry later") from exc
        if code in ("InvalidInputException", "ValidationException"):
            raise BadRequest(f"{operation} rejected the input: {exc.response['Error'].get('Message', code)}") from exc
        raise
    except (ReadTimeoutError, ConnectionClosedError) as exc:
        what = "timed out" if isinstance(exc, ReadTimeoutError) else "lost its connection"
        if mutation_sent:
            raise CommitStateUnknown(f"{operation} {what} after it was sent; the commit state is unknown") from exc
        raise ServiceUnavailable(f"{operation} {what}") from exc
    except (EndpointConnectionError, ConnectTimeoutError) as exc:
        raise ServiceUnavailable(f"The backend is unreachable for {operation}") from exc
    except ParamValidationError as exc:  # botocore checks the input against Glue's model before sending
        raise BadRequest(f"{operation} rejected the input: {' '.join(str(exc).split())}") from exc
    except BotoCoreError as exc:
        raise ServiceUnavailable(f"{operation} failed: {type(exc).__name__}") from exc
