"""Named points where a maintenance job can be held still, so a test can kill the process at exactly that point.

``IRC_TEST_PAUSE_AT="expire-snapshots.after-commit=30"`` makes the job sleep 30 s there (the lease is renewed
meanwhile, as during any slow step). Unset (always, outside tests) a pause point costs one dictionary look-up.
Not an ``IRC_PROXY_*`` variable: those are settings.
"""

from __future__ import annotations

import asyncio
import logging
import os

ENV = "IRC_TEST_PAUSE_AT"
AFTER_EXPIRY_COMMIT = "expire-snapshots.after-commit"
log = logging.getLogger("irc_proxy.maintenance")


def _pauses() -> dict[str, float]:
    found: dict[str, float] = {}
    for item in os.environ.get(ENV, "").split(","):
        name, _, seconds = item.partition("=")
        if name.strip() and seconds.strip():
            found[name.strip()] = float(seconds)
    return found


async def pause(point: str) -> None:
    """Sleep as long as ``IRC_TEST_PAUSE_AT`` says for ``point`` (no time at all when it does not name it)."""
    seconds = _pauses().get(point)
    if seconds:
        log.warning("maintenance paused at %s for %s s (%s)", point, seconds, ENV)
        await asyncio.sleep(seconds)
