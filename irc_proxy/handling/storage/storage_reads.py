"""Bounded reads of files the server opens on a client's behalf (register, load, purge).

A client names the file, so the read must not become a way to stall or probe the server: only regular
files are read (a FIFO or device is refused before it is opened, and opened non-blocking so a race cannot
block either), a symlink may not lead out of the allowed locations, at most ``max_bytes`` are read (also
after gzip), and object-store requests carry timeouts so an unreachable endpoint answers within about
``timeout`` seconds instead of holding a worker thread for minutes. Errors name the location and the kind
of problem, never the file's content (pydantic quotes its input; ``describe_invalid`` does not).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from threading import Lock
from types import UnionType
from typing import Any, Protocol, TypeVar, Union, get_args, get_origin
from urllib.parse import unquote, urlparse

from pydantic import BaseModel, ValidationError
from pyiceberg.exceptions import ValidationError as MetadataInvalid
from pyiceberg.io import (
    S3_CONNECT_TIMEOUT,
    S3_REQUEST_TIMEOUT,
    S3_RETRY_STRATEGY_IMPL,
    FileIO,
)
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.errors import BadRequest, CatalogError, Forbidden, NotFound, ServiceUnavailable
from irc_proxy.handling.storage.locations import StorageLocations, is_under, shown, table_paths

_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_UNUSABLE = (errno.ELOOP, errno.ENAMETOOLONG, errno.EINVAL, errno.ENXIO)
"""A symbolic-link loop, an overlong name, a socket: the client's path is wrong, not the storage."""


@functools.lru_cache(maxsize=4096)  # pure; every warm load of a local table asks (to stat the metadata file)
def local_path(location: str) -> str | None:
    """The file-system path of a ``file:`` or absolute location; None for object stores."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    return location if location.startswith("/") else None


_MISSING_BUCKET = ("NO_SUCH_BUCKET", "NoSuchBucket")
_NOT_A_FILE = ("is a directory", "Is a directory", "Not a directory")
_DENIED = ("ACCESS_DENIED", "AccessDenied", "Forbidden")


def storage_error(what: str, exc: OSError) -> CatalogError:
    """An object-store or file-system failure: a missing bucket or a directory is 400, a refusal 403, else 503.

    pyarrow reports every S3 failure as a plain OSError naming the AWS error; an outage must not
    look like a bad request (clients do not retry a 400).
    """
    text = str(exc)
    if any(code in text for code in _MISSING_BUCKET):
        return BadRequest(f"{what}: the bucket does not exist")
    if isinstance(exc, IsADirectoryError | NotADirectoryError) or any(code in text for code in _NOT_A_FILE):
        return BadRequest(f"{what}: the path is not usable ({text[:200]})")
    if isinstance(exc, PermissionError) or any(code in text for code in _DENIED):
        return Forbidden(f"{what}: permission denied")
    return ServiceUnavailable(f"{what}: storage is unavailable ({text[:200]})")


class FileTooLarge(BadRequest):
    """The file (or what it decompresses to) is larger than ``server.max_metadata_bytes``."""


TWO_ATTEMPTS = "irc_proxy.handling.storage.s3_retry.TwoAttempts"  # a name: importing it imports pyarrow


class NotARegularFile(BadRequest):
    """A directory, FIFO, socket or device where a file was expected."""


class ReadTimedOut(BadRequest):
    """The file could not be read within ``server.storage_timeout_seconds``."""


@dataclass(frozen=True)
class ReadLimits:
    """Bounds of a file read for a client; the values (and their defaults) are ``server.max_metadata_bytes`` and
    ``server.storage_timeout_seconds``."""

    max_bytes: int
    timeout: float


class TableFiles:
    """Which paths belong to one table: under its own roots (location, ``write.data.path``,
    ``write.metadata.path``) and the catalog's allowed locations, and, for local paths, really so: the file
    itself resolved (every symbolic link on the way, the last one included) lies under the roots too.
    Purge deletes only such files; scan planning reads only such manifests, and reads them with
    :attr:`real_roots` so the file opened is checked again (a link swapped in after the check is refused)."""

    def __init__(self, metadata: TableMetadata, locations: StorageLocations | None) -> None:
        self._roots = table_paths(metadata.location, metadata.properties)
        self.real_roots = tuple(os.path.realpath(p) for root in self._roots if (p := local_path(root)) is not None)
        """The table's local roots, resolved (empty for object stores)."""
        self._locations = locations

    def owns(self, path: str) -> bool:
        if not any(is_under(path, root) for root in self._roots):
            return False
        if self._locations is not None and not self._locations.allows(path):
            return False
        local = local_path(path)
        if local is None:
            return True
        try:
            real = os.path.realpath(local)
        except OSError:  # a link changing while it is resolved: not provably the table's
            return False
        return within(real, self.real_roots)


class FileIOSource(Protocol):
    """Where a reader gets its FileIO: a backend, or a FileIO a remote catalog vended for one table."""

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO: ...


