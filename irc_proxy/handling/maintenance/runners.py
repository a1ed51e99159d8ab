"""The jobs the local executor runs, by name (``RUNNERS``): each job module imports ``job`` and ``deleting``, and
this module imports the job modules, so no import goes round a loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from irc_proxy.handling.maintenance.compaction import rewrite_data_files
from irc_proxy.handling.maintenance.job import (
    EXPIRE_SNAPSHOTS,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_MANIFESTS,
    Job,
)
from irc_proxy.handling.maintenance.jobs import expire_snapshots, remove_orphan_files
from irc_proxy.handling.maintenance.manifests import rewrite_manifests

Runner = Callable[[Job], Awaitable[dict[str, Any]]]
"""A job runner: the job's result dict (``{"status": ..., <kebab-case counts>}``)."""

RUNNERS: dict[str, Runner] = {
    EXPIRE_SNAPSHOTS: expire_snapshots,
    REMOVE_ORPHAN_FILES: remove_orphan_files,
    REWRITE_MANIFESTS: rewrite_manifests,
    REWRITE_DATA_FILES: rewrite_data_files,
}
"""Each job the local executor runs, by name; a job not here answers ``skipped``. A new job adds its entry."""
