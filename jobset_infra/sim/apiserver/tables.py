"""Server-side printing (`Accept: application/json;as=Table`), which `kubectl get` asks for.

CRDs print their `additionalPrinterColumns` (JSONPath cells, dates as ages); without any, Name and
Age. Built-in kinds print the columns kubectl users know for the kinds this project touches (Jobs,
Pods, Nodes, Namespaces, Services, Events, Leases) and Name and Age otherwise. Watches asked for
as tables get one-row tables as event objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jobset_infra.sim.apiserver.resources import ResourceInfo

JsonObj = dict[str, Any]
Cell = Callable[[JsonObj], Any]

_NAME_COL = {"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": "Name must be unique within a namespace."}
_AGE_COL = {"name": "Age", "type": "string", "format": "", "priority": 0,
            "description": "CreationTimestamp is a timestamp representing the server time "
                           "when this object was created."}


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """Kubernetes' short duration format: 45s, 5m, 3h, 2d."""
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 120):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def jsonpath(obj: Any, path: str) -> Any:
    """The subset of JSONPath printer columns use: .a.b, [n], [*] and [?(@.k=="v")]."""
    tokens = re.findall(r"\.([A-Za-z0-9_\-]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.]+)==['\"](.*?)['\"]\)\]",
                        path)
    values = [obj]
    for field, index, key, want in tokens:
        nxt: list[Any] = []
        for value in values:
            if field and isinstance(value, dict) and field in value:
                nxt.append(value[field])
            elif index == "*" and isinstance(value, list):
                nxt.extend(value)
            elif index and isinstance(value, list) and int(index) < len(value):
                nxt.append(value[int(index)])
            elif key and isinstance(value, list):
                nxt.extend(v for v in value if isinstance(v, dict) and str(v.get(key)) == want)
        values = nxt
    if not values:
        return None
    return values[0] if len(values) == 1 else ",".join(str(v) for v in values)


