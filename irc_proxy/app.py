"""The one place that builds everything: settings -> backends -> catalogs -> ASGI app."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import httpx
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from irc_proxy import avro_inflation
from irc_proxy.audit import Auditor, AuditRecord
from irc_proxy.backends.base import Capability
from irc_proxy.backends.pointer_cache import Peers
from irc_proxy.backends.registry import create_backend, create_credential_source
from irc_proxy.backends.timing import timed
from irc_proxy.errors import CatalogError
from irc_proxy.handling.catalog import Catalog, Catalogs
from irc_proxy.handling.maintenance.children import LocalChildren
from irc_proxy.handling.maintenance.job import Limits
from irc_proxy.handling.maintenance.runs import Maintenance, WorkerSettings
from irc_proxy.handling.maintenance.schedule import Scheduler
from irc_proxy.handling.maintenance.spark import SparkExecutor, SparkSettings
from irc_proxy.handling.operations.backfill import Backfill
from irc_proxy.handling.operations.scan_plans import PlanningLimits, ScanPlanning
from irc_proxy.handling.operations.trash import Trash
from irc_proxy.handling.paging import PageTokens, new_key
from irc_proxy.handling.security.authn import (
    Authenticator,
    NoAuthentication,
    SigningKey,
    TokenService,
    clients_from,
    generate_signing_key,
    load_signing_key,
)
from irc_proxy.handling.security.authz import Authorizer
from irc_proxy.handling.security.oidc import OidcAuthenticator
from irc_proxy.handling.security.run_tokens import RunCredentials, WithRunCredentials
from irc_proxy.handling.security.sessions import ClientDirectory, Revocations
from irc_proxy.handling.security.throttle import HashGate, LoginThrottle
from irc_proxy.handling.storage.storage_reads import ReadLimits
from irc_proxy.handling.tables.metadata import MetadataCache
from irc_proxy.handling.vending.vending import Vending
from irc_proxy.http import auth, credentials, meta
from irc_proxy.http.admin import ADMIN_ROUTES
from irc_proxy.http.app_state import KEY as APP_STATE_KEY
from irc_proxy.http.app_state import AppState
from irc_proxy.http.errors import no_route
from irc_proxy.http.gate import Gate
from irc_proxy.http.metrics import metrics
from irc_proxy.http.middleware import CatalogApp, Edge
from irc_proxy.http.routes import OPERATIONS, SegmentRouter, catalog_routes
from irc_proxy.planning.expressions import FilterLimits
from irc_proxy.planning.manifests import ManifestCache
from irc_proxy.settings import AuthSettings, LocalCatalogSettings, ServerSettings, Settings, base_url
from irc_proxy.stores.audit_query import AuditReader
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.stores.db import create_state_engine, ensure_schema, ping
from irc_proxy.stores.idempotency import IdempotencyStore
from irc_proxy.stores.keys import shared_signing_keys
from irc_proxy.stores.locations import LocationStore
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.stores.login_failures import LoginFailureStore
from irc_proxy.stores.maintenance import MaintenanceStore
from irc_proxy.stores.maintenance_schedule import ScheduleStore
from irc_proxy.stores.page_keys import shared_page_keys
from irc_proxy.stores.revocations import RevocationStore
from irc_proxy.stores.scan_plans import ScanPlanStore
from irc_proxy.stores.trash import TrashStore
from irc_proxy.stores.ui_keys import shared_csrf_keys
from irc_proxy.stores.views import ViewStore
from irc_proxy.threads import ThreadRunner
from irc_proxy.ui.routes import UI_ROUTES

avro_inflation.install()  # every Avro read of the process inflates within a bound (see the module)


def open_state(settings: Settings) -> Engine:
    """The state database, checked (or initialised when empty) before anything uses it."""
    engine = create_state_engine(settings.state.database_url.get_secret_value())
    ensure_schema(engine, settings.state.auto_upgrade)
    return engine


def read_limits(server: ServerSettings) -> ReadLimits:
    """Bounds of every file read for a client (``server.max_metadata_bytes``, ``server.storage_timeout_seconds``)."""
    return ReadLimits(server.max_metadata_bytes, server.storage_timeout_seconds)


def build_catalogs(settings: Settings, threads: ThreadRunner, state: Engine) -> Catalogs:
    """Create every configured catalog's backend and services."""
    view_store = ViewStore(state, threads)
    location_store = LocationStore(state, threads)
    locks = CommitLocks(state)
    server = settings.server  # one metadata cache (one byte budget) for all catalogs
    shared = state.url.render_as_string(hide_password=False) if state.dialect.name == "postgresql" else None
    peers = Peers(shared, server.workers)  # how a backend whose store announces nothing hears other processes
    metadata_cache = MetadataCache(server.metadata_cache_bytes, server.metadata_recheck_seconds)
    reads = read_limits(server)
    catalogs = {}
    kept = kept_locations(settings)
    for name, catalog_settings in settings.catalogs.items():
        backend = timed(name, create_backend(name, catalog_settings, threads, locks, peers))
        sts = create_credential_source(catalog_settings, threads)
        vending = Vending(name, sts.settings, sts) if sts is not None else None
        catalogs[name] = Catalog.build(
            name,
            backend,
            server.namespace_separator,
            threads,
            view_store,
            vending,
            metadata_cache,
            location_store,
            allowed_locations=catalog_settings.allowed_locations,  # normalised by settings (every kind has them)
            allow_overlap=catalog_settings.allow_overlapping_locations,
            read_limits=reads,
            scan_planning=catalog_settings.scan_planning,
            kept_locations=kept,
        )
    return Catalogs(catalogs, settings.default_catalog)


