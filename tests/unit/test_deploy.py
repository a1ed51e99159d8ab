"""deploy/: the image's Dockerfile, the compose demo and the Helm chart, checked without a container runtime.

compose.yaml is validated against the compose specification's JSON schema.
The chart is rendered for real by Helm v4 (``helm-python-sdk`` ships Helm as a shared library; no cluster is
contacted) and every manifest is validated against the Kubernetes schemas (``kubernetes-validate``, strict:
unknown fields fail). The TOML each deployment hands the proxy is loaded by our own settings loader.
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from helm_python.chart import Chart
from helm_python.errors import HelmRenderError

from irc_proxy.settings import GlueCatalogSettings, LocalCatalogSettings, load_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = DEPLOY / "helm" / "irc-proxy"
KUBERNETES_VERSION = "1.33.0"


# Dockerfile --------------------------------------------------------------------------------------
def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_dockerfile_is_multi_stage_and_runs_as_a_non_root_user() -> None:
    instructions = _instructions()
    stages = [args for op, args in instructions if op == "FROM"]
    assert len(stages) >= 2, stages
    assert any(op == "COPY" and args.startswith("--from=build") for op, args in instructions)
    final_stage = instructions[max(i for i, (op, _) in enumerate(instructions) if op == "FROM") :]
    users = [args for op, args in final_stage if op == "USER"]
    assert users, "the runtime stage sets no USER"
    user = users[-1].split(":")[0]
    assert user not in ("0", "root"), user


def test_dockerfile_healthcheck_probes_healthz_and_entrypoint_is_the_cli() -> None:
    instructions = dict(_instructions())
    assert "/healthz" in instructions["HEALTHCHECK"]
    assert "CMD" in instructions["HEALTHCHECK"]
    assert instructions["ENTRYPOINT"] == '["irc-proxy"]'
    assert instructions["EXPOSE"] == "8181"


def test_dockerfile_copies_only_what_exists_and_the_ignore_file_lets_it_through() -> None:
    sources = [
        part
        for op, args in _instructions()
        if op == "COPY" and not args.startswith("--from")
        for part in args.split()[:-1]
    ]
    assert sources
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    for source in sources:
        assert (ROOT / source).exists(), source
        assert f"!{source.rstrip('/')}" in {line.rstrip("/") for line in ignore}, source


# compose.yaml ------------------------------------------------------------------------------------
def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return compose


def test_compose_file_follows_the_compose_specification() -> None:
    """The compose-spec JSON schema (vendored by check-jsonschema); ``docker compose`` is not installed here."""
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(_compose())


def test_compose_starts_postgres_moto_and_the_proxy_in_order() -> None:
    services = _compose()["services"]
    assert {"postgres", "moto", "irc-proxy"} <= set(services)
    proxy = services["irc-proxy"]
    assert proxy["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in services["postgres"] and "healthcheck" in services["moto"]
    for service in services.values():
        if "build" in service:
            assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        for dependency, rule in service.get("depends_on", {}).items():
            assert dependency in services
            assert rule["condition"] in {"service_healthy", "service_completed_successfully", "service_started"}
    assert "8181:8181" in proxy["ports"]


def test_compose_demo_config_is_valid_with_the_environment_compose_sets() -> None:
    proxy = _compose()["services"]["irc-proxy"]
    mounts = dict(volume.split(":")[:2] for volume in proxy["volumes"] if volume.startswith("./"))
    environment = {key: str(value) for key, value in proxy["environment"].items()}
    config = DEPLOY / next(source for source, target in mounts.items() if target == environment["IRC_PROXY_CONFIG"])
    settings = load_settings(config, environ=environment)
    demo = settings.catalogs["demo"]
    assert isinstance(demo, GlueCatalogSettings)
    assert demo.endpoint_url == "http://moto:5000" and demo.access_key_id is not None
    assert settings.state.database_url.get_secret_value().startswith("postgresql+psycopg://")
    local = settings.catalogs["local"]
    assert isinstance(local, LocalCatalogSettings) and local.database_url == settings.state.database_url
    assert "access_key_id" not in config.read_text(encoding="utf-8").replace("# access_key_id", "")


# Helm chart --------------------------------------------------------------------------------------
def _render(values: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Manifests by kind, rendered by Helm for the release ``demo``."""
    rendered = Chart.load(CHART).render(values=values, name="demo")
    manifests: dict[str, list[dict[str, Any]]] = {}
    for path, text in rendered.items():
        if path.endswith(".yaml"):
            for document in yaml.safe_load_all(text):
                if document:
                    manifests.setdefault(document["kind"], []).append(document)
    return manifests


