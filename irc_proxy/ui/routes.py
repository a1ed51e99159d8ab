"""The console's routes under ``/ui`` (``server.ui = false`` leaves them out) and its one stylesheet."""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from irc_proxy.ui import pages
from irc_proxy.ui.admin_pages import ADMIN_UI_ROUTES
from irc_proxy.ui.health_pages import HEALTH_UI_ROUTES
from irc_proxy.ui.oidc_login import OIDC_UI_ROUTES
from irc_proxy.ui.session import UI_PREFIX
from irc_proxy.ui.trash_pages import TRASH_UI_ROUTES

STYLESHEET = files("irc_proxy.ui").joinpath("static/console.css").read_bytes()


async def stylesheet(request: Request) -> Response:
    return Response(STYLESHEET, media_type="text/css", headers={"Cache-Control": "max-age=300"})


NS = f"{UI_PREFIX}/catalogs/{{prefix}}/namespaces/{{namespace}}"
UI_ROUTES: list[BaseRoute] = [
    Route(UI_PREFIX, pages.root, methods=["GET"]),
    Route(f"{UI_PREFIX}/static/console.css", stylesheet, methods=["GET"]),
    Route(f"{UI_PREFIX}/login", pages.login_form, methods=["GET"]),
    Route(f"{UI_PREFIX}/login", pages.login, methods=["POST"]),
    Route(f"{UI_PREFIX}/logout", pages.logout, methods=["POST"]),
    Route(f"{UI_PREFIX}/catalogs", pages.catalogs_page, methods=["GET"]),
    Route(f"{UI_PREFIX}/catalogs/{{prefix}}", pages.namespace_page, methods=["GET"]),
    Route(NS, pages.namespace_page, methods=["GET"]),
    Route(f"{UI_PREFIX}/catalogs/{{prefix}}/search", pages.search_page, methods=["GET"]),
    Route(f"{NS}/tables/{{table}}", pages.table_page, methods=["GET"]),
    Route(f"{NS}/tables/{{table}}/preview", pages.preview_page, methods=["GET"]),
    Route(f"{NS}/views/{{view}}", pages.view_page, methods=["GET"]),
    *TRASH_UI_ROUTES,
    *HEALTH_UI_ROUTES,
    *OIDC_UI_ROUTES,
    *ADMIN_UI_ROUTES,
]
