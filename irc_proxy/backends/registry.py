"""Backend selection is a table of lazy factories keyed by ``kind``."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irc_proxy.backends.base import Backend
from irc_proxy.backends.pointer_cache import Peers
from irc_proxy.settings import CatalogSettings
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.threads import ThreadRunner

if TYPE_CHECKING:
    from irc_proxy.backends.sts import StsCredentials

Factory = Callable[[str, Any, ThreadRunner, CommitLocks, Peers], Backend]


def _local(name: str, settings: Any, threads: ThreadRunner, locks: CommitLocks, peers: Peers) -> Backend:
    url: str = settings.database_url.get_secret_value()
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///").split("?", 1)[0]).parent.mkdir(parents=True, exist_ok=True)
    backend: Backend = import_module("irc_proxy.backends.local").LocalBackend(
        name, settings.warehouse, url, threads, settings.pointer_cache_seconds, peers
    )
    return backend


def _glue(name: str, settings: Any, threads: ThreadRunner, locks: CommitLocks, peers: Peers) -> Backend:
    backend: Backend = import_module("irc_proxy.backends.glue").GlueBackend(name, settings, locks, threads, peers)
    return backend


def _rest(name: str, settings: Any, threads: ThreadRunner, locks: CommitLocks, peers: Peers) -> Backend:
    backend: Backend = import_module("irc_proxy.backends.rest").RestBackend(name, settings, threads)
    return backend


BACKENDS: dict[str, Factory] = {"local": _local, "glue": _glue, "rest": _rest}


def create_backend(
    name: str, settings: CatalogSettings, threads: ThreadRunner, locks: CommitLocks, peers: Peers | None = None
) -> Backend:
    """Build the backend for one configured catalog (``peers``: who else may move its pointers)."""
    return BACKENDS[settings.kind](name, settings, threads, locks, peers or Peers())


def create_credential_source(settings: CatalogSettings, threads: ThreadRunner) -> StsCredentials | None:
    """The STS client that vends a catalog's storage credentials (None without a ``vending`` table)."""
    if getattr(settings, "vending", None) is None:
        return None
    source: StsCredentials | None = import_module("irc_proxy.backends.sts").sts_for(settings, threads)
    return source
