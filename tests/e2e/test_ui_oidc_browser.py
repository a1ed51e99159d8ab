"""The console's OIDC sign-in in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``)
against an ``irc-proxy serve`` process in ``oidc`` mode and the tiny issuer of tests/support/oidc.py.

The issuer is named ``localhost`` and the proxy ``127.0.0.1``: two sites for the browser, as a real
provider is, so the provider's redirect back is a cross-site navigation (the flow cookie must be Lax, and
the Strict session cookie must reach the next page). The signed-in page is saved as a screenshot under
``tests/artifacts/ui/`` (git-ignored).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.oidc import OidcIssuer
from tests.support.server import ProxyProcess

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),  # in CI a missing browser is an error, not a skip
    reason="Debian's chromium is not installed (make test installs it)",
)


@pytest.fixture(scope="module")
def issuer() -> Iterator[OidcIssuer]:
    server = OidcIssuer(host="localhost").start()
    server.consent = True  # a person approves on the provider's page: the way back starts on another site
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy(issuer: OidcIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = (
        f'[auth]\nmode = "oidc"\nadmins = ["alice"]\n[auth.oidc]\nissuer = "{issuer.url}"\naudience = "irc-proxy"\n'
        'console_client_id = "irc-console"\n'
    )
    server = ProxyProcess(tmp_path_factory.mktemp("ui-oidc-browser"), config)
    issuer.redirect_uri = f"{server.url}/ui/oidc/callback"
    yield server.start()
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_signing_in_through_the_provider_lands_on_the_catalogs_as_alice(
    proxy: ProxyProcess, issuer: OidcIssuer, page: Page
) -> None:
    page.goto(f"{proxy.url}/ui/catalogs")
    assert "/ui/login" in page.url
    page.click("a.oidc-sign-in")
    assert page.url.startswith(f"{issuer.url}/authorize?")
    page.click("#approve")
    page.wait_for_url(f"{proxy.url}/ui/catalogs")
    assert page.locator("header form.whoami span").inner_text() == "alice"
    assert page.locator("main a:text-is('local')").count() == 1
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["irc_ui_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/ui"
    assert "irc_ui_oidc" not in cookies
    shot(page, "oidc-signed-in")
