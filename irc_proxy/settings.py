"""Typed settings: a TOML file plus ``IRC_PROXY_*`` environment overrides.

Every key is documented in README.md ("Configuration reference"). The environment maps onto the
file's keys with ``__`` between levels, e.g. ``IRC_PROXY_SERVER__PORT=9000`` or
``IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE=file:///data/wh``. Unknown keys and bad values are
rejected at start-up with a message that names the key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

ENV_PREFIX = "IRC_PROXY_"
ENV_CONFIG_FILE = "IRC_PROXY_CONFIG"
DEFAULT_CATALOG_NAME = "local"
# Path words that follow ``/v1/`` in the spec; a catalog (prefix) may not be named like them.
RESERVED_CATALOG_NAMES = frozenset({"config", "namespaces", "tables", "views", "transactions", "oauth", "aws"})
_CATALOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ConfigError(Exception):
    """The configuration is invalid; the message names the offending key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Strict):
    """The HTTP server."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8181
    workers: Annotated[int, Field(ge=1, le=256)] = 1
    namespace_separator: str = ":"
    default_page_size: Annotated[int, Field(ge=1, le=100_000)] = 1000
    max_page_size: Annotated[int, Field(ge=1, le=100_000)] = 10_000
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("namespace_separator")
    @classmethod
    def _one_safe_character(cls, value: str) -> str:
        if len(value) != 1:
            raise ValueError("must be exactly one character")
        if value in "./%" or value.isspace() or not value.isprintable():
            raise ValueError("must not be '.', '/', '%', white space or a control character")
        return value


class StateSettings(_Strict):
    """The proxy's own database (views, audit, shared state)."""

    database_url: str = ""
    auto_upgrade: bool = False


class LocalCatalogSettings(_Strict):
    """The embedded catalog: pyiceberg's SQL catalog tables plus a file or object-store warehouse."""

    kind: Literal["local"] = "local"
    warehouse: str = ""
    database_url: str = ""
    description: str = ""


