"""The cookie-tossing attack on the console in a real browser (Playwright driving Debian's Chromium).

A signed-in admin visits a page served from another port of 127.0.0.1. That page's server sets
``irc_ui_csrf=<its value>; Path=/ui`` for the host (cookies ignore ports) and the page auto-posts the
console's grant form with the same value. To the browser this is a same-site request, so the Strict session
cookie goes along: before the fix the role got ``all`` on the catalog. Now the form is refused (the token is
bound to the session, and the Origin is not the console's) and the role stays empty.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import Page

from tests.support.console import needs_chromium, root_config, shot
from tests.support.rest import MGMT, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-the-tossing-browser"
TOSSED = "a" * 43

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    served = ProxyProcess(tmp_path_factory.mktemp("ui-tossing"), root_config(ROOT_SECRET)).start()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        api = {"Authorization": f"Bearer {token_of(http, 'root', ROOT_SECRET)}"}
        assert http.post(f"{MGMT}/roles", json={"name": "victim-role"}, headers=api).status_code == 201
    yield served
    served.stop()


def attacker_site(target: str) -> ThreadingHTTPServer:
    """A page on another port of 127.0.0.1 that tosses the CSRF cookie and auto-posts the grant form."""
    fields = {"privilege": "all", "catalog": "local", "namespace": "", "kind": "", "name": "", "confirm": "yes"}
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in (fields | {"csrf": TOSSED}).items())
    body = (
        f'<!doctype html><form id="f" method="post" action="{target}/ui/admin/roles/victim-role/grants">{inputs}'
        '</form><script>document.getElementById("f").submit()</script>'
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Set-Cookie", f"irc_ui_csrf={TOSSED}; Path=/ui")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    return site


def grants(server: ProxyProcess) -> list[object]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        api = {"Authorization": f"Bearer {token_of(http, 'root', ROOT_SECRET)}"}
        listed: list[object] = http.get(f"{MGMT}/roles/victim-role/grants", headers=api).json()["grants"]
    return listed


def test_a_tossed_csrf_cookie_and_auto_posted_form_grant_nothing(server: ProxyProcess, page: Page) -> None:
    page.goto(f"{server.url}/ui/admin/roles")
    page.fill("input[name=client_id]", "root")
    page.fill("input[name=client_secret]", ROOT_SECRET)
    page.click("section.login button")
    assert page.url.endswith("/ui/admin/roles"), page.url

    site = attacker_site(server.url)
    try:
        with page.expect_response(lambda r: "/ui/admin/roles/victim-role/grants" in r.url) as posted:
            page.goto(f"http://127.0.0.1:{site.server_address[1]}/")
        assert posted.value.status == 403
        shot(page, "cookie-tossing-refused")
    finally:
        site.shutdown()
    tossed = [c for c in page.context.cookies() if c["name"] == "irc_ui_csrf"]
    assert any(c["value"] == TOSSED for c in tossed)  # the browser did take the tossed cookie
    assert grants(server) == []
    # The console itself still works for the admin in this browser.
    page.goto(f"{server.url}/ui/admin/roles/victim-role")
    assert page.locator("h1").inner_text().startswith("victim-role")
