"""SigV4-sign an S3 request on a client's behalf (remote signing), with botocore's signer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from botocore.auth import UNSIGNED_PAYLOAD, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from irc_proxy.backends.sts import TemporaryCredentials

_CONTENT_SHA256 = "X-Amz-Content-SHA256"
# Replaced by the signature: a client's stale values must not survive next to the new ones.
_REPLACED = {"authorization", "x-amz-date", "x-amz-security-token"}


class _S3RequestSigner(SigV4Auth):  # type: ignore[misc]
    """SigV4 for S3 as a remote signer needs it: the path is signed as sent (no normalisation) and the
    client's ``x-amz-content-sha256`` (a body hash or ``UNSIGNED-PAYLOAD``) is kept, since the body
    itself is not here."""

    def _normalize_url_path(self, path: str) -> str:
        return path

    def _modify_request_before_signing(self, request: AWSRequest) -> None:
        super()._modify_request_before_signing(request)
        if _CONTENT_SHA256 not in request.headers:
            request.headers[_CONTENT_SHA256] = UNSIGNED_PAYLOAD


def sign_s3_request(
    credentials: TemporaryCredentials,
    region: str,
    method: str,
    uri: str,
    headers: Mapping[str, Sequence[str]],
) -> dict[str, list[str]]:
    """The request's headers plus ``Authorization``, ``X-Amz-Date`` and the session token, signed."""
    kept = {name: ",".join(values) for name, values in headers.items() if name.lower() not in _REPLACED}
    request = AWSRequest(method=method.upper(), url=uri, headers=kept)
    signer = _S3RequestSigner(
        Credentials(credentials.access_key_id, credentials.secret_access_key, credentials.session_token), "s3", region
    )
    signer.add_auth(request)
    signed: dict[str, list[str]] = {name: list(values) for name, values in headers.items()}
    for name in list(signed):
        if name.lower() in _REPLACED or name.lower() == _CONTENT_SHA256.lower():
            del signed[name]
    for name, value in request.headers.items():
        if name.lower() in _REPLACED or name.lower() == _CONTENT_SHA256.lower():
            signed[name] = [value]
    return signed
