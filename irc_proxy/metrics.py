"""Prometheus metric objects, importable from every layer (they depend on nothing of ours).

The HTTP layer serves them at ``/metrics`` (``irc_proxy/http/metrics.py``); other layers only increment.
Label values must stay bounded: route *templates*, catalog names from the config, operation names.

The metrics every request updates (its count and duration, the backend call, the pointer and metadata caches) are
``irc_proxy.metric_cells``' lighter counters and histograms, exposed under the same names, labels and buckets.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from irc_proxy import metric_cells

# Seconds; spans fast local metadata reads to slow commits through a remote catalog.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = metric_cells.Counter(
    "irc_proxy_http_requests_total",
    "HTTP requests answered, by method, route template, status code and catalog.",
    ["method", "route", "status", "catalog"],
)
REQUEST_LATENCY = metric_cells.Histogram(
    "irc_proxy_http_request_duration_seconds",
    "Time from receiving a request to sending the last byte of its response.",
    ["method", "route", "catalog"],
    buckets=LATENCY_BUCKETS,
)
BACKEND_CALL_LATENCY = metric_cells.Histogram(
    "irc_proxy_backend_call_duration_seconds",
    "Time spent in one call to a catalog backend (Glue, local SQL, remote REST), by catalog and operation.",
    ["catalog", "operation"],
    buckets=LATENCY_BUCKETS,
)
METADATA_CACHE_HITS = metric_cells.Counter(
    "irc_proxy_metadata_cache_hits_total",
    "Table metadata files served from the in-process cache.",
)
METADATA_CACHE_MISSES = metric_cells.Counter(
    "irc_proxy_metadata_cache_misses_total",
    "Table metadata files that had to be read from storage.",
)
MANIFEST_CACHE_HITS = Counter(
    "irc_proxy_manifest_cache_hits_total",
    "Manifest lists and manifests served decoded from the scan-planning cache.",
)
MANIFEST_CACHE_MISSES = Counter(
    "irc_proxy_manifest_cache_misses_total",
    "Manifest lists and manifests that scan planning had to read and decode.",
)
MANIFEST_CACHE_BYTES = Gauge(
    "irc_proxy_manifest_cache_bytes",
    "Estimated bytes held by the scan-planning manifest cache.",
)
TRASH_EVENTS = Counter(
    "irc_proxy_trash_events_total",
    "Dropped tables kept in the trash, restored, claimed by a register, expunged or expired.",
    ["event"],
)
SCAN_PLANS = Counter(
    "irc_proxy_scan_plans_total",
    "Server-side scan plans, by how the first answer ended (completed, submitted, failed).",
    ["status"],
)
STS_CALLS = Counter(
    "irc_proxy_sts_calls_total",
    "Calls to AWS STS (AssumeRole) made to vend storage credentials.",
)
COMMIT_CONFLICTS = Counter(
    "irc_proxy_commit_conflicts_total",
    "Table commits refused with 409 CommitFailedException (a requirement failed, or retries ran out).",
)
COMMIT_RETRIES = Counter(
    "irc_proxy_commit_retries_total",
    "Times a table commit was re-applied on fresh metadata after losing a compare-and-swap race.",
)
IDEMPOTENT_REPLAYS = Counter(
    "irc_proxy_idempotent_replays_total",
    "Mutations answered from a stored outcome because their Idempotency-Key was seen before.",
)
PURGE_SKIPPED = Counter(
    "irc_proxy_purge_skipped_total",
    "Referenced files a purge (or delete-after-commit) left in place: outside the table's or catalog's locations.",
    ["kind"],
)
PURGE_FAILURES = Counter(
    "irc_proxy_purge_failures_total",
    "Files a purge (or delete-after-commit) could not read or delete, by reason; the drop itself succeeded.",
    ["reason"],
)
MAINTENANCE_RUNS = Counter(
    "irc_proxy_maintenance_runs_total",
    "Maintenance runs this process finished, by catalog and outcome (succeeded, skipped, failed).",
    ["catalog", "status"],
)
MAINTENANCE_JOBS = Counter(
    "irc_proxy_maintenance_jobs_total",
    "Maintenance jobs this process ran, by job and outcome (succeeded, skipped, failed), dry runs included.",
    ["job", "status"],
)
MAINTENANCE_FILES = Counter(
    "irc_proxy_maintenance_files_total",
    "Files maintenance jobs removed, rewrote or added (not dry runs), by job and action.",
    ["job", "action"],
)
MAINTENANCE_BYTES = Counter(
    "irc_proxy_maintenance_bytes_total",
    "Bytes of the files maintenance jobs removed, rewrote or added (not dry runs), by job and action.",
    ["job", "action"],
)
# Seconds; a job on a small table takes milliseconds, a compaction of a large one many minutes.
MAINTENANCE_BUCKETS = (0.05, 0.25, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)
MAINTENANCE_JOB_DURATION = Histogram(
    "irc_proxy_maintenance_job_duration_seconds",
    "Time one maintenance job took, by job.",
    ["job"],
    buckets=MAINTENANCE_BUCKETS,
)
MAINTENANCE_RUN_DURATION = Histogram(
    "irc_proxy_maintenance_run_duration_seconds",
    "Time one maintenance run took, from its claim to its outcome.",
    buckets=MAINTENANCE_BUCKETS,
)
MAINTENANCE_RUNNING = Gauge(
    "irc_proxy_maintenance_runs_running",
    "Maintenance runs this process is running now (queued runs are in the state database: see the console).",
)
POINTER_CACHE_HITS = metric_cells.Counter(
    "irc_proxy_pointer_cache_hits_total",
    "Table pointer reads (current metadata location) answered from the in-process pointer cache, by catalog.",
    ["catalog"],
)
POINTER_CACHE_MISSES = metric_cells.Counter(
    "irc_proxy_pointer_cache_misses_total",
    "Table pointer reads that went to the catalog's store (database, Glue), by catalog.",
    ["catalog"],
)
POINTER_CACHE_INVALIDATIONS = metric_cells.Counter(
    "irc_proxy_pointer_cache_invalidations_total",
    "Pointer cache invalidations by cause: commit (this process), feed (another replica or Glue event), "
    "flush (the change feed reconnected or the database changed underneath), by catalog.",
    ["catalog", "cause"],
)