def kept_locations(settings: Settings) -> list[str]:
    """Where the proxy keeps its own files (its data directory, every catalog's own allowed locations: a remote
    catalog's are its view warehouse): a forwarded table's metadata may name them, the proxy never reads them.
    A remote catalog's ``warehouse`` is the upstream's name for its own storage, not the proxy's."""
    kept = [Path(settings.data_dir).expanduser().resolve().as_uri()]
    for catalog in settings.catalogs.values():
        kept += catalog.allowed_locations
    return kept


def start_backfills(catalogs: Catalogs) -> list[asyncio.Task[int]]:
    """Record the storage of tables and views that predate the occupancy index, in the background."""
    return [
        asyncio.create_task(_quietly(catalog.name, Backfill(catalog).run))
        for catalog in catalogs.all()
        if catalog.supports(Capability.TABLE_COMMITS)  # the backend holds the tables (a remote catalog's live upstream)
    ]


async def _quietly(name: str, work: Callable[[], Awaitable[int]]) -> int:
    """``work()``, begun only once the task runs: a task cancelled before (a quick shutdown) leaves no
    coroutine that was never awaited."""
    try:
        return await work()
    except CatalogError as exc:  # the next start tries again
        logging.getLogger(__name__).warning("storage index backfill of catalog %s stopped: %s", name, exc)
        return 0


def build_scan_planning(settings: Settings, state: Engine, threads: ThreadRunner) -> ScanPlanning:
    """Scan planning for every catalog: plans in the state database, one manifest cache per process."""
    planning = settings.server.scan_planning
    limits = PlanningLimits(
        sync_budget=planning.sync_budget_seconds,
        files_per_task=planning.files_per_task,
        tasks_per_response=planning.tasks_per_response,
        response_bytes=planning.max_response_bytes,
        cpu_seconds=planning.max_plan_cpu_seconds,
        wall_seconds=planning.max_plan_wall_seconds,
        filters=FilterLimits(
            planning.max_filter_literal_bytes, planning.max_filter_in_values, planning.max_filter_bytes
        ),
    )
    cache = ManifestCache(planning.manifest_cache_bytes)
    return ScanPlanning(ScanPlanStore(state, threads, planning.plan_ttl), cache, threads, limits)


def build_trash(
    settings: Settings, state: Engine, threads: ThreadRunner, audit: Callable[[AuditRecord], None] | None = None
) -> Trash:
    """The trash of dropped tables and views: each catalog's retention (``Settings.drop_retentions``);
    what happens outside requests (expiry) goes to ``audit``."""
    return Trash(TrashStore(state, threads), settings.drop_retentions, audit)


def build_maintenance(
    settings: Settings,
    state: Engine,
    threads: ThreadRunner,
    audit: Callable[[AuditRecord], None] | None = None,
    credentials: RunCredentials | None = None,
    isolation: Literal["process", "thread"] | None = None,
) -> Maintenance:
    """Table maintenance runs (``[server.maintenance]``): queued in the state database, run by the worker, each
    catalog's Spark jobs by its ``spark`` executor (``[catalogs.<name>.maintenance]``), local jobs in child processes
    or here (``isolation``, by default the setting's: a process that is itself a child or a command runs them here)."""
    own = settings.server.maintenance
    children = LocalChildren(settings) if (isolation or own.isolation) == "process" else None
    credentials = credentials or RunCredentials(shared_page_keys(state, new_key))
    worker = WorkerSettings(
        own.max_concurrent_runs,
        own.poll_seconds,
        timedelta(seconds=own.lease_seconds),
        Limits(own.max_files_per_run, own.orphan_min_age, own.max_rewrite_bytes, own.rewrite_buffer_mb * 1024**2),
        protected_files(settings),
    )
    policies = {name: catalog.maintenance for name, catalog in settings.catalogs.items()}
    schedule = ScheduleStore(state, threads)
    spark = spark_executors(settings, credentials)
    store = MaintenanceStore(state, threads, own.runs_kept_per_table)
    return Maintenance(store, threads, worker, audit, policies, schedule, spark, children)


