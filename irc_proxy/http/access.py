"""The HTTP side of authorization: a request's path (and parsed body) as the policy's ``Requested``.

The rules are ``irc_proxy.handling.operations.policy``, the checks ``irc_proxy.handling.security.access``; the facts a
rule reads in a body are the body model's own (``http.bodies``).
"""

from __future__ import annotations

from starlette.requests import Request

from irc_proxy.handling.operations import policy
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.security.authz import Authorizer
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.bodies import _Body


def authorizer(request: Request) -> Authorizer:
    return app_state(request).authorizer


def of(request: Request, catalog: str | None = None) -> Access:
    """The checks of this request, in its catalog (or ``catalog``)."""
    name = catalog if catalog is not None else parsing.catalog(request).name
    return Access(parsing.context(request), authorizer(request), name)


async def authorize(request: Request, operation: str, body: type[_Body] | None) -> None:
    """Run the policy's rule for ``operation`` (an operationId) on this request and its ``body``."""
    params = request.path_params
    if "namespace" in params:
        namespace = parsing.namespace_param(request)
    else:
        namespace = parsing.parent_param(request) if operation == "listNamespaces" else ()
    name = next((parsing.name_param(request, key) for key in ("table", "view") if key in params), "")
    facts = (await parsing.body_model(request, body)).facts() if body is not None else {}
    requested = policy.Requested(**({"namespace": namespace, "name": name} | facts))
    await policy.authorize(of(request), parsing.catalog(request), operation, requested)


async def require_admin(request: Request) -> None:
    await of(request, catalog="").require_admin()
