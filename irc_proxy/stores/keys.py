"""Signing keys in the state database, so every replica signs with (and publishes) the same key."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.tables import SigningKeyRow


def shared_signing_keys(
    engine: Engine, algorithm: str, generate: Callable[[], tuple[str, str]]
) -> list[tuple[str, str]]:
    """Every stored ``(kid, private PEM)`` of ``algorithm``, oldest (the one to sign with) first.

    When there is none, ``generate()`` makes one and it is stored. Replicas starting at once may
    each store one; all of them then sign with the oldest and accept all.
    """
    with database_errors("State database"):
        rows = _load(engine, algorithm)
        if not rows:
            kid, pem = generate()
            with Session(engine) as session, session.begin():
                session.add(SigningKeyRow(kid=kid, algorithm=algorithm, private_pem=pem))
            rows = _load(engine, algorithm)
    return rows


def _load(engine: Engine, algorithm: str) -> list[tuple[str, str]]:
    with Session(engine) as session:
        stmt = (
            select(SigningKeyRow)
            .where(col(SigningKeyRow.algorithm) == algorithm)
            .order_by(col(SigningKeyRow.created_at), col(SigningKeyRow.kid))
        )
        return [(row.kid, row.private_pem) for row in session.execute(stmt).scalars()]
