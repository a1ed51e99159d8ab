"""Database errors at the boundary: an unreachable or exhausted database is a 503, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from irc_proxy.errors import ServiceUnavailable


@contextmanager
def database_errors(database: str) -> Iterator[None]:
    """Translate SQLAlchemy failures into ServiceUnavailable; IntegrityError passes through (callers
    turn it into AlreadyExists or a lost compare-and-swap)."""
    try:
        yield
    except IntegrityError:
        raise
    except DBAPIError as exc:
        raise ServiceUnavailable(f"{database} is unavailable: {type(exc.orig).__name__}") from exc
    except PoolTimeout as exc:
        raise ServiceUnavailable(f"{database} is busy: no connection became free in time") from exc
