"""Namespaces over HTTP against the served proxy: nesting, paging, properties, errors."""

from __future__ import annotations

import httpx

from tests.support.rest import assert_error, create_namespace, create_table, ns_path


def test_create_nested_namespace_creates_missing_parents(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, "sales", "emea", properties={"owner": "ana"})
    assert client.head(f"/v1/local/namespaces/{ns_name}").status_code == 204
    assert client.head(f"/v1/local/namespaces/{ns_path(ns_name, 'sales')}").status_code == 204
    loaded = client.get(f"/v1/local/namespaces/{ns_path(ns_name, 'sales', 'emea')}").json()
    assert loaded == {"namespace": [ns_name, "sales", "emea"], "properties": {"owner": "ana"}}


def test_create_existing_namespace_is_409(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    response = client.post("/v1/local/namespaces", json={"namespace": [ns_name]})
    assert_error(response, 409, "AlreadyExistsException", f"Namespace already exists: {ns_name}")


def test_parent_listing_returns_direct_children_as_full_levels(client: httpx.Client, ns_name: str) -> None:
    for child in ("b", "a", "c"):
        create_namespace(client, ns_name, child)
    create_namespace(client, ns_name, "a", "deep")
    listed = client.get("/v1/local/namespaces", params={"parent": ns_name}).json()
    assert sorted(listed["namespaces"]) == [[ns_name, "a"], [ns_name, "b"], [ns_name, "c"]]
    deeper = client.get("/v1/local/namespaces", params={"parent": f"{ns_name}\x1fa"}).json()
    assert deeper["namespaces"] == [[ns_name, "a", "deep"]]
    top = client.get("/v1/local/namespaces").json()["namespaces"]
    assert [ns_name] in top and [ns_name, "a"] not in top


def test_listing_under_missing_parent_is_404_with_exact_message(client: httpx.Client) -> None:
    response = client.get("/v1/local/namespaces", params={"parent": "non-existing"})
    assert_error(response, 404, "NoSuchNamespaceException")
    assert response.json()["error"]["message"] == "Namespace does not exist: non-existing"


def test_namespace_listing_pages_follow_tokens(client: httpx.Client, ns_name: str) -> None:
    children = [f"c{i:02d}" for i in range(7)]
    for child in children:
        create_namespace(client, ns_name, child)
    seen, token, pages = [], "", 0
    while token is not None:
        page = client.get("/v1/local/namespaces", params={"parent": ns_name, "pageToken": token, "pageSize": 3}).json()
        assert len(page["namespaces"]) <= 3
        seen += [ns[-1] for ns in page["namespaces"]]
        token, pages = page["next-page-token"], pages + 1
    assert sorted(seen) == children  # each exactly once; the spec does not order listings
    assert 3 <= pages <= 4  # a store that cannot tell the end early may add one empty page


def test_levels_with_separator_dot_slash_and_percent_round_trip(client: httpx.Client, ns_name: str) -> None:
    odd = ["a:b", "new.db", "x/y", "100%", "sp ace+plus"]
    for level in odd:
        create_namespace(client, ns_name, level)
        assert client.head(f"/v1/local/namespaces/{ns_path(ns_name, level)}").status_code == 204, level
    listed = client.get("/v1/local/namespaces", params={"parent": ns_name}).json()["namespaces"]
    assert sorted(ns[-1] for ns in listed) == sorted(odd)


def test_separator_form_of_path_is_accepted(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, "team")
    assert client.get(f"/v1/local/namespaces/{ns_name}:team").json()["namespace"] == [ns_name, "team"]


def test_drop_namespace_with_child_namespace_is_409(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, "child")
    response = client.delete(f"/v1/local/namespaces/{ns_name}")
    assert_error(response, 409, "NamespaceNotEmptyException", "is not empty")
    assert client.delete(f"/v1/local/namespaces/{ns_path(ns_name, 'child')}").status_code == 204
    assert client.delete(f"/v1/local/namespaces/{ns_name}").status_code == 204
    assert client.head(f"/v1/local/namespaces/{ns_name}").status_code == 404


def test_drop_namespace_with_table_is_409(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    assert_error(client.delete(f"/v1/local/namespaces/{ns_name}"), 409, "NamespaceNotEmptyException", "is not empty")


def test_drop_missing_namespace_is_404(client: httpx.Client, ns_name: str) -> None:
    assert_error(client.delete(f"/v1/local/namespaces/{ns_name}"), 404, "NoSuchNamespaceException")


def test_update_properties_reports_updated_removed_missing(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, properties={"a": "1", "b": "2"})
    response = client.post(
        f"/v1/local/namespaces/{ns_name}/properties", json={"removals": ["a", "zz"], "updates": {"c": "3", "b": "9"}}
    )
    assert response.json() == {"updated": ["b", "c"], "removed": ["a"], "missing": ["zz"]}
    assert client.get(f"/v1/local/namespaces/{ns_name}").json()["properties"] == {"b": "9", "c": "3"}


def test_update_properties_with_key_in_both_is_422(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, properties={"a": "1"})
    response = client.post(
        f"/v1/local/namespaces/{ns_name}/properties", json={"removals": ["a"], "updates": {"a": "2"}}
    )
    assert_error(response, 422, "UnprocessableEntityException")
    assert client.get(f"/v1/local/namespaces/{ns_name}").json()["properties"] == {"a": "1"}


def test_update_properties_of_missing_namespace_is_404(client: httpx.Client, ns_name: str) -> None:
    response = client.post(f"/v1/local/namespaces/{ns_name}/properties", json={"updates": {"a": "1"}})
    assert_error(response, 404, "NoSuchNamespaceException", f"Namespace does not exist: {ns_name}")


def test_bad_namespace_bodies_are_400(client: httpx.Client) -> None:
    bodies: list[dict[str, object]] = [
        {"namespace": []},
        {"namespace": [""]},
        {"namespace": "flat"},
        {"namespace": [1]},
        {},
    ]
    for body in bodies:
        assert_error(client.post("/v1/local/namespaces", json=body), 400, "BadRequestException")
    response = client.post("/v1/local/namespaces", json={"namespace": ["x"], "properties": {"k": 1}})
    assert_error(response, 400, "BadRequestException")
