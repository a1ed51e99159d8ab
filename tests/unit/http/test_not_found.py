"""The 404 of a path no route serves: which part of a wrong base URI to drop, and nothing raw echoed."""

from __future__ import annotations

import pytest

from irc_proxy.http.errors import SHOWN_PATH, unknown_path


@pytest.mark.parametrize(
    ("path", "drop"),
    [
        ("/v1/v1/config", "end in /v1:"),
        ("/v1/v1", "end in /v1:"),
        ("/v1/local/v1/config", "end in /v1/local:"),
        ("/api/catalog/v1/config", "include /api/catalog:"),
        ("/iceberg/v1/namespaces/a", "include /iceberg:"),
        ("/iceberg/v1", "include /iceberg:"),
    ],
)
def test_a_wrong_base_uri_names_the_part_to_drop(path: str, drop: str) -> None:
    message = unknown_path("GET", path)
    assert message.startswith(f"No route for GET {path}: ")
    assert f"the client's uri seems to {drop}" in message


@pytest.mark.parametrize("path", ["/", "/v1", "/api/catalog", "/v1/local/namespace", "/v1/ns/a/v1/tables"])
def test_any_other_path_gets_the_base(path: str) -> None:
    assert unknown_path("GET", path) == (
        f"No route for GET {path}: the catalog API is /v1/config and /v1/{{prefix}}/namespaces/... "
        "(GET /v1/config lists every endpoint)"
    )


def test_control_characters_are_escaped_and_a_long_path_is_cut() -> None:
    message = unknown_path("GET", "/api/\x1b[31m\u202e\x9b/" + "x" * 5000 + "/v1/config")
    assert "\\x1b[31m\\u202e\\x9b/" in message
    assert not any(ch in message for ch in "\x1b\u202e\x9b")
    assert len(message) < SHOWN_PATH + 400
    assert "x" * (SHOWN_PATH + 1) not in message
