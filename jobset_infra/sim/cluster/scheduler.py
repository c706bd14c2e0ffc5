"""The simulated cluster's scheduler: binds pending Pods to Nodes, in process, on the Store.

    scheduler = Scheduler(sim.store)        # or sim.add_component(Scheduler(sim.store))
    await scheduler.start()
    ...
    scheduler.placements()                  # {"ns/pod": "node"} of live bound Pods
    await scheduler.stop()

It honours what the kube-scheduler's filters check and our tests rely on: nodeSelector, required
node affinity, required pod affinity and anti-affinity by topology key (both directions: a Pod may
not land where a running Pod's anti-affinity forbids it), taints and tolerations (NoSchedule,
NoExecute), allocatable resources (pods, cpu, memory, google.com/tpu, any extended resource),
cordoned and not-ready Nodes, and scheduling gates. Not simulated: preemption, scoring (the first
fitting Node in natural name order wins), preferred terms, namespaceSelector label matching (a
non-empty namespaceSelector is treated as all namespaces, like `{}`).

Binding sets `spec.nodeName` (one write per Pod). A Pod that fits nowhere gets the condition
`PodScheduled=False, reason=Unschedulable` with a kube-scheduler-like message and is retried when a
Node or a bound Pod changes. Pods bound to a Node that is deleted are marked Failed with a
`DisruptionTarget` condition, as Kubernetes' pod garbage collector does.

Cost: candidate Nodes come from a label index (a nodeSelector on a node-pool label looks at that
pool's Nodes only); pod (anti-)affinity keeps, per distinct term, a count of matching Pods per
topology value, updated as Pods bind and go, so thousands of Pods never cost O(pods^2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final

from jobset_infra.placement.scheduling_terms import matches_node_affinity
from jobset_infra.sim.apiserver import pod_updates
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.patch import MERGE_PATCH
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.watch import Watch
from jobset_infra.sim.cluster import events
from jobset_infra.sim.cluster.background import Background, Component
from jobset_infra.sim.cluster.scheduling import (
    BLOCKING_EFFECTS,
    Ask,
    Bound,
    NodeInfo,
    Term,
    live,
    natural_key,
    parse_quantity,
    pod_requests,
    terms,
    tolerated,
)

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
NODES: Final = GVR("", "v1", "nodes")
PODS: Final = GVR("", "v1", "pods")
BATCH: Final = 256  # Pods scheduled before yielding to the event loop
DEFAULT_SCHEDULER: Final = "default-scheduler"  # pods naming another scheduler are left alone


class Scheduler(Component):
    """Binds pending Pods of the simulated cluster to Nodes (see module docstring)."""

    def __init__(self, store: Store, *, batch: int = BATCH) -> None:
        self.store, self.batch = store, batch
        self.nodes: dict[str, NodeInfo] = {}
        self._order: list[str] | None = []
        self._index: dict[tuple[str, str], set[str]] = {}
        self.bound: dict[tuple[str, str], Bound] = {}
        self._on_node: dict[str, set[tuple[str, str]]] = {}
        self._pending: dict[tuple[str, str], None] = {}
        self._parked: dict[tuple[str, str], str] = {}  # unschedulable Pod -> message written
        self._counts: dict[str, tuple[Term, Counter[str]]] = {}  # term id -> value counts
        self._anti: dict[str, tuple[Term, Counter[str]]] = {}  # running Pods' anti terms
        self._wake = asyncio.Event()
        self.background = Background()
        self.binds = 0

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        nodes = self.background.track(self.store.watch(NODES))
        pods = self.background.track(self.store.watch(PODS))
        self.background.spawn(self._follow(nodes, self._node_event), "sim-sched-nodes")
        self.background.spawn(self._follow(pods, self._pod_event), "sim-sched-pods")
        self.background.spawn(self._work(), "sim-scheduler")

    def placements(self) -> dict[str, str]:
        """Return "<namespace>/<pod>" -> node for every live bound Pod."""
        return {f"{ns}/{name}": b.node for (ns, name), b in self.bound.items()}

    # --- events ---------------------------------------------------------------------------

    async def _follow(self, watch: Watch, handle: Callable[[str, JsonObj], None]) -> None:
        async for kind, obj in watch:
            try:
                handle(kind, obj)
            except Exception:  # a malformed object must not stop the scheduler
                log.exception("sim scheduler: cannot handle %s event", kind)

    def _node_event(self, kind: str, node: JsonObj) -> None:
        name = node["metadata"]["name"]
        # Pods on this Node are counted under its labels: uncount them, swap the Node, count again.
        on_node = [self.bound[k] for k in self._on_node.get(name, ())]
        for bound in on_node:
            self._count(bound, -1)
        old = self.nodes.pop(name, None)
        for key, value in old.labels.items() if old else ():
            self._index.get((key, value), set()).discard(name)
        self._order = None
        if kind == "DELETED":
            self._orphan_pods(name)
        elif kind in ("ADDED", "MODIFIED"):
            status, spec = node.get("status") or {}, node.get("spec") or {}
            conditions = status.get("conditions") or []
            ready = not conditions or any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            )
            raw = status.get("allocatable")
            entry = NodeInfo(
                name,
                dict(node["metadata"].get("labels") or {}),
                list(spec.get("taints") or []),
                {k: parse_quantity(v) for k, v in raw.items()} if raw else None,
                ready and not spec.get("unschedulable"),
            )
            self.nodes[name] = entry
            for key, value in entry.labels.items():
                self._index.setdefault((key, value), set()).add(name)
            for bound in on_node:
                self._count(bound, +1)
        self._retry_parked()

    def _pod_event(self, kind: str, pod: JsonObj) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        key = (meta.get("namespace", ""), meta["name"])
        if kind == "DELETED" or not live(pod):
            self._pending.pop(key, None)
            self._parked.pop(key, None)
            if self._release(key):
                self._retry_parked()
            return
        if kind not in ("ADDED", "MODIFIED"):
            return
        if spec.get("nodeName"):
            self._pending.pop(key, None)
            self._parked.pop(key, None)
            if key not in self.bound:
                self._account(key, pod, spec["nodeName"])
        elif (
            key not in self._parked
            and not spec.get("schedulingGates")
            and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
        ):
            self._pending[key] = None
            self._wake.set()

    def _retry_parked(self) -> None:
        for key in self._parked:
            self._pending[key] = None
        if self._pending:
            self._wake.set()

    # --- bookkeeping ----------------------------------------------------------------------

    def _value(self, node: str, topology_key: str) -> str | None:
        entry = self.nodes.get(node)
        return entry.labels.get(topology_key) if entry else None

    def _account(self, key: tuple[str, str], pod: JsonObj, node: str) -> None:
        spec, ns = pod.get("spec") or {}, key[0]
        bound = Bound(
            node,
            ns,
            dict(pod["metadata"].get("labels") or {}),
            pod_requests(spec),
            terms(spec, "podAntiAffinity", ns),
        )
        self.bound[key] = bound
        self._on_node.setdefault(node, set()).add(key)
        self._count(bound, +1)

    def _release(self, key: tuple[str, str]) -> bool:
        bound = self.bound.pop(key, None)
        if bound is not None:
            self._on_node.get(bound.node, set()).discard(key)
            self._count(bound, -1)
        return bound is not None

    def _count(self, bound: Bound, delta: int) -> None:
        entry = self.nodes.get(bound.node)
        if entry is not None:
            entry.used.update({k: v * delta for k, v in bound.requests.items()})
        for term, counts in self._counts.values():
            value = self._value(bound.node, term.topology_key)
            if value is not None and term.matches(bound.namespace, bound.labels):
                counts[value] += delta
        for term in bound.anti:
            value = self._value(bound.node, term.topology_key)
            if value is not None:
                self._anti.setdefault(term.id, (term, Counter()))[1][value] += delta

    def _domains_with(self, term: Term) -> Counter[str]:
        """Return how many live bound Pods matching `term` run in each topology value."""
        if term.id not in self._counts:
            counts: Counter[str] = Counter()
            for bound in self.bound.values():
                value = self._value(bound.node, term.topology_key)
                if value is not None and term.matches(bound.namespace, bound.labels):
                    counts[value] += 1
            self._counts[term.id] = (term, counts)
        return self._counts[term.id][1]

    def _orphan_pods(self, node: str) -> None:
        for key in list(self._on_node.pop(node, ())):
            self._release(key)
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
            }
            with contextlib.suppress(StatusError):
                pod = self.store.get(PODS, key[1], key[0])
                conditions = [*(pod.get("status") or {}).get("conditions", []), condition]
                self._patch_status(key, {"phase": "Failed", "conditions": conditions})

    def _patch_status(self, key: tuple[str, str], status: JsonObj) -> None:
        """Merge `status` into a Pod's status; a Pod deleted meanwhile is left alone."""
        with contextlib.suppress(StatusError):
            self.store.patch(
                PODS, key[1], key[0], MERGE_PATCH, {"status": status}, subresource="status"
            )

    # --- scheduling -----------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                binds = self.binds
                for key in list(self._pending)[: self.batch]:
                    self._pending.pop(key, None)
                    self._schedule(key)
                if self.binds != binds:
                    self._retry_affinity_waiters()
                await asyncio.sleep(0)

    def _retry_affinity_waiters(self) -> None:
        # A Pod waiting for pod affinity may fit once another Pod bound; nothing else changes
        # by a bind except resources taken, which never makes a parked Pod fit.
        for key, message in self._parked.items():
            if "pod affinity" in message:
                self._pending[key] = None

    def _node_order(self) -> list[str]:
        if self._order is None:
            self._order = sorted(self.nodes, key=natural_key)
        return self._order

    def _candidates(self, selector: Mapping[str, str]) -> list[str]:
        if not selector:
            return self._node_order()
        sets = sorted((self._index.get((k, v), set()) for k, v in selector.items()), key=len)
        found = set.intersection(*sets)
        return [n for n in self._node_order() if n in found]

    def _schedule(self, key: tuple[str, str]) -> None:
        pod = self.store.peek(PODS, key[0], key[1])
        if pod is None or not live(pod) or (pod.get("spec") or {}).get("nodeName"):
            return
        spec = pod["spec"]
        node, why = self._pick(key[0], dict(pod["metadata"].get("labels") or {}), spec)
        if node is None:
            self._park(key, pod, why)
            return
        try:
            bound = pod_updates.bind(self.store, key[0], key[1], node)
        except StatusError:
            return  # deleted meanwhile; its event tells us
        self.binds += 1
        self._account(key, bound, node)

    def _pick(self, ns: str, labels: dict[str, str], spec: JsonObj) -> tuple[str | None, str]:
        ask = Ask(
            ns,
            labels,
            pod_requests(spec),
            spec.get("tolerations") or [],
            spec.get("affinity") or {},
            terms(spec, "podAffinity", ns),
            self._forbidden(ns, labels, terms(spec, "podAntiAffinity", ns)),
        )
        reasons: Counter[str] = Counter()
        candidates = self._candidates(spec.get("nodeSelector") or {})
        reasons["node(s) didn't match Pod's node affinity/selector"] = len(self.nodes) - len(
            candidates
        )
        for name in candidates:
            why = self._filter(self.nodes[name], ask)
            if not why:
                return name, ""
            reasons[why] += 1
        detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()) if n)
        return None, f"0/{len(self.nodes)} nodes are available: {detail or 'no nodes'}."

    def _forbidden(
        self, ns: str, labels: dict[str, str], apart: tuple[Term, ...]
    ) -> list[tuple[str, Counter[str]]]:
        """Return (topology key, values) pairs this Pod may not join."""
        out = [(t.topology_key, self._domains_with(t)) for t in apart]
        for term, counts in self._anti.values():  # running Pods that repel this one
            if term.matches(ns, labels):
                out.append((term.topology_key, counts))
        return out

    def _filter(self, node: NodeInfo, ask: Ask) -> str:
        """Return "" if the Pod fits the Node, else the kube-scheduler-like reason it does not."""
        if not node.usable:
            return "node(s) were unschedulable or not ready"
        if not matches_node_affinity(ask.affinity, node.labels):
            return "node(s) didn't match Pod's node affinity/selector"
        for taint in node.taints:
            if taint.get("effect") in BLOCKING_EFFECTS and not tolerated(taint, ask.tolerations):
                return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value')}}}"
        short = node.room_for(ask.requests)
        if short:
            return f"Insufficient {short}"
        for term in ask.together:
            value, counts = node.labels.get(term.topology_key), self._domains_with(term)
            alone = not +counts and term.matches(ask.namespace, ask.labels)  # a group's first Pod
            if value is None or not (counts[value] > 0 or alone):
                return "node(s) didn't match pod affinity rules"
        for topology_key, counts in ask.forbidden:
            value = node.labels.get(topology_key)
            if value is not None and counts[value] > 0:
                return "node(s) didn't match pod anti-affinity rules"
        return ""

    def _park(self, key: tuple[str, str], pod: JsonObj, message: str) -> None:
        if self._parked.get(key) == message:
            return
        self._parked[key] = message
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
        }
        others = [
            c
            for c in (pod.get("status") or {}).get("conditions") or ()
            if c.get("type") != "PodScheduled"
        ]
        self._patch_status(key, {"conditions": [*others, condition]})
        self._record_failure(pod, message)

    def _record_failure(self, pod: JsonObj, message: str) -> None:
        """A FailedScheduling Warning event for the Pod, as kube-scheduler records it (so that
        `kubectl describe pod` shows why it waits); once per distinct reason."""
        events.warn(self.store, {"kind": "Pod", "apiVersion": "v1", **pod}, "FailedScheduling",
                    message, component="default-scheduler", action="Scheduling")