class GlueCatalogSettings(_Strict):
    """A catalog federated to the AWS Glue Data Catalog (databases = namespaces)."""

    kind: Literal["glue"]
    warehouse: str = ""
    description: str = ""
    region: str = ""
    catalog_id: str = ""
    endpoint_url: str = ""
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    role_arn: str = ""
    role_external_id: SecretStr | None = None
    role_session_name: str = "irc-proxy"
    sts_endpoint_url: str = ""
    s3_endpoint_url: str = ""
    s3_region: str = ""
    s3_path_style_access: bool = False
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    retry_mode: Literal["standard", "adaptive", "legacy"] = "standard"
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 16
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0
    table_type_filter: list[str] = Field(default_factory=lambda: ["ICEBERG"])

    @field_validator("table_type_filter", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _required(self) -> GlueCatalogSettings:
        missing = [key for key in ("region", "catalog_id", "warehouse") if not getattr(self, key)]
        if missing:
            raise ValueError(f"missing required key(s) for a glue catalog: {', '.join(missing)}")
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("access_key_id and secret_access_key must be set together")
        if not all(re.fullmatch(r"[A-Z_*]+", kind) for kind in self.table_type_filter):
            raise ValueError("table_type_filter: use upper-case kinds such as ICEBERG, HIVE, DELTA, HUDI or *")
        return self


CatalogSettings = Annotated[LocalCatalogSettings | GlueCatalogSettings, Field(discriminator="kind")]
SigningAlgorithm = Literal["RS256", "ES256"]
VerifyAlgorithm = Literal["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"]


class AuthClient(_Strict):
    """A client of the ``oauth2`` mode's token endpoint; only a hash of its secret is configured."""

    id: Annotated[str, Field(min_length=1, max_length=255)]
    secret_hash: SecretStr
    principal: str = ""
    roles: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _principal_defaults_to_id(self) -> AuthClient:
        if not self.secret_hash.get_secret_value().startswith("scrypt$"):
            raise ValueError("secret_hash: not a hash from `irc-proxy auth hash-secret`")
        if not self.principal:
            object.__setattr__(self, "principal", self.id)
        return self


class OidcSettings(_Strict):
    """The ``oidc`` mode: bearer tokens from an external issuer, verified against its JWKS."""

    issuer: str = ""
    audience: str = ""
    algorithms: list[VerifyAlgorithm] = Field(default_factory=lambda: list[VerifyAlgorithm](["RS256", "ES256"]))
    principal_claim: str = "sub"
    roles_claim: str = "roles"
    jwks_cache_seconds: Annotated[int, Field(ge=0, le=86_400)] = 3600
    jwks_min_refresh_seconds: Annotated[int, Field(ge=0, le=3600)] = 30
    timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 10.0


class AuthSettings(_Strict):
    """Who may call: ``none`` (everyone is ``anonymous``), ``oauth2`` (tokens issued here) or ``oidc``."""

    mode: Literal["none", "oauth2", "oidc"] = "none"
    issuer: str = "irc-proxy"
    audience: str = "irc-proxy"
    token_lifetime_seconds: Annotated[int, Field(ge=60, le=86_400 * 7)] = 3600
    signing_algorithm: SigningAlgorithm = "RS256"
    signing_key_file: str = ""
    clients: list[AuthClient] = Field(default_factory=list)
    oidc: OidcSettings = OidcSettings()

    @model_validator(mode="after")
    def _required(self) -> AuthSettings:
        if self.mode == "oidc" and not (self.oidc.issuer and self.oidc.audience):
            raise ValueError("auth.oidc.issuer and auth.oidc.audience are required with mode = oidc")
        ids = [client.id for client in self.clients]
        if len(ids) != len(set(ids)):
            raise ValueError("auth.clients: client ids must be unique")
        return self


class AuditWebhookSettings(_Strict):
    """The audit webhook sink: each record POSTed to ``url`` (empty = off)."""

    url: str = ""
    cloudevents: bool = True
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 5.0
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    backoff_seconds: Annotated[float, Field(ge=0, le=60)] = 0.5
    queue_size: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000


class AuditSettings(_Strict):
    """The audit trail of catalog operations and its sinks."""

    enabled: bool = True
    database: bool = True
    log: bool = False
    queue_size: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    batch_size: Annotated[int, Field(ge=1, le=10_000)] = 500
    flush_timeout_seconds: Annotated[float, Field(ge=0, le=300)] = 5.0
    webhook: AuditWebhookSettings = AuditWebhookSettings()


class Settings(_Strict):
    """All settings of one proxy process."""

    data_dir: str = "./irc-proxy-data"
    default_catalog: str = ""
    server: ServerSettings = ServerSettings()
    state: StateSettings = StateSettings()
    auth: AuthSettings = AuthSettings()
    audit: AuditSettings = AuditSettings()
    catalogs: dict[str, CatalogSettings] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _fill_defaults(self) -> Settings:
        data = Path(self.data_dir).expanduser().resolve()
        catalogs = dict(self.catalogs) or {DEFAULT_CATALOG_NAME: LocalCatalogSettings()}
        for name, catalog in catalogs.items():
            if not _CATALOG_NAME.match(name) or name.lower() in RESERVED_CATALOG_NAMES:
                raise ValueError(
                    f"catalogs.{name}: a catalog name must match {_CATALOG_NAME.pattern} "
                    f"and not be one of {sorted(RESERVED_CATALOG_NAMES)}"
                )
            if isinstance(catalog, LocalCatalogSettings):
                catalogs[name] = catalog.model_copy(
                    update={
                        "warehouse": (catalog.warehouse or (data / "warehouse" / name).as_uri()).rstrip("/"),
                        "database_url": catalog.database_url or f"sqlite:///{data / 'catalog.db'}",
                    }
                )
            else:
                catalogs[name] = catalog.model_copy(update={"warehouse": catalog.warehouse.rstrip("/")})
        default = self.default_catalog or next(iter(catalogs))
        if default not in catalogs:
            raise ValueError(f"default_catalog: no catalog named {default!r} is configured")
        state = self.state.database_url or f"sqlite:///{data / 'state.db'}"
        object.__setattr__(self, "catalogs", catalogs)
        object.__setattr__(self, "default_catalog", default)
        object.__setattr__(self, "state", self.state.model_copy(update={"database_url": state}))
        return self


def load_settings(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the TOML file (if any), apply environment overrides and validate.

    Raises:
        ConfigError: naming the key that is unknown or has a bad value.
    """
    environ = os.environ if environ is None else environ
    path = path or environ.get(ENV_CONFIG_FILE) or None
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX) and key != ENV_CONFIG_FILE:
            _set_path(raw, key[len(ENV_PREFIX) :].lower().split("__"), value, key)
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


def _set_path(tree: dict[str, Any], path: list[str], value: str, env_key: str) -> None:
    if not all(path):
        raise ConfigError(f"{env_key}: empty key segment")
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{env_key}: {part} is not a table")
        node = child
    node[path[-1]] = value


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"] if part not in ("local", "glue")) or "(top level)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"{key}: {message}")
    return "invalid configuration:\n  " + "\n  ".join(lines)
