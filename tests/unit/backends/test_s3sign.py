"""Remote signing of S3 requests: a fresh SigV4 signature for S3 replaces whatever the client sent,
the path is signed as sent, and the client's payload hash is kept."""

from __future__ import annotations

from irc_proxy.backends.s3sign import sign_s3_request
from irc_proxy.backends.sts import TemporaryCredentials

CREDENTIALS = TemporaryCredentials("ASIAEXAMPLE", "secret-key", "session-token", 0)
URI = "https://bucket.s3.eu-west-1.amazonaws.com/wh/t/data/a%3Db/file.parquet"


def signature(headers: dict[str, list[str]]) -> str:
    return headers["Authorization"][0].rsplit("Signature=", 1)[1]


def test_a_request_is_signed_for_s3_with_the_session_token_replacing_stale_values() -> None:
    signed = sign_s3_request(
        CREDENTIALS,
        "eu-west-1",
        "get",
        URI,
        {"Range": ["bytes=0-99"], "authorization": ["AWS4-HMAC-SHA256 stale"], "X-Amz-Date": ["19700101T000000Z"]},
    )
    authorization = signed["Authorization"][0]
    date = signed["X-Amz-Date"][0]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/{date[:8]}/eu-west-1/s3/aws4_request")
    assert "range" in authorization.split("SignedHeaders=")[1]
    assert signed["X-Amz-Security-Token"] == ["session-token"]
    assert signed["X-Amz-Content-SHA256"] == ["UNSIGNED-PAYLOAD"]
    assert signed["Range"] == ["bytes=0-99"]
    assert "authorization" not in signed and date != "19700101T000000Z"


def test_the_clients_payload_hash_is_kept_and_signed() -> None:
    body_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    signed = sign_s3_request(CREDENTIALS, "eu-west-1", "PUT", URI, {"x-amz-content-sha256": [body_hash]})
    assert [v for k, v in signed.items() if k.lower() == "x-amz-content-sha256"] == [[body_hash]]
    unsigned = sign_s3_request(CREDENTIALS, "eu-west-1", "PUT", URI, {})
    assert signature(signed) != signature(unsigned)


def test_the_path_is_signed_as_sent_not_normalised() -> None:
    paths = ("/a/b", "/a//b", "/a/./b")
    for _ in range(5):  # the three signed within one second (X-Amz-Date), so that only the path differs
        signed = [sign_s3_request(CREDENTIALS, "eu-west-1", "GET", f"https://b.s3.amazonaws.com{p}", {}) for p in paths]
        if len({s["X-Amz-Date"][0] for s in signed}) == 1:
            break
    assert len({s["X-Amz-Date"][0] for s in signed}) == 1
    assert len({signature(s) for s in signed}) == 3
