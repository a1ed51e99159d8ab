"""Other web sites against the console: tossed CSRF cookies, cross-site forms, sign-out, a replayed OIDC answer.

Two served replicas share one state database (as replicas do): ``a`` and ``b``. A page on another port of
127.0.0.1, or on a sibling subdomain, can set cookies for this host (cookies ignore ports) and auto-post a
form; it cannot read the victim's session cookie.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.console import csrf_of, root_config, sign_in
from tests.support.oidc import OidcIssuer
from tests.support.rest import MGMT, assert_error, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-of-the-csrf-tests"
ATTACK = {"privilege": "all", "catalog": "local", "namespace": "", "kind": "", "name": "", "confirm": "yes"}
"""The grant form a hostile page auto-posts: everything on catalog ``local``, confirmed at once."""


@dataclass(frozen=True)
class Replicas:
    a: ProxyProcess
    b: ProxyProcess


def _config(state: Path, extra: str = "") -> str:
    return f'[state]\ndatabase_url = "sqlite:///{state}"\n[catalogs.local]\nkind = "local"\n{extra}'


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    root = tmp_path_factory.mktemp("console-csrf")
    state = root / "state.db"
    (root / "a").mkdir()
    (root / "b").mkdir()
    config = root_config(ROOT_SECRET, _config(state))  # once: replicas share the client's secret hash
    a = ProxyProcess(root / "a", config).start()
    b = ProxyProcess(root / "b", config).start()
    with httpx.Client(base_url=a.url, timeout=30) as http:
        api = {"Authorization": f"Bearer {token_of(http, 'root', ROOT_SECRET)}"}
        for role in ("victims", "tossed"):
            assert http.post(f"{MGMT}/roles", json={"name": role}, headers=api).status_code == 201
    yield Replicas(a, b)
    a.stop()
    b.stop()


def _grants(server: ProxyProcess, role: str) -> list[dict[str, object]]:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        api = {"Authorization": f"Bearer {token_of(http, 'root', ROOT_SECRET)}"}
        answer = http.get(f"{MGMT}/roles/{role}/grants", headers=api)
    assert answer.status_code == 200, answer.text
    grants: list[dict[str, object]] = answer.json()["grants"]
    return grants


@contextmanager
def _browser(server: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        yield sign_in(browser, "root", ROOT_SECRET)


def test_a_tossed_csrf_cookie_with_the_same_form_value_is_refused(replicas: Replicas) -> None:
    tossed = "t" * 43  # what the attacker's page set for this host (Path=/ui), and posts again as the form value
    with _browser(replicas.a) as victim:
        victim.cookies.set("irc_ui_csrf", tossed, domain="127.0.0.1", path="/ui")
        forged = victim.post("/ui/admin/roles/tossed/grants", data=ATTACK | {"csrf": tossed})
        assert forged.status_code == 403 and "CSRF" in forged.text
        # Another browser's pre-session token (the attacker fetched the sign-in form with the tossed cookie)
        # is not this session's either.
        with httpx.Client(base_url=replicas.a.url, timeout=30, cookies={"irc_ui_csrf": tossed}) as attacker:
            stolen = csrf_of(attacker.get("/ui/login"))
        assert victim.post("/ui/admin/roles/tossed/grants", data=ATTACK | {"csrf": stolen}).status_code == 403
        assert _grants(replicas.a, "tossed") == []
        # The same form with this session's own token is applied: the refusal above was the CSRF check.
        token = csrf_of(victim.get("/ui/admin/roles/tossed"))
        applied = victim.post("/ui/admin/roles/tossed/grants", data=ATTACK | {"csrf": token})
        assert applied.status_code == 303, applied.text
    assert len(_grants(replicas.a, "tossed")) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:1"},  # another port of the same host: same site, another origin
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_cross_origin_form_is_refused_even_with_the_right_token(replicas: Replicas, headers: dict[str, str]) -> None:
    with _browser(replicas.a) as victim:
        token = csrf_of(victim.get("/ui/admin/roles/victims"))
        refused = victim.post("/ui/admin/roles/victims/grants", data=ATTACK | {"csrf": token}, headers=headers)
        assert_error(refused, 403, "ForbiddenException", "cross-site")
        out = victim.post("/ui/logout", data={"csrf": token}, headers=headers)
        assert out.status_code == 403 and victim.get("/ui/catalogs").status_code == 200  # still signed in
        with httpx.Client(base_url=replicas.a.url, timeout=30) as anonymous:
            login = csrf_of(anonymous.get("/ui/login"))
            form = {"csrf": login, "client_id": "root", "client_secret": ROOT_SECRET}
            assert anonymous.post("/ui/login", data=form, headers=headers).status_code == 403
            assert_error(
                anonymous.post("/v1/oauth/tokens", data={"grant_type": "client_credentials"}, headers=headers),
                403,
                "ForbiddenException",
            )
    assert _grants(replicas.a, "victims") == []


def test_the_console_own_origin_is_accepted(replicas: Replicas) -> None:
    with _browser(replicas.a) as browser:
        token = csrf_of(browser.get("/ui/catalogs"))
        same = {"Origin": replicas.a.url, "Sec-Fetch-Site": "same-origin"}
        assert browser.post("/ui/logout", data={"csrf": token}, headers=same).status_code == 303


def test_sign_out_revokes_the_token_on_every_replica(replicas: Replicas) -> None:
    with _browser(replicas.a) as browser:
        session = browser.cookies["irc_ui_session"]
        bearer = {"Authorization": f"Bearer {session}"}
        for server in (replicas.a, replicas.b):
            assert httpx.get(f"{server.url}/v1/local/namespaces", headers=bearer, timeout=30).status_code == 200
        token = csrf_of(browser.get("/ui/catalogs"))
        assert browser.post("/ui/logout", data={"csrf": token}).status_code == 303
    # The copied token: refused at once where it was signed out, within a second or so on the other replica.
    answer = httpx.get(f"{replicas.a.url}/v1/local/namespaces", headers=bearer, timeout=30)
    assert_error(answer, 401, "NotAuthorizedException", "signed out")
    deadline = time.monotonic() + 5
    while (status := httpx.get(f"{replicas.b.url}/v1/config", headers=bearer, timeout=30).status_code) == 200:
        assert time.monotonic() < deadline, "replica b still accepts a signed-out token"
        time.sleep(0.2)
    assert status == 401
    # Nor can it be exchanged for a fresh token (how clients refresh).
    exchange = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": session,
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }
    refused = httpx.post(f"{replicas.b.url}/v1/oauth/tokens", data=exchange, timeout=30)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    # The console: back to the sign-in form.
    with httpx.Client(base_url=replicas.b.url, timeout=30, cookies={"irc_ui_session": session}) as stale:
        assert stale.get("/ui/catalogs").status_code == 303


# OIDC ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def oidc_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OidcIssuer, Replicas]]:
    issuer = OidcIssuer().start()
    issuer.client_secret = "console-secret"
    root = tmp_path_factory.mktemp("console-oidc")
    (root / "a").mkdir()
    (root / "b").mkdir()
    auth = (
        f'[auth]\nmode = "oidc"\nadmins = ["alice"]\n[auth.oidc]\nissuer = "{issuer.url}"\naudience = "irc-proxy"\n'
        'console_client_id = "irc-console"\nconsole_client_secret = "console-secret"\n'
    )
    a = ProxyProcess(root / "a", _config(root / "state.db", auth))
    issuer.redirect_uri = f"{a.url}/ui/oidc/callback"
    a.start()
    b = ProxyProcess(root / "b", _config(root / "state.db", auth)).start()
    yield issuer, Replicas(a, b)
    a.stop()
    b.stop()
    issuer.stop()


def test_a_replayed_oidc_callback_is_refused_on_every_replica(oidc_replicas: tuple[OidcIssuer, Replicas]) -> None:
    _issuer, replicas = oidc_replicas
    with httpx.Client(base_url=replicas.a.url, timeout=30) as browser:
        started = browser.get("/ui/oidc/start", params={"next": "/ui/catalogs"})
        assert started.status_code == 303, started.text
        approved = httpx.get(started.headers["location"], timeout=30)
        back = urlsplit(approved.headers["location"])
        assert back.path == "/ui/oidc/callback" and "code" in parse_qs(back.query)
        sealed = browser.cookies["irc_ui_oidc"]
        assert browser.get(f"/ui/oidc/callback?{back.query}").status_code == 200
    # The same answer and flow cookie again (copied from history, a log or the network), on either replica.
    for server in (replicas.a, replicas.b):
        with httpx.Client(base_url=server.url, timeout=30, cookies={"irc_ui_oidc": sealed}) as replay:
            replayed = replay.get(f"/ui/oidc/callback?{back.query}")
            assert replayed.status_code == 400 and "already finished" in replayed.text
            assert "irc_ui_session" not in replayed.headers.get("set-cookie", "")
            assert not re.search(r"code=|" + re.escape(parse_qs(back.query)["code"][0]), replayed.text)
