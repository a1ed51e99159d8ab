"""Failed logins at the token endpoint, in the state database, so every replica counts the same failures.

One row per failure and key (``client`` id or source ``address``), stamped with epoch seconds (replica
clocks are assumed to agree within a second or so, as NTP keeps them). Rows older than the window are
pruned by whichever replica records a failure after the last prune.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from irc_proxy.stores.tables import MAX_LOGIN_KEY as MAX_KEY
from irc_proxy.stores.tables import LoginFailureRow
from irc_proxy.stores.transactions import TransactionalStore
from irc_proxy.threads import ThreadRunner


def stored_key(key: str) -> str:
    """The key as stored: itself, or a digest when it is too long for the column (client ids are the caller's)."""
    return key if len(key) <= MAX_KEY else "sha256:" + hashlib.sha256(key.encode()).hexdigest()


class LoginFailureStore(TransactionalStore):
    """Record failures and find when a key's latest ``limit`` failures leave the window."""

    def __init__(self, engine: Engine, threads: ThreadRunner, window_seconds: float) -> None:
        super().__init__(engine, threads)
        self.window_seconds = window_seconds
        self._pruned = 0.0

    async def blocked_until(self, keys: list[tuple[str, str, int]], now: float) -> dict[tuple[str, str], float]:
        """For ``(kind, key, limit)`` triples: the keys with ``limit`` failures within the window, each with
        the epoch time at which the oldest of those leaves it."""

        def blocked_until(session: Session) -> dict[tuple[str, str], float]:
            blocked: dict[tuple[str, str], float] = {}
            for kind, key, limit in keys:
                stmt = (
                    select(LoginFailureRow.at)
                    .where(col(LoginFailureRow.kind) == kind, col(LoginFailureRow.key) == stored_key(key))
                    .where(col(LoginFailureRow.at) > now - self.window_seconds)
                    .order_by(col(LoginFailureRow.at).desc())
                    .offset(limit - 1)
                    .limit(1)
                )
                at = session.execute(stmt).scalar()
                if at is not None:
                    blocked[(kind, key)] = at + self.window_seconds
            return blocked

        return await self._run(blocked_until)

    async def record(self, keys: list[tuple[str, str]], now: float) -> None:
        def record(session: Session) -> None:
            session.add_all(LoginFailureRow(kind=kind, key=stored_key(key), at=now) for kind, key in keys)
            if now - self._pruned >= self.window_seconds:
                self._pruned = now
                session.execute(delete(LoginFailureRow).where(col(LoginFailureRow.at) < now - self.window_seconds))

        await self._run(record)
