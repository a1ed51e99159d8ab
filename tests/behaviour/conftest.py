"""The behaviour suite runs once per backend; each test says which capabilities it needs.

``client`` talks to the catalog ``local`` of a served proxy whose backend is the test's parameter:
the embedded local catalog on SQLite (the session's default proxy), the same on PostgreSQL, a Glue
catalog on moto's server, or a remote REST catalog (a second proxy, with OAuth2 and grants) that
the proxy forwards to. A test marked ``needs("…")`` runs only on the backends that have those
capabilities, ``lacks("…")`` only on those without them; no test is listed by name.

``IRC_BEHAVIOUR_BACKENDS`` (comma-separated backend names, default: all) narrows a run to some backends: the
tests of the others are deselected (CI's fast lane runs ``local-sqlite`` only, its second lane the rest).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.aws import glue_catalog_config, moto_server
from tests.support.federation import rest_catalog, start_remote
from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess

CAPABILITIES: dict[str, frozenset[str]] = {
    "local-sqlite": frozenset({"multi_table_commit", "sqlite_state_file", "trash"}),
    "local-postgres": frozenset({"multi_table_commit", "trash"}),
    "glue": frozenset({"trash"}),
    "rest": frozenset({"multi_table_commit"}),
}
"""What each backend can do, as the suite's markers name it."""
MARKS = {"local-postgres": [pytest.mark.postgres]}
HERE = Path(__file__).parent
SELECTED = "IRC_BEHAVIOUR_BACKENDS"
"""The environment variable that narrows a run to some backends (comma-separated names; unset or empty: all)."""


def selected_backends() -> frozenset[str]:
    """The backends this run's behaviour tests use; a name the suite does not know is an error, not a silent
    empty run."""
    names = frozenset(name.strip() for name in os.environ.get(SELECTED, "").split(",") if name.strip())
    unknown = names - CAPABILITIES.keys()
    if unknown:
        raise pytest.UsageError(f"{SELECTED} names unknown backends {sorted(unknown)}; known: {sorted(CAPABILITIES)}")
    return names or frozenset(CAPABILITIES)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "served" not in metafunc.fixturenames:
        return
    needs = {capability for mark in metafunc.definition.iter_markers("needs") for capability in mark.args}
    lacks = {capability for mark in metafunc.definition.iter_markers("lacks") for capability in mark.args}
    backends = [
        pytest.param(name, marks=MARKS.get(name, []))
        for name, capabilities in CAPABILITIES.items()
        if needs <= capabilities and not lacks & capabilities
    ]
    metafunc.parametrize("served", backends, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the behaviour tests of backends ``IRC_BEHAVIOUR_BACKENDS`` leaves out (reported as deselected)."""
    chosen = selected_backends()
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("served") if callspec is not None and item.path.is_relative_to(HERE) else None
        (dropped if backend is not None and backend not in chosen else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The proxy serving the parameter's backend as catalog ``local`` (started once per run)."""
    backend: str = request.param
    if backend == "local-sqlite":
        yield request.getfixturevalue("proxy")
    elif backend == "local-postgres":
        with scratch_database() as url:
            config = f'[state]\ndatabase_url = "{url}"\n[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\n'
            server = ProxyProcess(tmp_path_factory.mktemp("pg-proxy"), config).start()
            yield server
            server.stop()
    elif backend == "rest":  # a front proxy forwarding catalog ``local`` to a second proxy
        remote = start_remote(tmp_path_factory.mktemp("rest-remote"))
        front = ProxyProcess(tmp_path_factory.mktemp("rest-front"), rest_catalog("local", remote.url)).start()
        yield front
        front.stop()
        remote.stop()
    else:
        with moto_server() as endpoint:
            workdir = tmp_path_factory.mktemp("glue-proxy")
            warehouse = (workdir / "warehouse").as_uri()
            server = ProxyProcess(workdir, glue_catalog_config("local", endpoint, warehouse)).start()
            yield server
            server.stop()


@pytest.fixture
def client(served: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        yield http
