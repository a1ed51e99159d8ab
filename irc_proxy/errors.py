"""The proxy's error tree (one root) and the one table of how each catalog error is answered.

    ProxyError
    ├── StartupError                the proxy cannot start; told on stderr, never over HTTP
    │   ├── ConfigError             (irc_proxy.settings) a configuration key is unknown or bad
    │   ├── SchemaOutOfDate         (irc_proxy.stores.db) the state database needs ``db upgrade``
    │   └── NoStateDatabase         (irc_proxy.stores.db) a command found no state database (and made none)
    └── CatalogError                answered to a client           status  Iceberg type
        ├── BadRequest              malformed or invalid input       400   BadRequestException
        │   └── InvalidArgument     a precondition (Java's IAE)       400   IllegalArgumentException
        ├── NotAuthenticated        no usable bearer token            401   NotAuthorizedException
        ├── Forbidden               a backend or the authorizer refused 403 ForbiddenException
        ├── NotFound                an object is missing              404   NotFoundException
        │   ├── NoSuchWarehouse                                      404   NoSuchWarehouseException
        │   ├── NoSuchNamespace                                      404   NoSuchNamespaceException
        │   ├── NoSuchTable                                          404   NoSuchTableException
        │   │   └── NotAnIcebergTable  a Hive/Delta/... table holds the name (as NoSuchTable)
        │   └── NoSuchView                                           404   NoSuchViewException
        ├── MethodNotAllowed        the path does not serve the method 405  MethodNotAllowedException
        ├── Unsupported             the catalog cannot do this        406   UnsupportedOperationException
        ├── Conflict                                                 409   ConflictException
        │   ├── AlreadyExists                                        409   AlreadyExistsException
        │   ├── CommitFailed        a requirement did not hold        409   CommitFailedException
        │   └── NamespaceNotEmpty                                    409   NamespaceNotEmptyException
        ├── PayloadTooLarge         a body or list over a limit       413   RequestEntityTooLargeException
        ├── Unprocessable           well-formed but contradictory     422   UnprocessableEntityException
        ├── ServiceUnavailable      a backend cannot be reached       503   ServiceUnavailableException
        ├── CommitStateUnknown      a commit may or may not have happened 504 CommitStateUnknownException
        └── TokenRequestError       an OAuth2 token request refused: RFC 6749's own body and statuses

``ANSWERS`` below is that table, and the only one: ``irc_proxy.http.errors`` renders answers from it,
and the REST backend reads an upstream's answers back through it (``for_answer``). It lives here,
below both layers, because both need it and neither may import the other. Statuses and type names
are the Iceberg REST protocol's vocabulary; no HTTP machinery and no SDK types live here.
"""

from __future__ import annotations

import json


class ProxyError(Exception):
    """Root of every error the proxy raises on purpose."""


class StartupError(ProxyError):
    """The proxy cannot start (bad configuration, an outdated database); never answered over HTTP."""


class CatalogError(ProxyError):
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


class NoSuchPlanId(NotFound):
    """A scan plan id that is unknown, expired, or not the caller's."""


class NoSuchPlanTask(NotFound):
    """A scan plan task that is unknown, expired, or not the caller's."""


class Forbidden(CatalogError):
    """The operation is not allowed (a backend denied it, or the object is read-only here)."""


class MethodNotAllowed(CatalogError):
    """The path exists but does not serve this HTTP method."""


class PayloadTooLarge(CatalogError):
    """The request body (or a list in it) is over a configured limit."""


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


class TokenRequestError(CatalogError):
    """A token request is refused; ``error`` is the OAuth2 error code (RFC 6749 section 5.2).

    Answered in RFC 6749's shape (``error``, ``error_description``), not Iceberg's, so it has no row
    in ``ANSWERS``. ``slow_down`` (too many failures) and ``temporarily_unavailable`` (no secret check
    free) carry ``retry_after`` seconds. ``client_id`` is the client the request claimed or its token
    named, if any.
    """

    def __init__(self, error: str, description: str, client_id: str = "", retry_after: int | None = None) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.client_id = client_id
        self.retry_after = retry_after


# The one table: a class not listed answers as its nearest listed ancestor (NotAnIcebergTable as NoSuchTable).
ANSWERS: dict[type[CatalogError], tuple[int, str]] = {
    BadRequest: (400, "BadRequestException"),
    InvalidArgument: (400, "IllegalArgumentException"),
    NotAuthenticated: (401, "NotAuthorizedException"),
    Forbidden: (403, "ForbiddenException"),
    NotFound: (404, "NotFoundException"),
    NoSuchWarehouse: (404, "NoSuchWarehouseException"),
    NoSuchNamespace: (404, "NoSuchNamespaceException"),
    NoSuchTable: (404, "NoSuchTableException"),
    NoSuchView: (404, "NoSuchViewException"),
    NoSuchPlanId: (404, "NoSuchPlanIdException"),
    NoSuchPlanTask: (404, "NoSuchPlanTaskException"),
    MethodNotAllowed: (405, "MethodNotAllowedException"),
    Unsupported: (406, "UnsupportedOperationException"),
    Conflict: (409, "ConflictException"),
    AlreadyExists: (409, "AlreadyExistsException"),
    CommitFailed: (409, "CommitFailedException"),
    NamespaceNotEmpty: (409, "NamespaceNotEmptyException"),
    PayloadTooLarge: (413, "RequestEntityTooLargeException"),
    Unprocessable: (422, "UnprocessableEntityException"),
    ServiceUnavailable: (503, "ServiceUnavailableException"),
    # The spec's 504 ("gateway timeout; the commit state is unknown"): the backend never answered the commit.
    # Clients treat 500/502/504 alike; 504 keeps 500 for our own bugs.
    CommitStateUnknown: (504, "CommitStateUnknownException"),
}
_BY_TYPE = {type_name: cls for cls, (_, type_name) in ANSWERS.items()}
# What a status without a type means (Starlette's 404/405, a gateway's page): the most general class
# answering it. A bare 504 is a gateway's timeout, not a commit in doubt.
_BY_STATUS = {
    status: cls
    for cls, (status, _) in ANSWERS.items()
    if cls.__base__ is CatalogError and cls is not CommitStateUnknown
}


def answer(exc: CatalogError) -> tuple[int, str] | None:
    """The status and Iceberg type ``exc`` is answered with (None: not in the table, a bug)."""
    return next((ANSWERS[cls] for cls in type(exc).__mro__ if cls in ANSWERS), None)


def for_status(status: int) -> type[CatalogError] | None:
    """The error a bare status (one answered without a type) stands for, if any."""
    return _BY_STATUS.get(status)


def for_answer(status: int, type_name: str) -> type[CatalogError] | None:
    """The error an Iceberg REST answer names: by its type, else by its status."""
    return _BY_TYPE.get(type_name) or for_status(status)


def from_error_body(status: int, body: bytes) -> CatalogError:
    """The domain error for a remote catalog's error answer: its IcebergErrorResponse's type and message when
    it has one, else the status's class (ServiceUnavailable for a status with none)."""
    message, type_name = f"Upstream answered {status}", ""
    try:
        error = json.loads(body).get("error")
        if isinstance(error, dict):
            message, type_name = str(error.get("message", message)), str(error.get("type", ""))
    except (ValueError, AttributeError):
        pass
    cls = for_answer(status, type_name) or ServiceUnavailable
    return cls(message)
