"""Schemathesis runs the REST spec in ``openapi/`` against the served proxy (local backend, real hypercorn).

Every operation the proxy advertises in ``GET /v1/config`` (plus ``/v1/config`` itself) is exercised with the
spec's examples, schemathesis's coverage cases (boundary and wrong-type values) and random fuzzing, positive
and negative. The checks: no 5xx, only documented status codes, the documented content type, and response
bodies that conform to the spec's schemas. Bounded to well under a few minutes on 2 cores (10 examples per
operation in the fuzzing phase, one worker); the seed is printed and can be set with
``IRC_PROXY_SCHEMATHESIS_SEED`` to replay a run.

Spec errata we deliberately follow the clients on (patched in the copy of the spec that is run, nothing else):

* 15 view responses (404s of the view operations) name ``ErrorModel`` as their schema, while their own examples,
  every other operation, and every client (Java's ``ErrorHandlers``, pyiceberg) use the ``IcebergErrorResponse``
  wrapper ``{"error": {...}}``. The copy points them at ``IcebergErrorResponse``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.server import ProxyProcess, Serve

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "rest-catalog-open-api.yaml"
SEED = int(os.environ.get("IRC_PROXY_SCHEMATHESIS_SEED", "20261122"))
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
ERROR_MODEL = "#/components/schemas/ErrorModel"
ERROR_RESPONSE = "#/components/schemas/IcebergErrorResponse"


@pytest.fixture(scope="module")
def served(serve: Serve) -> ProxyProcess:
    """A proxy of its own (the run creates and drops many objects), seeded with the spec's example names."""
    server = serve(label="schemathesis-proxy")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for namespace in (["accounting"], ["accounting", "tax"]):
            assert http.post("/v1/local/namespaces", json={"namespace": namespace}).status_code == 200
        schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
        created = http.post("/v1/local/namespaces/accounting%1Ftax/tables", json={"name": "sales", "schema": schema})
        assert created.status_code == 200, created.text
        view = {
            "name": "monthly",
            "schema": schema,
            "view-version": {
                "version-id": 1,
                "timestamp-ms": 1700000000000,
                "schema-id": 0,
                "summary": {"engine-name": "spark"},
                "default-namespace": ["accounting", "tax"],
                "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}],
            },
        }
        created = http.post("/v1/local/namespaces/accounting%1Ftax/views", json=view)
        assert created.status_code == 200, created.text
    return server


def _served_spec(advertised: set[str]) -> dict[str, Any]:
    """The spec restricted to what the proxy serves, with the errata above fixed."""
    spec: dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    paths: dict[str, Any] = {}
    for path, item in spec["paths"].items():
        kept = {
            key: operation
            for key, operation in item.items()
            if key == "parameters" or path == "/v1/config" or f"{key.upper()} {path}" in advertised
        }
        if set(kept) - {"parameters"}:
            paths[path] = kept
    spec["paths"] = paths
    for item in paths.values():
        for key, operation in item.items():
            if key == "parameters":
                continue
            for response in operation.get("responses", {}).values():
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                if schema.get("$ref") == ERROR_MODEL:
                    schema["$ref"] = ERROR_RESPONSE
    return spec


# Random path names mostly meet 404s; the second run pins them to objects that exist so bodies reach the
# commit, update and rename logic.
PATH_PARAMETERS = {
    "random-names": {"path.prefix": "local"},
    "existing-names": {
        "path.prefix": "local",
        "path.namespace": "accounting\x1ftax",
        "path.table": "sales",
        "path.view": "monthly",
    },
}


@pytest.mark.parametrize("names", list(PATH_PARAMETERS))
def test_spec_run_finds_no_server_error_and_no_schema_violation(
    served: ProxyProcess, tmp_path: Path, names: str
) -> None:
    advertised = set(httpx.get(f"{served.url}/v1/config", timeout=10).json()["endpoints"])
    spec = tmp_path / "served-spec.yaml"
    spec.write_text(yaml.safe_dump(_served_spec(advertised), sort_keys=False), encoding="utf-8")
    config = tmp_path / "schemathesis.toml"
    parameters = "".join(f"{json.dumps(key)} = {json.dumps(value)}\n" for key, value in PATH_PARAMETERS[names].items())
    config.write_text(f"[parameters]\n{parameters}", encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        str(spec),
        "--url",
        served.url,
        "--checks",
        CHECKS,
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "10",
        "--seed",
        str(SEED),
        # One worker: CPython 3.11.7's ast.parse (hypothesis describes filters with it) is not thread-safe.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    print(f"\nschemathesis ({names}) seed {SEED} over {len(advertised) + 1} operations")
    run = subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=tmp_path, check=False)
    summary = run.stdout[run.stdout.rfind("SUMMARY") :] if "SUMMARY" in run.stdout else run.stdout[-3000:]
    print(summary)
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:] + "\nproxy log:\n" + served.log()[-5_000:]
    assert "Tested: 0" not in run.stdout
