"""What a missing or non-empty namespace's error says (the handling layer over the in-memory backend)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from irc_proxy.app import read_limits
from irc_proxy.errors import NamespaceNotEmpty
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.namespaces import COUNT_CAP, no_such_namespace
from irc_proxy.settings import ServerSettings
from irc_proxy.threads import ThreadRunner
from tests.support.memory_backend import MemoryBackend


@pytest.mark.parametrize(
    ("namespace", "separator", "message"),
    [
        (("team.sales",), ":", "team.sales (a namespace of 2 levels is written team%1Fsales or team:sales in a URL;"),
        (("a", "b.c"), "|", "a.b.c (a namespace of 3 levels is written a%1Fb%1Fc or a|b|c in a URL;"),
        (("x y.z",), ":", "x y.z (a namespace of 2 levels is written x%20y%1Fz or x%20y:z in a URL;"),
        (("a:b.c",), ":", "a:b.c (a namespace of 2 levels is written a%3Ab%1Fc or a%3Ab:c in a URL;"),
        (("my-team.x",), "-", "my-team.x (a namespace of 2 levels is written my-team%1Fx in a URL;"),
    ],
)
def test_a_dotted_name_gets_the_nested_forms(namespace: tuple[str, ...], separator: str, message: str) -> None:
    assert no_such_namespace(namespace, separator).message.startswith(f"Namespace does not exist: {message}")


@pytest.mark.parametrize(
    "namespace", [("team",), ("team", "sales"), ("a..b",), (".",), ("a\n.b",), ("x" * 300 + ".y",)]
)
def test_no_hint_without_a_dot_an_empty_part_or_with_unsafe_or_long_names(namespace: tuple[str, ...]) -> None:
    assert "(" not in no_such_namespace(namespace).message


def test_a_refused_drop_counts_each_kind_only_up_to_the_cap(tmp_path: Path) -> None:
    backend = MemoryBackend((tmp_path / "warehouse").as_uri(), True)
    catalog = Catalog.build(
        "mem",
        backend,
        ":",
        ThreadRunner(2),
        allowed_locations=[backend.warehouse],
        read_limits=read_limits(ServerSettings()),
    )
    backend.namespaces.update({"big": {}, "big:a": {}, "big:a:b": {}})
    backend.pointers.update({("big", f"t{i:03}"): f"file:///nowhere/{i}" for i in range(COUNT_CAP + 50)})

    async def refused() -> str:
        with pytest.raises(NamespaceNotEmpty) as raised:
            await catalog.namespaces.drop(("big",))
        return raised.value.message

    message = asyncio.run(refused())
    assert message == f"Namespace big is not empty. It contains 2 namespaces and more than {COUNT_CAP} tables."
