"""Where a catalog's operations run, and what its ``/v1/config`` advertises.

Each catalog has one :class:`Serving`: served here (local and Glue catalogs: ``ServedHere``) or,
for a catalog that stands for a remote REST catalog, partly forwarded (``remote.ForwardedServing``).
The dispatcher asks it for a :class:`Placement` per operation and never asks what the backend is.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol

from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.storage.locations import RESOLVING_FILE_IO, on_local_files
from irc_proxy.handling.tables.format_v3 import MAX_FORMAT_VERSION

VENDING_SUFFIXES = ("/credentials", "/sign")
PLANNING_SUFFIXES = ("/plan", "/plan/{plan-id}", "/tasks")
SCAN_PLANNING_MODE = "scan-planning-mode"
"""The config key (``/v1/config`` defaults and a table's config) that tells clients where to plan scans."""


class Placement(enum.Enum):
    SERVED = "served"
    """The proxy's own handlers serve it."""
    FORWARDED = "forwarded"
    """The request goes to the remote catalog unchanged (but for the path and the ``:`` mapping)."""


class Serving(Protocol):
    async def discover(self, context: RequestContext) -> None:
        """Learn what the catalog serves (a remote catalog's ``/v1/config``, once); may call the upstream."""

    def placement(self, endpoint: str) -> Placement | None:
        """Where ``endpoint`` (``"<VERB> <template>"``) runs; None: not served (and not advertised)."""

    def client_config(self, prefix: str, endpoints: list[str], idempotency_lifetime: str | None) -> dict[str, Any]:
        """The ``/v1/config`` body for this catalog."""

    def table_config(
        self, metadata_location: str | None, location: str, properties: Mapping[str, str]
    ) -> dict[str, str]:
        """What a table's ``config`` (in a LoadTableResult the proxy answers itself) adds for this table."""


FILE_IO_PROPERTY = "io-impl"
"""The catalog property naming the ``FileIO`` class an Iceberg Java client loads (pyiceberg reads ``py-io-impl``)."""
METRICS_REPORTING_PROPERTY = "rest-metrics-reporting-enabled"
"""Whether an Iceberg Java client sends its scan and commit reports (``POST .../metrics``) to the catalog."""
NO_METRICS_REPORTS = {METRICS_REPORTING_PROPERTY: "false"}
"""What a catalog served here suggests: it accepts a report and keeps nothing of it (``table_ops.report_metrics``),
so a Java client's round trip per scan and commit buys nothing (about 12 of a small Spark job's 40 requests).
A client that sets the property itself still sends, and gets its 204."""
FORMAT_VERSIONS_PROPERTY = "irc-proxy.table-format-versions"
"""The ``/v1/config`` default naming the table format versions served (``1,2,3``): a property clients ignore."""


def is_view(template: str) -> bool:
    return "/views" in template or template.endswith("/register-view")


def is_planning(template: str) -> bool:
    return template.endswith(PLANNING_SUFFIXES)


def planning_defaults(mode: str) -> dict[str, str]:
    """What ``/v1/config`` defaults say about scan planning for a catalog's ``scan_planning`` mode."""
    return {SCAN_PLANNING_MODE: "server"} if mode == "preferred" else {}


class ServedHere:
    """Every operation served by the proxy; views need a view store, credentials and signing need vending,
    scan planning a ``scan_planning`` mode other than ``off``. ``java_file_io``: the ``FileIO`` class suggested
    to Java clients in the ``/v1/config`` defaults (their own ``io-impl`` wins), if any."""

    def __init__(self, views: bool, vending: bool, planning: str = "offered", java_file_io: str | None = None) -> None:
        self._views, self._vending, self._planning = views, vending, planning
        self._file_io = {FILE_IO_PROPERTY: java_file_io} if java_file_io else {}
        self._placed: dict[str, Placement | None] = {}
        """Each endpoint's placement, once worked out (asked on every request; endpoints are the routes table's)."""

    async def discover(self, context: RequestContext) -> None:
        return None

    def placement(self, endpoint: str) -> Placement | None:
        try:
            return self._placed[endpoint]
        except KeyError:
            placed = self._placed[endpoint] = self._place(endpoint)
            return placed

    def _place(self, endpoint: str) -> Placement | None:
        template = endpoint.split(" ", 1)[1]
        if is_view(template) and not self._views:
            return None
        if template.endswith(VENDING_SUFFIXES) and not self._vending:
            return None
        if is_planning(template) and self._planning == "off":
            return None
        return Placement.SERVED

    def client_config(self, prefix: str, endpoints: list[str], idempotency_lifetime: str | None) -> dict[str, Any]:
        versions = ",".join(str(v) for v in range(1, MAX_FORMAT_VERSION + 1))
        defaults = (
            {FORMAT_VERSIONS_PROPERTY: versions}
            | self._file_io
            | NO_METRICS_REPORTS
            | planning_defaults(self._planning)
        )
        body: dict[str, Any] = {"defaults": defaults, "overrides": {"prefix": prefix}, "endpoints": endpoints}
        if idempotency_lifetime:
            body["idempotency-key-lifetime"] = idempotency_lifetime
        return body

    def table_config(
        self, metadata_location: str | None, location: str, properties: Mapping[str, str]
    ) -> dict[str, str]:
        """``io-impl = ResolvingFileIO`` for a table outside ``file://`` when the catalog suggests ``HadoopFileIO``
        (Java merges a table's config over the catalog's properties for that table's ``FileIO``): such a table
        is not confined to the catalog's allowed locations when it predates them or another engine made it, and
        ``HadoopFileIO`` reads no ``s3://`` path where ``ResolvingFileIO`` would pick ``S3FileIO``."""
        if not self._file_io or on_local_files(metadata_location, location, properties):
            return {}
        return {FILE_IO_PROPERTY: RESOLVING_FILE_IO}
