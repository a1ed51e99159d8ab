"""How a command other than ``serve`` and ``db upgrade`` opens the state database: never making one.

Run from another directory, or with a mistyped ``--config``, a command that created what it did not find
would answer from a new, empty database ("no trash", "no records") and leave it behind. These commands
open an existing database only, and ``NoStateDatabase`` names where they looked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from irc_proxy.settings import Settings


def open_state(settings: Settings) -> Engine:
    """The state database, at this version's schema (upgraded if ``state.auto_upgrade``).

    Raises:
        NoStateDatabase: no SQLite file there, or a database with nothing of ours in it.
        SchemaOutOfDate: a schema of another revision (and no ``auto_upgrade``).
    """
    from irc_proxy.stores.db import create_state_engine, ensure_schema

    engine = create_state_engine(settings.state.database_url.get_secret_value(), create=False)
    try:
        ensure_schema(engine, settings.state.auto_upgrade, initialise=False)
    except BaseException:
        engine.dispose()
        raise
    return engine


def database_failure(exc: Exception) -> str:
    """One line about a failed state database call (no stack trace, no password of a URL)."""
    from irc_proxy.masking import mask_text

    message = getattr(exc, "message", None) or str(getattr(exc, "orig", None) or exc)
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    return "state database: " + mask_text(first)
