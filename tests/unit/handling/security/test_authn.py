from __future__ import annotations

import pytest

from irc_proxy.handling.security.authn import hash_secret, roles_from, verify_secret
from irc_proxy.http.auth import bearer_token


def test_hashed_secret_verifies_only_the_same_secret() -> None:
    hashed = hash_secret("s3cret")
    assert hashed.startswith("scrypt$") and "s3cret" not in hashed
    assert verify_secret("s3cret", hashed)
    assert not verify_secret("s3cret!", hashed)
    assert not verify_secret("s3cret", "garbage")
    assert hash_secret("s3cret") != hashed  # salted


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("bearer abc ", "abc"), ("Bearer None", None), ("Bearer", None), ("Basic abc", None)],
)
def test_bearer_token_treats_pyicebergs_none_as_missing(header: str, token: str | None) -> None:
    assert bearer_token(header) == token


def test_roles_claim_accepts_lists_and_strings() -> None:
    assert roles_from(["a", "b"]) == ("a", "b")
    assert roles_from("a b,c") == ("a", "b", "c")
    assert roles_from(None) == ()
