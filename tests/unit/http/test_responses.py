"""The load path's responses, built directly, carry what Starlette's ``Response`` would: same headers, same order."""

from __future__ import annotations

import pytest
from starlette.responses import Response

from irc_proxy.http.responses import EncodedJSON, etag_matches, not_modified


@pytest.mark.parametrize("status", [200, 201, 204, 304, 101])
@pytest.mark.parametrize("tag", ['"0123abcd"', None])
def test_an_encoded_json_answer_has_starlettes_headers(status: int, tag: str | None) -> None:
    body = b'{"metadata-location":"s3://b/t/metadata/1.json","metadata":{}}'
    headers = {} if tag is None else {"ETag": tag}
    theirs = Response(body, status_code=status, media_type="application/json", headers=headers)
    ours = EncodedJSON(body, status, tag)
    assert (ours.status_code, ours.body, ours.raw_headers) == (theirs.status_code, theirs.body, theirs.raw_headers)
    assert ours.background is None


def test_a_304_carries_the_etag_only() -> None:
    theirs = Response(status_code=304)
    theirs.raw_headers = [(b"etag", b'"abc"')]
    ours = not_modified('"abc"')
    assert (ours.status_code, ours.body, ours.raw_headers) == (theirs.status_code, theirs.body, theirs.raw_headers)


@pytest.mark.parametrize(
    ("sent", "matches"),
    [
        ('"abc"', True),
        ('W/"abc"', True),
        ('"x", "abc"', True),
        ("abc", True),
        ("*", True),
        ('"abcd"', False),
        ("", False),
        (None, False),
    ],
)
def test_if_none_match_is_compared_as_a_list_of_tags(sent: str | None, matches: bool) -> None:
    assert etag_matches(sent, '"abc"') is matches
