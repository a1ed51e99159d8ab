"""Scan planning endpoints: the request's parts -> ``handling.operations.scan_plans`` -> the response."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling.operations.scan_plans import ScanPlanning
from irc_proxy.http import access, credentials, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.responses import json_response, no_content


def _planning(request: Request) -> ScanPlanning:
    return app_state(request).scan_planning


def _plan_id(request: Request) -> str:
    return parsing.name_param(request, "plan_id")


async def plan_table_scan(request: Request) -> Response:
    body = await parsing.json_body(request) if await request.body() else {}
    answer = await _planning(request).plan(
        access.of(request), parsing.catalog(request), parsing.table_param(request), body, credentials.asked(request)
    )
    return json_response(answer)


async def fetch_planning_result(request: Request) -> Response:
    answer = await _planning(request).result(
        access.of(request),
        parsing.catalog(request),
        parsing.table_param(request),
        _plan_id(request),
        credentials.asked(request),
    )
    return json_response(answer)


async def cancel_planning(request: Request) -> Response:
    await _planning(request).cancel(
        access.of(request), parsing.catalog(request), parsing.table_param(request), _plan_id(request)
    )
    return no_content()


async def fetch_scan_tasks(request: Request) -> Response:
    body: Any = await parsing.json_body(request)
    if not isinstance(body, dict) or "plan-task" not in body:
        raise BadRequest("Invalid fetchScanTasks request: missing required field plan-task")
    answer = await _planning(request).tasks(
        access.of(request), parsing.catalog(request), parsing.table_param(request), body["plan-task"]
    )
    return json_response(answer)
