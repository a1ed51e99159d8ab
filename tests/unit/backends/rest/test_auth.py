"""Upstream authentication of a ``kind = "rest"`` catalog: SigV4 signing and the settings that pick a mode."""

from __future__ import annotations

import asyncio
import hashlib

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from pydantic import SecretStr

from irc_proxy.backends.rest.auth import SigV4
from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.settings import ConfigError, RestUpstreamAuthSettings, load_settings
from irc_proxy.threads import ThreadRunner

GLUE = "https://glue.us-east-1.amazonaws.com/iceberg/v1/catalogs/123456789012/namespaces"


def sigv4(signing_name: str = "glue", session_token: str | None = None) -> SigV4:
    return SigV4(
        RestUpstreamAuthSettings(
            mode="sigv4",
            signing_name=signing_name,  # type: ignore[arg-type]
            region="us-east-1",
            access_key_id=SecretStr("AKIDEXAMPLE"),
            secret_access_key=SecretStr("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token=SecretStr(session_token) if session_token else None,
        ),
        ThreadRunner(2),
    )


@pytest.mark.parametrize("name", ["glue", "s3tables"])
def test_sigv4_signs_body_hash_host_and_date_with_the_signing_name(name: str) -> None:
    body = b'{"namespace": ["a"], "properties": {}}'
    request = httpx.Request("POST", GLUE, content=body, headers={"Content-Type": "application/json"})
    asyncio.run(sigv4(name, session_token="session").apply(request))
    authorization = request.headers["authorization"]
    date = request.headers["x-amz-date"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{date[:8]}/us-east-1/{name}/aws4_request")
    assert "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token" in authorization
    assert request.headers["x-amz-content-sha256"] == hashlib.sha256(body).hexdigest()
    assert request.headers["x-amz-security-token"] == "session"
    # botocore, given the same request and timestamp, computes the same signature.
    check = AWSRequest("POST", GLUE, data=body, headers={k: request.headers[k] for k in ("content-type",)})
    check.headers["X-Amz-Content-SHA256"] = request.headers["x-amz-content-sha256"]
    check.context["timestamp"] = date
    signer = SigV4Auth(
        Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session"), name, "us-east-1"
    )
    check.headers["X-Amz-Date"] = date
    check.headers["X-Amz-Security-Token"] = "session"
    expected = signer.signature(signer.string_to_sign(check, signer.canonical_request(check)), check)
    assert authorization.endswith(f"Signature={expected}")


def test_sigv4_catalogs_map_nested_namespaces_by_default() -> None:
    settings = load_settings(
        environ={
            "IRC_PROXY_CATALOGS__GLUE__KIND": "rest",
            "IRC_PROXY_CATALOGS__GLUE__URI": "https://glue.us-east-1.amazonaws.com/iceberg",
            "IRC_PROXY_CATALOGS__GLUE__WAREHOUSE": "123456789012",
            "IRC_PROXY_CATALOGS__GLUE__AUTH__MODE": "sigv4",
            "IRC_PROXY_CATALOGS__GLUE__AUTH__REGION": "us-east-1",
            "IRC_PROXY_CATALOGS__GLUE__AUTH__ACCESS_KEY_ID": "AKIDEXAMPLE",
            "IRC_PROXY_CATALOGS__GLUE__AUTH__SECRET_ACCESS_KEY": "hush-hush-value",
        }
    )
    catalog = settings.catalogs["glue"]
    upstream = RestUpstream("glue", catalog, ThreadRunner(2))  # type: ignore[arg-type]
    try:
        assert upstream.mapped_namespaces
        assert "hush-hush-value" not in repr(catalog)
    finally:
        asyncio.run(upstream.close())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AUTH__MODE": "oauth2", "AUTH__CLIENT_ID": "x"}, "client_secret are required"),
        ({"AUTH__MODE": "token"}, "auth.token is required"),
        ({"AUTH__MODE": "sigv4"}, "auth.region is required"),
        ({"URI": "ftp://x"}, "catalogs.r.uri"),
        ({"AUTH__PASSWORD": "x"}, "catalogs.r.auth.password: unknown key"),
    ],
)
def test_bad_rest_settings_name_the_key(env: dict[str, str], message: str) -> None:
    environ = {"IRC_PROXY_CATALOGS__R__KIND": "rest", "IRC_PROXY_CATALOGS__R__URI": "http://up"}
    environ |= {f"IRC_PROXY_CATALOGS__R__{key}": value for key, value in env.items()}
    with pytest.raises(ConfigError, match=message):
        load_settings(environ=environ)
