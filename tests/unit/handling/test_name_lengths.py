"""New names fit their default directory: the length check counts exactly what ``path_part`` writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irc_proxy.errors import BadRequest
from irc_proxy.handling.naming import MAX_DIRECTORY_NAME, directory_name_length, validate_name, validate_new_namespace
from irc_proxy.handling.storage.storage import path_part


@given(st.text(min_size=1, max_size=100))
def test_the_counted_length_is_the_directory_names_length(name: str) -> None:
    assert directory_name_length(name) == len(path_part(name))


@pytest.mark.parametrize(
    ("name", "accepted"),
    [("a" * 246, True), ("a" * 247, False), ("é" * 41, True), ("é" * 42, False), ("日" * 27, True), ("日" * 28, False)],
)
def test_names_are_accepted_exactly_when_the_directory_name_fits(name: str, accepted: bool) -> None:
    for check in (validate_name, lambda n: validate_new_namespace([n])):
        if accepted:
            check(name)
            assert len(path_part(name).encode()) + len("-0123abcd") <= 255
        else:
            with pytest.raises(BadRequest, match=f"over the limit of {MAX_DIRECTORY_NAME}"):
                check(name)