def scheduler(maintenance: Maintenance, settings: Settings) -> Scheduler:
    """The sweeps of the catalogs whose ``[catalogs.<name>.maintenance]`` is enabled (it idles otherwise)."""
    assert maintenance.schedule is not None
    own = settings.server.maintenance
    return Scheduler(maintenance, maintenance.schedule, own.poll_seconds, timedelta(seconds=own.lease_seconds))


def spark_executors(settings: Settings, credentials: RunCredentials) -> dict[str, SparkExecutor]:
    """The ``spark`` executor of every catalog configured with ``executor = "spark"``."""
    found: dict[str, SparkExecutor] = {}
    for name, catalog in settings.catalogs.items():
        own = catalog.maintenance
        if own.executor != "spark":
            continue
        spark = SparkSettings(
            uri=own.spark_catalog_uri or base_url(settings.server.host, settings.server.port),
            warehouse=name,
            jobs=tuple(own.spark_jobs),
            master=own.spark_master,
            submit=own.spark_submit,
            connect_url=own.spark_connect_url,
            python=own.spark_python,
            jars=tuple(own.spark_jars),
            conf={key: value.get_secret_value() for key, value in own.spark_conf.items()},
            rewrite_options=dict(own.spark_rewrite_options),
            timeout_seconds=own.spark_timeout.total_seconds(),
        )
        found[name] = SparkExecutor(spark, credentials)
    return found


def protected_files(settings: Settings) -> tuple[str, ...]:
    """The proxy's own files as ``file:`` locations: its data directory and every SQLite database (state and
    local catalogs). Maintenance never touches a table whose storage contains one."""
    urls = [settings.state.database_url.get_secret_value()]
    local = [c for c in settings.catalogs.values() if isinstance(c, LocalCatalogSettings)]
    urls += [c.database_url.get_secret_value() for c in local]
    paths = [Path(settings.data_dir).expanduser().resolve()]
    paths += [Path(url.removeprefix("sqlite:///").split("?", 1)[0]) for url in urls if url.startswith("sqlite:///")]
    return tuple(dict.fromkeys(path.as_uri() for path in paths if path.is_absolute()))


def readiness_checks(threads: ThreadRunner, state: Engine, catalogs: Catalogs) -> dict[str, meta.ReadinessCheck]:
    """What ``/readyz`` probes: the state database and every catalog's backend."""

    async def state_database() -> None:
        await threads.run(ping, state)

    checks: dict[str, meta.ReadinessCheck] = {"state": state_database}
    for catalog in catalogs.all():
        checks[f"catalog:{catalog.name}"] = catalog.backend.ping
    return checks


def signing_keys(settings: AuthSettings, state: Engine) -> list[SigningKey]:
    """The configured key (``signing_key_file``), or the keys shared through the state database."""
    algorithm = settings.signing_algorithm
    if settings.signing_key_file:
        return [load_signing_key(Path(settings.signing_key_file).expanduser().read_bytes(), algorithm)]

    def generate() -> tuple[str, str]:
        key = generate_signing_key(algorithm)
        return str(key.kid), key.as_pem(private=True).decode()

    return [load_signing_key(pem.encode(), algorithm) for _kid, pem in shared_signing_keys(state, algorithm, generate)]


def build_authenticator(
    settings: AuthSettings, state: Engine, store: AuthzStore, threads: ThreadRunner
) -> tuple[Authenticator, TokenService | None]:
    """The authenticator of ``auth.mode``, and the token service when the proxy issues tokens itself."""
    if settings.mode == "oauth2":
        keys = signing_keys(settings, state)
        clients = clients_from((c.id, c.secret_hash.get_secret_value(), c.principal, c.roles) for c in settings.clients)
        failures = LoginFailureStore(state, threads, settings.failed_login_window_seconds)
        service = TokenService(
            keys[0],
            keys,
            ClientDirectory(clients, store.secret_hash, settings.grants_cache_seconds),
            settings.issuer,
            settings.audience,
            settings.token_lifetime_seconds,
            settings.max_session_seconds,
            LoginThrottle(failures, settings.max_failed_logins_per_client, settings.max_failed_logins_per_address),
            hashes=HashGate(threads, settings.max_concurrent_hashes, settings.hash_wait_seconds),
        )
        return service, service
    if settings.mode == "oidc":
        oidc = settings.oidc
        authenticator = OidcAuthenticator(
            oidc.issuer,
            oidc.audience,
            list(oidc.algorithms),
            oidc.principal_claim,
            oidc.roles_claim,
            oidc.jwks_cache_seconds,
            oidc.jwks_min_refresh_seconds,
            httpx.AsyncClient(timeout=oidc.timeout_seconds),
        )
        return authenticator, None
    return NoAuthentication(), None


