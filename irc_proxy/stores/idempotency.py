"""Idempotency-Key outcomes in the state database, so every replica replays the same answer.

A request with a key first takes the key's *holder lock* (``irc_proxy.stores.holders``: it lives
exactly as long as the holding process), then *claims* the key by inserting an in-progress row (the
primary key makes the insert the arbiter between replicas). The claimant stores the finished
outcome, or deletes the row for an outcome that must not be replayed (5xx), then lets the lock go.
Anyone else who meets an in-progress row polls until it is finished or released; an in-progress row
whose holder lock is free belongs to a process that died, and is taken over at once. A holder that is
only slow or paused keeps its lock, so a request never runs in two places at the same time.
Rows live for the advertised key lifetime and are purged opportunistically afterwards. One principal's
large outcomes (over ``SMALL_BODY``) are kept only while its unexpired outcomes total at most
``MAX_PRINCIPAL_BYTES``; past that the key is released instead (a retry runs the request again).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from sqlalchemy import (
    Engine,
    and_,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import ColumnElement, Executable

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.holders import HolderLocks, holder_locks
from irc_proxy.stores.tables import IdempotencyRecordRow, table_of
from irc_proxy.threads import ThreadRunner

RECORDS = table_of(IdempotencyRecordRow)
PURGE_INTERVAL_SECONDS = 60.0
SMALL_BODY = 64 << 10
"""Outcomes up to this size are always kept (their number is bounded by the request rate)."""
MAX_PRINCIPAL_BYTES = 16 << 20
"""What one principal's unexpired outcomes may total before a large one is not kept (a view's or
namespace's answer can be as large as its request, up to ``server.max_body_bytes``)."""
log = logging.getLogger("irc_proxy.idempotency")


ClaimState = Literal["claimed", "finished", "mismatch", "in-progress"]


@dataclass(frozen=True)
class Claim:
    """What claiming a key found.

    ``claimed``: the caller owns the key (``owner``) and must ``finish`` or ``release`` it;
    ``finished``: the stored outcome (``status``, ``headers``, ``body``) to replay;
    ``mismatch``: the key was first used for a different request;
    ``in-progress``: another request holds the key and has not finished yet.
    """

    state: ClaimState
    owner: str = ""
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


IN_PROGRESS = Claim("in-progress")
MISMATCH = Claim("mismatch")


