"""Iceberg Java's bin-pack planning (``SizeBasedFileRewritePlanner`` defaults) over file sizes."""

from __future__ import annotations

import pytest

from irc_proxy.handling.maintenance.binpack import (
    DEFAULT_TARGET_FILE_SIZE,
    Thresholds,
    plan_groups,
)

MB = 1024 * 1024
TARGET = Thresholds.of({"write.target-file-size-bytes": str(100 * MB)})


def test_thresholds_are_java_ratios_of_the_tables_target_and_an_unreadable_target_is_the_default() -> None:
    assert (TARGET.target, TARGET.min_size, TARGET.max_size) == (100 * MB, 75 * MB, 180 * MB)
    assert Thresholds.of({}).target == DEFAULT_TARGET_FILE_SIZE
    assert Thresholds.of({"write.target-file-size-bytes": "many"}).target == DEFAULT_TARGET_FILE_SIZE


def test_only_files_outside_the_desired_range_are_candidates() -> None:
    assert TARGET.candidate(75 * MB - 1) and TARGET.candidate(180 * MB + 1)
    assert not TARGET.candidate(75 * MB) and not TARGET.candidate(180 * MB)


def test_groups_per_partition_need_five_files_or_more_than_the_target_or_an_oversized_file() -> None:
    files = [("a", MB, f"a{i}") for i in range(5)]  # five small files: enough input files
    files += [("b", MB, f"b{i}") for i in range(4)]  # four small files, 4 MB: left alone
    files += [("c", 60 * MB, "c0"), ("c", 60 * MB, "c1")]  # two files, 120 MB > target: enough content
    files += [("d", 200 * MB, "d0")]  # one file over the max: split
    files += [("e", 90 * MB, f"e{i}") for i in range(9)]  # in range: never candidates
    groups = plan_groups(files, TARGET)
    assert {group.key: group.files for group in groups} == {
        "a": ["a0", "a1", "a2", "a3", "a4"],
        "c": ["c0", "c1"],
        "d": ["d0"],
    }
    assert [group.size for group in groups] == [5 * MB, 120 * MB, 200 * MB]


def test_a_partition_over_the_max_group_size_is_split_into_groups_in_file_order() -> None:
    small = Thresholds(target=100, min_size=75, max_size=180, max_group_size=250)
    groups = plan_groups([("p", 60, i) for i in range(10)], small)
    assert [group.files for group in groups] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize(
    ("input_mb", "files"),
    [
        (50, 1),  # under the target: one file
        (100, 1),
        (180, 2),  # remainder 80 MB > min (75 MB): kept as its own file
        (1010, 10),  # remainder 10 MB spread: 101 MB each, within 10% of the target
        (1070, 10),  # remainder 70 MB < min: spread, 107 MB each (< 110 MB)
    ],
)
def test_expected_output_files_rounds_a_small_remainder_into_the_others(input_mb: int, files: int) -> None:
    assert TARGET.expected_output_files(input_mb * MB) == files


def test_a_remainder_too_big_to_spread_gets_its_own_file() -> None:
    assert TARGET.expected_output_files(2 * 100 * MB + 70 * MB) == 3  # 270 / 2 = 135 MB > 110 MB
