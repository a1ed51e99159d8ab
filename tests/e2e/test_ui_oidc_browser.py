"""The console's OIDC sign-in in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``)
against an ``irc-proxy serve`` process in ``oidc`` mode and the tiny issuer of tests/support/oidc.py.

The issuer is named ``localhost`` and the proxy ``127.0.0.1``: two sites for the browser, as a real
provider is, so the provider's redirect back is a cross-site navigation (the flow cookie must be Lax, and
the Strict session cookie must reach the next page). The signed-in page is saved as a screenshot under
``tests/artifacts/ui/`` (git-ignored).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from tests.support.console import needs_chromium, shot
from tests.support.oidc import OidcIssuer
from tests.support.server import ProxyProcess

pytestmark = needs_chromium


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
