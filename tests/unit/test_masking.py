"""The one masking function: passwords and credential-looking query values never survive it."""

from __future__ import annotations

import json

import pytest

from irc_proxy.masking import mask_text, mask_url
from irc_proxy.settings import SecretUrl, load_settings


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql+psycopg://irc:s3cret@db:5432/irc", "postgresql+psycopg://irc:***@db:5432/irc"),
        ("postgresql://irc:p@ss@db/irc", "postgresql://irc:***@db/irc"),
        ("postgresql://irc@db/irc", "postgresql://irc@db/irc"),
        ("https://alice:pw@rest.example/api", "https://alice:***@rest.example/api"),
        ("https://ghp_tokenvalue@rest.example/api", "https://***@rest.example/api"),
        ("https://hooks.example/audit?token=abc&x=1", "https://hooks.example/audit?token=***&x=1"),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ff&versionId=2",
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&versionId=2",
        ),
        (
            "https://h/p?sig=abc&sigma=2&api_key=k&client_secret=s",
            "https://h/p?sig=***&sigma=2&api_key=***&client_secret=***",
        ),
        ("https://h/p?password=pw#frag", "https://h/p?password=***#frag"),
        ("sqlite:////var/lib/irc/state.db", "sqlite:////var/lib/irc/state.db"),
        ("s3://bucket/wh/t?versionId=3", "s3://bucket/wh/t?versionId=3"),
    ],
)
def test_mask_url_hides_passwords_and_credential_parameters_only(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_mask_text_masks_every_url_and_keyword_password_in_a_message() -> None:
    text = (
        'connection to "postgresql+psycopg://irc:hunter2@db/irc" failed; webhook '
        "https://h.example/x?token=tok123 refused; dsn host=db password=pw123 user=irc"
    )
    masked = mask_text(text)
    for secret in ("hunter2", "tok123", "pw123"):
        assert secret not in masked
    assert "db/irc" in masked and "h.example/x" in masked and "user=irc" in masked


def test_mask_text_leaves_text_without_urls_alone() -> None:
    assert mask_text("GET /v1/local/namespaces 200 1.2ms id=abc") == "GET /v1/local/namespaces 200 1.2ms id=abc"


def test_secret_url_keeps_the_value_for_consumers_and_masks_every_rendering() -> None:
    url = SecretUrl("postgresql+psycopg://irc:s3cret@db/irc")
    assert url.get_secret_value() == "postgresql+psycopg://irc:s3cret@db/irc"
    for shown in (str(url), repr(url), f"{url}"):
        assert "s3cret" not in shown and "db/irc" in shown
    assert not SecretUrl("") and url


def test_settings_type_database_webhook_and_upstream_urls_as_secrets() -> None:
    settings = load_settings(
        environ={
            "IRC_PROXY_STATE__DATABASE_URL": "postgresql+psycopg://irc:statepw@db/irc",
            "IRC_PROXY_AUDIT__WEBHOOK__URL": "https://hooks.example/a?token=hooktok",
            "IRC_PROXY_CATALOGS__UP__KIND": "rest",
            "IRC_PROXY_CATALOGS__UP__URI": "https://u:uppw@rest.example",
            "IRC_PROXY_CATALOGS__LOC__DATABASE_URL": "postgresql+psycopg://c:catpw@db/c",
        }
    )
    dumped = settings.model_dump_json() + repr(settings)
    for secret in ("statepw", "hooktok", "uppw", "catpw"):
        assert secret not in dumped
    assert settings.state.database_url.get_secret_value() == "postgresql+psycopg://irc:statepw@db/irc"


def test_mask_text_keeps_a_json_log_line_valid() -> None:
    line = json.dumps({"message": 'failed: "https://h/x?token=tok123" and "postgresql://u:pw123@h/db"'})
    masked = mask_text(line)
    assert "tok123" not in masked and "pw123" not in masked
    assert json.loads(masked)["message"].startswith("failed: ")


@pytest.mark.parametrize("name", ["password", "PASSWD", "Pwd", "pa\u017fsword"])
def test_mask_text_masks_keyword_passwords_in_any_case_the_pattern_matches(name: str) -> None:
    # A log line is searched only when a name the pattern looks for is in it, compared case-folded as the
    # pattern's IGNORECASE does (the long s is an s to it).
    assert mask_text(f"GET /x id=1 dsn host=db {name}=pw123 user=irc") == f"GET /x id=1 dsn host=db {name}=*** user=irc"
