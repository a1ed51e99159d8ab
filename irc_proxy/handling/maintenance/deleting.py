"""Deleting a table's files, confined: the deleter every job uses (``Deleter``: local files without following a
link on the way, S3 objects in batches, any other store through its FileIO) and ``discard`` for the files a
failed attempt wrote."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyiceberg.io import FileIO, load_file_io
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.backends.object_store import ObjectStore, lists
from irc_proxy.handling.loaded import OpenedTable, Owns
from irc_proxy.handling.maintenance.job import Job
from irc_proxy.handling.storage.purge import redact
from irc_proxy.handling.storage.storage_reads import TableFiles, local_path, within


class Deleter:
    """Deletes confined files (blocking), within a budget, counting what it did: local files one by one
    (``unlink_beneath``), S3 objects in ``DeleteObjects`` batches, any other store through its FileIO. Each path is
    checked (``owns``: under the table's roots and, served here, the catalog's allowed locations) right before
    its delete; a file that cannot be deleted is counted and reported, and the others go on."""

    MAX_ERRORS_SHOWN = 10

    def __init__(self, job: Job, opened: OpenedTable, metadata: TableMetadata) -> None:
        _read, self.owns = opened.files(metadata)
        self.real_roots = TableFiles(metadata, None).real_roots
        self._storage = dict(opened.storage or {})
        self._timeout = job.catalog.tables.files.reader.limits.timeout
        self._location = metadata.location
        self._io: FileIO | None = None
        self._budget = job.limits.max_files
        self.deleted = self.bytes = self.failed = self.refused = 0
        self.errors: dict[str, str] = {}
        self.truncated = False

    def delete(self, paths: Iterable[str], sizes: Mapping[str, int] | None = None) -> None:
        objects: list[str] = []
        for path in paths:
            if self.deleted + self.failed + len(objects) >= self._budget:
                self.truncated = True
                break
            if not self.owns(path):  # checked again now: a link swapped in meanwhile is refused
                self.refused += 1
                continue
            if lists(path):
                objects.append(path)
                continue
            self._delete_one(path)
        if objects:
            self._delete_objects(objects, sizes or {})

    def _delete_one(self, path: str) -> None:
        local = local_path(path)
        size = 0
        try:
            if local is not None:
                size = unlink_beneath(os.path.realpath(local), self.real_roots)
            else:
                self._file_io().delete(path)
        except FileNotFoundError:
            return
        except OutsideRoots:  # a directory on the way became a link (or the file one) since the check
            self.refused += 1
            return
        except Exception as exc:  # any FileIO failure: counted, the rest goes on
            self._failed(path, type(exc).__name__)
            return
        self.deleted += 1
        self.bytes += size

    def _file_io(self) -> FileIO:
        if self._io is None:
            self._io = load_file_io(self._storage, self._location)
        return self._io

    def _delete_objects(self, locations: list[str], sizes: Mapping[str, int]) -> None:
        store = ObjectStore(self._storage, self._timeout)
        try:
            failed = store.delete(locations)
        finally:
            store.close()
        for location in locations:
            if location in failed:
                self._failed(location, failed[location])
            else:
                self.deleted += 1
                self.bytes += sizes.get(location, 0)

    def _failed(self, path: str, why: str) -> None:
        self.failed += 1
        if len(self.errors) < self.MAX_ERRORS_SHOWN:
            self.errors[redact(path)] = why

    def counts(self) -> dict[str, Any]:
        counts: dict[str, Any] = {
            "files-deleted": self.deleted,
            "bytes-deleted": self.bytes,
            "files-not-deleted": self.failed,
            "files-refused": self.refused,
            "truncated": self.truncated,
        }
        if self.errors:
            counts["delete-errors"] = self.errors
        return counts


class OutsideRoots(OSError):
    """The file to delete is not (or no longer) a regular file reached from a table root without links."""


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def unlink_beneath(real: str, roots: Iterable[str]) -> int:
    """Delete the regular file at the resolved path ``real`` under one of the resolved ``roots``, following no
    symbolic link on the way; returns its size.

    Each directory below the root is opened relative to its parent with ``O_NOFOLLOW`` and the file is
    unlinked relative to the last one, so a directory swapped for a link after ``TableFiles.owns`` checked
    the path cannot carry the delete into another table's directory (``os.unlink`` of the path would
    follow it). Raises OutsideRoots then, FileNotFoundError when the file is gone, OSError otherwise."""
    root = next((r for r in roots if real != r and within(real, [r])), None)
    if root is None:
        raise OutsideRoots(f"{real} is not under the table's roots")
    *directories, name = real[len(root.rstrip("/")) + 1 :].split("/")
    try:
        fd = os.open(root, _DIRECTORY)
    except FileNotFoundError:
        raise
    except OSError as exc:  # the root became a link since it was resolved
        raise OutsideRoots(f"{root} is not a directory") from exc
    try:
        for directory in directories:
            try:
                below = os.open(directory, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:  # ELOOP, ENOTDIR: a link or a file where a directory was
                raise OutsideRoots(f"{directory} is no longer a directory") from exc
            os.close(fd)
            fd = below
        status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(status.st_mode):
            raise OutsideRoots(f"{name} is not a regular file")
        os.unlink(name, dir_fd=fd)
        return status.st_size
    finally:
        os.close(fd)


def discard(paths: Iterable[str], owns: Owns, io: FileIO, real_roots: Sequence[str]) -> None:
    """Delete the files a failed attempt wrote (only the table's own; one that is gone is fine), locally
    without following a link on the way (``unlink_beneath``)."""
    for path in paths:
        if not owns(path):
            continue
        local = local_path(path)
        try:
            if local is not None:
                unlink_beneath(os.path.realpath(local), real_roots)
            else:
                io.delete(path)
        except (FileNotFoundError, OutsideRoots):
            continue
        except Exception:  # noqa: S112  # an orphan then, which remove-orphan-files deletes later
            continue
