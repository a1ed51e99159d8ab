"""Guarantee 4: reads on behalf of clients are bounded and leak nothing.

``register`` and ``register-view`` make the server read a file the client names. Inside the warehouse (the
only place confinement lets them point), a FIFO, a directory, an oversized file, a gzip bomb or a JSON file
that is not metadata is a 4xx within seconds that holds no worker thread, and no answer quotes the file.
An object store that never answers is an answer within ``server.storage_timeout_seconds`` plus a little.
"""

from __future__ import annotations

import gzip
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration.security.conftest import SECRET_TEXT, Target
from tests.support.aws import glue_on_s3_config
from tests.support.rest import assert_error, create_namespace, create_table, table_url
from tests.support.server import ProxyProcess, Serve

LEAK = "do-not-leak-this-line"
MAX_METADATA_BYTES = 64 * 1024 * 1024
"""The default ``server.max_metadata_bytes`` (the security targets run with defaults)."""
PROMPT = 5.0
"""Seconds: the issue's "a 4xx within seconds"."""


@pytest.fixture
def junk(target: Target) -> Path:
    """A directory inside the warehouse but outside every table: register may point here."""
    directory = target.warehouse / "junk" / uuid.uuid4().hex[:8]
    directory.mkdir(parents=True)
    return directory


def register(client: httpx.Client, ns: str, path: Path | str, kind: str = "") -> httpx.Response:
    location = path.as_uri() if isinstance(path, Path) else path
    body = {"name": f"r_{uuid.uuid4().hex[:8]}", "metadata-location": location}
    return client.post(f"/v1/local/namespaces/{ns}/register{kind}", json=body)


def not_metadata_json(directory: Path) -> Path:
    path = directory / "00000-notes.metadata.json"
    path.write_text(f'{{"note": "{SECRET_TEXT.strip()}", "format-version": 2, "location": 7}}', encoding="utf-8")
    return path


def plain_secret(directory: Path) -> Path:
    path = directory / "passwd.metadata.json"
    path.write_text(SECRET_TEXT, encoding="utf-8")
    return path


def fifo(directory: Path, name: str = "00000-fifo.metadata.json") -> Path:
    path = directory / name
    os.mkfifo(path)
    return path


def a_directory(directory: Path) -> Path:
    path = directory / "00000-dir.metadata.json"
    path.mkdir()
    return path


def oversized(directory: Path) -> Path:
    """A sparse file one byte over the limit: cheap to make, refused before it is read."""
    path = directory / "00000-huge.metadata.json"
    with path.open("wb") as out:
        out.truncate(MAX_METADATA_BYTES + 1)
    return path


def gzip_bomb(directory: Path) -> Path:
    """~65 KB on disk that inflates past the limit."""
    path = directory / "00000-bomb.gz.metadata.json"
    path.write_bytes(gzip.compress(b" " * (MAX_METADATA_BYTES + (1 << 20)), compresslevel=9))
    return path


def symlink_to_secret(target: Target) -> Callable[[Path], Path]:
    def make(directory: Path) -> Path:
        path = directory / "00000-link.metadata.json"
        path.symlink_to(target.secret)
        return path

    return make


BAD_FILES: dict[str, tuple[Callable[[Path], Path], int, str]] = {
    "json that is not metadata": (not_metadata_json, 400, "not valid"),
    "a secret text file": (plain_secret, 400, "not valid JSON"),
    "fifo": (fifo, 400, "not a regular file"),
    "directory": (a_directory, 400, "is a directory"),
    "oversized": (oversized, 400, "larger than the limit"),
    "gzip bomb": (gzip_bomb, 400, "decompresses to more than the limit"),
}


@pytest.mark.parametrize("kind", ["", "-view"], ids=["table", "view"])
@pytest.mark.parametrize("bad", list(BAD_FILES))
def test_register_of_a_bad_file_inside_the_warehouse_is_a_prompt_400_that_quotes_nothing(
    client: httpx.Client, ns: str, junk: Path, bad: str, kind: str
) -> None:
    make, status, message = BAD_FILES[bad]
    path = make(junk)
    started = time.monotonic()
    response = register(client, ns, path, kind)
    assert time.monotonic() - started < PROMPT
    assert_error(response, status, "BadRequestException", message)
    assert LEAK not in response.text and "root:x" not in response.text


@pytest.mark.parametrize("kind", ["", "-view"], ids=["table", "view"])
def test_register_of_a_symlink_to_a_file_outside_is_403_without_its_content(
    target: Target, client: httpx.Client, ns: str, junk: Path, kind: str
) -> None:
    response = register(client, ns, symlink_to_secret(target)(junk), kind)
    assert_error(response, 403, "ForbiddenException", "outside the allowed locations")
    assert LEAK not in response.text


def test_register_of_the_secret_outside_quotes_nothing(target: Target, client: httpx.Client, ns: str) -> None:
    response = register(client, ns, target.secret)
    assert response.status_code == 403, response.text
    assert LEAK not in response.text


def test_forty_fifo_registers_leave_healthz_and_load_table_prompt(
    target: Target, client: httpx.Client, ns: str, junk: Path
) -> None:
    create_table(client, (ns,), "t")
    pipes = [fifo(junk, f"{i:05d}-fifo.metadata.json") for i in range(40)]

    def attack(path: Path) -> int:
        with target.client() as http:
            return register(http, ns, path).status_code

    with ThreadPoolExecutor(max_workers=40) as pool:
        attacks = [pool.submit(attack, path) for path in pipes]
        started = time.monotonic()
        assert client.get("/healthz").status_code == 200
        assert client.get(table_url((ns,), "t")).status_code == 200
        assert time.monotonic() - started < PROMPT
        assert [a.result(timeout=30) for a in attacks] == [400] * 40


# An object store that never answers ---------------------------------------------------------------------
STORAGE_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def black_hole() -> Iterator[str]:
    """An endpoint that accepts connections and never answers (as a firewalled or wedged S3 does)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
    for conn in held:
        conn.close()


@pytest.fixture(scope="module")
def s3_proxy(black_hole: str, moto: str, serve: Serve) -> ProxyProcess:
    """A Glue catalog (moto) whose S3 endpoint is the black hole, with a small storage timeout."""
    config = f"[server]\nstorage_timeout_seconds = {STORAGE_TIMEOUT}\n"
    return serve(config + glue_on_s3_config(moto, black_hole, max_attempts=2), "black-hole")


@pytest.mark.parametrize("kind", ["", "-view"], ids=["table", "view"])
def test_register_from_an_unresponsive_object_store_answers_within_the_storage_timeout(
    s3_proxy: ProxyProcess, kind: str
) -> None:
    with httpx.Client(base_url=s3_proxy.url, timeout=120) as http:
        ns = f"bh_{uuid.uuid4().hex[:8]}"
        create_namespace(http, ns)
        started = time.monotonic()
        response = register(http, ns, f"s3://lake/wh/junk/{uuid.uuid4().hex}.metadata.json", kind)
        elapsed = time.monotonic() - started
        assert response.status_code in (400, 503), response.text
        assert response.json()["error"]["code"] == response.status_code
        assert elapsed < STORAGE_TIMEOUT + 3, elapsed
        assert http.get("/healthz").status_code == 200
