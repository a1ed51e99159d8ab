"""The shape every state-database store shares: one operation is one transaction, run in a worker thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlmodel import Session

from irc_proxy.dberrors import database_errors
from irc_proxy.threads import ThreadRunner

T = TypeVar("T")


class TransactionalStore:
    """Base of the stores: ``_run(fn)`` calls ``fn(session)`` inside one transaction, off the event loop."""

    def __init__(self, engine: Engine, threads: ThreadRunner) -> None:
        self._engine = engine
        self._threads = threads

    async def _run(self, fn: Callable[[Session], T]) -> T:
        return await self._threads.run(self.run_sync, fn)

    def run_sync(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn`` in one transaction (for the CLI and other synchronous callers)."""
        with database_errors("State database"), Session(self._engine) as session, session.begin():
            return fn(session)
