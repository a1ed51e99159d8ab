"""Fixtures: a real proxy process (hypercorn) for the session, and unique names per test; the workers' order.

``make test`` runs the suite on two pytest-xdist workers with ``--dist loadfile``: each module runs whole on one
worker, so its module-scoped servers start once. Modules are handed out in collection order, so the long ones
(:data:`LONG_MODULES`) are moved to the front: a long module started last would be the run's tail. (``loadgroup``,
which could keep every Spark module on one worker, does nothing under pytest 9: xdist marks a group by editing
``Item._nodeid``, which pytest 9 no longer reads. Each worker that runs a Spark module starts its own JVM.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import ProxyProcess

LONG_MODULES = (
    "tests/e2e/test_scan_planning.py",
    "tests/integration/test_schemathesis.py",
    "tests/e2e/test_spark_maintenance_glue.py",
    "tests/integration/test_trash.py",
    "tests/integration/test_maintenance_cli.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_replica_rollout.py",
    "tests/integration/test_glue_specifics.py",
    "tests/integration/test_maintenance_isolation.py",
    "tests/integration/test_server_workers.py",
    "tests/integration/test_maintenance.py",
    "tests/integration/test_maintenance_schedule.py",
    "tests/e2e/test_spark_maintenance.py",
    "tests/e2e/test_spark_v3.py",
    "tests/e2e/test_java_client.py",
)
"""Modules of a minute or more on CI's machine (``--durations``), handed out first. Only an
order: a module missing here runs all the same, later."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long modules first (a stable sort: every module keeps its own order, the rest keep theirs)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller schedules in the workers' order
        items.sort(key=lambda item: LONG_MODULES.index(module) if (module := _module(item)) in LONG_MODULES else 99)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.fixture(scope="session")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The proxy with its zero-config embedded local catalog (named ``local``), served by hypercorn."""
    server = ProxyProcess(tmp_path_factory.mktemp("proxy")).start()
    yield server
    server.stop()


@pytest.fixture
def client(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        yield http


@pytest.fixture
def ns_name() -> str:
    """A namespace name no other test uses."""
    return f"ns_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def warehouse_dir(proxy: ProxyProcess) -> Path:
    return proxy.workdir / "data" / "warehouse" / "local"
