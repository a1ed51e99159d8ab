"""Shared signing keys: the first caller stores one, every later caller reads the same, oldest first."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from irc_proxy.stores.keys import shared_signing_keys
from irc_proxy.stores.tables import SigningKeyRow


def test_the_first_caller_generates_a_key_and_later_callers_read_it(state_engine: sa.Engine, uid: str) -> None:
    made = itertools.count()

    def generate() -> tuple[str, str]:
        return f"kid-{uid}-{next(made)}", f"pem-{uid}"

    algorithm = f"t{uid}"[:16]
    first = shared_signing_keys(state_engine, algorithm, generate)
    again = shared_signing_keys(state_engine, algorithm, generate)
    assert first == again == [(f"kid-{uid}-0", f"pem-{uid}")]
    assert next(made) == 1  # generated once


def test_keys_are_returned_oldest_first_and_by_algorithm(state_engine: sa.Engine, uid: str) -> None:
    algorithm, other = f"a{uid}"[:16], f"b{uid}"[:16]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with sa.orm.Session(state_engine) as session, session.begin():
        session.add(SigningKeyRow(kid=f"new-{uid}", algorithm=algorithm, private_pem="n", created_at=start))
        session.add(
            SigningKeyRow(kid=f"old-{uid}", algorithm=algorithm, private_pem="o", created_at=start - timedelta(1))
        )
        session.add(SigningKeyRow(kid=f"x-{uid}", algorithm=other, private_pem="x", created_at=start - timedelta(2)))

    def never() -> tuple[str, str]:
        raise AssertionError("a stored key exists: nothing is generated")

    assert shared_signing_keys(state_engine, algorithm, never) == [(f"old-{uid}", "o"), (f"new-{uid}", "n")]
