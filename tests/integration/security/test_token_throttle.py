"""Guarantee 9, the token endpoint throttles: failed logins per client id and per source address get 429 with
``Retry-After``, concurrent secret checks are bounded, failures are audited and the access log names the client.

Each attacker speaks from its own loopback address (127.0.0.x) so that the per-address counters of one
test never touch another's. The catalog backend plays no part here, so the proxy serves a local catalog.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.rest import MGMT
from tests.support.server import ProxyProcess, Serve

SECRETS = {"root": "root-secret-for-throttle", "spark": "spark-secret-for-throttle", "other": "other-secret-42"}
PER_CLIENT, PER_ADDRESS = 3, 5


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    clients = "".join(
        f'[[auth.clients]]\nid = "{name}"\nsecret_hash = "{hash_secret(secret)}"\n' for name, secret in SECRETS.items()
    )
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\nmax_failed_logins_per_client = {PER_CLIENT}\n'
        f"max_failed_logins_per_address = {PER_ADDRESS}\nfailed_login_window_seconds = 120\n"
        "max_concurrent_hashes = 1\nhash_wait_seconds = 0\n" + clients
    )
    return serve(config, "throttle")


def login(url: str, client_id: str, secret: str, address: str) -> httpx.Response:
    """A client-credentials request sent from ``address`` (a loopback address of its own)."""
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
        return client.post(f"{url}/v1/oauth/tokens", data=form)


def assert_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "slow_down" and response.json()["error_description"]
    assert 1 <= int(response.headers["retry-after"]) <= 120
    assert response.headers["cache-control"] == "no-store"


def test_failures_of_one_client_id_are_throttled_with_retry_after(proxy: ProxyProcess) -> None:
    for _ in range(PER_CLIENT):
        assert login(proxy.url, "spark", "guess-" + uuid.uuid4().hex, "127.0.0.2").status_code == 401
    assert_throttled(login(proxy.url, "spark", "one-more-guess", "127.0.0.2"))
    # The client id is locked for its window whatever the address, even with the right secret ...
    assert_throttled(login(proxy.url, "spark", SECRETS["spark"], "127.0.0.3"))
    # ... while another client id from another address is served.
    assert login(proxy.url, "other", SECRETS["other"], "127.0.0.4").status_code == 200


def test_failures_from_one_address_are_throttled_whatever_the_client_id(proxy: ProxyProcess) -> None:
    for n in range(PER_ADDRESS):
        assert login(proxy.url, f"nobody-{n}", "guess", "127.0.0.5").status_code == 401
    assert_throttled(login(proxy.url, "nobody-new", "guess", "127.0.0.5"))
    assert_throttled(login(proxy.url, "other", SECRETS["other"], "127.0.0.5"))
    assert login(proxy.url, "other", SECRETS["other"], "127.0.0.6").status_code == 200


def test_failed_logins_are_audited_with_client_address_and_reason(proxy: ProxyProcess) -> None:
    client_id, secret = f"intruder-{uuid.uuid4().hex[:8]}", "never-stored-" + uuid.uuid4().hex
    for _ in range(PER_CLIENT + 1):
        login(proxy.url, client_id, secret, "127.0.0.7")
    root = login(proxy.url, "root", SECRETS["root"], "127.0.0.8").json()["access_token"]
    with httpx.Client(base_url=proxy.url, headers={"Authorization": f"Bearer {root}"}, timeout=30) as admin:
        records: list[dict[str, object]] = []
        deadline = time.monotonic() + 10  # the database sink writes in the background
        while len(records) < PER_CLIENT + 1 and time.monotonic() < deadline:
            time.sleep(0.1)
            records = admin.get(f"{MGMT}/audit", params={"principal": client_id}).json()["records"]
        everything = admin.get(f"{MGMT}/audit", params={"limit": "10000"}).text
    assert sorted(record["status"] for record in records) == [401] * PER_CLIENT + [429], records  # type: ignore[type-var]
    for record in records:
        assert (record["operation"], record["decision"], record["object"]) == ("oauth.token", "denied", client_id)
        assert "127.0.0.7" in str(record["reason"])
    reasons = {str(record["reason"]).split(":")[0] for record in records}
    assert reasons == {"invalid_client", "slow_down"}
    assert secret not in everything


def test_access_log_names_the_client_of_token_requests(proxy: ProxyProcess) -> None:
    client_id = f"logged-{uuid.uuid4().hex[:8]}"
    assert login(proxy.url, client_id, "wrong", "127.0.0.9").status_code == 401
    assert login(proxy.url, "other", SECRETS["other"], "127.0.0.9").status_code == 200
    lines = [line for line in proxy.log().splitlines() if "POST /v1/oauth/tokens" in line]
    assert any(" 401 " in line and f"client={client_id}" in line for line in lines), lines[-5:]
    assert any(" 200 " in line and "client=other" in line for line in lines), lines[-5:]
    assert "wrong" not in " ".join(line for line in lines if client_id in line).replace(client_id, "")


def test_concurrent_logins_beyond_the_hashing_bound_get_503_not_a_pile_up(proxy: ProxyProcess) -> None:
    """One secret check at a time and no waiting (this proxy's settings): a burst is partly refused, never a 500."""
    with ThreadPoolExecutor(32) as pool:
        statuses = list(pool.map(lambda _: login(proxy.url, "other", SECRETS["other"], "127.0.0.10"), range(32)))
    codes = [response.status_code for response in statuses]
    assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, codes
    busy = next(response for response in statuses if response.status_code == 503)
    assert busy.json()["error"] == "temporarily_unavailable" and busy.headers["retry-after"] == "1"
