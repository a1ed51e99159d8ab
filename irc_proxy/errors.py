"""The domain error tree: one root, no HTTP status codes, no SDK types.

    CatalogError
    ├── BadRequest                  malformed or invalid input
    │   └── InvalidArgument         an argument breaks a precondition (Java's IllegalArgumentException)
    ├── NotFound                    an object is missing
    │   ├── NoSuchWarehouse
    │   ├── NoSuchNamespace
    │   ├── NoSuchTable
    │   │   └── NotAnIcebergTable   the name is taken by a Hive/Delta/... table
    │   └── NoSuchView
    ├── NotAuthenticated            no bearer token, or one that is invalid or expired
    ├── Forbidden                   the backend (or, later, the authorizer) refused
    ├── Unsupported                 the catalog cannot do this
    ├── Conflict
    │   ├── AlreadyExists
    │   ├── CommitFailed            a requirement did not hold; nothing was written
    │   └── NamespaceNotEmpty
    ├── Unprocessable               well-formed but contradictory input
    ├── CommitStateUnknown          a commit may or may not have happened
    └── ServiceUnavailable          a backend cannot be reached

The HTTP layer maps each class to a status and the Iceberg exception type name
(``irc_proxy.http.errors``); backends translate their SDK errors into these.
"""

from __future__ import annotations


class CatalogError(Exception):
    """Root of every error the catalog reports to a client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(CatalogError):
    """The request is malformed or names something invalid."""


class InvalidArgument(BadRequest):
    """A well-formed argument breaks a precondition that Iceberg Java checks with IllegalArgumentException.

    Java clients rethrow a 400 whose type is ``IllegalArgumentException`` as that exception, with the
    server's message; any other 400 becomes ``BadRequestException("Malformed request: ...")``.
    """


class NotAuthenticated(CatalogError):
    """The caller sent no usable bearer token (missing, malformed, forged or expired)."""


class NotFound(CatalogError):
    """A referenced object (or file) does not exist."""


class NoSuchWarehouse(NotFound):
    """No catalog is configured under that warehouse name or prefix."""


class NoSuchNamespace(NotFound):
    """The namespace does not exist."""


class NoSuchTable(NotFound):
    """The table does not exist."""


class NotAnIcebergTable(NoSuchTable):
    """A table of another format (Hive, Delta, ...) holds the name; it cannot be loaded as Iceberg."""


class NoSuchView(NotFound):
    """The view does not exist."""


class Forbidden(CatalogError):
    """The operation is not allowed (a backend denied it, or the object is read-only here)."""


class Unsupported(CatalogError):
    """The operation is not supported by this catalog's backend."""


class Conflict(CatalogError):
    """The request conflicts with the catalog's current state."""


class AlreadyExists(Conflict):
    """An object with that identifier already exists."""


class CommitFailed(Conflict):
    """A commit requirement failed; the commit did not happen."""


class NamespaceNotEmpty(Conflict):
    """The namespace still holds namespaces, tables or views."""


class Unprocessable(CatalogError):
    """The request is well formed but contradicts itself."""


class CommitStateUnknown(CatalogError):
    """A commit may or may not have been applied; clients must not clean up."""


class ServiceUnavailable(CatalogError):
    """A backend could not be reached; the request had no effect."""
