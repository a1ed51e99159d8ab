"""Location normalisation, containment and default directory names (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irc_proxy.errors import BadRequest, Forbidden
from irc_proxy.handling.federation.serving import ServedHere
from irc_proxy.handling.storage.locations import StorageLocations, is_under, normalize, table_paths
from irc_proxy.handling.storage.storage import path_name, path_part


@pytest.mark.parametrize(
    ("given_location", "expected"),
    [
        ("file:///wh/t/", "file:///wh/t"),
        ("file:/wh/t", "file:///wh/t"),
        ("file://localhost/wh/t", "file:///wh/t"),
        ("S3://bucket/wh", "s3://bucket/wh"),
        ("s3a://bucket/wh/t", "s3a://bucket/wh/t"),
        ("abfss://c@acct.dfs.core.windows.net/wh", "abfss://c@acct.dfs.core.windows.net/wh"),
    ],
)
def test_normalize(given_location: str, expected: str) -> None:
    assert normalize(given_location) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "  ",
        "relative/x",
        "/abs/without/scheme",
        "file:///",
        "file://host/x",
        "s3://",
        "s3:///key",
        "s3://b/a/../c",
        "s3://b/a//c",
        "file:///wh/%2e%2e/etc",
        "file:///wh/a%2F..%2F..%2Fetc",
        "file:///wh/./t",
        "file:///wh/t\x00",
        "file:///wh\\t",
        "s3://user:pw@bucket/x",
        "s3://b/x?versionId=1",
        "file:///" + "a" * 3000,
    ],
)
def test_malformed_locations_are_400(bad: str) -> None:
    with pytest.raises(BadRequest):
        normalize(bad)


def test_containment_is_segment_wise_and_scheme_family_aware() -> None:
    assert is_under("s3://b/wh/t", "s3://b/wh")
    assert is_under("s3a://b/wh/t", "s3://b/wh")
    assert not is_under("s3://b/wh2/t", "s3://b/wh")
    assert not is_under("s3://other/wh/t", "s3://b/wh")
    assert not is_under("gs://b/wh/t", "s3://b/wh")
    assert not is_under("s3://b/wh/../x", "s3://b/wh")


def test_storage_locations_refuse_outside_and_unconfigured_schemes() -> None:
    locations = StorageLocations("c", ["s3://lake/wh", "file:///data"])
    assert locations.check("s3a://lake/wh/t/") == "s3a://lake/wh/t"
    with pytest.raises(Forbidden, match="outside the allowed locations of catalog c"):
        locations.check("s3://lake/other")
    with pytest.raises(BadRequest, match="storage scheme 'gs' is not configured"):
        locations.check("gs://lake/wh/t")
    assert not locations.allows("file:///etc/passwd")


def test_table_paths_adds_write_paths_outside_the_location() -> None:
    paths = table_paths("s3://b/wh/t", {"write.data.path": "s3://b/data/t", "write.metadata.path": "s3://b/wh/t/m"})
    assert paths == ["s3://b/wh/t", "s3://b/data/t"]


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_default_directory_names_are_injective_and_safe(a: str, b: str) -> None:
    if a != b:
        assert path_part(a) != path_part(b)
    assert path_name(path_part(a)) == a
    for encoded in (path_part(a), path_part(b)):
        assert "/" not in encoded and "\\" not in encoded and "%" not in encoded
        assert encoded not in (".", "..") and encoded.isprintable()


def test_path_name_rejects_spellings_path_part_never_writes() -> None:
    assert path_name("a~2fb") == "a/b"
    assert path_name("a~2Fb") is None  # upper-case hex is not the canonical spelling
    assert path_name("a b") is None and path_name("~zz") is None and path_name("~ff") is None


@pytest.mark.parametrize(
    ("allowed", "suggested"),
    [
        (["file:///srv/warehouse"], "org.apache.iceberg.hadoop.HadoopFileIO"),
        (["file:///srv/a", "file:///srv/b"], "org.apache.iceberg.hadoop.HadoopFileIO"),
        (["s3://bucket/warehouse"], None),
        (["file:///srv/warehouse", "s3://bucket/warehouse"], None),
        (["gs://bucket/w"], None),
    ],
)
def test_java_clients_are_told_hadoop_file_io_only_when_every_location_is_a_local_file(
    allowed: list[str], suggested: str | None
) -> None:
    """``ResolvingFileIO`` hands ``file:`` to ``HadoopFileIO`` anyway; on object stores the client's class path
    decides, so the server must not choose."""
    locations = StorageLocations("lake", allowed)
    assert locations.java_file_io() == suggested
    served = ServedHere(True, False, java_file_io=locations.java_file_io())
    assert served.client_config("lake", [], None)["defaults"].get("io-impl") == suggested


@pytest.mark.parametrize(
    ("location", "properties", "override"),
    [
        ("file:///srv/warehouse/ns/t", {}, None),
        ("FILE:/srv/warehouse/ns/t", {}, None),
        ("s3://bucket/ns/t", {}, "org.apache.iceberg.io.ResolvingFileIO"),
        ("file:///srv/warehouse/ns/t", {"write.data.path": "s3a://b/d"}, "org.apache.iceberg.io.ResolvingFileIO"),
        ("no-scheme/ns/t", {}, "org.apache.iceberg.io.ResolvingFileIO"),
    ],
)
def test_a_table_off_file_in_a_file_only_catalog_is_told_resolving_file_io(
    location: str, properties: dict[str, str], override: str | None
) -> None:
    """The catalog's ``HadoopFileIO`` suggestion is taken back in the config of a table it holds off ``file://``
    (kept from before ``allowed_locations`` was narrowed, or made by another engine); catalogs that suggest
    nothing add nothing."""
    file_only = ServedHere(True, False, java_file_io=StorageLocations("lake", ["file:///srv/warehouse"]).java_file_io())
    assert file_only.table_config(None, location, properties).get("io-impl") == override
    on_s3 = ServedHere(True, False, java_file_io=StorageLocations("lake", ["s3://bucket"]).java_file_io())
    assert on_s3.table_config(None, location, properties) == {}
