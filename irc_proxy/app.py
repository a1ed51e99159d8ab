"""The one place that builds everything: settings -> backends -> catalogs -> ASGI app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from irc_proxy.backends.registry import create_backend
from irc_proxy.handling.catalog import Catalog, Catalogs
from irc_proxy.http import meta
from irc_proxy.http.errors import EXCEPTION_HANDLERS
from irc_proxy.http.middleware import DrainUnreadBody, RawPathRouting, RequestContext
from irc_proxy.http.routes import OPERATIONS, catalog_routes
from irc_proxy.settings import Settings
from irc_proxy.stores.db import create_state_engine, ensure_schema
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.stores.views import ViewStore
from irc_proxy.threads import ThreadRunner


def open_state(settings: Settings) -> Engine:
    """The state database, checked (or initialised when empty) before anything uses it."""
    engine = create_state_engine(settings.state.database_url)
    ensure_schema(engine, settings.state.auto_upgrade)
    return engine


def build_catalogs(settings: Settings, threads: ThreadRunner, state: Engine) -> Catalogs:
    """Create every configured catalog's backend and services."""
    view_store = ViewStore(state, threads)
    locks = CommitLocks(state)
    catalogs = {}
    for name, catalog_settings in settings.catalogs.items():
        backend = create_backend(name, catalog_settings, threads, locks)
        catalogs[name] = Catalog.build(name, backend, settings.server.namespace_separator, threads, view_store)
    return Catalogs(catalogs, settings.default_catalog)


def create_app(settings: Settings) -> Starlette:
    """The ASGI application for ``settings``; backends are opened in its lifespan."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Any]]:
        threads = ThreadRunner()
        state = open_state(settings)
        catalogs = build_catalogs(settings, threads, state)
        try:
            yield {"catalogs": catalogs, "settings": settings}
        finally:
            await catalogs.close()
            state.dispose()

    routes = [
        Route("/v1/config", meta.get_config, methods=["GET"]),
        Route("/healthz", meta.healthz, methods=["GET"]),
        *catalog_routes(OPERATIONS),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestContext), Middleware(DrainUnreadBody), Middleware(RawPathRouting)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
