"""A backend wrapper that times every public async call into ``irc_proxy_backend_call_duration_seconds``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any, cast

from irc_proxy.backends.base import Backend
from irc_proxy.metrics import BACKEND_CALL_LATENCY


class TimedBackend:
    """Delegates everything to ``inner``; coroutine methods are timed, labelled by catalog and method name.

    Delegating by attribute keeps optional methods (engine views, credential vending) working
    without this class knowing them.
    """

    def __init__(self, catalog: str, inner: Backend) -> None:
        self._catalog = catalog
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name.startswith("_") or not inspect.iscoroutinefunction(attribute):
            return attribute
        histogram = BACKEND_CALL_LATENCY.labels(self._catalog, name)
        method = cast(Callable[..., Awaitable[Any]], attribute)

        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = perf_counter()  # as ``histogram.time()`` does, without a timer object per call
            try:
                return await method(*args, **kwargs)
            finally:
                histogram.observe(perf_counter() - started)

        self.__dict__[name] = timed  # built once: later lookups find it without calling __getattr__
        return timed


def timed(catalog: str, backend: Backend) -> Backend:
    """``backend`` with its calls timed (a structural ``Backend``: attributes pass through)."""
    return cast(Backend, TimedBackend(catalog, backend))
