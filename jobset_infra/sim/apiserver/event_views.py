"""core/v1 Events and events.k8s.io/v1 Events: one stored collection, two views.

A real API server keeps one Event type in storage and converts on the way in and out
(kubernetes pkg/apis/events/v1 conversion: `regarding` is core's `involvedObject`, `note` is
`message`, `deprecatedSource`/`deprecatedFirstTimestamp`/`deprecatedLastTimestamp`/
`deprecatedCount` are `source`/`firstTimestamp`/`lastTimestamp`/`count`, and the wire name
`reportingController` is core's `reportingComponent`). The sim stores the core/v1 form and keeps
the events.k8s.io/v1 form next to it as a view with the same uid and resourceVersion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jobset_infra.sim.apiserver.resources import GVR

JsonObj = dict[str, Any]
CORE_EVENTS: Final = GVR("", "v1", "events")
EVENTS_V1: Final = GVR("events.k8s.io", "v1", "events")

# events.k8s.io/v1 field -> core/v1 field (fields named alike in both are copied as they are:
# metadata, eventTime, series, related, reportingInstance, action, reason, type)
_RENAMED: Final = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK: Final = {core: new for new, core in _RENAMED.items()}


def to_core(event: JsonObj) -> JsonObj:
    """An events.k8s.io/v1 Event as core/v1 stores it."""
    return _typed(CORE_EVENTS, {_RENAMED.get(k, k): v for k, v in event.items()})


def to_events_v1(event: JsonObj) -> JsonObj:
    """A stored core/v1 Event as events.k8s.io/v1 serves it."""
    return _typed(EVENTS_V1, {_BACK.get(k, k): v for k, v in event.items()})


# Fields each view always has, as Go serialises them when they are zero (structs, times and
# strings without omitempty); events.k8s.io/v1 omits its empty strings.
_ZERO: Final[dict[GVR, JsonObj]] = {
    CORE_EVENTS: {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                  "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                  "reportingInstance": ""},
    EVENTS_V1: {"deprecatedSource": {}, "deprecatedFirstTimestamp": None,
                "deprecatedLastTimestamp": None, "eventTime": None},
}
_OMIT_EMPTY: Final[dict[GVR, tuple[str, ...]]] = {
    EVENTS_V1: ("reportingController", "reportingInstance")}


def zero_fields(gvr: GVR) -> Callable[[Any, JsonObj, JsonObj | None], JsonObj]:
    """Admission of an Event write through `gvr`: the fields Go always serialises."""
    def admit(info: Any, obj: JsonObj, old: JsonObj | None) -> JsonObj:
        return _typed(gvr, obj)

    return admit


def _typed(gvr: GVR, fields: JsonObj) -> JsonObj:
    """apiVersion and kind first, as the API server serialises objects. Metadata is shared, not
    copied: stored snapshots are never mutated after publication."""
    rest = {k: v for k, v in fields.items() if k not in ("apiVersion", "kind")
            and not (k in _OMIT_EMPTY.get(gvr, ()) and v == "")}
    return {"apiVersion": gvr.api_version, "kind": "Event", **_ZERO[gvr], **rest}
