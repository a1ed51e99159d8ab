"""Prometheus counts of maintenance (``irc_proxy.metrics``): runs and jobs by outcome, job and run durations, and
the files and bytes each job removed, rewrote or added, read from its result's kebab-case counts.

A job's counts are named ``<what>-<action>`` (``files-deleted``, ``delete-files-removed``, ``data-files-rewritten``,
``manifests-added``, ``bytes-deleted``, ...): a name whose last word is an action and whose word before it is
``files`` or ``manifests`` counts files, one with the word ``bytes`` counts bytes; anything else
(``snapshots-expired``, ``files-not-deleted``, ``files-to-delete``) is not metered here. So a new job's counts
are metered without a change here as long as they follow the names of issue 28. Dry runs change nothing: their
jobs are counted, their files are not. Every count is per process, like the proxy's other metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from irc_proxy import metrics

ACTIONS = {"deleted": "removed", "removed": "removed", "rewritten": "rewritten", "added": "added"}
"""The last word of a count and the ``action`` label it is metered under."""
_FILE_WORDS = ("files", "manifests")


def metered(name: str) -> tuple[str, str] | None:
    """``("files" | "bytes", action)`` for a count ``name`` that is metered, else None."""
    words = name.split("-")
    if len(words) < 2 or words[-1] not in ACTIONS:
        return None
    if "bytes" in words:
        return "bytes", ACTIONS[words[-1]]
    return ("files", ACTIONS[words[-1]]) if words[-2] in _FILE_WORDS else None


def job_finished(job: str, result: Mapping[str, Any], seconds: float, dry_run: bool) -> None:
    """Count one job's outcome, duration and (unless a dry run) its files and bytes."""
    metrics.MAINTENANCE_JOBS.labels(job, str(result.get("status", "failed"))).inc()
    metrics.MAINTENANCE_JOB_DURATION.labels(job).observe(seconds)
    if dry_run:
        return
    for name, value in result.items():
        kind = metered(name)
        if kind is None or isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            continue
        counter = metrics.MAINTENANCE_FILES if kind[0] == "files" else metrics.MAINTENANCE_BYTES
        counter.labels(job, kind[1]).inc(value)


def run_finished(catalog: str, status: str, seconds: float) -> None:
    metrics.MAINTENANCE_RUNS.labels(catalog, status).inc()
    metrics.MAINTENANCE_RUN_DURATION.observe(seconds)
