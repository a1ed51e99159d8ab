"""A syscall-free look at whether a SQLite file in WAL mode changed: the wal-index header in its ``-shm``.

Every commit in WAL mode (any connection, any process) rewrites the wal-index header at the start of
the ``-shm`` file (``iChange`` and ``mxFrame`` move; a WAL restart moves the salts too), and SQLite's
own ``PRAGMA data_version`` is built on the same bytes: a reader compares the header with the copy it
saw last (``walIndexReadHdr``). Reading the header through a read-only mmap costs well under a
microsecond, where the PRAGMA takes a read lock (two ``fcntl`` calls, ~5 us, ~20 us in the server).

The header is stored twice (48 bytes each, https://www.sqlite.org/fileformat2.html#walindexformat): a
writer writes the second copy, then the first; a look is trusted only when both copies agree and the
header says it is initialised. Anything else (a write in progress, garbage written by another local
process, a mapping that failed) gives ``None``: the caller asks SQLite itself (the PRAGMA). Garbage
can therefore cost a cache miss, never hide a commit that SQLite would see. The mapping is the file our
reader connection holds open: while that connection has the WAL open (after its first read) it keeps a
shared lock on the database, so no other connection can take it out of WAL mode, use an exclusive
(heap-memory) wal-index, or recreate the ``-shm`` file. A local process that truncates the ``-shm``
kills the server with SIGBUS at the next look, as it would at SQLite's own next read (its own mapping
of the same file; checked with SQLite 3 and Python 3.11): no new exposure, and not guarded (an
``fstat`` per look would cost the syscall saved).
"""

from __future__ import annotations

import mmap
import os
import sqlite3

HEADER = 48
"""Bytes of one copy of the wal-index header (``WalIndexHdr``)."""
IS_INIT = 12
"""Offset of ``isInit`` in the header."""


class WalIndex:
    """The mapped ``-shm`` of one SQLite database that ``connection`` reads in WAL mode."""

    def __init__(self, mapped: mmap.mmap) -> None:
        self._mapped = mapped

    @classmethod
    def open(cls, connection: sqlite3.Connection, database: str) -> WalIndex | None:
        """The wal-index that ``connection`` uses, or None (not WAL mode, no ``-shm``, mapping failed)."""
        try:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                return None
            connection.execute("PRAGMA data_version").fetchone()  # a read: the WAL is open, the -shm held
            fd = os.open(database + "-shm", os.O_RDONLY)
        except (sqlite3.Error, OSError):
            return None
        try:
            if os.fstat(fd).st_size < 2 * HEADER:
                return None
            return cls(mmap.mmap(fd, 2 * HEADER, access=mmap.ACCESS_READ))
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)  # the mapping stays valid without the descriptor

    def header(self) -> bytes | None:
        """The current header when its two copies agree and it is initialised; None when in doubt."""
        try:
            both = self._mapped[: 2 * HEADER]
        except ValueError:  # closed
            return None
        first = both[:HEADER]
        if first != both[HEADER:] or first[IS_INIT] != 1:
            return None
        return first

    def close(self) -> None:
        self._mapped.close()
