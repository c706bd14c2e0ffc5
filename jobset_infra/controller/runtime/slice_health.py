"""The slice-health ledger in the cluster: one ConfigMap the leader reads and writes.

The core plans `RecordDomainFailure` when a child Job that held a node pool fails; this shell
merges the records into the ConfigMap `jobset-slice-health` of the controller's namespace
(read-modify-write with the ConfigMap's resourceVersion, so two writers never lose a record)
and keeps the merged ledger in memory, from which `kept_out` computes the pools to keep out
(`placement.pool_health`, pure). A new leader (after a restart or a leader change) loads the
ConfigMap before its first reconcile, so what its predecessor recorded still counts.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.resilience import LEDGER_CONFIGMAP, LEDGER_KEY
from jobset_infra.controller.runtime.kube import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    KubeClient,
    NotFoundError,
)
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.resources import CONFIGMAPS
from jobset_infra.placement.pool_health import (
    DomainFailure,
    HealthPolicy,
    KeptOut,
    kept_out,
    ledger_from_text,
    ledger_text,
    recorded,
)

log = logging.getLogger(__name__)

_ATTEMPTS = 5  # read-modify-write rounds before a conflict is left to the pass's retry


def health_policy(config: ControllerConfig) -> HealthPolicy:
    """The keep-out policy of a controller config (half-life 0 turns it off)."""
    half_life = config.placement.keep_out_half_life
    return HealthPolicy(
        half_life_seconds=half_life or 1.0,
        threshold=config.placement.keep_out_threshold,
        enabled=half_life > 0,
    )


class SliceHealthLedger:
    """The leader's copy of the ledger, and the writes that keep the ConfigMap in step."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        policy: HealthPolicy,
        metrics: Metrics,
        wall: Callable[[], datetime.datetime],
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.policy = policy
        self.metrics = metrics
        self._wall = wall
        self.failures: tuple[DomainFailure, ...] = ()

    @classmethod
    def for_config(
        cls,
        client: KubeClient,
        config: ControllerConfig,
        metrics: Metrics,
        wall: Callable[[], datetime.datetime],
    ) -> SliceHealthLedger:
        """The ledger in the controller's (leader election) namespace, with its config's policy."""
        namespace = config.leader_election.resource_namespace
        return cls(client, namespace, health_policy(config), metrics, wall)

    async def load(self) -> None:
        """Read the ledger from the cluster (a new leader's first step); a ledger that cannot
        be read is logged and left empty: placement goes on, only without the history."""
        if not self.policy.enabled:
            return
        try:
            stored = await self._read()
        except ApiError as err:
            log.warning("slice-health ledger %s/%s not readable: %s",
                        self.namespace, LEDGER_CONFIGMAP, err)
            return
        self.failures = ledger_from_text(_text(stored))
        log.info("slice-health ledger loaded",
                 extra={"failures": len(self.failures), "configMap": LEDGER_CONFIGMAP})

    async def record(self, new: Sequence[DomainFailure]) -> None:
        """Merge `new` failures into the ConfigMap (in memory only when it cannot be written;
        a write race lost every time raises)."""
        known = {_identity(f) for f in self.failures}
        fresh = [f for f in new if _identity(f) not in known]
        if not fresh or not self.policy.enabled:
            return
        try:
            await self._persist(fresh)
        except (ConflictError, AlreadyExistsError):
            raise
        except ApiError as err:
            # The ledger's namespace missing (a controller run out of cluster), or no permission:
            # keep the history in memory and go on; a restart must never wait on its record.
            self.failures = recorded(self.failures, fresh, self._wall(), self.policy)
            log.warning("slice-health ledger %s/%s not written (kept in memory only): %s",
                        self.namespace, LEDGER_CONFIGMAP, err)
        for failure in fresh:
            self.metrics.domain_failures.labels(cause=failure.cause.value).inc()
            log.warning("pool failure recorded", extra={
                "pool": failure.domain, "cause": failure.cause.value, "job": failure.job,
                "detail": failure.detail})

    async def _persist(self, fresh: Sequence[DomainFailure]) -> None:
        """Merge `fresh` into the stored ledger, retrying a lost write race."""
        for attempt in range(_ATTEMPTS):
            stored = await self._read()
            ledger = recorded(ledger_from_text(_text(stored)), fresh, self._wall(), self.policy)
            try:
                await self._write(stored, ledger_text(ledger))
            except (ConflictError, AlreadyExistsError):
                if attempt == _ATTEMPTS - 1:
                    raise
                continue
            self.failures = ledger
            return

    def kept_out(self) -> dict[tuple[str, str], KeptOut]:
        """The domains kept out now (and the gauge set to their number)."""
        out = kept_out(self.failures, self._wall(), self.policy)
        self.metrics.domains_kept_out.set(len(out))
        return out

    async def _read(self) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await self.client.get(
                CONFIGMAPS, LEDGER_CONFIGMAP, self.namespace)
        except NotFoundError:
            return None
        return found

    async def _write(self, stored: Mapping[str, Any] | None, text: str) -> None:
        if stored is None:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": LEDGER_CONFIGMAP, "namespace": self.namespace},
                    "data": {LEDGER_KEY: text}}
            await self.client.create(CONFIGMAPS, body, self.namespace)
            return
        body = {**stored, "data": {**(stored.get("data") or {}), LEDGER_KEY: text}}
        await self.client.replace(CONFIGMAPS, body)


def _text(stored: Mapping[str, Any] | None) -> str | None:
    data = (stored or {}).get("data") or {}
    text = data.get(LEDGER_KEY) if isinstance(data, Mapping) else None
    return text if isinstance(text, str) else None


def _identity(failure: DomainFailure) -> tuple[str, str, str]:
    return (failure.job_uid, failure.topology_key, failure.domain)
