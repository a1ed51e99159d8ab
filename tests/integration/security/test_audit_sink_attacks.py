"""A client's over-long or NUL-holding name must not make the audit database sink drop other callers' records.

PostgreSQL refuses what SQLite stores: a text over its column's ``VARCHAR(n)`` (``object`` 1024, ``principal`` and
``catalog`` 255, ``request_id`` 128) and any text with a NUL character. The sink inserts a batch (up to ~0.1 s of
everyone's requests) in one transaction, so one refused row dropped the whole batch. An anonymous client asking for
``/v1/local/namespaces/<2000 characters>`` (a 400, audited) or ``/v1/local/namespaces/a%00b`` could hide the
records of whatever anyone did in the same tenth of a second. Served here on a PostgreSQL state database.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess, Serve

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def state_url() -> Iterator[str]:
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="module")
def proxy(serve: Serve, state_url: str) -> ProxyProcess:
    return serve(f'[state]\ndatabase_url = "{state_url}"\n[catalogs.local]\nkind = "local"\n', "audit-sink")


def rows(state_url: str, request_ids: list[str]) -> dict[str, dict[str, object]]:
    engine = sa.create_engine(state_url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("select * from audit_record where request_id = any(:ids)"), {"ids": request_ids}
            )
            return {row.request_id: dict(row._mapping) for row in found}
    finally:
        engine.dispose()


def cut(text: str, length: int) -> str:
    more = f"...({len(text) - length} more)"
    return text[: length - len(more)] + more


LONG_OBJECT = "a" * 2000
LONG_CATALOG = "c" * 300


@pytest.mark.parametrize(
    ("path", "column", "stored"),
    [
        (f"/v1/local/namespaces/{LONG_OBJECT}", "object", cut(LONG_OBJECT, 1024)),  # over VARCHAR(1024)
        ("/v1/local/namespaces/a%00b", "object", "a\\x00b"),
        (f"/v1/{LONG_CATALOG}/namespaces/x", "catalog", cut(LONG_CATALOG, 255)),  # over VARCHAR(255)
        ("/v1/c%00c/namespaces/x", "catalog", "c\\x00c"),
    ],
)
def test_a_bad_name_does_not_drop_the_batch(
    proxy: ProxyProcess, state_url: str, path: str, column: str, stored: str
) -> None:
    """Was: ``audit sink database dropped 5 record(s) (DataError: ... cannot contain NUL (0x00) bytes`` (or
    ``value too long for type character varying(1024)``), the honest callers' records with the attacker's."""
    honest = [uuid.uuid4().hex for _ in range(5)]
    attack = uuid.uuid4().hex
    with httpx.Client(base_url=proxy.url, timeout=10) as client:
        for i, request_id in enumerate(honest):
            assert client.get("/v1/local/namespaces", headers={"X-Request-Id": request_id}).status_code == 200
            if i == 2:
                assert client.get(path, headers={"X-Request-Id": attack}).status_code in (400, 404)  # audited
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(found := rows(state_url, [*honest, attack])) < 6:
        time.sleep(0.2)
    assert sorted(found) == sorted([*honest, attack]), proxy.log()[-3000:]
    assert found[attack][column] == stored