def create_app(settings: Settings) -> Starlette:
    """The ASGI application for ``settings``; backends are opened in its lifespan."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Any]]:
        threads = ThreadRunner(settings.server.blocking_threads)
        state = open_state(settings)
        catalogs = build_catalogs(settings, threads, state)
        backfills = start_backfills(catalogs)
        authz_store = AuthzStore(state, threads)
        authenticator, token_service = build_authenticator(settings.auth, state, authz_store, threads)
        page_keys = shared_page_keys(state, new_key)
        run_credentials = RunCredentials(page_keys)
        # Sign-outs and used OIDC flows, shared by replicas; with auth.mode = "none" no token means anything.
        revocations = (
            Revocations(RevocationStore(state, threads), token_seconds=settings.auth.token_lifetime_seconds)
            if settings.auth.mode != "none"
            else None
        )
        if token_service is not None:
            token_service.revocations = revocations
        authorizer = Authorizer(
            authz_store,
            threads,
            enabled=settings.auth.mode != "none" and settings.auth.authorization == "grants",
            authenticated=settings.auth.mode != "none",
            admins=settings.auth.admins,
            cache_seconds=settings.auth.grants_cache_seconds,
        )
        auditor = Auditor.build(settings.audit, state, threads)
        auditor.start()
        lifetime = settings.server.idempotency_key_lifetime
        idempotency = IdempotencyStore(state, threads, lifetime) if lifetime else None
        scan_planning = build_scan_planning(settings, state, threads)
        trash = build_trash(settings, state, threads, auditor.submit)
        expiry = asyncio.create_task(
            trash.run_expiry({c.name: c for c in catalogs.all()}, settings.server.trash_expiry_interval_seconds)
        )
        maintenance = build_maintenance(settings, state, threads, auditor.submit, run_credentials)
        worker = asyncio.create_task(maintenance.run_worker({c.name: c for c in catalogs.all()}))
        sweeps = asyncio.create_task(scheduler(maintenance, settings).run({c.name: c for c in catalogs.all()}))
        try:
            shared = AppState(
                settings=settings,
                catalogs=catalogs,
                threads=threads,
                authenticator=WithRunCredentials(
                    authenticator,
                    run_credentials,
                    lambda scope: maintenance.running(scope.catalog, scope.run_id, scope.ident),
                ),
                authorizer=authorizer,
                token_service=token_service,
                revocations=revocations,
                auditor=auditor,
                audit_reader=AuditReader(state, threads),
                idempotency=idempotency,
                page_tokens=PageTokens(page_keys),
                csrf_keys=shared_csrf_keys(state) if settings.server.ui else [],
                readiness=readiness_checks(threads, state, catalogs),
                scan_planning=scan_planning,
                trash=trash,
                maintenance=maintenance,
            )
            yield {APP_STATE_KEY: shared}
        finally:
            expiry.cancel()
            worker.cancel()
            sweeps.cancel()
            await maintenance.close()
            await scan_planning.close()
            for task in backfills:
                task.cancel()
            await auditor.close()
            if idempotency is not None:
                await idempotency.close()
            if isinstance(authenticator, OidcAuthenticator):  # the inner one (the app state's wraps it)
                await authenticator.close()
            await catalogs.close()
            state.dispose()

    routes = [
        Route("/v1/config", meta.get_config, methods=["GET"]),
        Route("/healthz", meta.healthz, methods=["GET"]),
        Route("/v1/aws/s3/sign", credentials.sign_legacy, methods=["POST"]),
        Route("/readyz", meta.readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *(
            [Route(auth.TOKEN_PATH, auth.issue_token, methods=["POST"]), Route(auth.JWKS_PATH, auth.jwks)]
            if settings.auth.mode == "oauth2"
            else []
        ),
        *catalog_routes(OPERATIONS),
        *ADMIN_ROUTES,
        *(UI_ROUTES if settings.server.ui else []),
    ]
    app = CatalogApp(
        middleware=[
            # Edge: request id, timing, raw-path routing, draining, error answers, metrics, audit hand-off, access log.
            Middleware(Edge),
            # Gate: Host, Origin and JSON-only writes (cross-site requests), before any token work; a browser opening
            # `/` goes to the console; authentication; the body limit and Idempotency-Key when they can apply.
            Middleware(
                Gate,
                allowed_hosts=settings.server.accepted_hosts,
                allowed_origins=settings.server.allowed_origins,
                max_body_bytes=settings.server.max_body_bytes,
                console=settings.server.ui,
            ),
        ],
    )
    # Starlette's router, indexed by segment count; a path no route serves is a 404 with a hint (http/errors.py)
    app.router = SegmentRouter(routes, lifespan=lifespan, default=no_route)
    return app
