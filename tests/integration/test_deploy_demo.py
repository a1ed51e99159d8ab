"""deploy/compose.yaml's proxy, minus Docker: the demo config and the environment compose sets, with the
hosts rewritten to this machine's moto server and PostgreSQL (``docker compose up`` cannot run here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.aws import client, moto_server
from tests.support.postgres import scratch_database
from tests.support.rest import SCHEMA
from tests.support.server import ProxyProcess

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
pytestmark = pytest.mark.postgres


def test_demo_config_serves_the_glue_and_local_catalogs(tmp_path: Path) -> None:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    environment = {key: str(value) for key, value in compose["services"]["irc-proxy"]["environment"].items()}
    config = (DEPLOY / "demo" / "irc-proxy.toml").read_text(encoding="utf-8")
    with moto_server() as moto, scratch_database() as url:
        environment.pop("IRC_PROXY_CONFIG")
        environment |= {
            "IRC_PROXY_STATE__DATABASE_URL": url,
            "IRC_PROXY_CATALOGS__LOCAL__DATABASE_URL": url,
            "IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE": (tmp_path / "local").as_uri(),
            "IRC_PROXY_CATALOGS__DEMO__ENDPOINT_URL": moto,
            "IRC_PROXY_CATALOGS__DEMO__S3_ENDPOINT_URL": moto,
            "IRC_PROXY_SERVER__HOST": "127.0.0.1",
        }
        s3 = client("s3", moto)
        if "demo-warehouse" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
            s3.create_bucket(Bucket="demo-warehouse")
        (tmp_path / "proxy").mkdir()
        proxy = ProxyProcess(tmp_path / "proxy", config, env=environment).start()
        try:
            with httpx.Client(base_url=proxy.url, timeout=30) as http:
                assert http.get("/v1/config").json()["overrides"]["prefix"] == "demo"
                assert http.get("/readyz").status_code == 200
                for catalog in ("demo", "local"):
                    assert http.post(f"/v1/{catalog}/namespaces", json={"namespace": ["db"]}).status_code == 200
                    created = http.post(f"/v1/{catalog}/namespaces/db/tables", json={"name": "t", "schema": SCHEMA})
                    assert created.status_code == 200, created.text
                    loaded = http.get(f"/v1/{catalog}/namespaces/db/tables/t")
                    assert loaded.status_code == 200, loaded.text
                location = http.get("/v1/demo/namespaces/db/tables/t").json()["metadata-location"]
                assert location.startswith("s3://demo-warehouse/glue/")
                assert client("glue", moto).get_table(DatabaseName="db", Name="t")["Table"]["Name"] == "t"
        finally:
            proxy.stop()
            httpx.post(f"{moto}/moto-api/reset")  # moto's state is process-wide: leave it empty
