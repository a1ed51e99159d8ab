"""A remote irc-proxy (OAuth2 on, local backend) and a front proxy federating a prefix to it."""

from __future__ import annotations

from pathlib import Path

from irc_proxy.handling.security.authn import hash_secret
from tests.support.rest import issue_token
from tests.support.server import ProxyProcess

FRONT_CLIENT = "front"
FRONT_SECRET = "front-s3cret-never-logged"
FRONT_PRINCIPAL = "svc-front"
USER_CLIENT = "user"
USER_SECRET = "user-s3cret"


def remote_config() -> str:
    """The remote: oauth2 with two clients; the front's principal is a bootstrap administrator."""
    return f'''
[auth]
mode = "oauth2"
admins = ["{FRONT_PRINCIPAL}", "svc-user"]

[[auth.clients]]
id = "{FRONT_CLIENT}"
secret_hash = "{hash_secret(FRONT_SECRET)}"
principal = "{FRONT_PRINCIPAL}"

[[auth.clients]]
id = "{USER_CLIENT}"
secret_hash = "{hash_secret(USER_SECRET)}"
principal = "svc-user"
'''


def rest_catalog(name: str, remote_url: str, **options: object) -> str:
    """A ``kind = "rest"`` catalog section that logs in to the remote with the front's client."""
    auth = options.pop("auth", None) or {"mode": "oauth2", "client_id": FRONT_CLIENT, "client_secret": FRONT_SECRET}
    lines = [f"[catalogs.{name}]", 'kind = "rest"', f'uri = "{remote_url}"', 'warehouse = "local"']
    lines += [f"{key} = {_toml(value)}" for key, value in options.items()]
    lines += [f"[catalogs.{name}.auth]"] + [f"{key} = {_toml(value)}" for key, value in dict(auth).items()]  # type: ignore[call-overload]
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return f'"{value}"'


def start_remote(workdir: Path) -> ProxyProcess:
    return ProxyProcess(workdir, remote_config()).start()


def front_config(*catalogs: str) -> str:
    """A front proxy's config (no auth of its own): a local catalog first, then ``catalogs``."""
    return '[catalogs.local]\nkind = "local"\n' + "".join(catalogs)


def start_front(workdir: Path, *catalogs: str) -> ProxyProcess:
    return ProxyProcess(workdir, front_config(*catalogs)).start()


def token(url: str, client_id: str = FRONT_CLIENT, secret: str = FRONT_SECRET) -> str:
    return issue_token(url, client_id, secret, scope="catalog")
