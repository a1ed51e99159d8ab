"""The console's OIDC sign-in (authorization code + PKCE) against the tiny real issuer of tests/support/oidc.py.

The proxy is served in-process; its hops to the provider are followed by hand: the browser's own requests
to the proxy go through the in-process client, those to the provider through a plain ``httpx`` client.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.support.in_process import URL, InProcessProxy, ServeInProcess
from tests.support.oidc import OidcIssuer

CALLBACK = f"{URL}/ui/oidc/callback"
SECRET = "console-secret-never-shown"


@pytest.fixture(scope="module")
def issuer() -> Iterator[OidcIssuer]:
    server = OidcIssuer().start()
    server.client_secret, server.redirect_uri = SECRET, CALLBACK
    yield server
    server.stop()


def config(issuer: str, console: bool = True) -> str:
    console_keys = f'console_client_id = "irc-console"\nconsole_client_secret = "{SECRET}"\n' if console else ""
    return (
        f'[auth]\nmode = "oidc"\nadmins = ["alice"]\n[auth.oidc]\nissuer = "{issuer}"\naudience = "irc-proxy"\n'
        + console_keys
    )


@pytest.fixture(scope="module")
def proxy(issuer: OidcIssuer, serve_in_process: ServeInProcess) -> InProcessProxy:
    return serve_in_process(config(issuer.url), "ui-oidc")


@pytest.fixture
def browser(proxy: InProcessProxy) -> Iterator[httpx.Client]:
    with proxy.client(timeout=30) as client:
        yield client


def begin(browser: httpx.Client, target: str = "/ui/catalogs") -> str:
    """Start a sign-in; the provider's answer (``.../callback?code=&state=``) as a path on the proxy."""
    started = browser.get("/ui/oidc/start", params={"next": target})
    assert started.status_code == 303, started.text
    approved = httpx.get(started.headers["location"], timeout=30)
    assert approved.status_code == 302, approved.text
    location = approved.headers["location"]
    assert location.startswith(CALLBACK + "?"), location
    return location.removeprefix(URL)


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def assert_nothing_secret(page: httpx.Response, *values: str) -> None:
    for value in (SECRET, *values):
        assert value not in page.text and value not in str(page.headers.get("location", ""))


def test_login_page_links_to_the_provider(browser: httpx.Client, issuer: OidcIssuer) -> None:
    answer = browser.get("/ui/catalogs/local?x=1")
    assert answer.status_code == 303
    page = browser.get(answer.headers["location"])
    host = urlsplit(issuer.url).netloc
    assert page.status_code == 200 and f"Sign in with {host}" in page.text
    assert 'href="/ui/oidc/start?next=/ui/catalogs/local%3Fx%3D1"' in page.text


def test_start_redirects_with_pkce_and_sets_a_lax_flow_cookie(browser: httpx.Client, issuer: OidcIssuer) -> None:
    started = browser.get("/ui/oidc/start", params={"next": "//evil.example/"})
    assert started.status_code == 303
    location = started.headers["location"]
    assert location.startswith(f"{issuer.url}/authorize?")
    query = query_of(location)
    assert query["response_type"] == "code" and query["client_id"] == "irc-console"
    assert query["redirect_uri"] == CALLBACK and query["scope"] == "openid"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32
    cookie = started.headers["set-cookie"]
    assert cookie.startswith("irc_ui_oidc=") and "HttpOnly" in cookie and "Path=/ui/oidc" in cookie
    assert "SameSite=lax" in cookie and "Max-Age=600" in cookie
    assert query["state"] not in cookie and query["nonce"] not in cookie  # sealed, not merely signed
    assert_nothing_secret(started)


def test_sign_in_sets_the_strict_session_and_shows_the_catalogs_as_alice(browser: httpx.Client) -> None:
    back = begin(browser, "/ui/catalogs")
    signed_in = browser.get(back)
    assert signed_in.status_code == 200, signed_in.text
    assert signed_in.headers["refresh"] == "0;url=/ui/catalogs"
    cookies = signed_in.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("irc_ui_session="))
    assert "HttpOnly" in session and "SameSite=strict" in session and "Path=/ui" in session
    assert any(c.startswith('irc_ui_oidc=""') and "Max-Age=0" in c for c in cookies)
    assert_nothing_secret(signed_in, query_of(back)["code"], browser.cookies["irc_ui_session"])
    catalogs = browser.get("/ui/catalogs")
    assert catalogs.status_code == 200 and "alice" in catalogs.text and "local" in catalogs.text
    assert_nothing_secret(catalogs, browser.cookies["irc_ui_session"])


