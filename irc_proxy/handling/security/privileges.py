"""The privileges a grant can hold, and the catalog wildcard: names only, importable without the store.

Kept apart from ``authz`` (which needs the state database's models) so that ``irc-proxy grants add --help``
can list them without importing SQLAlchemy.
"""

from __future__ import annotations

from enum import StrEnum

ANY_CATALOG = "*"
"""A grant on catalog ``*`` applies to every catalog."""
ADMIN_ROLE = "admin"
"""Holders of this role (and the configured bootstrap admins) hold every privilege and run the admin API."""


class Privilege(StrEnum):
    """What a grant allows. ``all`` is every privilege."""

    CATALOG_USE = "catalog.use"
    NAMESPACE_CREATE = "namespace.create"
    NAMESPACE_LIST = "namespace.list"
    NAMESPACE_USE = "namespace.use"
    NAMESPACE_DROP = "namespace.drop"
    NAMESPACE_PROPERTIES = "namespace.properties"
    TABLE_LIST = "table.list"
    TABLE_CREATE = "table.create"
    TABLE_READ = "table.read"
    TABLE_WRITE = "table.write"
    TABLE_DROP = "table.drop"
    VIEW_LIST = "view.list"
    VIEW_CREATE = "view.create"
    VIEW_READ = "view.read"
    VIEW_REPLACE = "view.replace"
    VIEW_DROP = "view.drop"
    CREDENTIALS_READ = "credentials.read"
    CREDENTIALS_WRITE = "credentials.write"
    ALL = "all"
