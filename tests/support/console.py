"""What the console's tests share: an ``oauth2`` config with a bootstrap admin, the CSRF token of a page,
and for the browser tests Debian's Chromium, the skip rule and the screenshots folder."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.in_process import InProcessProxy

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
"""Screenshots of every page the browser tests visit (git-ignored)."""
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),  # in CI a missing browser is an error, not a skip
    reason="Debian's chromium is not installed (make test installs it)",
)


def root_config(secret: str, extra: str = "") -> str:
    """``oauth2`` with the client ``root`` (secret ``secret``) as bootstrap admin, then ``extra`` TOML."""
    return f'''
[auth]
mode = "oauth2"
admins = ["root"]
grants_cache_seconds = 0
[[auth.clients]]
id = "root"
secret_hash = "{hash_secret(secret)}"
principal = "root"
{extra}'''


def csrf_of(page: httpx.Response | str) -> str:
    """The CSRF token a console page's forms carry."""
    html = page if isinstance(page, str) else page.text
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def sign_in(browser: httpx.Client, client_id: str, secret: str) -> httpx.Client:
    """Sign ``browser`` in through the console's form (``oauth2``); returns it, holding the session cookie."""
    form = browser.get("/ui/login")
    data = {"csrf": csrf_of(form), "client_id": client_id, "client_secret": secret, "next": "/ui/catalogs"}
    answer = browser.post("/ui/login", data=data)
    assert answer.status_code == 303, answer.text
    return browser


@contextmanager
def signed_in(proxy: InProcessProxy, client_id: str, secret: str) -> Iterator[httpx.Client]:
    """A client of the in-process ``proxy`` signed in to the console."""
    with proxy.client(timeout=60) as browser:
        yield sign_in(browser, client_id, secret)


def shot(page: Any, name: str) -> None:
    """Save a full-page screenshot of a Playwright ``page`` as ``tests/artifacts/ui/<name>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
