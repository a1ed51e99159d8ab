"""Typed settings: a TOML file plus ``IRC_PROXY_*`` environment overrides.

Every key is documented in README.md ("Configuration reference"). The environment maps onto the
file's keys with ``__`` between levels, e.g. ``IRC_PROXY_SERVER__PORT=9000`` or
``IRC_PROXY_CATALOGS__LOCAL__WAREHOUSE=file:///data/wh``. Unknown keys and bad values are
rejected at start-up with a message that names the key.

The overlay is one small function (``_set_path``: the environment written into the file's tree,
then everything validated once) rather than pydantic-settings, whose environment source looks
variables up by field: refusing an unknown ``IRC_PROXY_*`` key with a message naming it, and
catalogs that only the environment names (a dict of a tagged union), would each need a custom
source longer than this function.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Secret,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from irc_proxy.errors import StartupError
from irc_proxy.masking import mask_url

ENV_PREFIX = "IRC_PROXY_"
ENV_CONFIG_FILE = "IRC_PROXY_CONFIG"
DEFAULT_CATALOG_NAME = "local"
# Path words that follow ``/v1/`` in the spec; a catalog (prefix) may not be named like them.
RESERVED_CATALOG_NAMES = frozenset({"config", "namespaces", "tables", "views", "transactions", "oauth", "aws"})
_CATALOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ConfigError(StartupError):
    """The configuration is invalid; the message names the offending key."""


class SecretUrl(Secret[str]):
    """A URL that may carry credentials (a database password, a ``?token=``, ``user:password@``).

    Consumers take the whole value with ``get_secret_value()``; everywhere it is shown (``repr``,
    ``str``, ``check-config``'s JSON) it is masked by :func:`irc_proxy.masking.mask_url`, so the
    host and path stay recognisable. Falsy when empty, like the string it holds.
    """

    def _display(self) -> str:
        return mask_url(self.get_secret_value())

    def __bool__(self) -> bool:
        return bool(self.get_secret_value())


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScanPlanningSettings(_Strict):
    """Server-side scan planning (``[server.scan_planning]``); each catalog says whether clients use it."""

    sync_budget_seconds: Annotated[float, Field(ge=0, le=600)] = 2.0
    """How long planTableScan may read the manifest list before answering ``submitted`` (0: always asynchronous);
    inline planning also stops at it, between chunks."""
    plan_ttl: timedelta = timedelta(hours=1)
    """How long a plan id and its plan tasks stay valid (ISO-8601 duration)."""
    files_per_task: Annotated[int, Field(ge=1, le=1_000_000)] = 2000
    """Files one plan task (one fetchScanTasks call) covers at most, counted from the manifest list."""
    tasks_per_response: Annotated[int, Field(ge=1, le=1_000_000)] = 1000
    """File scan tasks put inline in a planTableScan answer before the rest is handed out as plan tasks."""
    manifest_cache_mb: Annotated[int, Field(ge=0, le=65_536)] = 256
    """Decoded manifests kept in memory, shared by all catalogs (estimated bytes); 0 turns the cache off."""
    max_response_bytes: Annotated[int, Field(ge=64 << 10, le=1 << 30)] = 16 << 20
    """JSON of file scan tasks in one planTableScan or fetchScanTasks answer; the rest goes out as plan tasks."""
    max_plan_cpu_seconds: Annotated[float, Field(gt=0, le=3600)] = 10.0
    """CPU time one planning request may spend (manifests, filter evaluation); past it the answer is 400."""
    max_plan_wall_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """Wall-clock time one planning request may spend in its worker thread; past it the answer is 400."""
    max_filter_literal_bytes: Annotated[int, Field(ge=16, le=1 << 24)] = 4096
    """One literal of a scan filter (UTF-8 bytes of a string, digits of a number); 400 beyond."""
    max_filter_in_values: Annotated[int, Field(ge=1, le=100_000)] = 1000
    """Values of one ``in``/``not-in`` list of a scan filter; 400 beyond."""
    max_filter_bytes: Annotated[int, Field(ge=1024, le=1 << 24)] = 256 << 10
    """All strings and numbers of one scan filter together; 400 beyond."""

    @field_validator("plan_ttl")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration, e.g. PT1H")
        return value


ScanPlanningMode = Literal["off", "offered", "preferred"]


class ServerSettings(_Strict):
    """The HTTP server."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8181
    workers: Annotated[int, Field(ge=1, le=256)] = 1
    blocking_threads: Annotated[int, Field(ge=1, le=1024)] = 32
    metadata_cache_mb: Annotated[int, Field(ge=0, le=65_536)] = 64
    metadata_recheck_seconds: Annotated[float, Field(ge=0, le=86_400)] = 10.0
    namespace_separator: str = ":"
    default_page_size: Annotated[int, Field(ge=1, le=100_000)] = 1000
    max_page_size: Annotated[int, Field(ge=1, le=100_000)] = 10_000
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["text", "json"] = "text"
    max_body_bytes: Annotated[int, Field(ge=1024)] = 16 * 1024 * 1024
    read_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    keep_alive_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    graceful_timeout_seconds: Annotated[float, Field(ge=0, le=3600)] = 30.0
    readiness_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 2.0
    max_metadata_bytes: Annotated[int, Field(ge=1024, le=1 << 34)] = 64 * 1024 * 1024
    """Largest metadata file the server reads on a client's behalf (register, load); larger is a 4xx."""
    storage_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    """How long one object-store read on a client's behalf may take before it is a 4xx/503."""
    max_commit_updates: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Most updates in one commit request (all tables of a transaction together); more is 413."""
    max_commit_requirements: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000
    """Most requirements in one commit request (all tables of a transaction together); more is 413."""
    max_commit_metadata_adds: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000
    """Most updates that add schemas, specs, sort orders, snapshots, refs or statistics in one commit; more is 413."""
    max_json_depth: Annotated[int, Field(ge=8, le=1000)] = 100
    """Deepest nesting of arrays and objects in a request body; deeper is 400."""
    idempotency_key_lifetime: timedelta = timedelta(minutes=30)
    """ISO-8601 duration (``PT30M``) advertised in ``/v1/config``; ``PT0S`` turns Idempotency-Key support off."""
    scan_planning: ScanPlanningSettings = ScanPlanningSettings()
    drop_retention: timedelta = timedelta(days=7)
    """How long a dropped table stays restorable in the trash (ISO-8601 duration); ``PT0S`` drops at once."""
    trash_expiry_interval_seconds: Annotated[float, Field(gt=0, le=86_400)] = 60.0
    """How often each replica expunges expired trash entries (and runs their deferred purges)."""
    ui: bool = True
    """Serve the web console at ``/ui`` (same authentication and grants as the REST API)."""
    ui_page_budget_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    """How long building one console page may take (off the event loop); longer is a 503 error page."""
    ui_audit_every_seconds: Annotated[float, Field(ge=0, le=86_400)] = 300.0
    """One audit record per console read of one object by one principal per window (per replica); 0: every read."""
    allowed_hosts: list[str] | None = None
    """``Host`` names requests may carry (any port; ``*.example.com`` for subdomains, ``*`` for any): a guard
    against DNS rebinding. Default (unset): ``server.host``, ``localhost``, ``127.0.0.1`` and ``::1``."""
    allowed_origins: list[str] = []
    """Browser origins (``https://app.example.com``) whose requests the REST and management APIs accept;
    a request with any other ``Origin`` is 403. Default: none (the console is same-origin and uses ``/ui``)."""

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("allowed_origins")
    @classmethod
    def _origins_only(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not re.fullmatch(r"https?://[^/?#\s]+", origin):
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port], no path)")
        return [origin.lower() for origin in value]

    @field_validator("drop_retention")
    @classmethod
    def _retention_not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative, e.g. P7D or PT0S")
        return value

    @field_validator("idempotency_key_lifetime")
    @classmethod
    def _whole_non_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0) or value.microseconds:
            raise ValueError("must be a non-negative whole number of seconds, e.g. PT30M")
        return value

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

    database_url: SecretUrl = SecretUrl("")
    """SQLAlchemy URL of the state database (may hold a password; masked wherever it is shown)."""
    auto_upgrade: bool = False


def _comma_list(value: object) -> object:
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


CommaList = Annotated[list[str], BeforeValidator(_comma_list)]
"""A list that the environment may give as one comma-separated string."""


class VendingSettings(_Strict):
    """Storage access delegation for a catalog's tables: STS-vended credentials and remote signing.

    Credentials come from ``AssumeRole`` on ``role_arn`` with an inline session policy scoped to one
    table's locations; the proxy calls STS with the catalog's own AWS credentials (a Glue catalog's
    keys or role, else the default AWS credential chain).
    """

    role_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$")]
    external_id: SecretStr | None = None
    duration_seconds: Annotated[int, Field(ge=900, le=43_200)] = 3600
    refresh_margin_seconds: Annotated[int, Field(ge=0, le=43_199)] = 600
    """Cached credentials are handed out only while they have at least this long left."""
    allowed_locations: CommaList = Field(default_factory=list)
    """Storage prefixes tables may live under (empty: the catalog's warehouse)."""
    sts_region: str = ""
    sts_endpoint_url: str = ""
    sts_max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    sts_backoff_seconds: Annotated[float, Field(ge=0, le=30)] = 0.2
    session_tags: bool = True
    s3_region: str = ""
    s3_endpoint_url: str = ""
    s3_path_style_access: bool = False
    cache_entries: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000

    @model_validator(mode="after")
    def _margin_below_duration(self) -> VendingSettings:
        if self.refresh_margin_seconds >= self.duration_seconds:
            raise ValueError("refresh_margin_seconds must be less than duration_seconds")
        bad = [loc for loc in self.allowed_locations if "://" not in loc]
        if bad:
            raise ValueError(f"allowed_locations: not a URI with a scheme: {', '.join(bad)}")
        return self


class LocalCatalogSettings(_Strict):
    """The embedded catalog: pyiceberg's SQL catalog tables plus a file or object-store warehouse."""

    kind: Literal["local"] = "local"
    warehouse: str = ""
    database_url: SecretUrl = SecretUrl("")
    description: str = ""
    drop_retention: timedelta | None = None
    """Overrides ``server.drop_retention`` for this catalog (``PT0S``: drops are final at once)."""
    scan_planning: ScanPlanningMode = "offered"
    """Server-side scan planning: ``off`` (not served), ``offered`` (served, clients choose), ``preferred``
    (clients are told ``scan-planning-mode = server``)."""
    allowed_locations: CommaList = Field(default_factory=list)
    """Storage prefixes (URIs with a scheme) tables and views may live under; empty: the warehouse only."""
    allow_overlapping_locations: bool = False
    """Let a table or view location lie inside (or contain) another live one's in this catalog."""
    vending: VendingSettings | None = None


class AwsCredentialSettings(_Strict):
    """AWS credentials: static keys, else the default chain; with ``role_arn``, that role's (auto-refreshed)."""

    region: str = ""
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    role_arn: str = ""
    role_external_id: SecretStr | None = None
    role_session_name: str = "irc-proxy"
    sts_endpoint_url: str = ""

    @model_validator(mode="after")
    def _keys_together(self) -> Self:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("access_key_id and secret_access_key must be set together")
        return self


class GlueCatalogSettings(AwsCredentialSettings):
    """A catalog federated to the AWS Glue Data Catalog (databases = namespaces)."""

    kind: Literal["glue"]
    warehouse: str = ""
    description: str = ""
    drop_retention: timedelta | None = None
    """Overrides ``server.drop_retention`` for this catalog (``PT0S``: drops are final at once)."""
    scan_planning: ScanPlanningMode = "offered"
    catalog_id: str = ""
    endpoint_url: str = ""
    s3_endpoint_url: str = ""
    s3_region: str = ""
    s3_path_style_access: bool = False
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    retry_mode: Literal["standard", "adaptive", "legacy"] = "standard"
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 16
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0
    table_type_filter: CommaList = Field(default_factory=lambda: ["ICEBERG"])
    allowed_locations: CommaList = Field(default_factory=list)
    """Storage prefixes (URIs with a scheme) tables and views may live under; empty: the warehouse only."""
    allow_overlapping_locations: bool = False
    """Let a table or view location lie inside (or contain) another live one's in this catalog."""
    vending: VendingSettings | None = None

    @model_validator(mode="after")
    def _required(self) -> GlueCatalogSettings:
        missing = [key for key in ("region", "catalog_id", "warehouse") if not getattr(self, key)]
        if missing:
            raise ValueError(f"missing required key(s) for a glue catalog: {', '.join(missing)}")
        if not all(re.fullmatch(r"[A-Z_*]+", kind) for kind in self.table_type_filter):
            raise ValueError("table_type_filter: use upper-case kinds such as ICEBERG, HIVE, DELTA, HUDI or *")
        return self


class RestUpstreamAuthSettings(AwsCredentialSettings):
    """How the proxy authenticates to a remote REST catalog (``[catalogs.<name>.auth]``)."""

    mode: Literal["none", "token", "oauth2", "sigv4"] = "none"
    token: SecretStr | None = None
    """``token``: a static bearer token."""
    client_id: str = ""
    client_secret: SecretStr | None = None
    scope: str = "catalog"
    token_endpoint: str = ""
    """``oauth2``: empty = the upstream's ``oauth2-server-uri``, else ``<uri>/v1/oauth/tokens``."""
    token_endpoint_auth_method: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"  # noqa: S105
    refresh_margin_seconds: Annotated[float, Field(ge=0, le=3600)] = 60.0
    signing_name: Literal["glue", "s3tables", "execute-api"] = "glue"
    forward_caller_token: bool = False
    """Send the caller's own ``Authorization: Bearer`` header upstream instead of the proxy's credentials."""

    @model_validator(mode="after")
    def _required(self) -> RestUpstreamAuthSettings:
        if self.mode == "token" and not self.token:
            raise ValueError("auth.token is required with mode = token")
        if self.mode == "oauth2" and not (self.client_id and self.client_secret):
            raise ValueError("auth.client_id and auth.client_secret are required with mode = oauth2")
        if self.mode == "sigv4" and not self.region:
            raise ValueError("auth.region is required with mode = sigv4")
        return self


class RestCatalogSettings(_Strict):
    """A catalog federated to a remote Iceberg REST catalog (Polaris, Lakekeeper, Glue, S3 Tables, ...)."""

    kind: Literal["rest"]
    uri: SecretUrl
    """``http(s)://`` base URI of the upstream; a ``user:password@`` in it is masked wherever it is shown."""
    warehouse: str = ""
    """Sent as ``/v1/config?warehouse=`` to the upstream (e.g. an account id for Glue, a bucket ARN for S3 Tables)."""
    description: str = ""
    scan_planning: ScanPlanningMode = "offered"
    """Forwarded when the upstream plans; otherwise planned by the proxy over the upstream's metadata."""
    connect_timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    pool_size: Annotated[int, Field(ge=1, le=1024)] = 64
    keepalive_expiry_seconds: Annotated[float, Field(ge=0, le=3600)] = 4.0
    http2: bool = True
    verify_tls: bool = True
    ca_bundle: str = ""
    nested_namespaces: Literal["auto", "native", "mapped"] = "auto"
    """``mapped``: nested levels are stored upstream as one name joined by the separator; ``auto``: mapped for SigV4."""
    view_warehouse: str = ""
    """Where view metadata files go when the upstream has no views (default ``<data_dir>/warehouse/<name>``)."""
    auth: RestUpstreamAuthSettings = RestUpstreamAuthSettings()

    @field_validator("uri")
    @classmethod
    def _http_uri(cls, value: SecretUrl) -> SecretUrl:
        if not re.match(r"^https?://", value.get_secret_value()):
            raise ValueError("must be an http:// or https:// URI")
        return value


CatalogSettings = Annotated[
    LocalCatalogSettings | GlueCatalogSettings | RestCatalogSettings, Field(discriminator="kind")
]
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
        return self if self.principal else self.model_copy(update={"principal": self.id})


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
    console_client_id: str = ""
    """The console's client at the identity provider (authorization code + PKCE, redirect URI
    ``<scheme>://<host>/ui/oidc/callback``); empty: the console offers no sign-in."""
    console_client_secret: SecretStr | None = None
    """A confidential console client's secret, sent to the token endpoint (HTTP Basic); never logged or shown."""
    console_scope: str = "openid"
    """Scopes the console asks for; the access token must still carry ``audience`` to be accepted."""


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
    authorization: Literal["grants", "none"] = "grants"
    """``grants``: privileges come from roles and grants (admin API); ``none``: any authenticated caller may
    use every catalog (the admin API stays admins-only)."""
    admins: list[str] = Field(default_factory=list)
    """Bootstrap administrators: principal names that hold every privilege and may use ``/management/v1``."""
    grants_cache_seconds: Annotated[float, Field(ge=0, le=300)] = 2.0
    """How long a replica may use a caller's grants before re-reading them (changes through this replica: at once)."""
    max_session_seconds: Annotated[int, Field(ge=1, le=86_400 * 90)] = 86_400
    """Absolute lifetime of an ``oauth2`` session: token exchange never extends a token past this many seconds
    after the client last proved its secret; then it must use its client credentials again."""
    max_failed_logins_per_client: Annotated[int, Field(ge=1, le=100_000)] = 10
    """Failed client-credentials logins of one client id within ``failed_login_window_seconds`` before 429."""
    max_failed_logins_per_address: Annotated[int, Field(ge=1, le=100_000)] = 50
    """Failed logins from one source address within ``failed_login_window_seconds`` before 429."""
    failed_login_window_seconds: Annotated[float, Field(gt=0, le=86_400)] = 60.0
    max_concurrent_hashes: Annotated[int, Field(ge=1, le=64)] = 2
    """Client-secret checks (scrypt, ~16 MiB and ~50 ms each) running at once; more wait, then get a 503."""
    hash_wait_seconds: Annotated[float, Field(ge=0, le=60)] = 2.0
    """How long a login waits for a free secret check before it is refused with 503 and ``Retry-After``."""

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

    url: SecretUrl = SecretUrl("")
    """Where records are POSTed (may carry a ``?token=``; masked wherever it is shown)."""
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

    @field_validator("catalogs", mode="before")
    @classmethod
    def _kind_defaults_to_local(cls, value: object) -> object:
        """``kind`` may be left out (TOML or ``IRC_PROXY_CATALOGS__<NAME>__...``): it defaults to ``local``."""
        if not isinstance(value, dict):
            return value
        return {
            name: {"kind": "local", **table} if isinstance(table, dict) and "kind" not in table else table
            for name, table in value.items()
        }

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
                        "database_url": catalog.database_url or SecretUrl(f"sqlite:///{data / 'catalog.db'}"),
                    }
                )
            elif isinstance(catalog, RestCatalogSettings):
                views = (catalog.view_warehouse or (data / "warehouse" / name).as_uri()).rstrip("/")
                catalogs[name] = catalog.model_copy(update={"view_warehouse": views})
            else:
                catalogs[name] = catalog.model_copy(update={"warehouse": catalog.warehouse.rstrip("/")})
        for name, catalog in catalogs.items():
            if isinstance(catalog, LocalCatalogSettings | GlueCatalogSettings):
                catalogs[name] = catalog.model_copy(update={"allowed_locations": _allowed_locations(name, catalog)})
        default = self.default_catalog or next(iter(catalogs))
        if default not in catalogs:
            raise ValueError(f"default_catalog: no catalog named {default!r} is configured")
        state = self.state.database_url or SecretUrl(f"sqlite:///{data / 'state.db'}")
        state_settings = self.state.model_copy(update={"database_url": state})
        return self.model_copy(update={"catalogs": catalogs, "default_catalog": default, "state": state_settings})


def _allowed_locations(name: str, catalog: LocalCatalogSettings | GlueCatalogSettings) -> list[str]:
    """The catalog's storage prefixes: its own setting, else vending's (older configs), else the warehouse."""
    vending = catalog.vending.allowed_locations if catalog.vending else []
    allowed = [loc.rstrip("/") for loc in (catalog.allowed_locations or vending or [catalog.warehouse])]
    bad = [loc for loc in allowed if "://" not in loc or loc.endswith(":/") or loc.endswith("://")]
    if bad:
        raise ValueError(f"catalogs.{name}.allowed_locations: not a URI with a scheme and a path: {', '.join(bad)}")
    return allowed


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
        loc = list(error["loc"])
        if len(loc) > 2 and loc[0] == "catalogs" and loc[2] in ("local", "glue", "rest"):
            del loc[2]  # the union's tag, not a key the user wrote
        key = ".".join(str(part) for part in loc)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        lines.append(f"{key}: {message}" if loc else message)  # model-level messages name their keys
    return "invalid configuration:\n  " + "\n  ".join(lines)
