"""boto errors in the domain's terms: throttling and 5xx are 503, a 5xx after a commit was sent is 504,
denials 403 naming the operation, rejected input 400; everything else passes through."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)
from pydantic import SecretStr

from irc_proxy.backends.aws import aws_errors, client_config, session_for
from irc_proxy.errors import BadRequest, CatalogError, CommitStateUnknown, Forbidden, NoSuchTable, ServiceUnavailable
from irc_proxy.settings import GlueCatalogSettings


def client_error(code: str, status: int, message: str = "details") -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "UpdateTable")


@pytest.mark.parametrize(
    ("raised", "mutation_sent", "expected", "message"),
    [
        (client_error("ThrottlingException", 400), False, ServiceUnavailable, "throttled or failing"),
        (client_error("ThrottlingException", 400), True, ServiceUnavailable, "ThrottlingException"),
        (client_error("InternalServiceException", 500), False, ServiceUnavailable, "retry later"),
        (client_error("InternalServiceException", 500), True, CommitStateUnknown, "commit state is unknown"),
        (client_error("AccessDeniedException", 400), False, Forbidden, "The backend denied UpdateTable"),
        (client_error("", 403), False, Forbidden, "denied"),
        (client_error("InvalidInputException", 400, "bad name"), False, BadRequest, "rejected the input: bad name"),
        (ReadTimeoutError(endpoint_url="http://glue"), False, ServiceUnavailable, "UpdateTable timed out"),
        (ReadTimeoutError(endpoint_url="http://glue"), True, CommitStateUnknown, "timed out after it was sent"),
        (ConnectionClosedError(endpoint_url="http://glue"), True, CommitStateUnknown, "lost its connection"),
        (EndpointConnectionError(endpoint_url="http://glue"), True, ServiceUnavailable, "unreachable"),
        (ConnectTimeoutError(endpoint_url="http://glue"), False, ServiceUnavailable, "unreachable"),
        (ParamValidationError(report="Invalid length\n  for Name"), False, BadRequest, "Invalid length for Name"),
        (NoCredentialsError(), False, ServiceUnavailable, "UpdateTable failed: NoCredentialsError"),
    ],
)
def test_boto_errors_become_domain_errors(
    raised: Exception, mutation_sent: bool, expected: type[CatalogError], message: str
) -> None:
    with pytest.raises(expected, match=message) as caught, aws_errors("UpdateTable", mutation_sent=mutation_sent):
        raise raised
    assert type(caught.value) is expected
    assert caught.value.__cause__ is raised


def test_a_client_error_it_does_not_know_and_domain_errors_pass_through() -> None:
    unknown = client_error("EntityNotFoundException", 400)
    with pytest.raises(ClientError) as caught, aws_errors("GetTable"):
        raise unknown
    assert caught.value is unknown
    with pytest.raises(NoSuchTable), aws_errors("GetTable"):
        raise NoSuchTable("t")


def test_static_keys_make_the_session_and_settings_make_the_client_config() -> None:
    settings = GlueCatalogSettings(
        kind="glue", warehouse="s3://b/wh", region="eu-west-1", catalog_id="123456789012",
        access_key_id=SecretStr("AKID"), secret_access_key=SecretStr("hush"),
        max_attempts=3, max_concurrency=7, timeout_seconds=45,
    )  # fmt: skip
    session = session_for(settings)
    frozen = session.get_credentials().get_frozen_credentials()
    assert (frozen.access_key, frozen.secret_key, session.region_name) == ("AKID", "hush", "eu-west-1")
    config = client_config(settings)
    assert config.retries == {"max_attempts": 3, "mode": "standard"}
    assert (config.max_pool_connections, config.connect_timeout, config.read_timeout) == (7, 10.0, 45)
