"""The Pulumi side of pool changes under running JobSets: check at preview, drain at update.

`PoolChangeGuard` runs in the stack program between the controller (its namespace) and the
pools (docs/resilience.md, "Pool changes that know about running JobSets"):

1. over the cluster's kubeconfig (an output, so it runs whenever the cluster exists, at preview
   too), it reads the pool record, the JobSets, Jobs and Workloads (`stack.live`), and asks
   `stack.pool_guard.guard` what this update does to them. Refused: the program fails with the
   list and the fix (`pulumi.RunError`: one error line, no traceback). With the opt-in, at
   update only, it cordons the changed pools and suspends the JobSets at risk;
2. the drain step (ConfigMap `DRAIN_STEP`, the same data every time) is registered only once
   that result is known, so after the drain; the pools and Kueue depend on it, so the engine
   changes them only after the JobSets stopped. The stack exports what was (or, at preview,
   will be) drained as `drainedJobSets`;
3. `finish(changed, ready)`: once the pools and the platform are updated, the pool record
   (ConfigMap `POOL_RECORD`) is written for the next run, and every JobSet a drain marked is
   resumed (at update only); the stack exports their names as `resumedJobSets`.

`kwok_pools(config, ...)`: a local stack's own TPU pools (`jobset-infra:kwok_pools`) as kwok
Nodes, the local stand-in for GKE node pools: a changed setting replaces a pool's Nodes (deleted
before their replacements are created, as GKE recreates a pool of the same name).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from jobset_infra.components.jobset_system import JobSetSystem
from jobset_infra.controller.runtime.auth import AuthError
from jobset_infra.controller.runtime.kube_errors import ApiError
from jobset_infra.placement.drain import DRAINED_ANNOTATION, AtRiskJobSet
from jobset_infra.stack import live as live_cluster
from jobset_infra.stack.config import StackConfig
from jobset_infra.stack.pool_guard import (
    POOL_RECORD,
    LiveView,
    drained_keys,
    guard_stack,
    pool_record_data,
)
from jobset_infra.tpu.node_pools import kwok_node, node_manifests, parse_nodes
from jobset_infra.tpu.pool_changes import pool_settings

__all__ = ["DRAIN_STEP", "LIVE", "Live", "PoolChangeGuard", "kwok_pools"]

DRAIN_STEP: Final = "jobset-infra-pool-drain"
"""The ConfigMap the pools and Kueue depend on: created (or kept) once the drain is done."""
DRAIN_STEP_TEXT: Final = ("slice pools change only after the running JobSets on them are drained "
                          "(docs/resilience.md)")
POOL_SETTINGS_ANNOTATION: Final = "jobset-infra.dev/pool-settings"
"""On a kwok pool's Node: a digest of its pool's settings; a change replaces the Node."""
_EPOCH: Final = datetime(2026, 1, 1, tzinfo=UTC)  # Node manifests' timestamps: stable inputs
# What talking to the cluster may raise: said in one line each, never a traceback.
_CLUSTER_ERRORS: Final = (AuthError, ApiError, OSError, TimeoutError)


@dataclass(frozen=True)
class Live:
    """The cluster reads and writes the guard makes (`stack.live`; tests pass fakes)."""

    read: Callable[[str, str | None, str], Awaitable[LiveView]]
    drain: Callable[[str, str | None, Sequence[str], Sequence[AtRiskJobSet]], Awaitable[None]]
    resume: Callable[[str, str | None], Awaitable[list[str]]]
    kubeconfig: str | None = None
    """Read this cluster (kubeconfig text) instead of the stack's own: `jobset-infra plan
    --kubeconfig` runs the program under Pulumi's mocks, where the stack's cluster is a mock."""
    context: str | None = None


LIVE: Final = Live(live_cluster.read_live, live_cluster.drain, live_cluster.resume)


class PoolChangeGuard:
    """Checks (and with the opt-in drains) the running JobSets a pool change would kill."""

    def __init__(self, config: StackConfig, provider: k8s.Provider, *,
                 kubeconfig: pulumi.Input[str], context: str | None, system: JobSetSystem,
                 live: Live | None) -> None:
        if live is not None and live.kubeconfig is not None:
            kubeconfig, context = live.kubeconfig, live.context
        self._config, self._provider, self._context, self._live = (
            config, provider, context, live)
        self._namespace = config.controller.namespace
        self._kubeconfig = pulumi.Output.from_input(kubeconfig)
        self._current = pool_settings(config.pool_plans())
        self.drained: pulumi.Output[list[str]] = pulumi.Output.unsecret(
            self._kubeconfig.apply(self._check))
        # Its data is the same every time (no diff of its own), but known only once the drain
        # is done: the engine registers it, and so anything that depends on it, after that.
        self.anchor = k8s.core.v1.ConfigMap(
            "pool-drain-step",
            metadata={"name": DRAIN_STEP, "namespace": self._namespace},
            data=self.drained.apply(lambda _: {"step": DRAIN_STEP_TEXT}),
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[system.namespace_object]))
        self.resumed: pulumi.Output[list[str]] | None = None

    async def _check(self, kubeconfig: str) -> list[str]:
        if not kubeconfig or self._live is None:
            return []
        try:
            view = await self._live.read(kubeconfig, self._context, self._namespace)
        except _CLUSTER_ERRORS as err:
            unread = (f"cannot read the cluster's JobSets ({err}), so which running JobSets "
                      "this update's pool changes would kill is unknown")
            if pulumi.runtime.is_dry_run():  # a preview of a stack whose cluster is not up
                pulumi.log.warn(unread)
                return []
            raise pulumi.RunError(f"{unread}; nothing was changed") from None
        decision, problem = guard_stack(self._config, view)
        if problem:
            pulumi.log.warn(problem)
        if decision.refused:
            raise pulumi.RunError(decision.message())
        if decision.at_risk:
            pulumi.log.warn(decision.message())
        if self._config.drain_jobsets and decision.changes and not pulumi.runtime.is_dry_run():
            pools = [change.pool for change in decision.changes]
            try:
                await self._live.drain(kubeconfig, self._context, pools, decision.drains)
            except _CLUSTER_ERRORS as err:
                raise pulumi.RunError(
                    f"draining before the pool change failed ({err}); no pool was changed. "
                    "JobSets already suspended keep the annotation "
                    f"{DRAINED_ANNOTATION} and are resumed by the next successful update"
                ) from None
        return drained_keys(decision.drains)

    def finish(self, changed: Sequence[pulumi.Resource], ready: Sequence[pulumi.Resource]
               ) -> None:
        """Record the pools once `changed` and `ready` are done, then resume drained JobSets."""
        after = [self.anchor, *changed, *ready]
        record = k8s.core.v1.ConfigMap(
            "pool-record",
            metadata={"name": POOL_RECORD, "namespace": self._namespace},
            data=pool_record_data(self._current),
            opts=pulumi.ResourceOptions(provider=self._provider, depends_on=after))
        done = pulumi.Output.all(record.id, self._kubeconfig, *(_done(r) for r in after))
        self.resumed = pulumi.Output.unsecret(done.apply(lambda v: self._resume(v[1])))

    async def _resume(self, kubeconfig: str) -> list[str]:
        if not kubeconfig or self._live is None or pulumi.runtime.is_dry_run():
            return []
        try:
            return await self._live.resume(kubeconfig, self._context)
        except _CLUSTER_ERRORS as err:
            raise pulumi.RunError(
                f"the pools changed, but resuming the drained JobSets failed ({err}); run "
                f"`pulumi up` again: it resumes every JobSet still annotated "
                f"{DRAINED_ANNOTATION}") from None


def _done(resource: pulumi.Resource) -> pulumi.Output[Any]:
    """An output that resolves once `resource` is done (a component: once registered)."""
    if isinstance(resource, pulumi.CustomResource):
        return resource.id
    return resource.urn


def kwok_pools(config: StackConfig, kubeconfig: str, after: pulumi.Resource
               ) -> list[pulumi.Resource]:
    """The Nodes of the stack's own kwok pools (none unless `kwok_pools` is set)."""
    if not config.kwok_pools:
        return []
    # Created with a plain POST, as `cluster up` creates its kwok Nodes: kwok reports the
    # allocatable (TPU chips) a Node is created with, so its status must reach the API server
    # as given (whether the provider's server-side apply sends a Node's status is unchecked).
    provider = k8s.Provider("kwok-pools", kubeconfig=pulumi.Output.secret(kubeconfig),
                            context=config.context, enable_server_side_apply=False)
    settings = pool_settings(config.kwok_pool_plans())
    nodes: list[pulumi.Resource] = []
    for pool in parse_nodes(config.kwok_pools):
        digest = hashlib.sha256(json.dumps(settings[pool.name], sort_keys=True).encode())
        for manifest in node_manifests([pool], _EPOCH):
            node = kwok_node(manifest)
            node["metadata"]["annotations"][POOL_SETTINGS_ANNOTATION] = digest.hexdigest()[:16]
            nodes.append(pulumi.CustomResource(
                "kubernetes:core/v1:Node", node["metadata"]["name"], node,
                opts=pulumi.ResourceOptions(
                    provider=provider, depends_on=[after],
                    replace_on_changes=[f'metadata.annotations["{POOL_SETTINGS_ANNOTATION}"]'],
                    delete_before_replace=True)))
    return nodes
