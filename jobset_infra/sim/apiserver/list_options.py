"""Which list and watch query parameters a request may combine, checked as the API server's
ListOptions validation checks them (422 Invalid on `meta.k8s.io/ListOptions`), and what a
watch starts with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset_infra.sim.apiserver.errors import field_cause, invalid
from jobset_infra.sim.apiserver.responses import flag

NOT_OLDER_THAN = "NotOlderThan"
EXACT = "Exact"
_RVM = "resourceVersionMatch"
JsonObj = dict[str, Any]


def send_initial_events(query: Mapping[str, str]) -> bool | None:
    """`sendInitialEvents` as the client sent it: None when absent (its default depends on the
    resourceVersion), else true or false."""
    return flag(query, "sendInitialEvents") if "sendInitialEvents" in query else None


def check(query: Mapping[str, str], *, watch: bool) -> None:
    """Raise 422 for a combination the API server refuses, with one cause per field."""
    causes = _watch_problems(query) if watch else _list_problems(query)
    if causes:
        raise invalid("meta.k8s.io", "ListOptions", "", causes)


def _forbidden(field: str, detail: str) -> JsonObj:
    return field_cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def _not_supported(value: str, supported: list[str]) -> JsonObj:
    allowed = ", ".join(f'"{s}"' for s in supported)
    return field_cause("FieldValueNotSupported", _RVM,
                       f'Unsupported value: "{value}": supported values: {allowed}')


def _list_problems(query: Mapping[str, str]) -> list[JsonObj]:
    causes: list[JsonObj] = []
    match = query.get(_RVM, "")
    if match:
        if not query.get("resourceVersion"):
            causes.append(_forbidden(
                _RVM, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if query.get("continue"):
            causes.append(_forbidden(
                _RVM, "resourceVersionMatch is forbidden when continue is provided"))
        if match not in (EXACT, NOT_OLDER_THAN):
            causes.append(_not_supported(match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and query.get("resourceVersion") == "0":
            causes.append(_forbidden(
                _RVM, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if "sendInitialEvents" in query:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _watch_problems(query: Mapping[str, str]) -> list[JsonObj]:
    causes: list[JsonObj] = []
    match = query.get(_RVM, "")
    initial = send_initial_events(query)
    if initial is not None and match != NOT_OLDER_THAN:
        causes.append(_forbidden(
            _RVM, f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}"))
    if match:
        if initial is None:
            causes.append(_forbidden(
                _RVM, "resourceVersionMatch is forbidden for watch unless sendInitialEvents "
                      "is provided"))
        if match != NOT_OLDER_THAN:
            causes.append(_not_supported(match, [NOT_OLDER_THAN]))
        if query.get("continue"):
            causes.append(_forbidden(
                _RVM, "resourceVersionMatch is forbidden when continue is provided"))
    return causes
