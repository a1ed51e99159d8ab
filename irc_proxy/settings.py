"""Typed settings: a TOML file plus ``IRC_PROXY_*`` environment overrides.

Every key is documented by its docstring, from which docs/configuration/reference.md is generated
(``python -m irc_proxy.settings_doc``). The environment maps onto the file's keys with ``__`` between
levels, e.g. ``IRC_PROXY_SERVER__PORT=9000`` or ``IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE=file:///data/wh``.
Unknown keys and bad values are rejected at start-up with a message that names the key (and the
environment variable that set it), an unknown key with the nearest known one (``settings_messages``).

The overlay is one small function (``_set_path``: the environment written into the file's tree,
then everything validated once) rather than pydantic-settings, whose environment source looks
variables up by field: refusing an unknown ``IRC_PROXY_*`` key with a message naming it, and
catalogs that only the environment names (a dict of a tagged union), would each need a custom
source longer than this function.
"""

from __future__ import annotations

import os
import re
import tomllib
import unicodedata
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Secret,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from irc_proxy.errors import StartupError
from irc_proxy.masking import mask_url
from irc_proxy.settings_messages import describe

ENV_PREFIX = "IRC_PROXY_"
ENV_CONFIG_FILE = "IRC_PROXY_CONFIG"
DEFAULT_CATALOG_NAME = "local"
# Path words that follow ``/v1/`` in the spec; a catalog (prefix) may not be named like them.
RESERVED_CATALOG_NAMES = frozenset({"config", "namespaces", "tables", "views", "transactions", "oauth", "aws"})
_CATALOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ConfigError(StartupError):
    """The configuration is invalid; the message names the offending key."""


class SecretUrl(Secret[str]):
    """A URL that may carry credentials (a database password, a ``?token=``, ``user:password@``).

    Consumers take the whole value with ``get_secret_value()``; everywhere it is shown (``repr``,
    ``str``, ``check-config``'s JSON) it is masked by :func:`irc_proxy.masking.mask_url`, so the
    host and path stay recognisable. Falsy when empty, like the string it holds.
    """

    def _display(self) -> str:
        return mask_url(self.get_secret_value())

    def __bool__(self) -> bool:
        return bool(self.get_secret_value())


class _Strict(BaseModel):
    # A field's docstring is its description: docs/configuration/reference.md is generated from them
    # (``python -m irc_proxy.settings_doc``).
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ScanPlanningSettings(_Strict):
    """Server-side scan planning (``[server.scan_planning]``); each catalog says whether clients use it."""

    sync_budget_seconds: Annotated[float, Field(ge=0, le=600)] = 2.0
    """How long planTableScan may take to read the manifest list before answering `submitted` (0: every scan is planned
    in the background); inline planning also stops at it, between chunks."""
    plan_ttl: timedelta = timedelta(hours=1)
    """Lifetime of a plan id and its plan tasks (ISO-8601 duration); expired ones are 404."""
    files_per_task: Annotated[int, Field(ge=1, le=1_000_000)] = 2000
    """Most files (counted from the manifest list) one plan task covers: the work of one fetchScanTasks."""
    tasks_per_response: Annotated[int, Field(ge=1, le=1_000_000)] = 1000
    """File scan tasks put inline in a planTableScan answer before the rest goes out as plan tasks."""
    manifest_cache_mb: Annotated[int, Field(ge=0, le=65_536)] = 256
    """Decoded manifest lists and manifests kept per process (estimated bytes, all catalogs together); 0 turns it off.
    """
    max_response_bytes: Annotated[int, Field(ge=64 << 10, le=1 << 30)] = 16 << 20
    """JSON of file scan tasks in one planTableScan or fetchScanTasks answer (one task at least); the rest goes out as
    (resumable) plan tasks."""
    max_plan_cpu_seconds: Annotated[float, Field(gt=0, le=3600)] = 10.0
    """CPU time (the worker thread's own) one planning request may spend; past it 400 `BadRequestException` (a
    background plan fails)."""
    max_plan_wall_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """Wall-clock time one planning request may spend in its worker thread; past it 400."""
    max_filter_literal_bytes: Annotated[int, Field(ge=16, le=1 << 24)] = 4096
    """One literal of a scan filter (UTF-8 bytes of a string, digits of a number); 400 beyond."""
    max_filter_in_values: Annotated[int, Field(ge=1, le=100_000)] = 1000
    """Values of one `in` / `not-in` list of a scan filter; 400 beyond."""
    max_filter_bytes: Annotated[int, Field(ge=1024, le=1 << 24)] = 256 << 10
    """All strings and numbers (keys included) of one scan filter together; 400 beyond."""

    @field_validator("plan_ttl")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration, e.g. PT1H")
        return value

    @property
    def manifest_cache_bytes(self) -> int:
        """``manifest_cache_mb`` in bytes."""
        return self.manifest_cache_mb << 20


ScanPlanningMode = Literal["off", "offered", "preferred"]


class MaintenanceSettings(_Strict):
    """Table maintenance runs (``[server.maintenance]``): requested through the management API or `irc-proxy maintenance
    run` or queued by a catalog's schedule (`[catalogs.<name>.maintenance]`), run by a worker in every replica (see
    "Table maintenance")."""

    max_concurrent_runs: Annotated[int, Field(ge=0, le=64)] = 2
    """Runs one replica works on at once (one run per table across all replicas); `0`: this replica runs none (others
    may)."""
    poll_seconds: Annotated[float, Field(gt=0, le=3600)] = 5.0
    """How often an idle worker looks for queued runs in the state database."""
    lease_seconds: Annotated[float, Field(ge=1, le=86_400)] = 300.0
    """A running run's claim, renewed while it works; a replica that died mid-run leaves it to another after this."""
    orphan_min_age: timedelta = timedelta(days=3)
    """`remove-orphan-files` deletes only files older than this (ISO-8601 duration): files of a write in flight are not
    yet in the table's metadata."""
    max_files_per_run: Annotated[int, Field(ge=1, le=100_000_000)] = 1_000_000
    """Most files one job lists, reads from manifests and deletes; a table that reaches more fails the job (nothing
    deleted), a longer listing or deletion stops there (the next run goes on)."""
    max_rewrite_bytes: Annotated[int, Field(ge=1)] = 10 * 1024**3
    """Most input bytes one `rewrite-data-files` job rewrites (whole file groups; the rest waits for the next run)."""
    rewrite_buffer_mb: Annotated[int, Field(ge=1, le=65_536)] = 64
    """Arrow data `rewrite-data-files` buffers before writing it as a row group: with one input batch, what a rewrite
    holds in memory (it streams, never a whole partition)."""
    runs_kept_per_table: Annotated[int, Field(ge=1, le=100_000)] = 100
    """Finished runs kept per table (the newest): each new run of a table forgets its older ones, so the run history
    in the state database stays bounded however often a table's writer requests runs."""
    isolation: Literal["process", "thread"] = "process"
    """Where the `local` executor's jobs run: `process`, in a child process of the replica at a lower CPU priority
    (nice +10), one per concurrent run and reused by the next, so that reading manifests and rewriting files neither
    holds the serving process's interpreter nor can take it down (a child that dies fails its run's jobs); `thread`,
    in the serving process itself (its blocking-work threads). `irc-proxy maintenance run --here` always runs in its
    own process."""

    @field_validator("orphan_min_age")
    @classmethod
    def _at_least_an_hour(cls, value: timedelta) -> timedelta:
        if value < timedelta(hours=1):
            raise ValueError("must be at least PT1H: younger files may belong to a commit in flight")
        return value