def test_a_missing_or_tampered_state_is_a_400_page(browser: httpx.Client, proxy: InProcessProxy) -> None:
    back = begin(browser)
    query = query_of(back)
    wrong = browser.get("/ui/oidc/callback", params=query | {"state": "x" * 43})
    assert (
        wrong.status_code == 400
        and "state" in wrong.text
        and "irc_ui_session" not in wrong.headers.get("set-cookie", "")
    )
    assert_nothing_secret(wrong, query["code"])
    # the flow cookie is gone after a failed callback; a stranger's browser never had one
    assert browser.get(back).status_code == 400
    with proxy.client(timeout=30) as stranger:
        assert stranger.get(back).status_code == 400


def test_a_tampered_flow_cookie_is_a_400_page(browser: httpx.Client) -> None:
    back = begin(browser)
    sealed = browser.cookies["irc_ui_oidc"]
    tampered = sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB")
    browser.cookies.set("irc_ui_oidc", tampered, domain="127.0.0.1", path="/ui/oidc")
    answer = browser.get(back)
    assert answer.status_code == 400 and "sign in again" in answer.text


def test_a_replayed_code_is_refused(browser: httpx.Client) -> None:
    back = begin(browser)
    sealed = browser.cookies["irc_ui_oidc"]
    assert browser.get(back).status_code == 200
    browser.cookies.clear()
    browser.cookies.set("irc_ui_oidc", sealed, domain="127.0.0.1", path="/ui/oidc")  # the same flow, again
    replayed = browser.get(back)  # refused by the proxy's record of used flows, before the provider is asked
    assert replayed.status_code == 400 and "already finished" in replayed.text
    assert "irc_ui_session" not in browser.cookies
    assert_nothing_secret(replayed, query_of(back)["code"])


def test_a_code_of_another_flow_fails_the_pkce_check(browser: httpx.Client, proxy: InProcessProxy) -> None:
    """A code injected into this browser's sign-in (its state, another flow's code) is refused by PKCE."""
    with proxy.client(timeout=30) as attacker:
        stolen = query_of(begin(attacker))["code"]
    mine = query_of(begin(browser))
    injected = browser.get("/ui/oidc/callback?" + urlencode({"code": stolen, "state": mine["state"]}))
    assert injected.status_code == 401 and "invalid_grant" in injected.text
    assert "irc_ui_session" not in browser.cookies


def test_the_token_endpoint_checks_the_verifier(issuer: OidcIssuer, browser: httpx.Client) -> None:
    code = query_of(begin(browser))["code"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, "code_verifier": "x" * 64}
    answer = httpx.post(f"{issuer.url}/token", data=form, auth=("irc-console", SECRET), timeout=30)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"


def test_a_token_for_another_audience_is_a_401_page(browser: httpx.Client, issuer: OidcIssuer) -> None:
    issuer.access_audience = "another-service"
    try:
        refused = browser.get(begin(browser))
    finally:
        issuer.access_audience = "irc-proxy"
    assert refused.status_code == 401 and "irc_ui_session" not in browser.cookies
    assert_nothing_secret(refused)


def test_the_provider_refusing_is_a_401_page_without_its_text(browser: httpx.Client, issuer: OidcIssuer) -> None:
    issuer.login_as = ""
    try:
        refused = browser.get(begin_denied(browser))
    finally:
        issuer.login_as = "alice"
    assert refused.status_code == 401 and "access_denied" in refused.text
    assert "the user said no" not in refused.text and "<b>" not in refused.text


def begin_denied(browser: httpx.Client) -> str:
    started = browser.get("/ui/oidc/start", params={"next": "/ui/catalogs"})
    location = httpx.get(started.headers["location"], timeout=30).headers["location"]
    assert "error=access_denied" in location
    return location.removeprefix(URL)


def test_without_a_console_client_the_login_page_says_what_is_missing(
    serve_in_process: ServeInProcess, issuer: OidcIssuer
) -> None:
    bare = serve_in_process(config(issuer.url, console=False), "ui-oidc-bare")
    with bare.client(timeout=30) as browser:
        page = browser.get("/ui/login")
        assert (
            page.status_code == 200 and "auth.oidc.console_client_id" in page.text and "Sign in with" not in page.text
        )
        assert browser.get("/ui/oidc/start").status_code == 404


def test_an_unreachable_provider_is_a_503_page(serve_in_process: ServeInProcess) -> None:
    down = serve_in_process(config("http://127.0.0.1:9"), "ui-oidc-down")
    with down.client(timeout=30) as browser:
        answer = browser.get("/ui/oidc/start", params={"next": "/ui/catalogs"})
    assert answer.status_code == 503 and 'data-status="503"' in answer.text
    assert "irc_ui_oidc" not in answer.headers.get("set-cookie", "")