class IdempotencyStore:
    """Claim, finish and replay Idempotency-Key outcomes; ``lifetime`` is the advertised key lifetime."""

    def __init__(
        self, engine: Engine, threads: ThreadRunner, lifetime: timedelta, holders: HolderLocks | None = None
    ) -> None:
        self._engine = engine
        self._threads = threads
        self._lifetime = lifetime
        self._holders = holders or holder_locks(engine)
        self._purged_at = 0.0

    async def close(self) -> None:
        """Let go of the holder locks (a process that exits loses them anyway)."""
        await self._threads.run(self._holders.close)

    async def claim(self, principal: str, key: str, fingerprint: str, wait_seconds: float) -> Claim:
        """Claim ``key``, or return its outcome; wait up to ``wait_seconds`` while another request holds it."""
        deadline = time.monotonic() + wait_seconds
        delay = 0.01
        while True:
            result = await self._threads.run(self._claim_once, principal, key, fingerprint)
            if result.state != "in-progress" or time.monotonic() >= deadline:
                return result
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    async def finish(
        self, principal: str, key: str, owner: str, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> None:
        """Store the outcome of the claim ``owner`` holds (a lost claim stores nothing)."""
        values = {"status": status, "headers": json.dumps(headers), "body": body}
        await self._threads.run(self._finish, principal, key, owner, values)

    async def release(self, principal: str, key: str, owner: str) -> None:
        """Give the key up without an outcome (the request failed in a way that must not be replayed)."""
        await self._threads.run(
            self._settle, _holder(principal, key), delete(RECORDS).where(self._owned(principal, key, owner))
        )

    async def purge(self) -> int:
        """Delete every expired record; returns how many."""
        return await self._threads.run(self._purge)

    # Blocking parts, run in worker threads ----------------------------------------------------
    @staticmethod
    def _owned(principal: str, key: str, owner: str) -> ColumnElement[bool]:
        return and_(
            RECORDS.c.principal == principal,
            RECORDS.c.key == key,
            RECORDS.c.owner == owner,
            RECORDS.c.status.is_(None),
        )

    def _settle(self, holder: str, statement: Executable) -> None:
        """Record the outcome (or the release), then let the holder lock go: never the other way round."""
        try:
            with database_errors("State database"), self._engine.begin() as conn:
                conn.execute(statement)
        finally:
            self._holders.let_go(holder)

    def _finish(self, principal: str, key: str, owner: str, values: dict[str, object]) -> None:
        """Store the outcome, or release the key when a large one would pass the principal's bound."""
        owned = self._owned(principal, key, owner)
        try:
            with database_errors("State database"), self._engine.begin() as conn:
                size = len(values["body"])  # type: ignore[arg-type]
                if size > SMALL_BODY:
                    kept = conn.execute(
                        select(func.coalesce(func.sum(func.length(RECORDS.c.body)), 0)).where(
                            RECORDS.c.principal == principal, RECORDS.c.expires_at > datetime.now(UTC)
                        )
                    ).scalar_one()
                    if int(kept) + size > MAX_PRINCIPAL_BYTES:
                        log.warning("outcome of Idempotency-Key %s not kept: its principal's outcomes are full", key)
                        conn.execute(delete(RECORDS).where(owned))
                        return
                conn.execute(update(RECORDS).where(owned).values(values))
        finally:
            self._holders.let_go(_holder(principal, key))

    def _purge(self) -> int:
        with database_errors("State database"), self._engine.begin() as conn:
            result = conn.execute(delete(RECORDS).where(RECORDS.c.expires_at < datetime.now(UTC)))
        self._purged_at = time.monotonic()
        return int(result.rowcount)

    def _claim_once(self, principal: str, key: str, fingerprint: str) -> Claim:
        if time.monotonic() - self._purged_at > min(PURGE_INTERVAL_SECONDS, self._lifetime.total_seconds()):
            self._purge()
        holder = _holder(principal, key)
        with database_errors("State database"):
            if not self._holders.try_hold(holder):  # a live process runs it (or is just letting it go)
                found = self._existing(principal, key, fingerprint, datetime.now(UTC))
                return IN_PROGRESS if found is None or found.state == "claimed" else found
            keep = False
            try:
                for _ in range(3):
                    now, owner = datetime.now(UTC), uuid.uuid4().hex
                    row = {"principal": principal, "key": key, "fingerprint": fingerprint, "owner": owner}
                    try:
                        with self._engine.begin() as conn:
                            conn.execute(insert(RECORDS).values(**row, claimed_at=now, expires_at=now + self._lifetime))
                        keep = True
                        return Claim("claimed", owner)
                    except IntegrityError:
                        pass
                    result = self._existing(principal, key, fingerprint, now, take_over=True)
                    if result is not None:
                        keep = result.state == "claimed"
                        return result
                return IN_PROGRESS
            finally:
                if not keep:
                    self._holders.let_go(holder)

    def _existing(
        self, principal: str, key: str, fingerprint: str, now: datetime, take_over: bool = False
    ) -> Claim | None:
        """What the row says; None when it went away (expired or released): try again.

        An in-progress row is ``claimed`` (taken over) only with ``take_over``, which the caller may
        ask for only while it holds the key's holder lock: the row's holder is then gone.
        """
        where = and_(RECORDS.c.principal == principal, RECORDS.c.key == key)
        with self._engine.begin() as conn:
            row = conn.execute(select(RECORDS).where(where)).first()
            if row is None:
                return None
            if as_utc(row.expires_at) <= now:
                if take_over:
                    conn.execute(delete(RECORDS).where(where, RECORDS.c.owner == row.owner))
                return None
            if row.fingerprint != fingerprint:
                return MISMATCH
            if row.status is not None:
                headers = [(str(name), str(value)) for name, value in json.loads(row.headers or "[]")]
                return Claim("finished", status=int(row.status), headers=headers, body=bytes(row.body or b""))
            if not take_over:
                return IN_PROGRESS
            owner = uuid.uuid4().hex
            taken = conn.execute(
                update(RECORDS)
                .where(where, RECORDS.c.owner == row.owner, RECORDS.c.status.is_(None))
                .values(owner=owner, claimed_at=now)
            )
            return Claim("claimed", owner) if taken.rowcount == 1 else IN_PROGRESS


def _holder(principal: str, key: str) -> str:
    return f"{principal}\0{key}"
