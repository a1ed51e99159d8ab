"""The one place that builds everything: settings -> backends -> catalogs -> ASGI app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from irc_proxy.audit import Auditor
from irc_proxy.backends.registry import create_backend
from irc_proxy.handling.authn import (
    Authenticator,
    NoAuthentication,
    SigningKey,
    TokenService,
    clients_from,
    generate_signing_key,
    load_signing_key,
)
from irc_proxy.handling.catalog import Catalog, Catalogs
from irc_proxy.handling.oidc import OidcAuthenticator
from irc_proxy.http import auth, meta
from irc_proxy.http.audit import AuditTrail
from irc_proxy.http.errors import EXCEPTION_HANDLERS
from irc_proxy.http.middleware import DrainUnreadBody, RawPathRouting, RequestContext
from irc_proxy.http.routes import OPERATIONS, catalog_routes
from irc_proxy.settings import AuthSettings, Settings
from irc_proxy.stores.db import create_state_engine, ensure_schema
from irc_proxy.stores.keys import shared_signing_keys
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


def signing_keys(settings: AuthSettings, state: Engine) -> list[SigningKey]:
    """The configured key (``signing_key_file``), or the keys shared through the state database."""
    algorithm = settings.signing_algorithm
    if settings.signing_key_file:
        return [load_signing_key(Path(settings.signing_key_file).expanduser().read_bytes(), algorithm)]

    def generate() -> tuple[str, str]:
        key = generate_signing_key(algorithm)
        return str(key.kid), key.as_pem(private=True).decode()

    return [load_signing_key(pem.encode(), algorithm) for _kid, pem in shared_signing_keys(state, algorithm, generate)]


def build_authenticator(settings: AuthSettings, state: Engine) -> tuple[Authenticator, TokenService | None]:
    """The authenticator of ``auth.mode``, and the token service when the proxy issues tokens itself."""
    if settings.mode == "oauth2":
        keys = signing_keys(settings, state)
        clients = clients_from((c.id, c.secret_hash.get_secret_value(), c.principal, c.roles) for c in settings.clients)
        service = TokenService(
            keys[0], keys, clients, settings.issuer, settings.audience, settings.token_lifetime_seconds
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
        threads = ThreadRunner()
        state = open_state(settings)
        catalogs = build_catalogs(settings, threads, state)
        authenticator, token_service = build_authenticator(settings.auth, state)
        auditor = Auditor.build(settings.audit, state)
        auditor.start()
        try:
            yield {
                "catalogs": catalogs,
                "settings": settings,
                "authenticator": authenticator,
                "token_service": token_service,
                "auditor": auditor,
            }
        finally:
            await auditor.close()
            if isinstance(authenticator, OidcAuthenticator):
                await authenticator.close()
            await catalogs.close()
            state.dispose()

    routes = [
        Route("/v1/config", meta.get_config, methods=["GET"]),
        Route("/healthz", meta.healthz, methods=["GET"]),
        *(
            [Route(auth.TOKEN_PATH, auth.issue_token, methods=["POST"]), Route(auth.JWKS_PATH, auth.jwks)]
            if settings.auth.mode == "oauth2"
            else []
        ),
        *catalog_routes(OPERATIONS),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(RequestContext),
            Middleware(AuditTrail),
            Middleware(DrainUnreadBody),
            Middleware(RawPathRouting),
            Middleware(auth.Authentication),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
