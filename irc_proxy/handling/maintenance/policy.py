"""The maintenance policy in effect for one table, and where each of its values came from.

Precedence, lowest first (each later layer wins for the keys it sets):

1. the defaults of ``CatalogMaintenanceSettings``;
2. the catalog's ``[catalogs.<name>.maintenance]`` keys;
3. each namespace's properties ``irc-proxy.maintenance.<key>``, from the top level down (the nearest wins, so a
   child namespace inherits its parents' overrides);
4. the table's properties ``irc-proxy.maintenance.<key>``;
5. Iceberg's own table properties where Iceberg defines the value (``ICEBERG_PROPERTIES``, and ``gc.enabled``).

Any client can set the properties (Spark's ``ALTER TABLE ... SET TBLPROPERTIES``, namespace properties), so a
value is validated as the settings file's would be; an invalid one is ignored and named in ``Policy.warnings``
(a run reports them), never fatal. ``CATALOG_ONLY`` keys shape the sweep itself or say where jobs run, and are
not overridable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from irc_proxy.errors import BadRequest, CatalogError
from irc_proxy.handling.maintenance.retention import (
    FOREVER,
    MAX_REF_AGE_MS,
    MAX_SNAPSHOT_AGE_MS,
    MIN_SNAPSHOTS_TO_KEEP,
    Retention,
)
from irc_proxy.handling.tables.metadata import GC_ENABLED
from irc_proxy.settings import CatalogMaintenanceSettings

PREFIX = "irc-proxy.maintenance."
EXECUTOR_KEYS = frozenset(
    key for key in CatalogMaintenanceSettings.model_fields if key == "executor" or key.startswith("spark_")
)
"""Where the jobs run and with what (a command, a cluster, its credentials): the operator's, read from the
catalog's settings only (``app.spark_executors``). Neither overridable (a writer's ``spark_submit`` would be
shown as in effect though never used) nor shown in a table's policy: a table writer reading it would learn the
operator's Spark command, cluster address and configuration keys."""
CATALOG_ONLY = frozenset({"interval", "sweep_max_tables"}) | EXECUTOR_KEYS
"""Keys of the sweep itself and of the executors: set in the catalog's settings only."""
LIST_KEYS = frozenset({"jobs"})
"""Keys whose property value is a comma-separated list."""
TARGET_FILE_SIZE = "write.target-file-size-bytes"
MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"


def _milliseconds(raw: str) -> timedelta:
    return timedelta(milliseconds=int(raw))


SHOWN_VALUE_CHARS = 64
"""How much of a property's value a policy warning or a refusal quotes (``shown``)."""

ICEBERG_PROPERTIES: Mapping[str, tuple[str, Callable[[str], Any]]] = {
    "max_snapshot_age": (MAX_SNAPSHOT_AGE_MS, _milliseconds),
    "min_snapshots_to_keep": (MIN_SNAPSHOTS_TO_KEEP, int),
    "max_ref_age": (MAX_REF_AGE_MS, _milliseconds),
    "target_file_size_bytes": (TARGET_FILE_SIZE, int),
    "manifest_target_size_bytes": (MANIFEST_TARGET_SIZE, int),
}
"""Policy keys Iceberg defines a table property for: that property wins over every other layer."""


@dataclass(frozen=True)
class Policy:
    """The effective values (``settings``), where each came from (``sources``: ``default``, ``catalog``,
    ``namespace a.b``, ``table`` or ``table property <iceberg key>``), and the overrides that were ignored."""

    settings: CatalogMaintenanceSettings
    sources: Mapping[str, str]
    gc_enabled: bool = True
    warnings: tuple[str, ...] = ()

    @property
    def retention(self) -> Retention:
        """``expire-snapshots``' table-wide retention (a ref's own retention still wins over it)."""
        own = self.settings
        max_ref_age = FOREVER if own.max_ref_age is None else _ms(own.max_ref_age)
        return Retention(_ms(own.max_snapshot_age), own.min_snapshots_to_keep, max_ref_age)

    def to_json(self) -> dict[str, Any]:
        """Each value with its source, as the management API shows it."""
        values = self.settings.model_dump(mode="json", exclude=set(EXECUTOR_KEYS))
        found = {key: {"value": value, "source": self.sources[key]} for key, value in values.items()}
        found["gc_enabled"] = {"value": self.gc_enabled, "source": self.sources.get("gc_enabled", "default")}
        return {"policy": found, "warnings": list(self.warnings)}


def _ms(value: timedelta) -> int:
    return int(value.total_seconds() * 1000)


