"""The view store: metadata survives its normalised rows, changes are compare-and-swap, names stay unique."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.errors import AlreadyExists, NoSuchView
from irc_proxy.stores.trash import TrashStore, new_entry
from irc_proxy.stores.views import TRASH_NAMESPACE, StoredView, ViewStore
from irc_proxy.threads import ThreadRunner

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long", "required": False}]}


def version(version_id: int, *sqls: tuple[str, str], schema_id: int = 0) -> dict[str, Any]:
    return {
        "version-id": version_id,
        "schema-id": schema_id,
        "timestamp-ms": 1_700_000_000_000 + version_id,
        "summary": {"engine-name": "spark"},
        "representations": [{"type": "sql", "sql": sql, "dialect": dialect} for sql, dialect in sqls],
        "default-catalog": "lake",
        "default-namespace": ["sales"],
    }


def metadata(*versions: dict[str, Any], properties: dict[str, str] | None = None, schemas: int = 1) -> ViewMetadata:
    return ViewMetadata.model_validate(
        {
            "view-uuid": "2f1c4c0e-4c4f-4e58-9d3a-1b6a3e1c2d00",
            "format-version": 1,
            "location": "s3://lake/views/v",
            "schemas": [SCHEMA | {"schema-id": i} for i in range(schemas)],
            "current-version-id": versions[-1]["version-id"],
            "versions": list(versions),
            "version-log": [{"timestamp-ms": v["timestamp-ms"], "version-id": v["version-id"]} for v in versions],
            "properties": properties or {},
        }
    )


V1 = version(1, ("select 1", "spark"), ("SELECT 1", "trino"))
V2 = version(2, ("select 2", "spark"), schema_id=1)


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> ViewStore:
    return ViewStore(state_engine, threads)


def created(store: ViewStore, catalog: str, name: str = "v", principal: str = "alice") -> StoredView:
    asyncio.run(store.create(catalog, "sales", name, metadata(V1, properties={"k": "v"}), "s3://m/1.json", principal))
    loaded = asyncio.run(store.load(catalog, "sales", name))
    assert loaded is not None
    return loaded


def test_a_created_view_loads_back_as_the_same_metadata(store: ViewStore, uid: str) -> None:
    loaded = created(store, uid)
    assert loaded.metadata == metadata(V1, properties={"k": "v"})
    assert (loaded.metadata_location, loaded.revision) == ("s3://m/1.json", 0)
    assert asyncio.run(store.load(uid, "sales", "other")) is None
    assert asyncio.run(store.exists(uid, "sales", "v"))
    assert asyncio.run(store.any_in_namespace(uid, "sales"))
    assert not asyncio.run(store.any_in_namespace(uid, "ops"))


def test_creating_a_taken_name_is_already_exists(store: ViewStore, uid: str) -> None:
    created(store, uid)
    with pytest.raises(AlreadyExists):
        created(store, uid)


def test_replace_is_compare_and_swap_on_the_revision(store: ViewStore, uid: str) -> None:
    base = created(store, uid)
    after = metadata(V1, V2, properties={"k2": "v2"}, schemas=2)
    assert asyncio.run(store.replace(uid, "sales", "v", base, after, "s3://m/2.json", "bob"))
    assert not asyncio.run(store.replace(uid, "sales", "v", base, after, "s3://m/3.json", "carol"))  # stale
    loaded = asyncio.run(store.load(uid, "sales", "v"))
    assert loaded is not None
    assert (loaded.metadata, loaded.metadata_location, loaded.revision) == (after, "s3://m/2.json", 1)
    assert asyncio.run(store.version_authors(uid, "sales", "v")) == {1: "alice", 2: "bob"}
    assert not asyncio.run(store.replace(uid, "sales", "gone", base, after, "s3://m/4.json", "x"))


def test_concurrent_replaces_of_one_revision_let_exactly_one_win(store: ViewStore, uid: str) -> None:
    base = created(store, uid)
    after = metadata(V1, V2, schemas=2)

    async def scenario() -> list[bool]:
        return list(
            await asyncio.gather(
                *(store.replace(uid, "sales", "v", base, after, f"s3://m/{i}.json", "bob") for i in range(4))
            )
        )

    assert sorted(asyncio.run(scenario())) == [False, False, False, True]


def test_an_expired_version_and_its_schema_leave_the_rows(store: ViewStore, uid: str) -> None:
    base = created(store, uid)
    two = metadata(V1, V2, schemas=2)
    assert asyncio.run(store.replace(uid, "sales", "v", base, two, "s3://m/2.json", "bob"))
    loaded = asyncio.run(store.load(uid, "sales", "v"))
    assert loaded is not None
    only_v2 = ViewMetadata.model_validate(
        two.model_dump(by_alias=True)
        | {
            "versions": [V2],
            "schemas": [SCHEMA | {"schema-id": 1}],
            "version-log": [{"timestamp-ms": V2["timestamp-ms"], "version-id": 2}],
        }
    )
    assert asyncio.run(store.replace(uid, "sales", "v", loaded, only_v2, "s3://m/3.json", "carol"))
    again = asyncio.run(store.load(uid, "sales", "v"))
    assert again is not None and again.metadata == only_v2
    assert asyncio.run(store.version_authors(uid, "sales", "v")) == {2: "bob"}


def test_names_are_listed_in_pages_after_the_token(store: ViewStore, uid: str) -> None:
    for name in ("c", "a", "d", "b"):
        created(store, uid, name)
    assert asyncio.run(store.list_names(uid, "sales", None, 3)) == (["a", "b", "c"], "c")
    assert asyncio.run(store.list_names(uid, "sales", "c", 3)) == (["d"], None)
    assert asyncio.run(store.list_names(uid, "sales", None, 4)) == (["a", "b", "c", "d"], None)


def test_rename_moves_the_view_and_refuses_a_taken_name(store: ViewStore, uid: str) -> None:
    created(store, uid, "a")
    created(store, uid, "b")
    with pytest.raises(AlreadyExists):
        asyncio.run(store.rename(uid, "sales", "a", "sales", "b"))
    asyncio.run(store.rename(uid, "sales", "a", "ops", "a2"))
    moved = asyncio.run(store.load(uid, "ops", "a2"))
    assert moved is not None and moved.revision == 1
    with pytest.raises(NoSuchView):
        asyncio.run(store.rename(uid, "sales", "a", "ops", "a3"))


def test_drop_returns_the_view_and_leaves_nothing(store: ViewStore, uid: str) -> None:
    base = created(store, uid)
    assert asyncio.run(store.drop(uid, "sales", "v")).metadata == base.metadata
    assert asyncio.run(store.load(uid, "sales", "v")) is None
    assert asyncio.run(store.version_authors(uid, "sales", "v")) == {}
    with pytest.raises(NoSuchView):
        asyncio.run(store.drop(uid, "sales", "v"))


def test_a_view_in_the_trash_is_hidden_and_restored_once(
    store: ViewStore, state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    base = created(store, uid)
    entry = asyncio.run(
        store.move_to_trash(
            uid,
            "sales",
            "v",
            lambda view: new_entry(uid, "view", ("sales",), "v", view.metadata_location, "alice", False, timedelta(1)),
        )
    )
    assert asyncio.run(store.load(uid, "sales", "v")) is None
    assert asyncio.run(store.list_names(uid, TRASH_NAMESPACE, None, 10)) == ([entry.entry_id], None)
    assert asyncio.run(TrashStore(state_engine, threads).get(uid, entry.entry_id)) == entry
    created(store, uid)  # the name is free again: a restore to it is refused, the entry stays
    with pytest.raises(AlreadyExists):
        asyncio.run(store.restore_from_trash(uid, entry.entry_id, "sales", "v"))
    assert asyncio.run(TrashStore(state_engine, threads).get(uid, entry.entry_id)) is not None
    restored = asyncio.run(store.restore_from_trash(uid, entry.entry_id, "sales", "v-restored"))
    assert restored is not None and restored.metadata == base.metadata
    assert asyncio.run(store.restore_from_trash(uid, entry.entry_id, "sales", "v-again")) is None
    assert asyncio.run(store.version_authors(uid, "sales", "v-restored")) == {1: "alice"}
    with pytest.raises(NoSuchView):
        asyncio.run(store.move_to_trash(uid, "sales", "ghost", lambda view: entry))
