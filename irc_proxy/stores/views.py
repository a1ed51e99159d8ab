"""The view store: Iceberg view metadata kept as normalised rows, one view per (catalog, namespace, name).

The rows are the source of truth. Every change is a compare-and-swap on ``iceberg_view.revision``
inside one transaction, so replicas sharing a database never lose a version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyiceberg.view.metadata import SQLViewRepresentation, ViewMetadata, ViewVersion
from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from irc_proxy.errors import AlreadyExists, NoSuchView
from irc_proxy.stores.tables import (
    ViewPropertyRow,
    ViewRepresentationRow,
    ViewRow,
    ViewSchemaRow,
    ViewVersionLogRow,
    ViewVersionRow,
    utcnow,
)
from irc_proxy.stores.transactions import TransactionalStore
from irc_proxy.stores.trash import TrashEntry, insert_entry, take_kept

T = TypeVar("T")
TRASH_NAMESPACE = "\x01trash"
"""A view in the trash keeps its rows (every version, with who made it) under this namespace, named by its
trash entry's id. No namespace can be named so (flat names escape control characters; not NUL, which
PostgreSQL text refuses), so it is never listed, loaded or taken; a restore moves the rows back."""
CHILD_TABLES = (ViewPropertyRow, ViewVersionRow, ViewRepresentationRow, ViewSchemaRow, ViewVersionLogRow)


@dataclass(frozen=True)
class StoredView:
    metadata: ViewMetadata
    metadata_location: str
    revision: int


class ViewStore(TransactionalStore):
    """Views of every catalog in the proxy's state database."""

    @staticmethod
    def _row(session: Session, catalog: str, namespace: str, name: str) -> ViewRow | None:
        stmt = select(ViewRow).where(
            col(ViewRow.catalog) == catalog, col(ViewRow.namespace) == namespace, col(ViewRow.name) == name
        )
        return session.execute(stmt).scalars().first()

    # Reading ----------------------------------------------------------------------------
    async def load(self, catalog: str, namespace: str, name: str) -> StoredView | None:
        def load(session: Session) -> StoredView | None:
            row = self._row(session, catalog, namespace, name)
            return None if row is None else _assemble(session, row)

        return await self._run(load)

    async def version_authors(self, catalog: str, namespace: str, name: str) -> dict[int, str]:
        """Who made each version of the view (the principal of the commit that added it)."""

        def query(session: Session) -> dict[int, str]:
            row = self._row(session, catalog, namespace, name)
            if row is None:
                return {}
            stmt = select(ViewVersionRow.version_id, ViewVersionRow.created_by).where(
                col(ViewVersionRow.view_id) == row.id
            )
            return {version_id: author for version_id, author in session.execute(stmt)}

        return await self._run(query)

    async def exists(self, catalog: str, namespace: str, name: str) -> bool:
        return await self._run(lambda session: self._row(session, catalog, namespace, name) is not None)

    async def any_in_namespace(self, catalog: str, namespace: str) -> bool:
        def query(session: Session) -> bool:
            stmt = (
                select(ViewRow.id).where(col(ViewRow.catalog) == catalog, col(ViewRow.namespace) == namespace).limit(1)
            )
            return session.execute(stmt).first() is not None

        return await self._run(query)

    async def list_names(
        self, catalog: str, namespace: str, token: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        """At most ``limit`` view names after ``token`` (the last name of the previous batch)."""

        def query(session: Session) -> tuple[list[str], str | None]:
            stmt = select(ViewRow.name).where(col(ViewRow.catalog) == catalog, col(ViewRow.namespace) == namespace)
            if token is not None:
                stmt = stmt.where(col(ViewRow.name) > token)
            names = list(session.execute(stmt.order_by(col(ViewRow.name)).limit(limit + 1)).scalars())
            return names[:limit], (names[limit - 1] if len(names) > limit else None)

        return await self._run(query)

    # Writing ----------------------------------------------------------------------------
    async def create(
        self, catalog: str, namespace: str, name: str, metadata: ViewMetadata, location: str, principal: str
    ) -> None:
        """Raises AlreadyExists when the name is taken (also under a concurrent create)."""

        def create(session: Session) -> None:
            row = ViewRow(
                catalog=catalog,
                namespace=namespace,
                name=name,
                view_uuid=metadata.view_uuid,
                location=metadata.location,
                format_version=metadata.format_version,
                current_version_id=metadata.current_version_id,
                metadata_location=location,
            )
            session.add(row)
            session.flush()
            assert row.id is not None
            _sync_children(session, row.id, None, metadata, principal)

        try:
            await self._run(create)
        except IntegrityError as exc:
            raise AlreadyExists(name) from exc

    async def replace(
        self,
        catalog: str,
        namespace: str,
        name: str,
        expected: StoredView,
        metadata: ViewMetadata,
        location: str,
        principal: str,
    ) -> bool:
        """Compare-and-swap: False if the view changed since ``expected`` was loaded (or is gone)."""

        def replace(session: Session) -> bool:
            row = self._row(session, catalog, namespace, name)
            if row is None or row.revision != expected.revision:
                return False
            swapped = session.execute(
                update(ViewRow)
                .where(col(ViewRow.id) == row.id, col(ViewRow.revision) == expected.revision)
                .values(
                    revision=expected.revision + 1,
                    view_uuid=metadata.view_uuid,
                    location=metadata.location,
                    format_version=metadata.format_version,
                    current_version_id=metadata.current_version_id,
                    metadata_location=location,
                    updated_at=utcnow(),
                )
            )
            if swapped.rowcount != 1:  # type: ignore[attr-defined]
                return False
            assert row.id is not None
            _sync_children(session, row.id, expected.metadata, metadata, principal)
            return True

        return await self._run(replace)

    async def drop(self, catalog: str, namespace: str, name: str) -> StoredView:
        def drop(session: Session) -> StoredView:
            row = self._row(session, catalog, namespace, name)
            if row is None:
                raise NoSuchView(name)
            stored = _assemble(session, row)
            for table in CHILD_TABLES:
                session.execute(delete(table).where(_column(table, "view_id") == row.id))
            session.execute(delete(ViewRow).where(col(ViewRow.id) == row.id))
            return stored

        return await self._run(drop)

    async def move_to_trash(
        self, catalog: str, namespace: str, name: str, entry_for: Callable[[StoredView], TrashEntry]
    ) -> TrashEntry:
        """Drop the view into the trash in one transaction: its rows move under ``TRASH_NAMESPACE`` and the
        entry ``entry_for`` makes of it is added. Raises NoSuchView."""

        def move(session: Session) -> TrashEntry:
            row = self._row(session, catalog, namespace, name)
            if row is None:
                raise NoSuchView(name)
            entry = entry_for(_assemble(session, row))
            session.execute(insert_entry(entry))
            row.namespace, row.name, row.updated_at = TRASH_NAMESPACE, entry.entry_id, utcnow()
            row.revision += 1
            return entry

        return await self._run(move)

    async def restore_from_trash(self, catalog: str, entry_id: str, namespace: str, name: str) -> StoredView | None:
        """Take the kept entry and move its view back under ``namespace.name`` in one transaction.

        None when the entry is gone (restored, expunged or being expired). Raises AlreadyExists when the
        name is taken (the entry stays in the trash).
        """

        def restore(session: Session) -> StoredView | None:
            row = self._row(session, catalog, TRASH_NAMESPACE, entry_id)
            if row is None or session.execute(take_kept(catalog, entry_id)).rowcount != 1:  # type: ignore[attr-defined]
                return None
            row.namespace, row.name, row.updated_at = namespace, name, utcnow()
            row.revision += 1
            session.flush()
            return _assemble(session, row)

        try:
            return await self._run(restore)
        except IntegrityError as exc:
            raise AlreadyExists(name) from exc

    async def rename(self, catalog: str, namespace: str, name: str, to_namespace: str, to_name: str) -> None:
        def rename(session: Session) -> None:
            row = self._row(session, catalog, namespace, name)
            if row is None:
                raise NoSuchView(name)
            row.namespace, row.name, row.updated_at = to_namespace, to_name, utcnow()
            row.revision += 1

        try:
            await self._run(rename)
        except IntegrityError as exc:
            raise AlreadyExists(to_name) from exc


def _column(table: type[object], name: str) -> Any:
    return table.__table__.c[name]  # type: ignore[attr-defined]


def _assemble(session: Session, row: ViewRow) -> StoredView:
    """Rebuild ViewMetadata from the normalised rows."""

    def rows(table: type[T], *order: str) -> list[T]:
        stmt = select(table).where(_column(table, "view_id") == row.id)
        return list(session.exec(stmt.order_by(*(_column(table, o) for o in order))).all())

    representations: dict[int, list[dict[str, str]]] = {}
    for rep in rows(ViewRepresentationRow, "version_id", "position"):
        representations.setdefault(rep.version_id, []).append(
            {"type": rep.type, "sql": rep.sql, "dialect": rep.dialect}
        )
    metadata = ViewMetadata.model_validate(
        {
            "view-uuid": row.view_uuid,
            "format-version": row.format_version,
            "location": row.location,
            "schemas": [json.loads(s.schema_text) for s in rows(ViewSchemaRow, "schema_id")],
            "current-version-id": row.current_version_id,
            "versions": [
                {
                    "version-id": v.version_id,
                    "schema-id": v.schema_id,
                    "timestamp-ms": v.timestamp_ms,
                    "summary": json.loads(v.summary),
                    "representations": representations.get(v.version_id, []),
                    "default-catalog": v.default_catalog,
                    "default-namespace": json.loads(v.default_namespace),
                }
                for v in rows(ViewVersionRow, "version_id")
            ],
            "version-log": [
                {"timestamp-ms": e.timestamp_ms, "version-id": e.version_id}
                for e in rows(ViewVersionLogRow, "position")
            ],
            "properties": {p.key: p.value for p in rows(ViewPropertyRow, "key")},
        }
    )
    return StoredView(metadata, row.metadata_location, row.revision)


def _sync_children(
    session: Session, view_id: int, before: ViewMetadata | None, after: ViewMetadata, principal: str
) -> None:
    """Write what changed: new versions and schemas are inserted, dropped ones deleted; the small
    property map and version log are rewritten. Existing versions keep their audit columns."""
    old_versions = {v.version_id for v in before.versions} if before else set()
    new_versions = {v.version_id: v for v in after.versions}
    gone = old_versions - set(new_versions)
    if gone:
        for table in (ViewRepresentationRow, ViewVersionRow):
            session.execute(
                delete(table).where(_column(table, "view_id") == view_id, _column(table, "version_id").in_(gone))
            )
    for version_id in sorted(set(new_versions) - old_versions):
        version = new_versions[version_id]
        session.add(
            ViewVersionRow(
                view_id=view_id,
                version_id=version_id,
                timestamp_ms=version.timestamp_ms,
                schema_id=version.schema_id,
                summary=json.dumps(version.summary),
                default_catalog=version.default_catalog,
                default_namespace=json.dumps(list(version.default_namespace)),
                created_by=principal,
            )
        )
        for position, rep in enumerate(_sql_representations(version)):
            session.add(
                ViewRepresentationRow(
                    view_id=view_id,
                    version_id=version_id,
                    position=position,
                    type=rep.type,
                    dialect=rep.dialect,
                    dialect_key=rep.dialect.lower(),
                    sql=rep.sql,
                )
            )
    old_schemas = {s.schema_id for s in before.schemas} if before else set()
    new_schemas = {s.schema_id: s for s in after.schemas}
    if gone_schemas := old_schemas - set(new_schemas):
        session.execute(
            delete(ViewSchemaRow).where(
                _column(ViewSchemaRow, "view_id") == view_id, _column(ViewSchemaRow, "schema_id").in_(gone_schemas)
            )
        )
    for schema_id in sorted(set(new_schemas) - old_schemas):
        session.add(
            ViewSchemaRow(view_id=view_id, schema_id=schema_id, schema_text=new_schemas[schema_id].model_dump_json())
        )
    _rewrite(
        session,
        ViewVersionLogRow,
        view_id,
        (
            ViewVersionLogRow(view_id=view_id, position=i, version_id=e.version_id, timestamp_ms=e.timestamp_ms)
            for i, e in enumerate(after.version_log)
        ),
    )
    _rewrite(
        session,
        ViewPropertyRow,
        view_id,
        (ViewPropertyRow(view_id=view_id, key=k, value=v) for k, v in after.properties.items()),
    )


def _rewrite(session: Session, table: type[object], view_id: int, rows: Iterable[object]) -> None:
    session.execute(delete(table).where(_column(table, "view_id") == view_id))
    session.add_all(list(rows))
    session.flush()


def _sql_representations(version: ViewVersion) -> list[SQLViewRepresentation]:
    return [rep.root for rep in version.representations]