def _container(manifests: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    container: dict[str, Any] = manifests["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]
    return container


VARIANTS: list[dict[str, Any]] = [
    {},
    {
        "serviceAccount": {"irsaRoleArn": "arn:aws:iam::123456789012:role/irc-proxy"},
        "aws": {"existingSecret": "glue-keys", "glueCatalogs": ["glue"]},
        "configSecret": {"name": "irc-proxy-config"},
        "autoscaling": {"enabled": False},
        "podDisruptionBudget": {"enabled": False},
        "secretEnv": [{"name": "IRC_PROXY_AUDIT__WEBHOOK__URL", "secretName": "hook", "secretKey": "url"}],
        "env": {"IRC_PROXY_SERVER__LOG_LEVEL": "debug"},
    },
]


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["apiVersion"] == "v2" and chart["name"] == "irc-proxy"
    assert chart["appVersion"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert values["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert values["readinessProbe"]["httpGet"]["path"] == "/readyz"


@pytest.mark.parametrize("values", VARIANTS, ids=["defaults", "irsa-aws-keys-config-secret"])
def test_chart_renders_manifests_valid_for_kubernetes(values: dict[str, Any]) -> None:
    manifests = _render(values)
    for documents in manifests.values():
        for document in documents:
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    assert {"Deployment", "Service", "ServiceAccount"} <= set(manifests)


def test_chart_defaults_probe_limit_autoscale_and_read_the_database_url_from_a_secret(tmp_path: Path) -> None:
    manifests = _render()
    container = _container(manifests)
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    pod = manifests["Deployment"][0]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert manifests["HorizontalPodAutoscaler"][0]["spec"]["minReplicas"] >= 2
    env = {item["name"]: item for item in container["env"]}
    assert env["IRC_PROXY_STATE__DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "irc-proxy-postgres"
    assert "valueFrom" in env["IRC_PROXY_CATALOGS__LOCAL__DATABASE_URL"]
    # The TOML in the ConfigMap plus the pod's environment is a valid configuration.
    toml = manifests["ConfigMap"][0]["data"]["irc-proxy.toml"]
    environment = {name: item.get("value", "postgresql+psycopg://u:p@db/irc") for name, item in env.items()}
    config = tmp_path / "irc-proxy.toml"
    config.write_text(toml, encoding="utf-8")
    environment["IRC_PROXY_CONFIG"] = str(config)
    settings = load_settings(config, environ=environment)
    assert settings.server.host == "0.0.0.0" and settings.state.database_url.get_secret_value().startswith("postgresql")
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop == ["sleep", "5"] and settings.server.graceful_timeout_seconds == 30 - 5 - 2
    assert settings.server.log_format == "json"


def test_chart_variant_irsa_static_keys_and_config_from_a_secret() -> None:
    manifests = _render(VARIANTS[1])
    account = manifests["ServiceAccount"][0]["metadata"]
    assert account["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/irc-proxy")
    assert "ConfigMap" not in manifests and "HorizontalPodAutoscaler" not in manifests
    container = _container(manifests)
    env = {item["name"]: item for item in container["env"]}
    for name in ("IRC_PROXY_CATALOGS__GLUE__ACCESS_KEY_ID", "IRC_PROXY_CATALOGS__GLUE__SECRET_ACCESS_KEY"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "glue-keys"
    assert env["IRC_PROXY_AUDIT__WEBHOOK__URL"]["valueFrom"]["secretKeyRef"]["name"] == "hook"
    volumes = {v["name"]: v for v in manifests["Deployment"][0]["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["secret"]["secretName"] == "irc-proxy-config"
    assert manifests["Deployment"][0]["spec"]["replicas"] == 2


def test_chart_refuses_replicas_without_a_shared_database() -> None:
    with pytest.raises(HelmRenderError, match="shared PostgreSQL"):
        _render({"postgresql": {"existingSecret": ""}})
    single = _render({"postgresql": {"existingSecret": ""}, "replicaCount": 1, "autoscaling": {"enabled": False}})
    assert single["Deployment"][0]["spec"]["replicas"] == 1


def test_chart_sets_no_secret_value_in_plain_text() -> None:
    for values in VARIANTS:
        for item in _container(_render(values))["env"]:
            if re.search(r"DATABASE_URL|SECRET|KEY_ID|TOKEN|PASSWORD", item["name"]):
                assert "valueFrom" in item and "value" not in item, item
