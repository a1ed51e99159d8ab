"""Backend selection is a table of lazy factories keyed by ``kind``."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from irc_proxy.backends.base import Backend
from irc_proxy.settings import CatalogSettings
from irc_proxy.threads import ThreadRunner

Factory = Callable[[str, Any, ThreadRunner], Backend]


def _local(name: str, settings: Any, threads: ThreadRunner) -> Backend:
    module = import_module("irc_proxy.backends.local")
    backend: Backend = module.LocalBackend(name, settings.warehouse, settings.database_url, threads)
    return backend


BACKENDS: dict[str, Factory] = {"local": _local}


def create_backend(name: str, settings: CatalogSettings, threads: ThreadRunner) -> Backend:
    """Build the backend for one configured catalog."""
    return BACKENDS[settings.kind](name, settings, threads)
