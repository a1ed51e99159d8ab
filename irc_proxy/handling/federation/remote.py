"""A prefix federated to a remote REST catalog: where each operation runs and what ``/v1/config``
says. How a forwarded operation is sent is ``handling.federation.forwarding``. No HTTP here.

Where an operation runs (``placement``):

* views, when the upstream advertises no view endpoint: SERVED (the proxy's view store);
* namespaces, with ``mapped_namespaces``: SERVED (nested levels joined into one upstream name,
  served by ``Namespaces`` over the ``RestBackend``), if the upstream has the matching endpoint;
* scan planning, unless the catalog's ``scan_planning`` is ``off``: FORWARDED when the upstream
  advertises it, else SERVED (planned by the proxy over the upstream's table metadata);
* anything else the upstream advertises: FORWARDED (a HEAD it lacks is forwarded as a GET);
* the rest: not served (not advertised either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from irc_proxy.backends.base import Upstream, UpstreamConfig
from irc_proxy.handling.federation.serving import Placement, is_planning, is_view, planning_defaults
from irc_proxy.handling.security.context import RequestContext

NS = "/v1/{prefix}/namespaces/{namespace}"
NAMESPACE_TEMPLATES = frozenset({"/v1/{prefix}/namespaces", NS, NS + "/properties"})
# Keys of the upstream's config that concern only the proxy's own connection to it.
_PRIVATE_KEYS = frozenset(
    {"prefix", "uri", "warehouse", "token", "credential", "oauth2-server-uri", "scope", "audience", "resource"}
    | {"namespace-separator", "view-endpoints-supported"}
)


def placement(
    config: UpstreamConfig, endpoint: str, mapped: bool, has_view_store: bool, planning: str = "offered"
) -> Placement | None:
    """Where ``endpoint`` (``"<VERB> <template>"``) runs for this prefix; None: not served."""
    method, template = endpoint.split(" ", 1)
    if is_planning(template):
        if planning == "off":
            return None
        return Placement.FORWARDED if endpoint in config.endpoints else Placement.SERVED
    if is_view(template) and not config.serves_views:
        return Placement.SERVED if has_view_store else None
    as_get = f"GET {template}"
    if template in NAMESPACE_TEMPLATES and mapped:
        needed = as_get if method == "HEAD" else endpoint
        return Placement.SERVED if needed in config.endpoints else None
    if endpoint in config.endpoints or (method == "HEAD" and as_get in config.endpoints):
        return Placement.FORWARDED
    return None


def client_config(
    config: UpstreamConfig, prefix: str, endpoints: list[str], planning: str = "offered"
) -> dict[str, Any]:
    """The ``/v1/config`` body for this prefix: the upstream's defaults and overrides minus what
    concerns only the proxy's connection (prefix, URI, credentials, ``rest.*`` signing keys)."""

    def public(values: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in values.items() if k not in _PRIVATE_KEYS and not k.startswith("rest.")}

    body: dict[str, Any] = {
        "defaults": public(config.defaults) | planning_defaults(planning),
        "overrides": public(config.overrides) | {"prefix": prefix},
        "endpoints": endpoints,
    }
    if config.idempotency_key_lifetime:
        body["idempotency-key-lifetime"] = config.idempotency_key_lifetime
    return body


class ForwardedServing:
    """The :class:`~irc_proxy.handling.federation.serving.Serving` of a catalog that stands for a remote REST
    catalog."""

    def __init__(self, upstream: Upstream, has_view_store: bool, planning: str = "offered") -> None:
        self._upstream, self._views, self._planning = upstream, has_view_store, planning
        self._discovered = False
        """The upstream's config was read (it is kept for the upstream's life): every request asks first."""
        self._placed: dict[str, Placement | None] = {}
        """Each endpoint's placement, once the config is known (asked twice per request; endpoints are the routes
        table's; ~0.4 µs each to work out, measured alone)."""

    async def discover(self, context: RequestContext) -> None:
        if self._discovered:
            return
        with self._upstream.calling(context.authorization, context.request_id):
            await self._upstream.config()
        self._discovered = True

    def placement(self, endpoint: str) -> Placement | None:
        try:
            return self._placed[endpoint]
        except KeyError:
            upstream = self._upstream  # ``discovered`` raises before the config is known: nothing kept then
            found = placement(upstream.discovered, endpoint, upstream.mapped_namespaces, self._views, self._planning)
            self._placed[endpoint] = found
            return found

    def client_config(self, prefix: str, endpoints: list[str], idempotency_lifetime: str | None) -> dict[str, Any]:
        """The upstream's config (its idempotency lifetime, not ours), this prefix, the served endpoints."""
        return client_config(self._upstream.discovered, prefix, endpoints, self._planning)

    def table_config(
        self, metadata_location: str | None, location: str, properties: Mapping[str, str]
    ) -> dict[str, str]:
        """Nothing: the remote's tables are answered by the remote (its config passes through unchanged)."""
        return {}
