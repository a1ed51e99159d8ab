"""Session binding and login throttling as pure logic, over a real SQLite state database."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from irc_proxy.errors import NotAuthenticated
from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.handling.security.sessions import Client, ClientDirectory, fingerprint
from irc_proxy.handling.security.throttle import Busy, HashGate, LoginThrottle
from irc_proxy.stores.db import create_state_engine, ensure_schema
from irc_proxy.stores.login_failures import LoginFailureStore
from irc_proxy.threads import ThreadRunner


def test_fingerprint_changes_with_every_rotation_of_the_same_secret() -> None:
    first, second = hash_secret("same"), hash_secret("same")
    assert fingerprint(first) == fingerprint(first) and fingerprint(first) != fingerprint(second)
    assert len(fingerprint(first)) == 16 and "same" not in fingerprint(first)


def test_session_client_refuses_a_rotated_removed_or_expired_session() -> None:
    stored = {"db": hash_secret("x")}

    async def lookup(name: str) -> str | None:
        return stored.get(name)

    directory = ClientDirectory({"cfg": Client("cfg", hash_secret("y"), "svc")}, lookup, cache_seconds=0)
    now = int(time.time())

    async def check(client_id: str, cfp: str, auth_time: int = now) -> Client:
        claims = {"client_id": client_id, "cfp": cfp, "auth_time": auth_time}
        return await directory.session_client(claims, max_session_seconds=60)

    db_fp, cfg_fp = fingerprint(stored["db"]), directory.configured["cfg"].fingerprint
    assert asyncio.run(check("cfg", cfg_fp)).principal == "svc"
    assert asyncio.run(check("db", db_fp)).principal == "db"
    for client_id, cfp, auth_time in (("cfg", db_fp, now), ("cfg", cfg_fp, now - 61), ("gone", cfg_fp, now)):
        with pytest.raises(NotAuthenticated):
            asyncio.run(check(client_id, cfp, auth_time))
    stored["db"] = hash_secret("x")  # rotated to the very same secret: still a new session generation
    with pytest.raises(NotAuthenticated, match="rotated"):
        asyncio.run(check("db", db_fp))
    with pytest.raises(NotAuthenticated, match="no client session"):
        asyncio.run(directory.session_client({"client_id": "cfg"}, 60))


def test_throttle_blocks_a_key_after_its_limit_and_leaves_other_keys_alone(tmp_path: Path) -> None:
    engine = create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
    ensure_schema(engine, auto_upgrade=True)
    throttle = LoginThrottle(LoginFailureStore(engine, ThreadRunner(2), 60), per_client=2, per_address=3)

    async def scenario() -> list[int | None]:
        answers = [await throttle.retry_after("a", "10.0.0.1")]
        for _ in range(2):
            await throttle.failed("a", "10.0.0.1")
        answers.append(await throttle.retry_after("a", "10.0.0.2"))  # client id a is over its limit
        answers.append(await throttle.retry_after("b", "10.0.0.1"))  # the address is not (2 of 3)
        await throttle.failed("c", "10.0.0.1")
        answers.append(await throttle.retry_after("b", "10.0.0.1"))  # now the address is
        answers.append(await throttle.retry_after("b", "10.0.0.3"))
        return answers

    try:
        fresh, client_blocked, address_free, address_blocked, elsewhere = asyncio.run(scenario())
    finally:
        engine.dispose()
    assert fresh is None and address_free is None and elsewhere is None
    assert client_blocked is not None and 59 <= client_blocked <= 60
    assert address_blocked is not None and 59 <= address_blocked <= 60


def test_hash_gate_refuses_what_cannot_start_within_the_wait() -> None:
    release = threading.Event()
    gate = HashGate(ThreadRunner(2), 1, wait_seconds=0.05)

    async def scenario() -> tuple[bool, str]:
        holder = asyncio.create_task(gate.run(lambda: release.wait(5)))
        await asyncio.sleep(0.05)
        try:
            await gate.run(lambda: True)
            outcome = "ran"
        except Busy:
            outcome = "busy"
        release.set()
        return await holder, outcome

    held, outcome = asyncio.run(scenario())
    assert held and outcome == "busy"
    assert asyncio.run(HashGate(ThreadRunner(2), 1, wait_seconds=0).run(lambda: 42)) == 42