def resolve(
    catalog: CatalogMaintenanceSettings,
    namespaces: Sequence[tuple[str, Mapping[str, str]]],
    table: Mapping[str, str],
) -> Policy:
    """The policy of a table whose namespace levels have the properties ``namespaces`` (top level first, each with
    its dotted name) and whose own properties are ``table`` (see the module for the precedence)."""
    values = catalog.model_dump()
    sources = {key: ("catalog" if key in catalog.model_fields_set else "default") for key in values}
    warnings: list[str] = []
    layers = [*((f"namespace {name}", props) for name, props in namespaces), ("table", table)]
    for source, properties in layers:
        for key, raw in sorted(_overrides(properties).items()):
            problem = _override(values, key, raw)
            if problem is None:
                sources[key] = source
            else:
                warnings.append(f"{source}: {PREFIX}{key} = {shown(raw)} ignored: {problem}")
    for key, (name, parse) in ICEBERG_PROPERTIES.items():
        if name in table:
            try:
                problem = _override(values, key, parse(table[name]))
            except (ValueError, OverflowError):  # any client may set it: 20 digits are no duration
                problem = "not a number" if not table[name].strip().lstrip("-").isdigit() else "out of range"
            if problem is None:
                sources[key] = f"table property {name}"
            else:
                warnings.append(f"table: {name} = {shown(table[name])} ignored: {problem}")
    gc_enabled = table.get(GC_ENABLED, "true").strip().lower() != "false"
    if GC_ENABLED in table:
        sources["gc_enabled"] = f"table property {GC_ENABLED}"
    settings = CatalogMaintenanceSettings.model_validate(values)
    return Policy(settings, sources, gc_enabled, tuple(warnings))


def shown(raw: str) -> str:
    """A property's value as a warning or an error names it: its start only. Why: any client may set a value of
    megabytes (``history.expire.max-snapshot-age-ms`` of millions of digits), and each job of each run repeats its
    policy's warnings in its result, which crosses the child's pipe, is stored in the run and audited per job: in
    full, one write would cost its size times the jobs in every run of the table."""
    if len(raw) <= SHOWN_VALUE_CHARS:
        return repr(raw)
    return f"{raw[:SHOWN_VALUE_CHARS]!r}... ({len(raw)} characters)"


def check_overrides(properties: Mapping[str, str]) -> None:
    """Refuse (BadRequest) ``irc-proxy.maintenance.*`` properties a resolver would ignore: a client setting one
    on a table or namespace hears at once what is wrong (other properties are not looked at)."""
    problems = []
    for key, raw in sorted(_overrides(properties).items()):
        if (problem := _override(CatalogMaintenanceSettings().model_dump(), key, raw)) is not None:
            problems.append(f"{PREFIX}{key} = {shown(raw)}: {problem}")
    if problems:
        raise BadRequest("Invalid maintenance properties: " + "; ".join(problems))


def _overrides(properties: Mapping[str, str]) -> dict[str, str]:
    return {key.removeprefix(PREFIX): value for key, value in properties.items() if key.startswith(PREFIX)}


def _override(values: dict[str, Any], key: str, raw: Any) -> str | None:
    """Set ``values[key]`` to ``raw`` if the settings accept it; else why not (``values`` is left unchanged)."""
    if key not in CatalogMaintenanceSettings.model_fields:
        return "no such key"
    if key in CATALOG_ONLY:
        return "set in the catalog's settings only"
    value: Any = raw
    if key in LIST_KEYS and isinstance(raw, str):
        value = [item.strip() for item in raw.split(",") if item.strip()]
    elif isinstance(raw, str) and raw.strip() == "" and CatalogMaintenanceSettings.model_fields[key].default is None:
        value = None
    try:
        checked = CatalogMaintenanceSettings.model_validate({**values, key: value})
    except ValidationError as exc:
        return "; ".join(error["msg"] for error in exc.errors())
    values[key] = getattr(checked, key)
    return None


NamespaceLoader = Callable[[tuple[str, ...]], Awaitable[Mapping[str, str]]]
"""Reads one namespace's properties (``Namespaces.load``)."""


async def namespace_layers(load: NamespaceLoader, namespace: Sequence[str]) -> list[tuple[str, Mapping[str, str]]]:
    """Each level's properties of ``namespace``, top level first (``load`` reads one namespace's properties)."""
    levels = tuple(namespace)
    return [(".".join(levels[:depth]), await load(levels[:depth])) for depth in range(1, len(levels) + 1)]


class OncePerNamespace:
    """A ``NamespaceLoader`` that reads each namespace once and remembers the answer (a failure too): a page that
    resolves the policies of many tables reads the state database once per namespace level, not once per table.
    Kept for one page or one sweep only, so a namespace's changed properties count from the next one."""

    def __init__(self, load: NamespaceLoader) -> None:
        self._load = load
        self._seen: dict[tuple[str, ...], Mapping[str, str] | CatalogError] = {}

    @property
    def reads(self) -> int:
        """How many namespaces were read (the bound tests measure)."""
        return len(self._seen)

    async def __call__(self, namespace: tuple[str, ...]) -> Mapping[str, str]:
        if namespace not in self._seen:
            try:
                self._seen[namespace] = await self._load(namespace)
            except CatalogError as exc:  # gone, or a remote catalog's: the same answer for its other tables
                self._seen[namespace] = exc
        found = self._seen[namespace]
        if isinstance(found, CatalogError):
            raise found
        return found
