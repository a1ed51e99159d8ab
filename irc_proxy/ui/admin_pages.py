"""The console's admin pages, for administrators only (the rule of ``/management/v1``): principals, roles
and their grants, and the audit trail.

Adding or revoking a grant takes two CSRF-checked POSTs: the first shows what would change
(``admin_confirm.html``), only the second (``confirm=yes``) changes it, then redirects back to the role
(Post/Redirect/Get). Both go through ``handling.operations.management``: grants are validated as the management API
validates them, and a change clears this replica's grants cache as it does. Nothing secret is shown
(credentials: yes or no).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from irc_proxy.errors import BadRequest
from irc_proxy.handling.operations.management import GrantSpec
from irc_proxy.handling.security.authz import ANY_CATALOG, Privilege, to_grant
from irc_proxy.http import access, parsing
from irc_proxy.http.admin import management_of
from irc_proxy.http.app_state import app_state
from irc_proxy.numbers import is_number
from irc_proxy.ui import links
from irc_proxy.ui.pages import PAGE_SIZE, SECURITY_HEADERS, Page, form_fields, page, render
from irc_proxy.ui.session import UI_PREFIX, check_csrf

ADMIN = f"{UI_PREFIX}/admin"
MAX_FILTER = 255
GRANT_FIELDS = ("privilege", "catalog", "namespace", "kind", "name")
KINDS = ("", "table", "view")
DECISIONS = ("", "allowed", "denied")


def admin_page(operation: str) -> Callable[[Page], Page]:
    """``page("admin.<operation>")`` for administrators only (others get the 403 page), audited on its path."""

    def wrap(handler: Page) -> Page:
        async def guarded(request: Request) -> Response:
            parsing.context(request).audit.object = unquote(str(request.scope["path"]).removeprefix(f"{ADMIN}/"))
            await access.require_admin(request)
            return await handler(request)

        guarded.__name__ = handler.__name__
        return page(f"admin.{operation}")(guarded)

    return wrap


def _role(request: Request) -> str:
    """The ``{role}`` path segment, decoded (as the management API's)."""
    links.unmarked(request.path_params)
    return unquote(request.path_params["role"])


def _role_url(role: str) -> str:
    return f"{ADMIN}/roles/{links.segment(role)}"


# Principals and roles --------------------------------------------------------------------------------------
@admin_page("principals")
async def principals_page(request: Request) -> Response:
    """Every principal: its roles, whether it has credentials (never the secret or its hash), when made."""
    principals = await management_of(request).principals()
    return render(request, "admin_principals.html", principals=principals)


@admin_page("roles")
async def roles_page(request: Request) -> Response:
    """Every role with its number of grants and the principals assigned to it."""
    handler = management_of(request)
    roles, grants, principals = await handler.roles(), await handler.grants(), await handler.principals()
    rows = [
        {
            "name": role,
            "grants": sum(1 for g in grants if g.role == role),
            "holders": [p.name for p in principals if role in p.roles],
        }
        for role in roles
    ]
    return render(request, "admin_roles.html", roles=rows)


@admin_page("role")
async def role_page(request: Request) -> Response:
    """A role's grants, each with a revoke form, and the form adding one."""
    role = _role(request)
    grants = await management_of(request).grants(role)  # NotFound for an unknown role
    catalogs = [ANY_CATALOG, *(c.name for c in parsing.catalogs(request).all())]
    privileges = [p.value for p in Privilege]
    url = _role_url(role)
    return render(
        request, "admin_role.html", role=role, url=url, grants=grants, catalogs=catalogs, privileges=privileges
    )


# Adding and revoking grants --------------------------------------------------------------------------------
def _grant_of(form: Mapping[str, str]) -> GrantSpec:
    """The grant a form asks for (validated by the management handler, as for the management API)."""
    kind, name = form.get("kind", ""), form.get("name", "").strip()
    if kind not in KINDS:
        raise BadRequest(f"Invalid kind {kind!r}: a grant names a table, a view or neither")
    if name and not kind:
        raise BadRequest("Say whether the name is a table or a view")
    text = form.get("namespace", "").strip()
    levels = text.split(".") if text else []
    table, view = (name if kind == "table" else None), (name if kind == "view" else None)
    return GrantSpec(form.get("privilege", ""), form.get("catalog", ""), levels, table, view)


async def _checked_form(request: Request) -> dict[str, str]:
    form = await form_fields(request)
    check_csrf(request, form.get("csrf", ""))
    return form


def _confirm(request: Request, operation: str, role: str, fields: dict[str, str], **values: Any) -> Response:
    """The confirmation step: the change summarized, and a form resending it with ``confirm=yes``."""
    parsing.context(request).audit.name(f"ui.admin.{operation}.review")
    action = str(request.scope["path"])
    return render(
        request, "admin_confirm.html", role=role, back=_role_url(role), action=action, fields=fields, **values
    )


def _changed(role: str) -> Response:
    """After a change (the handler cleared this replica's grants cache): back to the role."""
    return RedirectResponse(_role_url(role), status_code=303, headers=SECURITY_HEADERS)


@admin_page("grants.add")
async def add_grant(request: Request) -> Response:
    role = _role(request)
    form = await _checked_form(request)
    handler, spec = management_of(request), _grant_of(form)
    target, privilege = handler.target(spec)
    if form.get("confirm") != "yes":
        await handler.grants(role)  # NotFound for an unknown role, before asking
        fields = {key: form.get(key, "") for key in GRANT_FIELDS}
        return _confirm(request, "grants.add", role, fields, verb="Add", privilege=privilege.value, target=target)
    await handler.add_grant(role, spec)
    return _changed(role)


@admin_page("grants.revoke")
async def revoke_grant(request: Request) -> Response:
    role, raw = _role(request), request.path_params["grant"]
    if not is_number(raw):
        raise BadRequest(f"Invalid grant id: {raw!r}")
    form = await _checked_form(request)
    handler = management_of(request)
    grant = await handler.grant(role, int(raw))
    if form.get("confirm") != "yes":
        held = to_grant(grant)
        return _confirm(
            request, "grants.revoke", role, {}, verb="Revoke", privilege=grant.privilege, target=held.securable
        )
    await handler.revoke(role, grant.id)
    return _changed(role)


# The audit trail -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditFilter:
    """The audit page's filters (all applied by the audit query)."""

    principal: str = ""
    object: str = ""
    operation: str = ""
    decision: str = ""
    since: datetime.datetime | None = None
    until: datetime.datetime | None = None

    def query(self) -> dict[str, str]:
        """The filters as the page's query parameters (for the link to older records)."""
        times = {key: _local(moment) for key, moment in (("since", self.since), ("until", self.until)) if moment}
        texts = {"principal": self.principal, "object": self.object, "operation": self.operation}
        return {key: value for key, value in (texts | {"decision": self.decision} | times).items() if value}

    def arguments(self) -> dict[str, Any]:
        """The audit query's keyword arguments: ``operation`` matches exactly, or as a prefix when it ends
        with ``*`` (``ui.admin.*``)."""
        prefix = self.operation.endswith("*")
        return {
            "since": self.since,
            "until": self.until,
            "principal": self.principal or None,
            "object_prefix": self.object or None,
            "operation": None if prefix or not self.operation else self.operation,
            "operation_prefix": self.operation[:-1] if prefix else None,
            "decision": self.decision or None,
        }


def _time(raw: str, key: str) -> datetime.datetime | None:
    """An ISO-8601 time (``datetime-local`` sends one without offset: read as UTC), in UTC."""
    if not raw:
        return None
    try:
        moment = datetime.datetime.fromisoformat(raw)
        return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)
    except (ValueError, OverflowError):  # OverflowError: 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise BadRequest(f"Invalid {key}: {raw[:40]!r} (expected an ISO-8601 date and time)") from None


