"""The typed errors of the Kubernetes API client (`kube.py`): one class per status the
controller treats differently, built from a Status body by `error_from_status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RETRY_AFTER_CAP = 30.0


class ApiError(Exception):
    """An error status from the API server (or "<error>" for transport failures: code 0)."""

    def __init__(self, code: int, reason: str, message: str, body: Mapping[str, Any] | None = None):
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.body = dict(body or {})


class NotFoundError(ApiError): ...


class AlreadyExistsError(ApiError): ...


class ConflictError(ApiError): ...


class GoneError(ApiError): ...


class TooManyRequestsError(ApiError):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        body: Mapping[str, Any] | None = None,
        retry_after: float = 1.0,
    ):
        super().__init__(code, reason, message, body)
        self.retry_after = retry_after


class InvalidError(ApiError): ...


class ForbiddenError(ApiError): ...


class ServerError(ApiError): ...


class UndeclaredCallError(RuntimeError):
    """The runtime tried a (group, resource, verb) its RBAC rules (api/rbac.py) do not grant."""


def error_from_status(code: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> ApiError:
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or "")
    if code == 404:
        return NotFoundError(code, reason or "NotFound", message, body)
    if code == 409:
        cls = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
        return cls(code, reason or "Conflict", message, body)
    if code == 410:
        return GoneError(code, reason or "Expired", message, body)
    if code == 429:
        return TooManyRequestsError(
            code, reason or "TooManyRequests", message, body, retry_after=retry_after(headers)
        )
    if code == 422:
        return InvalidError(code, reason or "Invalid", message, body)
    if code in (401, 403):
        return ForbiddenError(code, reason or "Forbidden", message, body)
    if code >= 500:
        return ServerError(code, reason or "InternalError", message, body)
    return ApiError(code, reason or "Error", message, body)


def retry_after(headers: Mapping[str, str]) -> float:
    try:
        return min(RETRY_AFTER_CAP, max(0.0, float(headers.get("Retry-After", "1"))))
    except ValueError:
        return 1.0