def _condition(obj: JsonObj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def _job_status(job: JsonObj) -> str:
    for kind, label in (("Failed", "Failed"), ("Complete", "Complete"),
                        ("Suspended", "Suspended"), ("FailureTarget", "FailureTarget")):
        if _condition(job, kind):
            return label
    return "Running"


def _pod_ready(pod: JsonObj) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(pod: JsonObj) -> str:
    """The STATUS kubectl prints: a container's waiting or terminated reason (Completed,
    Error, ...) over the phase, and Terminating once the Pod is being deleted."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase", "")
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, ended = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif ended is not None:
            reason = ended.get("reason") or f"ExitCode:{ended.get('exitCode', 0)}"
    return "Terminating" if pod["metadata"].get("deletionTimestamp") else reason


def _node_address(kind: str) -> Cell:
    return lambda n: next((a.get("address") for a in (n.get("status") or {}).get("addresses")
                           or () if a.get("type") == kind), "<none>")


def _node_info(key: str) -> Cell:
    return lambda n: ((n.get("status") or {}).get("nodeInfo") or {}).get(key, "<unknown>")


def _template_containers(key: str) -> Cell:
    return lambda j: ",".join(str(c.get(key, "")) for c in (
        ((j.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ())


def _selector(job: JsonObj) -> str:
    labels = ((job.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _regarding(event: JsonObj) -> str:
    """events.k8s.io names the object `regarding`, core/v1 `involvedObject`."""
    ref = event.get("regarding") or event.get("involvedObject") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _age(obj: JsonObj) -> str:
    return human_age(obj["metadata"].get("creationTimestamp"))


def _col(name: str, kind: str = "string", priority: int = 0) -> JsonObj:
    return {"name": name, "type": kind, "format": "", "description": name, "priority": priority}


BUILTIN: dict[str, list[tuple[JsonObj, Cell]]] = {
    "Job": [
        (_col("Status"), _job_status),
        (_col("Completions"), lambda j: f"{(j.get('status') or {}).get('succeeded', 0)}/"
                                         f"{(j.get('spec') or {}).get('completions', 1)}"),
        (_AGE_COL, _age),
        (_col("Containers", priority=1), _template_containers("name")),
        (_col("Images", priority=1), _template_containers("image")),
        (_col("Selector", priority=1), _selector),
    ],
    "Pod": [
        (_col("Ready"), _pod_ready),
        (_col("Status"), _pod_status),
        (_col("Restarts", "integer"), lambda p: sum(
            s.get("restartCount", 0) for s in (p.get("status") or {}).get("containerStatuses")
            or ())),
        (_AGE_COL, _age),
        (_col("IP", priority=1), lambda p: (p.get("status") or {}).get("podIP", "<none>")),
        (_col("Node", priority=1), lambda p: (p.get("spec") or {}).get("nodeName", "<none>")),
        (_col("Nominated Node", priority=1),
         lambda p: (p.get("status") or {}).get("nominatedNodeName", "<none>")),
        (_col("Readiness Gates", priority=1), lambda p: "<none>"),
    ],
    "Node": [
        (_col("Status"), lambda n: "Ready" if _condition(n, "Ready") else "NotReady"),
        (_col("Roles"), lambda n: ",".join(sorted(
            k.split("/", 1)[1] for k in (n["metadata"].get("labels") or {})
            if k.startswith("node-role.kubernetes.io/"))) or "<none>"),
        (_AGE_COL, _age),
        (_col("Version"), lambda n: ((n.get("status") or {}).get("nodeInfo") or {}).get(
            "kubeletVersion", "")),
        (_col("Internal-IP", priority=1), _node_address("InternalIP")),
        (_col("External-IP", priority=1), _node_address("ExternalIP")),
        (_col("OS-Image", priority=1), _node_info("osImage")),
        (_col("Kernel-Version", priority=1), _node_info("kernelVersion")),
        (_col("Container-Runtime", priority=1), _node_info("containerRuntimeVersion")),
    ],
    "Event": [
        (_col("Type"), lambda e: e.get("type", "")),
        (_col("Reason"), lambda e: e.get("reason", "")),
        (_col("Object"), _regarding),
        (_col("Message"), lambda e: e.get("note") or e.get("message") or ""),
    ],
    "Service": [
        (_col("Type"), lambda s: (s.get("spec") or {}).get("type", "")),
        (_col("Cluster-IP"), lambda s: (s.get("spec") or {}).get("clusterIP", "")),
        (_col("Port(s)"), lambda s: ",".join(
            f"{p.get('port')}/{p.get('protocol', 'TCP')}"
            for p in (s.get("spec") or {}).get("ports") or ()) or "<none>"),
        (_AGE_COL, _age),
    ],
    "Lease": [
        (_col("Holder"), lambda lease: (lease.get("spec") or {}).get("holderIdentity", "")),
        (_AGE_COL, _age),
    ],
    "Namespace": [
        (_col("Status"), lambda n: (n.get("status") or {}).get("phase", "")),
        (_AGE_COL, _age),
    ],
}


def _cell(path: str) -> Cell:
    return lambda obj: jsonpath(obj, path)


def _date_cell(cell: Cell) -> Cell:
    """Date columns are sent as ages, as the apiextensions table convertor does."""
    return lambda obj: human_age(cell(obj)) if cell(obj) else "<unknown>"


def _crd_columns(info: ResourceInfo) -> list[tuple[JsonObj, Cell]] | None:
    if info.crd is None:
        return None
    version: JsonObj = next((v for v in info.crd["spec"].get("versions") or ()
                    if v.get("name") == info.gvr.version), {})
    columns = version.get("additionalPrinterColumns")
    if not columns:
        return None
    out: list[tuple[JsonObj, Cell]] = []
    for col in columns:
        definition = {"name": col["name"], "type": col.get("type", "string"),
                      "format": col.get("format", ""), "description": col.get("description", ""),
                      "priority": col.get("priority", 0)}
        cell = _cell(col["jsonPath"])
        out.append((definition, _date_cell(cell) if definition["type"] == "date" else cell))
    return out


def table(info: ResourceInfo, items: list[JsonObj], meta: JsonObj, include: str) -> JsonObj:
    """A meta.k8s.io Table of `items`; `meta` is the list metadata (resourceVersion, and
    continue/remainingItemCount for a page)."""
    columns = _crd_columns(info) or BUILTIN.get(info.kind) or [(_AGE_COL, _age)]
    rows = []
    for obj in items:
        row: JsonObj = {"cells": [obj["metadata"]["name"], *(cell(obj) for _, cell in columns)]}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": obj["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [_NAME_COL, *(d for d, _ in columns)], "rows": rows}
