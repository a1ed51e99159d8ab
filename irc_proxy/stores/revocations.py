"""Revoked tokens and used one-time values, in the state database, so every replica refuses them.

One row per value (its SHA-256, never the value), with a kind (``token``: a bearer token whose session was
signed out; ``oidc-flow``: a console sign-in whose callback already ran) and the epoch time after which the
row means nothing (the token would have expired anyway; the flow's cookie has). Expired rows are pruned by
whichever replica adds a row after the last prune.
"""

from __future__ import annotations

from sqlalchemy import Engine, delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from irc_proxy.stores.tables import RevokedRow
from irc_proxy.stores.transactions import TransactionalStore
from irc_proxy.threads import ThreadRunner

PRUNE_SECONDS = 60.0


class RevocationStore(TransactionalStore):
    """Add a value once (``add`` says whether it was new) and list the live values of a kind."""

    def __init__(self, engine: Engine, threads: ThreadRunner) -> None:
        super().__init__(engine, threads)
        self._pruned = 0.0

    async def add(self, kind: str, digest: str, expires_at: float, now: float) -> bool:
        """Record ``digest``; False when it was already recorded (and has not expired)."""

        def add(session: Session) -> None:
            if now - self._pruned >= PRUNE_SECONDS:
                self._pruned = now
                session.execute(delete(RevokedRow).where(col(RevokedRow.expires_at) < now))
                session.flush()
            session.add(RevokedRow(kind=kind, digest=digest, expires_at=expires_at))

        try:
            await self._run(add)
        except IntegrityError:
            return False
        return True

    async def has(self, kind: str, digest: str, now: float) -> bool:
        """Whether ``digest`` is recorded (and has not expired)."""

        def has(session: Session) -> bool:
            stmt = select(RevokedRow.id).where(
                col(RevokedRow.kind) == kind, col(RevokedRow.digest) == digest, col(RevokedRow.expires_at) >= now
            )
            return session.execute(stmt.limit(1)).first() is not None

        return await self._run(has)

    async def live(self, kind: str, now: float) -> set[str]:
        """Every recorded digest of ``kind`` that has not expired."""

        def live(session: Session) -> set[str]:
            stmt = select(RevokedRow.digest).where(col(RevokedRow.kind) == kind, col(RevokedRow.expires_at) >= now)
            return set(session.execute(stmt).scalars())

        return await self._run(live)
