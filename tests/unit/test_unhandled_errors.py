"""An unforeseen error is answered once: a 500 in the spec's shape, logged once (not again by the server)."""

from __future__ import annotations

import httpx
import pytest
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from irc_proxy.http.middleware import CatalogApp, Edge


async def boom(request: Request) -> Response:
    raise RuntimeError("secret internals")


@pytest.mark.anyio
async def test_an_unhandled_error_is_a_500_without_internals_and_does_not_escape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = CatalogApp(routes=[Route("/boom", boom)], middleware=[Middleware(Edge)])
    # raise_app_exceptions: an exception escaping the app (to be logged again by hypercorn) fails here.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        response = await client.get("/boom", headers={"X-Request-Id": "req-500"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "req-500"  # answered by Edge, through its own send
    error = response.json()["error"]
    assert error["type"] == "InternalServerError" and "req-500" in error["message"]
    assert "secret internals" not in response.text
    logged = [r for r in caplog.records if r.name == "irc_proxy.http" and "unhandled error" in r.getMessage()]
    assert len(logged) == 1 and "req-500" in logged[0].getMessage()


@pytest.mark.anyio
async def test_the_app_refuses_to_start_without_edge_first() -> None:
    # Edge answers the errors Starlette's own outer layers used to: without it an error would reach the server.
    app = CatalogApp(routes=[Route("/boom", boom)])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        with pytest.raises(TypeError, match="Edge"):
            await client.get("/boom")