MaintenanceJob = Literal["expire-snapshots", "remove-orphan-files", "rewrite-manifests", "rewrite-data-files"]
ALL_MAINTENANCE_JOBS: tuple[MaintenanceJob, ...] = (
    "expire-snapshots",
    "remove-orphan-files",
    "rewrite-manifests",
    "rewrite-data-files",
)


MaintenanceExecutor = Literal["local", "spark"]
SparkJob = Literal["rewrite-data-files", "rewrite-manifests", "expire-snapshots"]


class CatalogMaintenanceSettings(_Strict):
    """Scheduled maintenance of one catalog's tables (``[catalogs.<name>.maintenance]``) and the policy every run of
    them follows. A namespace (and its children) or a table overrides any key but `interval`, `sweep_max_tables`
    and the executor keys with the property `irc-proxy.maintenance.<key>`; Iceberg's own table properties win where
    Iceberg defines the value (see "Table maintenance"). The executor keys say where its jobs run (see "Executors");
    they are the catalog's alone and not shown in a table's policy."""

    # Policy: scheduling, thresholds and retention (owned by the scheduler; keep together) -----------------------
    enabled: bool = False
    """Scheduled maintenance: `true` lets the sweep queue runs of this catalog's tables that need attention. Runs
    requested through the API or the command line work either way."""
    interval: timedelta = timedelta(hours=1)
    """How often one replica sweeps the catalog (ISO-8601 duration): it evaluates the tables commits marked and walks
    on through every table (`sweep_max_tables` at a time) for writers that bypass the proxy."""
    jobs: list[MaintenanceJob] = Field(default_factory=lambda: list(ALL_MAINTENANCE_JOBS))
    """The jobs a scheduled run does, in this order."""
    min_run_interval: timedelta = timedelta(hours=6)
    """A scheduled run of a table is queued at most once in this time (ISO-8601 duration), even if it still needs
    attention afterwards (a threshold that no job can bring down, say)."""
    sweep_max_tables: Annotated[int, Field(ge=1, le=1_000_000)] = 1000
    """Tables one sweep walks (besides the marked ones); the next sweep goes on where it stopped."""
    small_files: Annotated[int, Field(ge=1)] = 100
    """Needs attention at this many small data files, estimated from the current snapshot's summary: data files
    beyond the count bin-packing `total-files-size` into `target_file_size_bytes` gives, when the average file is
    small."""
    small_file_ratio: Annotated[float, Field(gt=0, le=1)] = 0.75
    """A data file is small below this fraction of `target_file_size_bytes` (compared with the average file size)."""
    delete_files: Annotated[int, Field(ge=1)] = 50
    """Needs attention at this many delete files (`total-delete-files`)."""
    snapshots: Annotated[int, Field(ge=1)] = 100
    """Needs attention at this many snapshots."""
    oldest_snapshot_age: timedelta = timedelta(days=7)
    """Needs attention when its oldest snapshot is older than this (ISO-8601 duration) and the retention would expire
    it."""
    max_snapshot_age: timedelta = timedelta(days=5)
    """Retention: a branch keeps ancestors younger than this (Iceberg's `history.expire.max-snapshot-age-ms` wins)."""
    min_snapshots_to_keep: Annotated[int, Field(ge=1)] = 1
    """Retention: a branch keeps at least this many ancestors (Iceberg's `history.expire.min-snapshots-to-keep` wins).
    """
    max_ref_age: timedelta | None = None
    """Retention: a ref (never `main`) whose head is older goes; unset: refs are kept forever (Iceberg's
    `history.expire.max-ref-age-ms` wins)."""
    orphan_min_age: timedelta | None = None
    """`remove-orphan-files` deletes only files older than this (at least `PT1H`); unset:
    `server.maintenance.orphan_min_age`."""
    target_file_size_bytes: Annotated[int, Field(ge=1 << 10)] = 512 << 20
    """Compaction's target data file size (Iceberg's `write.target-file-size-bytes` wins)."""
    manifest_target_size_bytes: Annotated[int, Field(ge=1 << 10)] = 8 << 20
    """`rewrite-manifests`' target manifest size (Iceberg's `commit.manifest.target-size-bytes` wins)."""

    # Executors: where the jobs run (owned by the Spark executor) ----------------------------------------------
    executor: MaintenanceExecutor = "local"
    """`local`: the proxy's own worker runs every job; `spark`: the jobs in `spark_jobs` run as Iceberg's Spark
    procedures in a child process whose Spark catalog is this proxy (the others stay local)."""
    spark_jobs: list[SparkJob] = Field(
        default_factory=lambda: list[SparkJob](["rewrite-data-files", "rewrite-manifests"])
    )
    """`spark`: the jobs Spark runs. `expire-snapshots` is opt-in: Spark then deletes the expired files with its own
    storage access, outside the proxy's confinement. `remove-orphan-files` always runs locally."""
    spark_master: str = "local[2]"
    """`spark`: the Spark master (`local[N]`, `yarn`, `k8s://https://...`, `spark://host:7077`); the driver runs in the
    child process (client deploy mode), executors where the master puts them."""
    spark_submit: str = ""
    """`spark`: path of `spark-submit` to launch the driver with (a cluster's Spark installation); empty: the driver is
    started with this Python's `pyspark`."""
    spark_connect_url: str = ""
    """`spark`: a Spark Connect server (`sc://host:15002`) to run the procedures on instead of a driver of our own;
    its Spark needs the Iceberg runtime and extensions already."""
    spark_jars: list[str] = Field(default_factory=list)
    """`spark`: jars for `spark.jars`: the Iceberg Spark runtime and what it needs (paths or URLs)."""
    spark_conf: dict[str, SecretStr] = Field(default_factory=dict)
    """`spark`: extra Spark configuration (`spark.executor.memory`, `spark.kubernetes.*`, S3A keys, ...); handed to the
    driver on its standard input, never on its command line; values masked in `check-config`. Keys under
    `spark.sql.catalog.irc_proxy_maintenance.` set the driver's catalog (`io-impl`, `hadoop.fs.s3a.*`) over what it
    derives from the table's vended credentials (see "Spark on S3")."""
    spark_rewrite_options: dict[str, str] = Field(default_factory=dict)
    """`spark`: options of `rewrite_data_files`, by Iceberg's names (`rewrite-all`, `min-input-files` (default 5),
    `target-file-size-bytes` (default: the table's `write.target-file-size-bytes`), `partial-progress.enabled`, ...);
    `remove-dangling-deletes` is `true` unless set here."""
    spark_catalog_uri: str = ""
    """`spark`: the URI Spark reaches this proxy at (its REST catalog); empty: `http://<server.host>:<server.port>`
    (`127.0.0.1` when the host is a wildcard). Set it to the load balancer's URL when executors run elsewhere."""
    spark_timeout: timedelta = timedelta(hours=1)
    """`spark`: a Spark run of one table is killed after this (ISO-8601 duration); its credential expires then too."""
    spark_python: str = ""
    """`spark`: the Python that runs the driver (`python -m irc_proxy.maintenance_spark`); empty: this process's."""

    @field_validator("interval", "min_run_interval")
    @classmethod
    def _at_least_a_second(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=1):
            raise ValueError("must be at least PT1S")
        return value

    @field_validator("oldest_snapshot_age", "max_snapshot_age", "max_ref_age")
    @classmethod
    def _not_negative(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @field_validator("orphan_min_age")
    @classmethod
    def _orphans_at_least_an_hour(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(hours=1):
            raise ValueError("must be at least PT1H: younger files may belong to a commit in flight")
        return value

    @field_validator("jobs")
    @classmethod
    def _some_jobs(cls, value: list[MaintenanceJob]) -> list[MaintenanceJob]:
        if not value:
            raise ValueError("name at least one job")
        return list(dict.fromkeys(value))


def base_url(host: str, port: int) -> str:
    """The URL a client on this machine uses: a wildcard address becomes loopback, IPv6 gets brackets."""
    shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(host, host)  # noqa: S104
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


class ServerSettings(_Strict):
    """The HTTP server."""

    host: str = "127.0.0.1"
    """Listen address."""
    port: Annotated[int, Field(ge=0, le=65535)] = 8181
    """Listen port."""
    workers: Annotated[int, Field(ge=1, le=256)] = 1
    """Hypercorn worker processes sharing the listening socket; each has its own caches and pools (see "Performance").
    """
    event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    """The event loop: `uvloop` (libuv's, installed with irc-proxy on Linux and macOS) spends less CPU per request
    than `asyncio`'s own; `auto` takes uvloop when it can be imported, else asyncio."""
    blocking_threads: Annotated[int, Field(ge=1, le=1024)] = 32
    """Bound on concurrent blocking calls (SQL, boto3, metadata file I/O) per process; Glue catalogs also have
    `max_concurrency`."""
    metadata_cache_mb: Annotated[int, Field(ge=0, le=65_536)] = 64
    """Byte budget of the metadata cache (parsed metadata + serialised JSON, keyed by metadata location), shared by all
    catalogs of a process; `0` turns it off."""
    metadata_recheck_seconds: Annotated[float, Field(ge=0, le=86_400)] = 10.0
    """A cached metadata file on an object store is re-checked for existence (one HEAD) at most this often; local files
    are checked on every load; `0` = every load."""
    namespace_separator: str = ":"
    """Joins namespace levels in backend names and is accepted in URL paths: one character, not `.`, `/`, `%`, white
    space or a control character."""
    default_page_size: Annotated[int, Field(ge=1, le=100_000)] = 1000
    """Page size when a client sends `pageToken` without `pageSize`."""
    max_page_size: Annotated[int, Field(ge=1, le=100_000)] = 10_000
    """Cap on `pageSize` (one listing page)."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Log level."""
    log_format: Literal["text", "json"] = "text"
    """`text` or `json` (one JSON object per line); every line carries the request id (see "Operations")."""
    max_body_bytes: Annotated[int, Field(ge=1024)] = 16 * 1024 * 1024
    """Request bodies over this are 413 `RequestEntityTooLargeException` (a declared `Content-Length` before anything is
    read; a chunked body as soon as it passes the limit)."""
    read_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """A connection that sends nothing for this long is closed (slow clients)."""
    keep_alive_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    """Idle keep-alive connections are closed after this."""
    write_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """A connection whose client reads nothing of its answer for this long is closed, the rest of the answer dropped
    (each such client held its connection, its request and the unsent answer for as long as it liked)."""
    max_connections: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Connections one worker process holds at once; past it, a new connection is closed before anything is read (a
    warning in the log, once a minute). Keep it below the process's file-descriptor limit (`ulimit -n`), less what
    the catalogs' own connections need."""
    graceful_timeout_seconds: Annotated[float, Field(ge=0, le=3600)] = 30.0
    """On SIGTERM/SIGINT, how long shutdown waits for in-flight requests."""
    readiness_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 2.0
    """Timeout of each dependency probed by `/readyz`."""
    max_metadata_bytes: Annotated[int, Field(ge=1024, le=1 << 34)] = 64 * 1024 * 1024
    """Largest file read for a client: table/view metadata (register, load, commit) and manifest lists/manifests during
    purge and scan planning; larger, or gzip inflating past it, is a 400 (default 64 MiB)."""
    storage_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    """Deadline of an object-store read for a client (each S3 request times out after half of it, one retry): an
    unreachable store answers within about this time."""
    max_commit_updates: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Most updates in one commit (updateTable, a view commit, or all tables of a transaction together), and most
    property keys its `set-properties`/`remove-properties` updates name together (one update of a million keys made a 14
    MB metadata file every load parses again); more is 413."""
    max_commit_requirements: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000
    """Most requirements in one commit, counted the same way; more is 413."""
    max_commit_metadata_adds: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000
    """Most updates that grow a metadata list (`add-schema`, `add-spec`, `add-sort-order`, `add-snapshot`,
    `set-snapshot-ref`, `set-statistics`, `set-partition-statistics`, `add-view-version`, `add-encryption-key`) in one
    commit; more is 413. pyiceberg applies them in time quadratic in their number (10,000 `add-spec`: ~12 s of a worker
    thread; 1,000: ~0.1 s)."""
    max_json_depth: Annotated[int, Field(ge=8, le=1000)] = 100
    """Deepest nesting of arrays/objects in a request body; deeper is 400 (checked on the raw bytes before parsing)."""
    idempotency_key_lifetime: timedelta = timedelta(minutes=30)
    """ISO-8601 duration advertised in `/v1/config`: `Idempotency-Key` support and how long outcomes are kept; `PT0S`
    turns it off."""
    scan_planning: ScanPlanningSettings = ScanPlanningSettings()
    maintenance: MaintenanceSettings = MaintenanceSettings()
    drop_retention: timedelta = timedelta(days=7)
    """How long a dropped table or view (local and Glue catalogs) stays in the trash, restorable; a purge asked for with
    the drop waits for its end; `PT0S` drops and purges at once."""
    trash_expiry_interval_seconds: Annotated[float, Field(gt=0, le=86_400)] = 60.0
    """How often each replica expunges expired trash entries and runs their deferred purges (replicas share the work).
    """
    ui: bool = True
    """Serve the web console at `/ui` (same authentication and grants as the REST API); `false`: no `/ui` routes at all.
    """
    ui_page_budget_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    """How long building one console page (its lists, charts, diff and template, in a worker thread) may take; past it
    the page is a 503 error page (see "The web console")."""
    ui_preview_rows: Annotated[int, Field(ge=0, le=100)] = 100
    """Rows a console table preview shows at most (read from the current snapshot with deletes applied; needs
    `table.read`); `0` turns previews off."""
    ui_preview_max_bytes: Annotated[int, Field(ge=1024, le=1 << 30)] = 32 * 1024 * 1024
    """Bytes of data and delete files one table preview may read in all; a file that does not fit stops the preview
    there (the page says so). Also what one data file's rows may decode to (Parquet packs much more): past it the
    preview shows the rows that fit and says so. Also bounded by `server.ui_page_budget_seconds`."""
    ui_search_max_entries: Annotated[int, Field(ge=100, le=1_000_000)] = 10_000
    """Namespaces, tables and views one console search looks at at most (the ones the caller may list); past it the
    page says the search stopped early."""
    ui_audit_every_seconds: Annotated[float, Field(ge=0, le=86_400)] = 300.0
    """Console reads: one audit record per (principal, page, catalog, object, status) per this many seconds in each
    replica; `0` records every read (see "Audit")."""
    allowed_hosts: list[str] | None = None
    """`Host` names requests may carry (any port; `*.example.com` for subdomains, `*` for any): a guard against DNS
    rebinding. Unset: `server.host`, `localhost`, `127.0.0.1` and `::1` (see "Cross-site requests"). Comma-separated in
    the environment."""
    allowed_origins: list[str] = []
    """Browser origins (`https://app.example.com`) whose requests the REST and management APIs accept; a request with
    any other `Origin` is 403. Default: none (the console is same-origin and uses `/ui`). Comma-separated in the
    environment."""

    @property
    def metadata_cache_bytes(self) -> int:
        """``metadata_cache_mb`` in bytes."""
        return self.metadata_cache_mb << 20

    @property
    def accepted_hosts(self) -> list[str]:
        """``allowed_hosts``, or when unset (or empty) the bind address and the loopback names."""
        return self.allowed_hosts or list(dict.fromkeys([self.host.lower(), "localhost", "127.0.0.1", "::1"]))

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("allowed_origins")
    @classmethod
    def _origins_only(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not re.fullmatch(r"https?://[^/?#\s]+", origin):
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port], no path)")
        return [origin.lower() for origin in value]

    @field_validator("drop_retention")
    @classmethod
    def _retention_not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative, e.g. P7D or PT0S")
        return value

    @field_validator("idempotency_key_lifetime")
    @classmethod
    def _whole_non_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0) or value.microseconds:
            raise ValueError("must be a non-negative whole number of seconds, e.g. PT30M")
        return value

    @field_validator("namespace_separator")
    @classmethod
    def _one_safe_character(cls, value: str) -> str:
        if len(value) != 1:
            raise ValueError("must be exactly one character")
        if value in "./%" or value.isspace() or not value.isprintable():
            raise ValueError("must not be '.', '/', '%', white space or a control character")
        return value


class StateSettings(_Strict):
    """The proxy's own database (views, audit, shared state)."""

    database_url: SecretUrl = SecretUrl("")
    """The proxy's own database: views and their history, signing keys, audit records, principals/roles/grants,
    idempotency records, storage roots, failed logins, scan plans, the trash. Empty: `sqlite:///<data_dir>/state.db`;
    `postgresql+psycopg://user@host/db` for replicas. A secret: its password is masked in `check-config`, logs and
    errors."""
    auto_upgrade: bool = False
    """Upgrade an out-of-date schema at start instead of refusing to start."""


def _comma_list(value: object) -> object:
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


CommaList = Annotated[list[str], BeforeValidator(_comma_list)]
"""A list that the environment may give as one comma-separated string."""


class VendingSettings(_Strict):
    """Storage access delegation for a catalog's tables: STS-vended credentials and remote signing.

    Credentials come from ``AssumeRole`` on ``role_arn`` with an inline session policy scoped to one
    table's locations; the proxy calls STS with the catalog's own AWS credentials (a Glue catalog's
    keys or role, else the default AWS credential chain).
    """

    role_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$")]
    """Required: the role STS `AssumeRole` is called on; AWS grants the intersection of its policy and the table-scoped
    session policy."""
    external_id: SecretStr | None = None
    """`sts:ExternalId` (masked, never logged)."""
    duration_seconds: Annotated[int, Field(ge=900, le=43_200)] = 3600
    """Lifetime of vended credentials."""
    refresh_margin_seconds: Annotated[int, Field(ge=0, le=43_199)] = 600
    """Cached credentials are handed out only while they have at least this long left."""
    allowed_locations: CommaList = Field(default_factory=list)
    """Older configs only: used as the catalog's `allowed_locations` when that is empty (comma-separated in the
    environment)."""
    sts_region: str = ""
    """Empty: the Glue catalog's region (local catalogs: the default chain's, else `us-east-1`)."""
    sts_endpoint_url: str = ""
    """STS endpoint override (e.g. a VPC endpoint)."""
    sts_max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    """Attempts on throttling / 5xx, with doubling backoff and jitter, then 503."""
    sts_backoff_seconds: Annotated[float, Field(ge=0, le=30)] = 0.2
    """First backoff between STS attempts."""
    session_tags: bool = True
    """Tag sessions with catalog/namespace/table (the role's trust policy must allow `sts:TagSession`)."""
    s3_region: str = ""
    """`client.region` handed out (empty: `sts_region`, else `us-east-1`)."""
    s3_endpoint_url: str = ""
    """`s3.endpoint` handed out (S3-compatible stores, tests)."""
    s3_path_style_access: bool = False
    """Hand out `s3.path-style-access=true`."""
    cache_entries: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Credential cache size (least recently used out first), per process."""

    @model_validator(mode="after")
    def _margin_below_duration(self) -> VendingSettings:
        if self.refresh_margin_seconds >= self.duration_seconds:
            raise ValueError("refresh_margin_seconds must be less than duration_seconds")
        bad = [loc for loc in self.allowed_locations if "://" not in loc]
        if bad:
            raise ValueError(f"allowed_locations: not a URI with a scheme: {', '.join(bad)}")
        return self


class LocalCatalogSettings(_Strict):
    """The embedded catalog: pyiceberg's SQL catalog tables plus a file or object-store warehouse."""

    kind: Literal["local"] = "local"
    """Backend kind; may be left out for `local`, also in the environment (`IRC_PROXY_CATALOGS__MINE__WAREHOUSE=...`
    alone defines a local catalog `mine`)."""
    warehouse: str = ""
    """Root of new tables' and views' default locations (`<warehouse>/<level>/.../<name>`); empty:
    `file://<data_dir>/warehouse/<name>`."""
    database_url: SecretUrl = SecretUrl("")
    """The local backend's catalog database (pyiceberg SQL catalog tables, SQLite or PostgreSQL); empty:
    `sqlite:///<data_dir>/catalog.db`. A secret: its password is masked."""
    description: str = ""
    """Free text."""
    drop_retention: timedelta | None = None
    """Overrides ``server.drop_retention`` for this catalog (``PT0S``: drops are final at once)."""
    scan_planning: ScanPlanningMode = "offered"
    """Server-side scan planning: `off` (routes 406, not advertised), `offered` (served and advertised; clients choose),
    `preferred` (also `scan-planning-mode = server` in `/v1/config` defaults and every table's config)."""
    allowed_locations: CommaList = Field(default_factory=list)
    """URIs (with a scheme) under which tables, views and namespace locations may lie; everything else is refused before
    any I/O (see "Security"); empty: the warehouse only. Comma-separated in the environment. An older config's
    `vending.allowed_locations` is used when this is empty."""
    allow_overlapping_locations: bool = False
    """`true`: a table's or view's storage may lie inside (or contain) another live one's in this catalog."""
    pointer_cache_seconds: Annotated[float, Field(ge=0, le=3600)] = 5.0
    """How long a table's current metadata location may stay cached when nothing the proxy hears says it changed:
    it bounds what a writer bypassing the proxy (another engine on the same PostgreSQL catalog database) may go
    unseen; commits through any replica invalidate at once (see "Performance"). SQLite needs no bound (every
    commit, by anyone, is noticed). `0`: no pointer cache."""
    vending: VendingSettings | None = None
    maintenance: CatalogMaintenanceSettings = CatalogMaintenanceSettings()
    """Scheduled maintenance and the maintenance policy of this catalog's tables."""


class AwsCredentialSettings(_Strict):
    """AWS credentials: static keys, else the default chain; with ``role_arn``, that role's (auto-refreshed)."""

    region: str = ""
    """AWS region: required for a Glue catalog and for `sigv4`."""
    access_key_id: SecretStr | None = None
    """Static AWS keys (secrets: masked in `check-config`, never logged); unset: the default credential chain."""
    secret_access_key: SecretStr | None = None
    """Set together with `access_key_id`."""
    session_token: SecretStr | None = None
    """With temporary static keys."""
    role_arn: str = ""
    """Assume this role for all calls (refreshed automatically)."""
    role_external_id: SecretStr | None = None
    """`sts:ExternalId` when assuming `role_arn` (masked)."""
    role_session_name: str = "irc-proxy"
    """Session name when assuming `role_arn`."""
    sts_endpoint_url: str = ""
    """STS endpoint override (e.g. a VPC endpoint)."""

    @model_validator(mode="after")
    def _keys_together(self) -> Self:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("access_key_id and secret_access_key must be set together")
        return self


class GlueCatalogSettings(AwsCredentialSettings):
    """A catalog federated to the AWS Glue Data Catalog (databases = namespaces)."""

    kind: Literal["glue"]
    """A catalog federated to AWS Glue."""
    warehouse: str = ""
    """Required: default table/view locations (`s3://my-bucket/warehouse`); the bucket must exist (see "Glue catalogs").
    """
    description: str = ""
    """Free text."""
    drop_retention: timedelta | None = None
    """Overrides ``server.drop_retention`` for this catalog (``PT0S``: drops are final at once)."""
    scan_planning: ScanPlanningMode = "offered"
    """Server-side scan planning: `off` (routes 406, not advertised), `offered` (served and advertised; clients choose),
    `preferred` (also `scan-planning-mode = server` in `/v1/config` defaults and every table's config)."""
    catalog_id: str = ""
    """Required: the Glue catalog (account) id; cross-account works."""
    endpoint_url: str = ""
    """Glue endpoint override (VPC endpoint, test server)."""
    s3_endpoint_url: str = ""
    """S3 endpoint override for metadata files (the proxy's own S3 client; clients need their own, see "Glue catalogs").
    """
    s3_region: str = ""
    """S3 region for metadata files; empty: `region`."""
    s3_path_style_access: bool = False
    """Path-style S3 addressing for metadata files."""
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    """botocore retries (throttling, 5xx) before a 503 `ServiceUnavailableException`."""
    retry_mode: Literal["standard", "adaptive", "legacy"] = "standard"
    """botocore retry mode."""
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 16
    """Bound on concurrent Glue calls per catalog (and its connection pool)."""
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0
    """Read timeout of one Glue call; a timeout (or a lost connection) after a commit was sent is a 504
    `CommitStateUnknownException`."""
    table_type_filter: CommaList = Field(default_factory=lambda: ["ICEBERG"])
    """What `listTables` shows: `ICEBERG`, `HIVE`, `DELTA`, `HUDI` or `*` (comma-separated in the environment)."""
    allowed_locations: CommaList = Field(default_factory=list)
    """URIs (with a scheme) under which tables, views and namespace locations may lie; everything else is refused before
    any I/O (see "Security"); empty: the warehouse only. Comma-separated in the environment. An older config's
    `vending.allowed_locations` is used when this is empty."""
    allow_overlapping_locations: bool = False
    """`true`: a table's or view's storage may lie inside (or contain) another live one's in this catalog."""
    pointer_cache_seconds: Annotated[float, Field(ge=0, le=3600)] = 5.0
    """How long a table's current metadata location may stay cached: it bounds how long a change made outside the
    proxy (Athena, EMR, a Glue API call) goes unseen without `events_queue_url`; changes through any replica are
    seen at once (see "Performance"). `0`: every load asks Glue."""
    events_queue_url: str = ""
    """An SQS queue receiving this catalog's "Glue Data Catalog Table State Change" events (an EventBridge rule):
    the proxy long-polls it and forgets changed tables' cached pointers within about a second."""
    events_endpoint_url: str = ""
    """SQS endpoint override for `events_queue_url` (VPC endpoint, test server)."""
    vending: VendingSettings | None = None
    maintenance: CatalogMaintenanceSettings = CatalogMaintenanceSettings()
    """Scheduled maintenance and the maintenance policy of this catalog's tables."""

    @model_validator(mode="after")
    def _required(self) -> GlueCatalogSettings:
        missing = [key for key in ("region", "catalog_id", "warehouse") if not getattr(self, key)]
        if missing:
            raise ValueError(f"missing required key(s) for a glue catalog: {', '.join(missing)}")
        if not all(re.fullmatch(r"[A-Z_*]+", kind) for kind in self.table_type_filter):
            raise ValueError("table_type_filter: use upper-case kinds such as ICEBERG, HIVE, DELTA, HUDI or *")
        return self


class RestUpstreamAuthSettings(AwsCredentialSettings):
    """How the proxy authenticates to a remote REST catalog (``[catalogs.<name>.auth]``)."""

    mode: Literal["none", "token", "oauth2", "sigv4"] = "none"
    """How the proxy authenticates to the upstream: `none`, `token` (needs `token`), `oauth2` (needs `client_id` and
    `client_secret`) or `sigv4` (needs `region`)."""
    token: SecretStr | None = None
    """``token``: a static bearer token."""
    client_id: str = ""
    """`oauth2`: the proxy's client id at the upstream."""
    client_secret: SecretStr | None = None
    """`oauth2`: its secret (masked)."""
    scope: str = "catalog"
    """`oauth2`: scope asked for."""
    token_endpoint: str = ""
    """``oauth2``: empty = the upstream's ``oauth2-server-uri``, else ``<uri>/v1/oauth/tokens``."""
    token_endpoint_auth_method: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"  # noqa: S105
    """`oauth2`: `client_secret_post` or `client_secret_basic`."""
    refresh_margin_seconds: Annotated[float, Field(ge=0, le=3600)] = 60.0
    """`oauth2`: a cached token is replaced this long before it expires."""
    signing_name: Literal["glue", "s3tables", "execute-api"] = "glue"
    """`sigv4`: the service name signed for: `glue`, `s3tables` or `execute-api`."""
    forward_caller_token: bool = False
    """Send the caller's own `Authorization: Bearer` header upstream (when it sent one) instead of the proxy's
    credentials; the upstream's 401 then reaches the caller unchanged."""

    @model_validator(mode="after")
    def _required(self) -> RestUpstreamAuthSettings:
        if self.mode == "token" and not self.token:
            raise ValueError("auth.token is required with mode = token")
        if self.mode == "oauth2" and not (self.client_id and self.client_secret):
            raise ValueError("auth.client_id and auth.client_secret are required with mode = oauth2")
        if self.mode == "sigv4" and not self.region:
            raise ValueError("auth.region is required with mode = sigv4")
        return self


class RestCatalogSettings(_Strict):
    """A catalog federated to a remote Iceberg REST catalog (Polaris, Lakekeeper, Glue, S3 Tables, ...)."""

    kind: Literal["rest"]
    """A catalog federated to a remote Iceberg REST catalog."""
    uri: SecretUrl
    """``http(s)://`` base URI of the upstream; a ``user:password@`` in it is masked wherever it is shown."""
    warehouse: str = ""
    """Sent as ``/v1/config?warehouse=`` to the upstream (e.g. an account id for Glue, a bucket ARN for S3 Tables)."""
    description: str = ""
    """Free text."""
    scan_planning: ScanPlanningMode = "offered"
    """Forwarded when the upstream plans; otherwise planned by the proxy over the upstream's metadata."""
    connect_timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    """Connect timeout (then 503: nothing was sent)."""
    timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    """Longest wait for the upstream to move (a free pooled connection, writing, each wait for more of the answer);
    an upstream that stops within a commit's exchange makes it a 504 `CommitStateUnknownException`, anything else a
    503. A wait, not the whole request: `total_timeout_seconds` bounds that."""
    total_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 300.0
    """Longest one exchange with the upstream may take in all, from waiting for a connection to the answer's last byte
    (an upstream trickling its answer a byte at a time cannot hold a request longer); past it, as for
    `timeout_seconds`: a 504 `CommitStateUnknownException` for a commit that was sent, a 503 for anything else."""
    pool_size: Annotated[int, Field(ge=1, le=1024)] = 64
    """Pooled keep-alive connections to the upstream."""
    keepalive_expiry_seconds: Annotated[float, Field(ge=0, le=3600)] = 4.0
    """Idle time before a pooled connection is dropped."""
    max_response_mb: Annotated[int, Field(ge=1, le=4096)] = 128
    """Largest upstream answer read (decoded, in MiB); a larger one is a 503 `ServiceUnavailableException` (a 504
    `CommitStateUnknownException` for a commit). Above the default `max_metadata_bytes`, which a loadTable carries."""
    http2: bool = True
    """HTTP/2 over TLS (httpx's pool); plain `http://` upstreams and `http2 = false` use the proxy's lean HTTP/1.1
    pool."""
    verify_tls: bool = True
    """Check the upstream's certificate."""
    ca_bundle: str = ""
    """Extra CAs (a PEM file) to trust."""
    nested_namespaces: Literal["auto", "native", "mapped"] = "auto"
    """`native`, `mapped` (nested levels are stored upstream as one name joined by the separator) or `auto` (mapped with
    `sigv4`, else native)."""
    view_warehouse: str = ""
    """Where view metadata files go when the upstream has no views (default ``<data_dir>/warehouse/<name>``)."""
    auth: RestUpstreamAuthSettings = RestUpstreamAuthSettings()
    maintenance: CatalogMaintenanceSettings = CatalogMaintenanceSettings()
    """Scheduled maintenance and the maintenance policy of this catalog's tables."""

    @property
    def allowed_locations(self) -> list[str]:
        """Where this catalog's own files may lie: its view warehouse (the upstream keeps the tables). Not a key:
        the same name as the local and Glue catalogs' key, so every catalog answers it."""
        return [self.view_warehouse]

    @property
    def allow_overlapping_locations(self) -> bool:
        """Not a key for a remote catalog: its views' storage is kept apart."""
        return False

    @field_validator("uri")
    @classmethod
    def _http_uri(cls, value: SecretUrl) -> SecretUrl:
        if not re.match(r"^https?://", value.get_secret_value()):
            raise ValueError("must be an http:// or https:// URI")
        return value


CatalogSettings = Annotated[
    LocalCatalogSettings | GlueCatalogSettings | RestCatalogSettings, Field(discriminator="kind")
]
SigningAlgorithm = Literal["RS256", "ES256"]
VerifyAlgorithm = Literal["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"]


RESERVED_PRINCIPALS = frozenset({"anonymous", "irc-proxy"})
"""Principal names no client may have (``handling.security.authn.RESERVED_NAMES``; a unit test keeps them equal)."""


def is_reserved_principal(name: str) -> bool:
    """Whether ``name`` reads as a reserved principal: compared after NFKC, dropping invisible format characters
    and surrounding whitespace, and case-folding.

    Why not an exact match: ``IRC-Proxy``, ``irc-proxy `` or ``irc\u200b-proxy`` are other principals to the
    grants but the same name to a person reading an audit record, which is what the reservation protects.
    """
    visible = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
    return visible.strip().casefold() in RESERVED_PRINCIPALS


class AuthClient(_Strict):
    """A client of the ``oauth2`` mode's token endpoint; only a hash of its secret is configured."""

    id: Annotated[str, Field(min_length=1, max_length=255)]
    """A client of `POST /v1/oauth/tokens` (`oauth2` mode)."""
    secret_hash: SecretStr
    """Only the hash of the client's secret is configured, from `irc-proxy auth hash-secret` (masked in `check-config`).
    """
    principal: str = ""
    """The token's `sub` claim; empty: the id."""
    roles: list[str] = Field(default_factory=list)
    """The token's `roles` claim."""

    @model_validator(mode="after")
    def _principal_defaults_to_id(self) -> AuthClient:
        if not self.secret_hash.get_secret_value().startswith("scrypt$"):
            raise ValueError("secret_hash: not a hash from `irc-proxy auth hash-secret`")
        if is_reserved_principal(self.principal or self.id):
            raise ValueError(f"principal: {self.principal or self.id!r} is reserved (the proxy itself, or no token)")
        return self if self.principal else self.model_copy(update={"principal": self.id})


class OidcSettings(_Strict):
    """The ``oidc`` mode: bearer tokens from an external issuer, verified against its JWKS."""

    issuer: str = ""
    """Expected `iss` (required for `oidc`); the JWKS is found via `<issuer>/.well-known/openid-configuration`."""
    audience: str = ""
    """Expected `aud` (required for `oidc`)."""
    algorithms: list[VerifyAlgorithm] = Field(default_factory=lambda: list[VerifyAlgorithm](["RS256", "ES256"]))
    """Accepted signature algorithms (`none` is never accepted)."""
    principal_claim: str = "sub"
    """Claim naming the principal."""
    roles_claim: str = "roles"
    """Claim naming the principal's roles or groups; dotted paths work (`realm_access.roles`); empty: no roles."""
    jwks_cache_seconds: Annotated[int, Field(ge=0, le=86_400)] = 3600
    """JWKS cache lifetime."""
    jwks_min_refresh_seconds: Annotated[int, Field(ge=0, le=3600)] = 30
    """Least time between JWKS fetches caused by tokens naming an unknown `kid`."""
    timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 10.0
    """Timeout of discovery and JWKS requests."""
    console_client_id: str = ""
    """The console's client at the identity provider (authorization code + PKCE, redirect URI
    ``<scheme>://<host>/ui/oidc/callback``); empty: the console offers no sign-in."""
    console_client_secret: SecretStr | None = None
    """A confidential console client's secret, sent to the token endpoint (HTTP Basic); never logged or shown."""
    console_scope: str = "openid"
    """Scopes the console asks for; the access token must still carry ``audience`` to be accepted."""


class AuthSettings(_Strict):
    """Who may call: ``none`` (everyone is ``anonymous``), ``oauth2`` (tokens issued here) or ``oidc``."""

    mode: Literal["none", "oauth2", "oidc"] = "none"
    """`none` (everyone is `anonymous`), `oauth2` (tokens issued here) or `oidc` (external issuer)."""
    issuer: str = "irc-proxy"
    """`oauth2`: `iss` of issued tokens."""
    audience: str = "irc-proxy"
    """`oauth2`: `aud` of issued tokens."""
    token_lifetime_seconds: Annotated[int, Field(ge=60, le=86_400 * 7)] = 3600
    """`oauth2`: lifetime (`expires_in`) of issued tokens."""
    signing_algorithm: SigningAlgorithm = "RS256"
    """`oauth2`: `RS256` or `ES256`."""
    signing_key_file: str = ""
    """`oauth2`: PEM private key; empty: one is generated once and kept in the state database (shared by replicas)."""
    clients: list[AuthClient] = Field(default_factory=list)
    oidc: OidcSettings = OidcSettings()
    authorization: Literal["grants", "none"] = "grants"
    """With `oauth2`/`oidc`: `grants` checks every call against roles and grants (see "Authorization"); `none` lets
    every authenticated caller use every catalog (the admin API stays admins-only)."""
    admins: list[str] = Field(default_factory=list)
    """Bootstrap administrators: principal names holding every privilege and the admin API `/management/v1` (also:
    holders of the role `admin`)."""
    grants_cache_seconds: Annotated[float, Field(ge=0, le=300)] = 2.0
    """How long a replica reuses a caller's grants before re-reading them; changes made through a replica apply there at
    once."""
    max_session_seconds: Annotated[int, Field(ge=1, le=86_400 * 90)] = 86_400
    """`oauth2`: a session (from the last login with a secret) is not extended past this by token exchange; then the
    client must use its client credentials again."""
    max_failed_logins_per_client: Annotated[int, Field(ge=1, le=100_000)] = 10
    """`oauth2`: failed logins per client id within the window before 429 `slow_down` with `Retry-After`."""
    max_failed_logins_per_address: Annotated[int, Field(ge=1, le=100_000)] = 50
    """`oauth2`: failed logins per source address within the window before 429 (raise it behind a load balancer)."""
    failed_login_window_seconds: Annotated[float, Field(gt=0, le=86_400)] = 60.0
    """The window both failed-login limits count over."""
    max_concurrent_hashes: Annotated[int, Field(ge=1, le=64)] = 2
    """`oauth2`: client-secret checks (scrypt, ~16 MiB and ~50 ms each) running at once; more wait, then get a 503."""
    hash_wait_seconds: Annotated[float, Field(ge=0, le=60)] = 2.0
    """How long a login waits for a free secret check before 503 `temporarily_unavailable` with `Retry-After`."""

    @model_validator(mode="after")
    def _required(self) -> AuthSettings:
        if self.mode == "oidc" and not (self.oidc.issuer and self.oidc.audience):
            raise ValueError("auth.oidc.issuer and auth.oidc.audience are required with mode = oidc")
        ids = [client.id for client in self.clients]
        if len(ids) != len(set(ids)):
            raise ValueError("auth.clients: client ids must be unique")
        return self


class AuditWebhookSettings(_Strict):
    """The audit webhook sink: each record POSTed to ``url`` (empty = off)."""

    url: SecretUrl = SecretUrl("")
    """Where records are POSTed; empty = off. A secret: credential-looking query parameters (`?token=`...) are masked
    wherever it is shown."""
    cloudevents: bool = True
    """Send CloudEvents 1.0 structured (`application/cloudevents+json`, type `io.irc-proxy.audit`); `false`: the plain
    record."""
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    """Extra request headers, e.g. `{ Authorization = "Bearer ..." }` (masked in `check-config`)."""
    timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 5.0
    """Per-attempt timeout."""
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    """Attempts on transport errors, 429 and 5xx; the backoff doubles, capped at 30 s."""
    backoff_seconds: Annotated[float, Field(ge=0, le=60)] = 0.5
    """First backoff between attempts."""
    queue_size: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Bound of the webhook's queue; beyond it records are dropped (and counted)."""


class AuditSettings(_Strict):
    """The audit trail of catalog operations and its sinks."""

    enabled: bool = True
    """Record catalog operations (see "Audit"); `false`: no records at all."""
    database: bool = True
    """Sink: write records to the `audit_record` table of the state database."""
    log: bool = False
    """Sink: also log each record as a JSON line (logger `irc_proxy.audit`)."""
    queue_size: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Records waiting for the database sink; beyond that they are dropped (and counted)."""
    batch_size: Annotated[int, Field(ge=1, le=10_000)] = 500
    """Rows per database insert."""
    flush_timeout_seconds: Annotated[float, Field(ge=0, le=300)] = 5.0
    """Time shutdown waits for queued records (the rest is dropped and counted)."""
    webhook: AuditWebhookSettings = AuditWebhookSettings()


class Settings(_Strict):
    """All settings of one proxy process."""

    data_dir: str = "./irc-proxy-data"
    """Base directory for the defaults (the SQLite files `state.db` and `catalog.db`, the warehouse `warehouse/<name>`);
    relative to the directory the proxy starts in."""
    default_catalog: str = ""
    """Catalog used when no prefix or warehouse is given (un-prefixed routes, `/v1/config` without `?warehouse`); empty:
    the first catalog."""
    server: ServerSettings = ServerSettings()
    state: StateSettings = StateSettings()
    auth: AuthSettings = AuthSettings()
    audit: AuditSettings = AuditSettings()
    catalogs: dict[str, CatalogSettings] = Field(default_factory=dict)

    @field_validator("catalogs", mode="before")
    @classmethod
    def _kind_defaults_to_local(cls, value: object) -> object:
        """``kind`` may be left out (TOML or ``IRC_PROXY_CATALOGS__<NAME>__...``): it defaults to ``local``."""
        if not isinstance(value, dict):
            return value
        return {
            name: {"kind": "local", **table} if isinstance(table, dict) and "kind" not in table else table
            for name, table in value.items()
        }

    @property
    def drop_retentions(self) -> dict[str, timedelta]:
        """Each catalog's trash retention: its own ``drop_retention``, else ``server.drop_retention`` (a remote
        catalog has no key of its own: its tables are dropped upstream)."""
        server = self.server.drop_retention
        retentions = {}
        for name, catalog in self.catalogs.items():
            own = catalog.drop_retention if isinstance(catalog, LocalCatalogSettings | GlueCatalogSettings) else None
            retentions[name] = server if own is None else own
        return retentions

    @model_validator(mode="after")
    def _fill_defaults(self) -> Settings:
        data = Path(self.data_dir).expanduser().resolve()
        catalogs = dict(self.catalogs) or {DEFAULT_CATALOG_NAME: LocalCatalogSettings()}
        for name, catalog in catalogs.items():
            if not _CATALOG_NAME.match(name) or name.lower() in RESERVED_CATALOG_NAMES:
                raise ValueError(
                    f"catalogs.{name}: a catalog name must match {_CATALOG_NAME.pattern} "
                    f"and not be one of {sorted(RESERVED_CATALOG_NAMES)}"
                )
            # A storage root as written (before allowed_locations defaults to it); a REST `warehouse` is the upstream's.
            key = "view_warehouse" if isinstance(catalog, RestCatalogSettings) else "warehouse"
            if getattr(catalog, key):
                _check_uri(f"catalogs.{name}.{key}", getattr(catalog, key))
            if isinstance(catalog, LocalCatalogSettings):
                catalogs[name] = catalog.model_copy(
                    update={
                        "warehouse": (catalog.warehouse or (data / "warehouse" / name).as_uri()).rstrip("/"),
                        "database_url": catalog.database_url or SecretUrl(f"sqlite:///{data / 'catalog.db'}"),
                    }
                )
            elif isinstance(catalog, RestCatalogSettings):
                views = (catalog.view_warehouse or (data / "warehouse" / name).as_uri()).rstrip("/")
                catalogs[name] = catalog.model_copy(update={"view_warehouse": views})
            else:
                catalogs[name] = catalog.model_copy(update={"warehouse": catalog.warehouse.rstrip("/")})
        for name, catalog in catalogs.items():
            if isinstance(catalog, LocalCatalogSettings | GlueCatalogSettings):
                catalogs[name] = catalog.model_copy(update={"allowed_locations": _allowed_locations(name, catalog)})

        default = self.default_catalog or next(iter(catalogs))
        if default not in catalogs:
            raise ValueError(f"default_catalog: no catalog named {default!r} is configured")
        state = self.state.database_url or SecretUrl(f"sqlite:///{data / 'state.db'}")
        state_settings = self.state.model_copy(update={"database_url": state})
        return self.model_copy(update={"catalogs": catalogs, "default_catalog": default, "state": state_settings})


def _check_uri(key: str, location: str) -> None:
    """A storage root must be a URI with a scheme and a path; a bare directory is shown as its ``file://`` URI."""
    if "://" in location and not location.endswith(":/") and not location.endswith("://"):
        return
    if location.startswith(("/", "~", ".")):
        example = f"a directory is written {Path(location).expanduser().resolve().as_uri()}"
    else:
        example = "e.g. file:///srv/warehouse or s3://bucket/warehouse"
    raise ValueError(f"{key}: not a URI with a scheme and a path: {location} ({example})")


def _allowed_locations(name: str, catalog: LocalCatalogSettings | GlueCatalogSettings) -> list[str]:
    """The catalog's storage prefixes: its own setting, else vending's (older configs), else the warehouse."""
    vending = catalog.vending.allowed_locations if catalog.vending else []
    allowed = [loc.rstrip("/") for loc in (catalog.allowed_locations or vending or [catalog.warehouse])]
    bad = [loc for loc in allowed if "://" not in loc or loc.endswith(":/") or loc.endswith("://")]
    if bad:
        raise ValueError(f"catalogs.{name}.allowed_locations: not a URI with a scheme and a path: {', '.join(bad)}")
    return allowed


def load_settings(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the TOML file (if any), apply environment overrides and validate.

    Raises:
        ConfigError: naming the key that is unknown or has a bad value.
    """
    environ = os.environ if environ is None else environ
    path = path or environ.get(ENV_CONFIG_FILE) or None
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    from_env: dict[tuple[str, ...], str] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX) and key != ENV_CONFIG_FILE:
            segments = key[len(ENV_PREFIX) :].lower().split("__")
            _set_path(raw, segments, value, key)
            from_env[tuple(segments)] = key
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(describe(exc, Settings, from_env, ENV_PREFIX)) from None


def _set_path(tree: dict[str, Any], path: list[str], value: str, env_key: str) -> None:
    if not all(path):
        raise ConfigError(f"{env_key}: empty key segment")
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{env_key}: {part} is not a table")
        node = child
    node[path[-1]] = value