class BoundedReader:
    """Reads whole small files through a backend's FileIO (or ``os`` for local paths), within ``limits``.

    Blocking: call it in a worker thread.
    """

    def __init__(self, backend: FileIOSource, limits: ReadLimits, locations: StorageLocations | None = None) -> None:
        self._backend = backend
        self.limits = limits
        self._real_roots = (
            None
            if locations is None
            else [os.path.realpath(p) for loc in locations.allowed if (p := local_path(str(loc))) is not None]
        )
        self._timed: tuple[FileIO, FileIO] | None = None
        self._lock = Lock()

    def read(
        self, location: str, what: str, properties: dict[str, str] | None = None, roots: Sequence[str] = ()
    ) -> bytes:
        """The file's bytes, gunzipped when they start with the gzip magic. Raises CatalogError.

        ``roots``: resolved local directories the file opened must also lie under (a table's, see
        :class:`TableFiles`); checked on the open file, so a symbolic link swapped in after a check is refused.
        """
        path = local_path(location)
        raw = self._read_local(path, location, what, roots) if path is not None else self._read_remote(location, what)
        return gunzip(raw, self.limits.max_bytes, location, what) if raw[:2] == _GZIP_MAGIC else raw

    # Local files ----------------------------------------------------------------------------------------
    def _read_local(self, path: str, location: str, what: str, roots: Sequence[str] = ()) -> bytes:
        try:
            self._check_regular(os.stat(path), location, what)
            self._check_real(os.path.realpath(path), location, what, roots)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise NotFound(f"Failed to open input stream for file: {location}") from exc
        except NotADirectoryError as exc:
            raise NotFound(f"Failed to open input stream for file: {location}") from exc
        except OSError as exc:
            if exc.errno in _UNUSABLE:
                raise BadRequest(f"Cannot read {what} {shown(location)}: the path is not usable") from exc
            raise storage_error(f"Cannot read {what} {shown(location)}", exc) from exc
        try:
            status = os.fstat(fd)
            self._check_regular(status, location, what)  # swapped for a FIFO since the stat: still refused
            self._check_real(_opened_path(fd, path), location, what, roots)  # swapped for a link: still refused
            self._check_size(status.st_size, location, what)
            return self._drain(lambda n: os.read(fd, n), location, what, deadline=None)
        except OSError as exc:
            raise storage_error(f"Cannot read {what} {shown(location)}", exc) from exc
        finally:
            os.close(fd)

    def _check_real(self, real: str, location: str, what: str, roots: Sequence[str]) -> None:
        if self._real_roots is not None and not within(real, self._real_roots):
            raise Forbidden(
                f"{what} {shown(location)} resolves (through a symbolic link) outside the allowed locations"
            )
        if roots and not within(real, roots):
            raise Forbidden(
                f"{what} {shown(location)} resolves (through a symbolic link) outside the table's own locations"
            )

    @staticmethod
    def _check_regular(status: os.stat_result, location: str, what: str) -> None:
        if not stat.S_ISREG(status.st_mode):
            kind = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
            raise NotARegularFile(f"{what} {shown(location)} is {kind}")

    def _check_size(self, size: int, location: str, what: str) -> None:
        if size > self.limits.max_bytes:
            raise FileTooLarge(
                f"{what} {shown(location)} is larger than the limit of {self.limits.max_bytes} bytes "
                "(server.max_metadata_bytes)"
            )

    def _drain(self, read: Callable[[int], bytes], location: str, what: str, deadline: float | None) -> bytes:
        """Read chunks until EOF; more than ``max_bytes`` or past ``deadline`` is refused whatever the size said."""
        limit = self.limits.max_bytes
        buffer = bytearray()
        while True:
            chunk: bytes = read(min(_CHUNK, limit + 1 - len(buffer)))
            if not chunk:
                return bytes(buffer)
            buffer += chunk
            self._check_size(len(buffer), location, what)
            if deadline is not None and time.monotonic() > deadline:
                raise self._timed_out(location, what)

    def _timed_out(self, location: str, what: str) -> ReadTimedOut:
        return ReadTimedOut(
            f"{what} {shown(location)} could not be read within {self.limits.timeout:g} seconds "
            "(server.storage_timeout_seconds)"
        )

    # Object stores --------------------------------------------------------------------------------------
    def _read_remote(self, location: str, what: str) -> bytes:
        deadline = time.monotonic() + self.limits.timeout
        try:
            io = self.file_io(location)
            with io.new_input(location).open(seekable=True) as stream:
                size = getattr(stream, "size", None)
                if callable(size):
                    self._check_size(int(size()), location, what)
                if time.monotonic() > deadline:
                    raise self._timed_out(location, what)
                return self._drain(stream.read, location, what, deadline)
        except CatalogError:
            raise
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise NotFound(f"Failed to open input stream for file: {location}") from exc
        except OSError as exc:
            raise storage_error(f"Cannot read {what} {shown(location)}", exc) from exc
        except Exception as exc:  # unknown scheme, missing optional SDK: the boundary of FileIO
            raise BadRequest(
                f"Cannot read {what} {shown(location)}: its storage is not usable here ({type(exc).__name__})"
            ) from exc

    def file_io(self, location: str) -> FileIO:
        """The backend's FileIO with request timeouts (a derived one, rebuilt when the backend's changes)."""
        from pyiceberg.io.pyarrow import PyArrowFileIO  # deferred: pyarrow (~0.3 s) only once a file is read

        base = self._backend.file_io(location, {})
        if not isinstance(base, PyArrowFileIO):
            return base
        with self._lock:
            if self._timed is not None and self._timed[0] is base:
                return self._timed[1]
            per_request = max(self.limits.timeout / 2, 0.5)
            properties = dict(base.properties)
            for key in (S3_CONNECT_TIMEOUT, S3_REQUEST_TIMEOUT):
                properties[key] = str(min(float(properties.get(key) or per_request), per_request))
            properties[S3_RETRY_STRATEGY_IMPL] = TWO_ATTEMPTS
            timed = PyArrowFileIO(properties)
            self._timed = (base, timed)
            return timed


