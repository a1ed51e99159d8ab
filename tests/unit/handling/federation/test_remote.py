"""Where a federated prefix runs each operation, what its /v1/config says, and the ``:`` mapping."""

from __future__ import annotations

import json

from irc_proxy.backends.rest.upstream import LEGACY_ENDPOINTS, parse_config
from irc_proxy.handling.federation.forwarding import map_listing, map_request
from irc_proxy.handling.federation.remote import client_config, placement
from irc_proxy.handling.federation.serving import Placement
from irc_proxy.handling.naming import NamespaceCodec

TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
VIEW = "/v1/{prefix}/namespaces/{namespace}/views/{view}"
NS = "/v1/{prefix}/namespaces/{namespace}"


def test_a_config_without_endpoints_means_the_legacy_set_and_no_views() -> None:
    config = parse_config({"defaults": {}, "overrides": {"prefix": "catalogs/123456789012"}})
    assert config.endpoints == LEGACY_ENDPOINTS and config.prefix == "catalogs/123456789012"
    assert not config.serves_views
    assert placement(config, f"GET {TABLE}", False, True) is Placement.FORWARDED
    assert placement(config, f"HEAD {TABLE}", False, True) is Placement.FORWARDED  # forwarded as a GET
    assert placement(config, f"GET {VIEW}", False, True) is Placement.SERVED  # the proxy's view store fills the gap
    assert placement(config, f"GET {VIEW}", False, False) is None
    assert placement(config, f"POST {TABLE}/unregister", False, True) is None


def test_legacy_view_hint_and_mapped_namespaces() -> None:
    config = parse_config({"defaults": {"view-endpoints-supported": "true"}, "overrides": {}})
    assert config.serves_views and placement(config, f"GET {VIEW}", False, True) is Placement.FORWARDED
    assert placement(config, f"HEAD {NS}", True, True) is Placement.SERVED
    assert placement(config, "POST /v1/{prefix}/namespaces", True, True) is Placement.SERVED
    assert placement(config, "POST /v1/{prefix}/namespaces", False, True) is Placement.FORWARDED


def test_client_config_keeps_table_defaults_and_drops_connection_keys() -> None:
    config = parse_config(
        {
            "defaults": {"write.format.default": "parquet", "rest.signing-name": "glue"},
            "overrides": {"prefix": "p", "uri": "https://up", "oauth2-server-uri": "https://idp", "token": "t"},
            "endpoints": [f"GET {TABLE}"],
            "idempotency-key-lifetime": "PT30M",
        }
    )
    body = client_config(config, "remote", [f"GET {TABLE}"])
    assert body == {
        "defaults": {"write.format.default": "parquet"},
        "overrides": {"prefix": "remote"},
        "endpoints": [f"GET {TABLE}"],
        "idempotency-key-lifetime": "PT30M",
    }


def test_mapping_rewrites_identifiers_both_ways() -> None:
    codec = NamespaceCodec(":")
    rename = {"source": {"namespace": ["a", "b.c"], "name": "t"}, "destination": {"namespace": ["a"], "name": "u"}}
    mapped = json.loads(map_request("POST /v1/{prefix}/tables/rename", json.dumps(rename).encode(), codec))
    assert mapped["source"]["namespace"] == ["a:b%2Ec"] and mapped["destination"]["namespace"] == ["a"]
    listing = {"identifiers": [{"namespace": ["a:b%2Ec"], "name": "t"}], "next-page-token": None}
    back = json.loads(map_listing(f"GET {NS}/tables", json.dumps(listing).encode(), codec))
    assert back["identifiers"] == [{"namespace": ["a", "b.c"], "name": "t"}]
    body = b'{"requirements": []}'
    assert map_request(f"GET {TABLE}", body, codec) is body
