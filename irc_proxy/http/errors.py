"""Domain error -> HTTP status and Iceberg exception type: one table, one handler."""

from __future__ import annotations

import json
import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from irc_proxy import errors
from irc_proxy.http.parsing import context

log = logging.getLogger("irc_proxy.http")

# Most specific first: the first matching class wins.
STATUS: list[tuple[type[errors.CatalogError], int, str]] = [
    (errors.NoSuchWarehouse, 404, "NoSuchWarehouseException"),
    (errors.NoSuchNamespace, 404, "NoSuchNamespaceException"),
    (errors.NoSuchTable, 404, "NoSuchTableException"),
    (errors.NoSuchView, 404, "NoSuchViewException"),
    (errors.NotFound, 404, "NotFoundException"),
    (errors.InvalidArgument, 400, "IllegalArgumentException"),
    (errors.BadRequest, 400, "BadRequestException"),
    (errors.NotAuthenticated, 401, "NotAuthorizedException"),
    (errors.Forbidden, 403, "ForbiddenException"),
    (errors.Unsupported, 406, "UnsupportedOperationException"),
    (errors.AlreadyExists, 409, "AlreadyExistsException"),
    (errors.CommitFailed, 409, "CommitFailedException"),
    (errors.NamespaceNotEmpty, 409, "NamespaceNotEmptyException"),
    (errors.Unprocessable, 422, "UnprocessableEntityException"),
    # The spec's 504 ("gateway timeout; the commit state is unknown"): the backend never answered the commit.
    # Clients treat 500/502/504 alike; 504 keeps 500 for our own bugs.
    (errors.CommitStateUnknown, 504, "CommitStateUnknownException"),
    (errors.ServiceUnavailable, 503, "ServiceUnavailableException"),
]
_HTTP_TYPES = {
    400: "BadRequestException",
    401: "NotAuthorizedException",
    403: "ForbiddenException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    406: "UnsupportedOperationException",
    413: "RequestEntityTooLargeException",
}


def error_response(request: Request, status: int, type_name: str, message: str) -> Response:
    """The spec's IcebergErrorResponse; HEAD responses carry no body (but the headers a GET would)."""
    if request.method == "HEAD":
        return Response(status_code=status, media_type="application/json")
    body = {"error": {"message": message, "type": type_name, "code": status}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def classify(exc: errors.CatalogError) -> tuple[int, str]:
    for cls, status, type_name in STATUS:
        if isinstance(exc, cls):
            return status, type_name
    return 500, "InternalServerError"


async def catalog_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.CatalogError)
    status, type_name = classify(exc)
    if status == 403:
        context(request).audit.refuse(exc.message)
    return error_response(request, status, type_name, exc.message)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    type_name = _HTTP_TYPES.get(exc.status_code, "RESTException")
    response = error_response(request, exc.status_code, type_name, str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: log it with the request id, answer 500 without internals."""
    request_id = request.scope.get("state", {}).get("request_id", "-")
    log.exception("unhandled error in %s %s (request %s)", request.method, request.url.path, request_id)
    return error_response(request, 500, "InternalServerError", f"Internal server error (request id {request_id})")


EXCEPTION_HANDLERS = {errors.CatalogError: catalog_error, HTTPException: http_error, Exception: unexpected_error}