def _local(moment: datetime.datetime) -> str:
    """A UTC time as ``<input type="datetime-local">`` shows it."""
    return moment.replace(tzinfo=None).isoformat(timespec="seconds")


def _audit_filter(query: Mapping[str, str]) -> AuditFilter:
    texts = {key: query.get(key, "").strip() for key in ("principal", "object", "operation", "decision")}
    if any(len(value) > MAX_FILTER for value in texts.values()):
        raise BadRequest(f"Filters are at most {MAX_FILTER} characters long")
    if texts["decision"] not in DECISIONS:
        raise BadRequest("Invalid decision: allowed or denied")
    since, until = _time(query.get("since", ""), "since"), _time(query.get("until", ""), "until")
    return AuditFilter(**texts, since=since, until=until)


def _cursor(raw: str) -> int | None:
    """``older=<id>``: the last record shown on the newer page; older pages hold smaller ids."""
    if not raw:
        return None
    if not is_number(raw):
        raise BadRequest("Invalid older: a link this page gave")
    return int(raw)


@admin_page("audit")
async def audit_page(request: Request) -> Response:
    """The audit trail newest first, filtered, ``PAGE_SIZE`` records a page with a link to older ones."""
    wanted = _audit_filter(request.query_params)
    cursor = _cursor(request.query_params.get("older", ""))
    await app_state(request).auditor.written()  # what this replica answered before is in the table
    found: list[dict[str, Any]] = await app_state(request).audit_reader.query(
        **wanted.arguments(), before_id=cursor, limit=PAGE_SIZE + 1
    )
    shown = found[:PAGE_SIZE]
    older = urlencode(wanted.query() | {"older": str(shown[-1]["id"])}) if len(found) > PAGE_SIZE else None
    return render(request, "admin_audit.html", records=shown, form=wanted.query(), older=older)


ADMIN_UI_ROUTES: list[BaseRoute] = [
    Route(f"{ADMIN}/principals", principals_page, methods=["GET"]),
    Route(f"{ADMIN}/roles", roles_page, methods=["GET"]),
    Route(f"{ADMIN}/roles/{{role}}/grants/{{grant}}/revoke", revoke_grant, methods=["POST"]),
    Route(f"{ADMIN}/roles/{{role}}/grants", add_grant, methods=["POST"]),
    Route(f"{ADMIN}/roles/{{role}}", role_page, methods=["GET"]),
    Route(f"{ADMIN}/audit", audit_page, methods=["GET"]),
]
"""Routing sees the raw path (``http.middleware.Edge``): ``{role}`` is percent-decoded by ``_role``, so a role
named ``a/b`` is ``/ui/admin/roles/a%2Fb``."""
