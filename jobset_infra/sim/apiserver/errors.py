"""Errors of the simulated API server, each carrying the Kubernetes `Status` a real server returns.

The store raises these; the HTTP layer turns them into a response with the same code and body, so
an in-process caller and an HTTP client see the same reason, message and causes. Catch
`StatusError` (and read `.code`/`.reason`) or one of its classes: NotFoundError,
AlreadyExistsError, ConflictError, InvalidError, GoneError, BadRequestError, ForbiddenError.
Messages follow the wording of k8s.io/apimachinery/pkg/api/errors, which clients match on.
"""

from __future__ import annotations

from typing import Any

JsonObj = dict[str, Any]


class StatusError(Exception):
    """A failed request: `code`, `reason` and the `status` body (kind Status, apiVersion v1)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: JsonObj | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    @property
    def status(self) -> JsonObj:
        body: JsonObj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # an error without a reason (StatusReasonUnknown) omits the key
            del body["reason"]
        if self.details is not None:
            body["details"] = self.details
        return body


class NotFoundError(StatusError):
    """404 NotFound."""


class AlreadyExistsError(StatusError):
    """409 AlreadyExists."""


class ConflictError(StatusError):
    """409 Conflict: a stale resourceVersion, a failed precondition, an apply conflict."""


class InvalidError(StatusError):
    """422 Invalid, with one details.causes entry per field."""


class GoneError(StatusError):
    """410 Expired: a version older than the server keeps."""


class BadRequestError(StatusError):
    """400 BadRequest."""


class ForbiddenError(StatusError):
    """403 Forbidden."""


def _details(group: str, kind: str, name: str) -> JsonObj:
    """StatusDetails; empty fields are left out, as the server's omitempty does."""
    return {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}


def qualified(resource: str, group: str) -> str:
    """`jobs.batch`, or `pods` for the core group: how Kubernetes names a resource in errors."""
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> StatusError:
    return NotFoundError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found',
        details=_details(group, resource, name),
    )


def not_found_resource() -> StatusError:
    """404 for a path the server serves nothing at (an unknown resource or subresource)."""
    return NotFoundError(404, "NotFound", "the server could not find the requested resource",
                         details={})


def already_exists(group: str, resource: str, name: str) -> StatusError:
    return AlreadyExistsError(
        409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists',
        details=_details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> StatusError:
    return ConflictError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(group, resource, name),
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(group: str, resource: str, name: str) -> StatusError:
    """The 409 for an update whose metadata.resourceVersion is not the stored one."""
    return conflict(group, resource, name, STALE)


def invalid(group: str, kind: str, name: str, causes: list[JsonObj]) -> StatusError:
    """422 Invalid; each cause is {reason, message, field}, rendered as field.ErrorList does."""
    rendered = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    what = f"{kind}.{group}" if group else kind
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    details = _details(group, kind, name) | {"causes": causes}
    return InvalidError(422, "Invalid", f'{what} "{name}" is invalid: {summary}', details=details)


def field_cause(reason: str, field: str, message: str) -> JsonObj:
    """One entry of details.causes, e.g. ("FieldValueRequired", "spec.x", "Required value")."""
    return {"reason": reason, "message": message, "field": field}


def gone(message: str) -> StatusError:
    """410 Expired: a watch or continue token from a resourceVersion the server no longer keeps."""
    return GoneError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> StatusError:
    return gone(f"too old resource version: {requested} ({oldest})")


def name_mismatch(in_body: str, in_url: str) -> str:
    return f"the name of the object ({in_body}) does not match the name on the URL ({in_url})"


def bad_request(message: str) -> StatusError:
    return BadRequestError(400, "BadRequest", message)


def forbidden(group: str, resource: str, name: str, why: str) -> StatusError:
    return ForbiddenError(
        403, "Forbidden", f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        details=_details(group, resource, name),
    )


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message, details={})


def unsupported_media_type(accepted: tuple[str, ...] | None = None) -> StatusError:
    """415 naming the media types the request could have used (none: the generic answer the
    API server gives to a PATCH in a type that is no patch type at all)."""
    if accepted is None:
        return StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type",
                           details={})
    return StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                       f"format - accepted media types include: {', '.join(accepted)}")


def not_acceptable(accept: str) -> StatusError:
    return StatusError(406, "NotAcceptable", f"only the following media types are accepted: application/json, application/yaml ({accept!r} requested)")  # noqa: E501


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def too_many_requests(retry_after: int) -> StatusError:
    return StatusError(
        429, "TooManyRequests", "Too many requests, please try again later.",
        details={"retryAfterSeconds": retry_after}, retry_after=retry_after,
    )


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


def unavailable(
    message: str = "the server is currently unable to handle the request",
) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message)
