"""Small helpers for talking to the proxy's REST API with httpx in tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "data", "type": "string", "required": False},
    ],
}


def ns_path(*levels: str) -> str:
    """A namespace path segment: each level URL-encoded, levels joined by %1F."""
    return "%1F".join(quote(level, safe="") for level in levels)


def create_namespace(client: httpx.Client, *levels: str, properties: dict[str, str] | None = None) -> None:
    response = client.post("/v1/local/namespaces", json={"namespace": list(levels), "properties": properties or {}})
    assert response.status_code == 200, response.text


def create_table(client: httpx.Client, namespace: tuple[str, ...], name: str, **extra: Any) -> dict[str, Any]:
    body = {"name": name, "schema": SCHEMA} | extra
    response = client.post(f"/v1/local/namespaces/{ns_path(*namespace)}/tables", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def table_url(namespace: tuple[str, ...], name: str) -> str:
    return f"/v1/local/namespaces/{ns_path(*namespace)}/tables/{quote(name, safe='')}"


def commit(client: httpx.Client, url: str, *updates: dict[str, Any], requirements: list[Any] | None = None) -> dict:
    """Commit ``updates`` to the table at ``url``; the new metadata."""
    response = client.post(url, json={"requirements": requirements or [], "updates": list(updates)})
    assert response.status_code == 200, response.text
    metadata: dict[str, Any] = response.json()["metadata"]
    return metadata


def snapshot(snapshot_id: int, parent: int | None, sequence: int, location: str, **lineage: int) -> dict[str, Any]:
    """An append snapshot's JSON; ``first_row_id=…, added_rows=…`` add the v3 row-lineage fields."""
    return {
        "snapshot-id": snapshot_id,
        **({"parent-snapshot-id": parent} if parent else {}),
        "sequence-number": sequence,
        "timestamp-ms": 1_700_000_000_000 + sequence,
        "manifest-list": f"{location}/metadata/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"},
        "schema-id": 0,
        **{name.replace("_", "-"): value for name, value in lineage.items()},
    }


def assert_error(response: httpx.Response, status: int, type_name: str, message: str | None = None) -> None:
    """The spec's IcebergErrorResponse with ``code`` equal to the status."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == type_name, error
    assert error["code"] == status
    if message is not None:
        assert message in error["message"], error


def issue_token(url: str, client_id: str, secret: str, **form: str) -> str:
    """A bearer token from the proxy's ``/v1/oauth/tokens`` (client-credentials grant)."""
    with httpx.Client(base_url=url, timeout=30) as http:
        return token_of(http, client_id, secret, **form)


def token_of(http: httpx.Client, client_id: str, secret: str, **form: str) -> str:
    """``issue_token`` through a client of the proxy (an in-process one, say)."""
    data = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret} | form
    response = http.post("/v1/oauth/tokens", data=data)
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def bearer_client(url: str, client_id: str, secret: str) -> httpx.Client:
    """An httpx client for ``url`` that sends a freshly issued token of ``client_id``."""
    headers = {"Authorization": f"Bearer {issue_token(url, client_id, secret)}"}
    return httpx.Client(base_url=url, headers=headers, timeout=60)


MGMT = "/management/v1"


def make_principal(root: httpx.Client, name: str, *grants: dict[str, Any]) -> tuple[str, str]:
    """A principal with its own role holding ``grants``; returns its client credentials."""
    assert root.post(f"{MGMT}/roles", json={"name": f"{name}-role"}).status_code == 201
    for grant in grants:
        response = root.post(f"{MGMT}/roles/{name}-role/grants", json={"catalog": "local"} | grant)
        assert response.status_code == 201, response.text
    response = root.post(f"{MGMT}/principals", json={"name": name, "roles": [f"{name}-role"]})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["principal"]["roles"] == [f"{name}-role"] and body["principal"]["has-credentials"]
    assert response.headers["cache-control"] == "no-store"
    return body["credentials"]["client-id"], body["credentials"]["client-secret"]


def expunge_dropped(base_url: str, catalog: str, namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    """Expunge the trash entry of table ``name`` just dropped (its deferred purge runs now); the entry."""
    trash = f"{base_url}/management/v1/catalogs/{catalog}/trash"
    entries = httpx.get(trash, params={"namespace": "\x1f".join(namespace)}).json()["entries"]
    found = [e for e in entries if e["identifier"]["name"] == name]
    assert len(found) == 1, entries
    assert httpx.delete(f"{trash}/{found[0]['id']}").status_code == 204
    return dict(found[0])
