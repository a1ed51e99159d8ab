"""Database failures at the boundary: unavailable or busy is ServiceUnavailable; a conflict passes through."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from irc_proxy.dberrors import database_errors
from irc_proxy.errors import ServiceUnavailable


def test_a_driver_error_is_service_unavailable_naming_the_database_not_the_details() -> None:
    expected = r"^Catalog database is unavailable: OperationalError$"
    with pytest.raises(ServiceUnavailable, match=expected) as raised, database_errors("Catalog database"):
        raise OperationalError("SELECT secret", {}, sqlite3.OperationalError("disk I/O error"))
    assert isinstance(raised.value.__cause__, OperationalError)


def test_an_exhausted_pool_is_service_unavailable_busy() -> None:
    with pytest.raises(ServiceUnavailable, match="State database is busy"), database_errors("State database"):
        raise PoolTimeout("QueuePool limit reached")


def test_an_integrity_error_passes_through_for_the_caller_to_judge() -> None:
    with pytest.raises(IntegrityError), database_errors("State database"):
        raise IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed"))


def test_other_exceptions_pass_through_untouched() -> None:
    with pytest.raises(KeyError), database_errors("State database"):
        raise KeyError("x")
