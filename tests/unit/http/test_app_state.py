"""``scope["state"]`` is typed: the lifespan puts one ``AppState`` there, each request one ``RequestContext``,
and only ``irc_proxy.http.app_state`` reads or writes that dict (everyone else goes through its accessors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.requests import Request

from irc_proxy.app import create_app
from irc_proxy.http.app_state import KEY, AppState, app_state, begin, context_of, from_scope, request_context
from irc_proxy.settings import load_settings
from tests.support.server import write_config

PACKAGE = Path(__file__).resolve().parents[3] / "irc_proxy"
OWNER = PACKAGE / "http" / "app_state.py"
UNTYPED = re.compile(
    r"""\b(?:request|websocket|connection)\.state\b"""  # Starlette's untyped attribute view of scope["state"]
    r"""|scope\s*\[\s*["']state["']\s*\]"""  # scope["state"]
    r"""|scope\.(?:get|setdefault|pop)\(\s*["']state["']"""  # scope.get("state") and friends
)


def untyped_reads(text: str) -> list[str]:
    """The lines of ``text`` that reach into ``scope["state"]`` by hand."""
    return [line.strip() for line in text.splitlines() if UNTYPED.search(line)]


@pytest.mark.parametrize(
    "line",
    [
        "threads = request.state.threads",
        'found = scope["state"]["catalogs"]',
        "store = (scope.get('state') or {}).get('idempotency')",
        'state = request.scope.setdefault("state", {})',
        "{% set oidc = request.state.settings.auth.oidc %}",
    ],
)
def test_the_check_sees_a_hand_made_read(line: str) -> None:
    assert untyped_reads(line) == [line]


@pytest.mark.parametrize(
    "line",
    ['request.query_params.get("state", "")', "settings.state.database_url", "flow.state", "app_state(request).trash"],
)
def test_the_check_leaves_other_states_alone(line: str) -> None:
    assert untyped_reads(line) == []


def test_no_module_but_app_state_reads_scope_state() -> None:
    sources = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".html") and p != OWNER]
    assert len(sources) > 100
    offenders = [f"{p.relative_to(PACKAGE)}: {line}" for p in sources for line in untyped_reads(p.read_text())]
    assert offenders == []


@pytest.mark.anyio
async def test_the_lifespan_yields_only_the_typed_app_state(tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path), environ={})
    app = create_app(settings)
    async with app.router.lifespan_context(app) as state:
        assert state is not None and list(state) == [KEY]
        shared = state[KEY]
        assert isinstance(shared, AppState) and shared.settings is settings
        scope = {"type": "http", "state": dict(state)}  # what a server hands each request: a copy
        assert from_scope(scope) is shared and app_state(Request(scope)) is shared


def test_a_request_context_is_one_per_request_and_shared_by_copies_of_the_scope() -> None:
    scope: dict[str, object] = {"type": "http", "state": {}}
    assert context_of(scope) is None
    begun = begin(scope, "req-1")
    inner = dict(scope, path="/v1/config")  # as Edge and routing copy the scope
    assert context_of(inner) is begun and request_context(Request(inner)) is begun
    assert begun.request_id == "req-1" and begun.status is None


def test_outside_the_edge_a_request_gets_a_bare_context_and_outside_a_lifespan_no_app_state() -> None:
    request = Request({"type": "http"})
    assert request_context(request) is request_context(request) and request_context(request).request_id == ""
    assert from_scope(request.scope) is None
    with pytest.raises(RuntimeError, match="lifespan"):
        app_state(request)
