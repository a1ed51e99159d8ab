"""Fixtures: a real proxy process (hypercorn) for the session, and unique names per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import ProxyProcess


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
