"""Which counts of a job's result are metered as files or bytes (``handling.maintenance.metering``)."""

from __future__ import annotations

from prometheus_client import REGISTRY

from irc_proxy.handling.maintenance.metering import job_finished, metered


def test_counts_named_after_files_or_bytes_and_an_action_are_metered_and_nothing_else() -> None:
    assert metered("files-deleted") == ("files", "removed")
    assert metered("delete-files-removed") == ("files", "removed")
    assert metered("data-files-rewritten") == ("files", "rewritten")
    assert metered("manifests-added") == ("files", "added")
    assert metered("bytes-deleted") == ("bytes", "removed")
    for other in ("snapshots-expired", "files-not-deleted", "files-to-delete", "refs-removed", "seconds", "status"):
        assert metered(other) is None, other


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_job_is_counted_with_its_files_and_bytes_but_a_dry_runs_files_are_not() -> None:
    files = ("irc_proxy_maintenance_files_total", {"job": "unit-job", "action": "removed"})
    before = (
        sample(files[0], **files[1]),
        sample("irc_proxy_maintenance_jobs_total", job="unit-job", status="succeeded"),
    )
    result = {
        "status": "succeeded",
        "files-deleted": 3,
        "bytes-deleted": 300,
        "files-not-deleted": 1,
        "truncated": True,
    }
    job_finished("unit-job", result, 0.5, dry_run=False)
    job_finished("unit-job", result, 0.5, dry_run=True)
    assert sample(files[0], **files[1]) == before[0] + 3
    assert sample("irc_proxy_maintenance_bytes_total", job="unit-job", action="removed") >= 300
    assert sample("irc_proxy_maintenance_jobs_total", job="unit-job", status="succeeded") == before[1] + 2
    assert sample("irc_proxy_maintenance_job_duration_seconds_count", job="unit-job") >= 2
