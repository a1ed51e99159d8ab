"""The served proxy as an attacker meets it: one local and one Glue (moto) catalog, both named ``local``.

Each security test module takes ``target`` and runs once per backend. Every target has a ``file://``
warehouse and, beside it, an ``outside`` directory holding a file no client may read, write or delete.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.aws import glue_catalog_config, moto_server
from tests.support.rest import create_namespace
from tests.support.server import ProxyProcess

SECRET_TEXT = "root:x:0:0:do-not-leak-this-line:/root:/bin/bash\n"


@dataclass(frozen=True)
class Target:
    """One served proxy with its catalog ``local`` on one backend."""

    backend: str
    server: ProxyProcess
    warehouse: Path
    """The catalog's warehouse directory (its only allowed location)."""
    outside: Path
    """A directory outside every allowed location; ``secret`` is a file in it."""

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def secret(self) -> Path:
        return self.outside / "secret.json"

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, timeout=60, headers=headers)


def _outside(workdir: Path) -> Path:
    outside = workdir / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text(SECRET_TEXT, encoding="utf-8")
    return outside


@pytest.fixture(scope="session")
def local_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("security-local")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    # Drops are final at once here (PT0S): these tests attack purge itself; the trash has its own tests.
    config = f'[catalogs.local]\nwarehouse = "{warehouse.as_uri()}"\ndrop_retention = "PT0S"\n'
    server = ProxyProcess(workdir, config).start()
    yield Target("local", server, warehouse, _outside(workdir))
    server.stop()


@pytest.fixture(scope="session")
def glue_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with moto_server() as endpoint:
        workdir = tmp_path_factory.mktemp("security-glue")
        warehouse = workdir / "warehouse"
        warehouse.mkdir()
        server = ProxyProcess(
            workdir, glue_catalog_config("local", endpoint, warehouse.as_uri(), drop_retention='"PT0S"')
        ).start()
        yield Target("glue", server, warehouse, _outside(workdir))
        server.stop()


@pytest.fixture(params=["local", "glue"])
def target(request: pytest.FixtureRequest) -> Target:
    """The served proxy, once with the local backend and once with Glue."""
    return request.getfixturevalue(f"{request.param}_target")


@pytest.fixture
def client(target: Target) -> Iterator[httpx.Client]:
    with target.client() as http:
        yield http


@pytest.fixture
def ns(client: httpx.Client) -> str:
    """A namespace of its own for the test, created on the target."""
    name = f"sec_{uuid.uuid4().hex[:10]}"
    create_namespace(client, name)
    return name
