"""Fixtures the integration modules share, so that each module states only what differs (its config text,
a label for the work directory, what it puts in moto):

- ``moto``, ``sts``, ``remote``: moto's server, STS in front of it, a remote irc-proxy to federate to;
- ``serve(config, label)``: a real ``irc-proxy serve`` process, for what needs the server (sockets,
  timeouts, signals, workers, its log, real clients);
- ``serve_in_process(config, label)``: the same app in this process, for modules that only check HTTP
  answers (``tests/support/in_process.py``);
- ``client`` and ``warehouse_dir``: in this directory they are the zero-config app in-process (``app``);
  ``proxy`` (``tests/conftest.py``) stays the real process for the tests that need one.

Servers and proxies live for the module (``app`` for the session) and are stopped when it is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.support.aws import moto_server
from tests.support.fake_sts import FakeSts, fake_sts
from tests.support.federation import start_remote
from tests.support.in_process import InProcessProxy, ServeInProcess, in_process
from tests.support.server import ProxyProcess, Serve
from tests.support.vending import relax_iam


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """A moto server (Glue, S3, STS, IAM) for the module, empty and without IAM checks at start and at the end.

    moto's backends are process-wide, so what one module leaves behind another would see.
    """
    with moto_server() as endpoint:
        relax_iam(endpoint)
        yield endpoint
        relax_iam(endpoint)


@pytest.fixture(scope="module")
def sts(moto: str) -> Iterator[FakeSts]:
    """moto's STS behind the recording ``FakeSts`` front."""
    with fake_sts(moto) as fake:
        yield fake


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """A remote irc-proxy (OAuth2 on) for a front to federate to (``tests/support/federation.py``)."""
    server = start_remote(tmp_path_factory.mktemp("remote"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """``serve(config, label)`` starts an ``irc-proxy serve`` process for ``config`` in a new directory."""
    started: list[ProxyProcess] = []

    def start(config: str = "", label: str = "proxy") -> ProxyProcess:
        started.append(ProxyProcess(tmp_path_factory.mktemp(label), config).start())
        return started[-1]

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="module")
def serve_in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeInProcess]:
    """``serve_in_process(config, label)``: the same app in this process (``tests/support/in_process.py``)."""
    with ExitStack() as running:

        def start(config: str = "", label: str = "proxy") -> InProcessProxy:
            return running.enter_context(in_process(tmp_path_factory.mktemp(label), config))

        yield start


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessProxy]:
    """The zero-config proxy (its embedded local catalog, named ``local``) in-process, for the session."""
    with in_process(tmp_path_factory.mktemp("app")) as proxy:
        yield proxy


@pytest.fixture
def client(app: InProcessProxy) -> Iterator[httpx.Client]:
    """Here ``client`` talks to ``app``: a module that needs the socket asks for ``proxy`` (tests/conftest.py)."""
    with app.client(timeout=30) as http:
        yield http


@pytest.fixture
def warehouse_dir(app: InProcessProxy) -> Path:
    """The ``local`` catalog's warehouse directory of ``app``."""
    return app.workdir / "data" / "warehouse" / "local"
