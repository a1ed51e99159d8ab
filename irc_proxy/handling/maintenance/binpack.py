"""Which data files ``rewrite-data-files`` rewrites together: Iceberg Java's bin-pack planning
(``SizeBasedFileRewritePlanner`` / ``BinPackRewriteFilePlanner``) with its default options.

Pure functions over file sizes, so the rules can be checked without a table:

* the target is the table's ``write.target-file-size-bytes`` (default 512 MiB); a file is a candidate when it is
  smaller than ``min-file-size-bytes`` (0.75 x target) or larger than ``max-file-size-bytes`` (1.8 x target);
* candidates of one partition (spec id and partition value) are packed in file order into groups of at most
  ``max-file-group-size-bytes`` (100 GiB), one open group at a time (Java's ``ListPacker`` with lookback 1);
* a group is rewritten when it has at least ``min-input-files`` (5) files, or more than one file and more
  content than the target, or more content than the max file size (one oversized file is split);
* a group is written as ``expected_output_files`` files: a remainder smaller than the min file size is spread
  over the others when that keeps them within 10% of the target.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

TARGET_FILE_SIZE = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.8
MIN_INPUT_FILES = 5
MAX_FILE_GROUP_SIZE = 100 * 1024 * 1024 * 1024

F = TypeVar("F")


@dataclass(frozen=True)
class Thresholds:
    target: int
    min_size: int
    max_size: int
    min_input_files: int = MIN_INPUT_FILES
    max_group_size: int = MAX_FILE_GROUP_SIZE

    @classmethod
    def of(cls, properties: Mapping[str, str], default: int = DEFAULT_TARGET_FILE_SIZE) -> Thresholds:
        """Java's defaults around the table's target file size: its ``write.target-file-size-bytes``, else (unset or
        unreadable) ``default`` (the maintenance policy's ``target_file_size_bytes``)."""
        try:
            target = int(properties.get(TARGET_FILE_SIZE, default))
        except ValueError:
            target = default
        target = max(target, 1)
        return cls(target, int(target * MIN_FILE_SIZE_RATIO), int(target * MAX_FILE_SIZE_RATIO))

    def candidate(self, size: int) -> bool:
        return size < self.min_size or size > self.max_size

    def write_max_size(self) -> int:
        """Half way between target and max: what one output file may grow to before a new one starts."""
        return int(self.target + (self.max_size - self.target) * 0.5)

    def expected_output_files(self, input_size: int) -> int:
        if input_size < self.target:
            return 1
        with_remainder = math.ceil(input_size / self.target)
        without_remainder = input_size // self.target
        if input_size % self.target > self.min_size:
            return with_remainder
        if input_size / without_remainder < min(1.1 * self.target, self.write_max_size()):
            return without_remainder
        return with_remainder


@dataclass
class Group(Generic[F]):
    """Files of one partition rewritten together."""

    key: Hashable
    files: list[F] = field(default_factory=list)
    size: int = 0


def plan_groups(files: Iterable[tuple[Hashable, int, F]], thresholds: Thresholds) -> list[Group[F]]:
    """The groups to rewrite from ``(partition key, size, file)`` triples, partitions in first-seen order."""
    packing: dict[Hashable, list[Group[F]]] = {}
    for key, size, file in files:
        if not thresholds.candidate(size):
            continue
        groups = packing.setdefault(key, [Group(key)])
        if groups[-1].files and groups[-1].size + size > thresholds.max_group_size:
            groups.append(Group(key))
        groups[-1].files.append(file)
        groups[-1].size += size
    return [group for groups in packing.values() for group in groups if _worth_it(group, thresholds)]


def _worth_it(group: Group[F], thresholds: Thresholds) -> bool:
    count = len(group.files)
    enough_files = count > 1 and count >= thresholds.min_input_files
    enough_content = count > 1 and group.size > thresholds.target
    too_much_content = group.size > thresholds.max_size
    return enough_files or enough_content or too_much_content
