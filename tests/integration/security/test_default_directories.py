"""Guarantee 11: distinct names get distinct default directories (an injective, readable encoding)."""

from __future__ import annotations

import uuid

import httpx

from tests.integration.security.conftest import Target
from tests.support.rest import create_namespace, create_table


def test_distinct_table_names_get_distinct_directories(target: Target, client: httpx.Client) -> None:
    ns = f"dirs_{uuid.uuid4().hex[:8]}"
    create_namespace(client, ns)
    names = ["a/b", "a\\b", "a\x7fb", "a_b", "a~2fb", "a b", "a%2Fb", "ä"]
    locations = {name: create_table(client, (ns,), name)["metadata"]["location"] for name in names}
    assert len(set(locations.values())) == len(names), locations
    warehouse = target.warehouse.as_uri()
    for location in locations.values():
        assert location.startswith(f"{warehouse}/{ns}/")
        assert "/" not in location.removeprefix(f"{warehouse}/{ns}/")
    assert locations["a_b"].endswith("/a_b")  # plain names stay readable
    assert locations["a/b"].endswith("/a~2fb") and locations["a~2fb"].endswith("/a~7e2fb")


def test_dot_namespaces_get_their_own_directories(target: Target, client: httpx.Client) -> None:
    root = f"dots_{uuid.uuid4().hex[:8]}"
    found = {}
    for level in (".", "..", "~2e"):
        create_namespace(client, root, level)
        found[level] = create_table(client, (root, level), "t")["metadata"]["location"]
    assert len(set(found.values())) == 3
    for location in found.values():
        assert location.startswith(f"{target.warehouse.as_uri()}/{root}/")
        assert "/../" not in location and "/./" not in location
