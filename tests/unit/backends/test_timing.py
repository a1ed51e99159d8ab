"""The timed backend: every public coroutine is timed under its catalog and name; everything else passes."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from irc_proxy.backends.timing import timed


class Inner:
    warehouse = "file:///wh"

    async def load_namespace(self, name: str) -> dict[str, str]:
        if name == "missing":
            raise KeyError(name)
        return {"name": name}

    def file_io(self) -> str:
        return "io"

    async def _private(self) -> str:
        return "private"


def count(catalog: str, method: str) -> float:
    labels = {"catalog": catalog, "operation": method}
    return REGISTRY.get_sample_value("irc_proxy_backend_call_duration_seconds_count", labels) or 0.0


def test_a_public_coroutine_is_timed_even_when_it_raises() -> None:
    backend = timed("timing-test", Inner())  # type: ignore[arg-type]
    before = count("timing-test", "load_namespace")
    assert asyncio.run(backend.load_namespace("a")) == {"name": "a"}
    with pytest.raises(KeyError):
        asyncio.run(backend.load_namespace("missing"))
    assert count("timing-test", "load_namespace") == before + 2


def test_attributes_plain_methods_and_private_coroutines_pass_through_untimed() -> None:
    inner = Inner()
    backend = timed("timing-test-2", inner)  # type: ignore[arg-type]
    assert backend.warehouse == "file:///wh"
    assert inner.file_io() == getattr(backend, "file_io")()
    assert asyncio.run(backend._private()) == "private"  # type: ignore[attr-defined]
    assert count("timing-test-2", "_private") == 0
    with pytest.raises(AttributeError):
        backend.no_such_method  # type: ignore[attr-defined]
