"""Other web sites against the REST and management APIs: what a page in someone's browser can make it send.

A page can send GET/HEAD/POST with a form or ``text/plain`` body (``mode: 'no-cors'``) without a CORS
preflight, and a page that rebinds its own DNS name to the proxy's address reads with its own name as
``Host``. The default proxy (``auth.mode = "none"``, the ``local_target`` of conftest) must refuse both,
while JSON clients (pyiceberg, Spark, DuckDB, curl with ``Content-Type: application/json``) go on working.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.security.conftest import Target
from tests.support.rest import MGMT, assert_error
from tests.support.server import ProxyProcess

JSON = {"Content-Type": "application/json"}


def _exists(client: httpx.Client, name: str) -> bool:
    return client.head(f"/v1/local/namespaces/{name}").status_code == 204


@pytest.fixture
def api(local_target: Target) -> Iterator[httpx.Client]:
    with local_target.client() as client:
        yield client


@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", None]
)
def test_a_no_cors_post_cannot_create_a_namespace(api: httpx.Client, content_type: str | None) -> None:
    """What ``fetch(url, {method: 'POST', mode: 'no-cors', body})`` or a form sends: refused, nothing created."""
    name = f"xs_{uuid.uuid4().hex[:8]}"
    headers = {"Content-Type": content_type} if content_type else {}
    sent = api.post("/v1/local/namespaces", content=f'{{"namespace": ["{name}"]}}', headers=headers)
    assert_error(sent, 400, "BadRequestException", "Content-Type: application/json")
    assert not _exists(api, name)


def test_cross_site_writes_of_every_kind_are_refused(api: httpx.Client) -> None:
    name = f"xs_{uuid.uuid4().hex[:8]}"
    assert api.post("/v1/local/namespaces", json={"namespace": [name]}).status_code == 200
    properties = f"/v1/local/namespaces/{name}/properties"
    plain = {"Content-Type": "text/plain"}
    assert_error(api.post(properties, content='{"updates": {"a": "1"}}', headers=plain), 400, "BadRequestException")
    assert_error(api.post(f"{MGMT}/roles", content='{"name": "r"}', headers=plain), 400, "BadRequestException")
    assert_error(api.post("/v1/local/tables/rename", content="{}"), 400, "BadRequestException")
    assert_error(
        api.request("DELETE", f"/v1/local/namespaces/{name}", content="x", headers=plain), 400, "BadRequestException"
    )
    assert api.get(f"/v1/local/namespaces/{name}").json()["properties"].get("a") is None
    # A bodyless DELETE is not something a page can send without a preflight; JSON clients send it as such.
    assert api.delete(f"/v1/local/namespaces/{name}").status_code == 204


def test_a_foreign_origin_is_refused_even_with_json(api: httpx.Client, local_target: Target) -> None:
    name = f"xs_{uuid.uuid4().hex[:8]}"
    for origin in ("https://evil.example", "null", local_target.url.replace("127.0.0.1", "localhost")):
        sent = api.post("/v1/local/namespaces", json={"namespace": [name]}, headers={"Origin": origin})
        assert_error(sent, 403, "ForbiddenException", "server.allowed_origins")
        assert_error(api.get("/v1/local/namespaces", headers={"Origin": origin}), 403, "ForbiddenException")
    fetch_metadata = {"Sec-Fetch-Site": "cross-site", **JSON}
    assert_error(
        api.post("/v1/local/namespaces", json={"namespace": [name]}, headers=fetch_metadata), 403, "ForbiddenException"
    )
    assert not _exists(api, name)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8181", "127.0.0.2", "[::2]:1", "localhost.evil"])
def test_a_rebound_host_name_reads_nothing(api: httpx.Client, host: str) -> None:
    """DNS rebinding: the page's own name arrives as ``Host``; the proxy answers it nothing but a 403."""
    for path in ("/v1/config", "/v1/local/namespaces", f"{MGMT}/roles"):
        answer = api.get(path, headers={"Host": host})
        assert_error(answer, 403, "ForbiddenException", "server.allowed_hosts")
        assert "namespaces" not in answer.text.replace("/v1/local/namespaces", "")


def test_probes_answer_any_host_and_json_clients_keep_working(api: httpx.Client) -> None:
    """Kubelet probes and Prometheus name the pod's IP; JSON clients and loopback names are served."""
    for path in ("/healthz", "/readyz", "/metrics"):
        assert api.get(path, headers={"Host": "10.1.2.3:8181"}).status_code == 200
    for host in ("localhost", "LOCALHOST:1", "127.0.0.1:9", "[::1]:8181"):
        assert api.get("/v1/config", headers={"Host": host}).status_code == 200
    name = f"xs_{uuid.uuid4().hex[:8]}"
    created = api.post("/v1/local/namespaces", json={"namespace": [name]}, headers={"Sec-Fetch-Site": "none"})
    assert created.status_code == 200, created.text
    charset = {"Content-Type": "application/json; charset=utf-8"}
    assert api.post(f"/v1/local/namespaces/{name}/properties", content="{}", headers=charset).status_code == 200


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("cross-site-configured")
    config = (
        '[server]\nallowed_hosts = ["catalog.example", "*.lb.example"]\n'
        'allowed_origins = ["https://app.example"]\n'
        f'[catalogs.local]\nwarehouse = "{(workdir / "wh").as_uri()}"\n'
    )
    (workdir / "wh").mkdir()
    server = ProxyProcess(workdir, config).start()
    yield server
    server.stop()


def test_configured_hosts_and_origins_replace_the_defaults(configured: ProxyProcess) -> None:
    with httpx.Client(base_url=configured.url, timeout=30) as api:
        assert_error(api.get("/v1/config"), 403, "ForbiddenException")  # 127.0.0.1 is no longer listed
        for host in ("catalog.example", "catalog.example:443", "a.lb.example", "b.a.lb.example:8181"):
            assert api.get("/v1/config", headers={"Host": host}).status_code == 200, host
        assert_error(api.get("/v1/config", headers={"Host": "lb.example"}), 403, "ForbiddenException")
        named = {"Host": "catalog.example"}
        allowed = api.post(
            "/v1/local/namespaces", json={"namespace": ["o"]}, headers=named | {"Origin": "https://app.example"}
        )
        assert allowed.status_code == 200, allowed.text
        other = api.post(
            "/v1/local/namespaces", json={"namespace": ["p"]}, headers=named | {"Origin": "http://app.example"}
        )
        assert_error(other, 403, "ForbiddenException")
