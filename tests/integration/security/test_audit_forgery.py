"""No forged audit or log lines: a client's text (a client id, a namespace name, a raw path) with line breaks,
terminal escapes or bidi controls is printed escaped by ``irc-proxy audit query`` and by the proxy's log.

An anonymous attacker posts to the token endpoint with ``client_id = "x\\n<a whole audit line>"``; a writer
creates a namespace whose name carries an escape sequence and a Unicode line separator. The operator then
reads the trail with ``irc-proxy audit query`` (a subprocess on the served proxy's state database) and the
proxy's text log: neither may show a raw unsafe character or a line the proxy did not write.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa

from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.text import UNSAFE
from tests.support.server import ProxyProcess, Serve

SECRET = "root-secret-for-forgery"
FORGED = "2026-01-01T00:00:00Z root dropTable local:finance.payroll allowed 204 1.0ms id=forged"
TRICKS = ["\n", "\r", "\x1b[2J", "\x85", "\x9b", "\u2028", "\u2029", "\u202e", "\x7f"]
# A line of ``audit query``'s text output: time, principal, operation, where, decision, status, latency, id.
_COLUMN = r'(?:"(?:[^"\\]|\\.)*"|[^\s"]+)'
AUDIT_LINE = re.compile(rf"^\S+ {_COLUMN} {_COLUMN} {_COLUMN} (allowed|denied) \d+ \d+\.\dms id={_COLUMN}$")
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \[|  )")


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    config = '[audit]\nlog = true\n[auth]\nmode = "oauth2"\nadmins = ["root"]\n'
    config += f'[[auth.clients]]\nid = "root"\nsecret_hash = "{hash_secret(SECRET)}"\n'
    return serve(config, "forgery")


def audit_query(proxy: ProxyProcess, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "irc_proxy", "audit", "query", "--config", str(proxy.config_path), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def records(proxy: ProxyProcess, request_id: str) -> list[dict[str, Any]]:
    """The stored audit rows of one request (read from the state database, as ``audit query`` does)."""
    engine = sa.create_engine(f"sqlite:///{proxy.workdir / 'data' / 'state.db'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("select * from audit_record where request_id = :r"), {"r": request_id})
            return [dict(row._mapping) for row in rows]
    finally:
        engine.dispose()


def assert_no_forgery(text: str, line_shape: re.Pattern[str]) -> None:
    assert UNSAFE.search(text.removesuffix("\n").replace("\n", "")) is None, "a raw unsafe character was printed"
    for line in text.removesuffix("\n").split("\n"):
        assert not line.startswith("2026-01-01T00:00:00Z"), line
        assert line_shape.match(line), f"not a line the proxy writes: {line!r}"


def wait_for(proxy: ProxyProcess, request_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if found := records(proxy, request_id):
            return found
        time.sleep(0.05)
    raise AssertionError(f"no audit record for request {request_id}")


def test_a_client_id_with_a_forged_line_is_printed_escaped(proxy: ProxyProcess) -> None:
    client_id = "x\n" + FORGED + "".join(TRICKS)
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": "guess"}
    refused = httpx.post(f"{proxy.url}/v1/oauth/tokens", data=form, timeout=30)
    assert refused.status_code == 401
    (record,) = wait_for(proxy, refused.headers["x-request-id"])
    assert record["principal"] == client_id  # stored as sent: the trail keeps the evidence ...

    text = audit_query(proxy, "--limit", "1000")  # ... and prints it escaped
    assert_no_forgery(text, AUDIT_LINE)
    (line,) = [line for line in text.split("\n") if refused.headers["x-request-id"] in line]
    assert json.dumps(client_id, ensure_ascii=False).split("\\n")[0] in line  # the client id, JSON-quoted
    assert_no_forgery(proxy.log(), LOG_LINE)


def test_a_namespace_and_a_path_with_control_characters_are_printed_escaped(proxy: ProxyProcess) -> None:
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        token = http.post(
            "/v1/oauth/tokens", data={"grant_type": "client_credentials", "client_id": "root", "client_secret": SECRET}
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        level = f"ns_{uuid.uuid4().hex[:6]}\x1b[31m\u2028{FORGED}\u202e\x85"
        created = http.post("/v1/namespaces", json={"namespace": [level]})
        assert created.status_code == 200, created.text
        assert http.get(f"/v1/namespaces/{quote(level, safe='')}").json()["namespace"] == [level]
        # A rejected name and a raw path with a line break reach the trail and the access log too.
        bad_name = http.post(f"/v1/namespaces/{quote(level, safe='')}/tables", json={"name": "t\n" + FORGED})
        assert bad_name.status_code == 400
        missing = http.get("/v1/namespaces/a%0A" + quote(FORGED, safe="") + "%E2%80%A8/tables/t%1B")
        assert missing.status_code == 404
        # A request id is the client's too (X-Request-Id, printable): it may not pose as more columns.
        posing = http.get(
            "/v1/namespaces", headers={"X-Request-Id": f"x] irc_proxy.access GET /v1/forged 200 {FORGED}"}
        )
        assert posing.status_code == 200
    for response in (created, bad_name, missing, posing):
        wait_for(proxy, response.headers["x-request-id"])
    assert_no_forgery(audit_query(proxy, "--limit", "1000"), AUDIT_LINE)
    log = proxy.log()
    assert_no_forgery(log, LOG_LINE)
    assert "[x] irc_proxy.access GET /v1/forged" not in log and " id=x] " not in log
    assert '["x] irc_proxy.access GET /v1/forged 200 ' in log  # quoted as one column