def gunzip(raw: bytes, limit: int, location: str, what: str) -> bytes:
    """Decompress every gzip member, stopping at ``limit + 1`` bytes (a gzip bomb is refused, not inflated)."""
    out = bytearray()
    data = raw
    try:
        while data:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            out += inflater.decompress(data, limit + 1 - len(out))
            if len(out) > limit or inflater.unconsumed_tail:
                raise FileTooLarge(
                    f"{what} {shown(location)} decompresses to more than the limit of {limit} bytes "
                    "(server.max_metadata_bytes)"
                )
            if not inflater.eof:
                raise BadRequest(f"{what} {shown(location)} is not valid gzip: it is truncated")
            data = inflater.unused_data
    except zlib.error as exc:
        raise BadRequest(f"{what} {shown(location)} is not valid gzip") from exc
    return bytes(out)


def _opened_path(fd: int, path: str) -> str:
    """The resolved path of the file open as ``fd`` (Linux: its ``/proc/self/fd`` link), else of ``path``."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def within(path: str, roots: Iterable[str]) -> bool:
    """Whether the file-system ``path`` is one of ``roots`` or lies beneath one (plain string paths)."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


# Describing invalid metadata without quoting it ------------------------------------------------------------
_KINDS = {
    "json_invalid": "not valid JSON",
    "union_tag_not_found": "no format-version",
    "union_tag_invalid": "an unsupported format-version",
    "dict_type": "not a JSON object",
    "model_type": "not a JSON object",
    "model_attributes_type": "not a JSON object",
}


M = TypeVar("M", bound=BaseModel)


def parse_metadata(model: type[M], data: bytes, location: str, what: str) -> M:
    """``data`` as ``model``. Raises BadRequest naming the kind of problem, never quoting the file."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:  # its message quotes the input: describe it instead
        problems = describe_invalid(exc, field_names(model))
        raise BadRequest(f"{what} {shown(location)} is not valid {_kind(what)} ({problems})") from None
    except (MetadataInvalid, ValueError):  # pyiceberg's validators raise their own type; messages quote values
        raise BadRequest(f"{what} {shown(location)} is not valid {_kind(what)}") from None


def _kind(what: str) -> str:
    return what.lower().removesuffix(" file")


@cache
def field_names(*models: type[BaseModel]) -> frozenset[str]:
    """Every field name and alias of ``models`` and the models their fields hold (schema words, not data)."""
    names: set[str] = set()
    seen: set[type] = set()
    todo: list[Any] = list(models)
    while todo:
        annotation = todo.pop()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                continue
            seen.add(annotation)
            for name, info in annotation.model_fields.items():
                names.add(name)
                if info.alias:
                    names.add(info.alias)
                todo.append(info.annotation)
        elif get_origin(annotation) is not None or isinstance(annotation, UnionType) or annotation is Union:
            todo.extend(get_args(annotation))
    return frozenset(names)


def _where(loc: tuple[int | str, ...], known: frozenset[str]) -> str:
    """A pydantic error location with the parts that come from the file (map keys) masked as ``…``.

    A leading number is the tag of a discriminated union (the format version), not a list index.
    """
    text = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]" if i else ""
        else:
            name = part if part in known else "…"
            text += f".{name}" if text else name
    return text


def describe_invalid(exc: ValidationError, known: frozenset[str], shown_errors: int = 3) -> str:
    """What is wrong, by pydantic error type and field path; never pydantic's message (it quotes input)."""
    problems: list[str] = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        kind = error["type"]
        where = _where(tuple(error["loc"]), known)
        if kind in _KINDS and not where:
            problems.append(_KINDS[kind])
        elif kind == "missing":
            problems.append(f"missing field {where}")
        elif where.endswith("format-version"):
            problems.append("an unsupported format-version")
        else:
            problems.append(f"invalid {where or 'document'} ({kind})")
    unique = list(dict.fromkeys(problems))
    text = "; ".join(unique[:shown_errors])
    return text + (f"; and {len(unique) - shown_errors} more" if len(unique) > shown_errors else "")
