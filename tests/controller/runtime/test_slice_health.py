"""The slice-health ledger's shell: one ConfigMap, read-modify-write, read by a new leader."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.resilience import LEDGER_CONFIGMAP, LEDGER_KEY, Cause
from jobset_infra.controller.runtime.kube import ConflictError, NotFoundError
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.slice_health import SliceHealthLedger, health_policy
from jobset_infra.placement.pool_health import DomainFailure

T0 = datetime(2026, 12, 2, 8, 0, 0, tzinfo=UTC)
KEY = "cloud.google.com/gke-nodepool"
NS = "jobset-system"


class FakeConfigMaps:
    """The API server's side of one ConfigMap: resourceVersions, 409 on a stale write, and a
    number of writes to refuse with 409 (another writer got there first)."""

    def __init__(self, conflicts: int = 0) -> None:
        self.stored: dict[str, Any] | None = None
        self.version = 0
        self.conflicts = conflicts
        self.writes = 0

    async def get(self, res: Any, name: str, namespace: str) -> dict[str, Any]:
        if self.stored is None or name != LEDGER_CONFIGMAP:
            raise NotFoundError(404, "NotFound", "not found")
        return copy.deepcopy(self.stored)

    async def create(self, res: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        return self._write(body, expected=None)

    async def replace(self, res: Any, body: dict[str, Any]) -> dict[str, Any]:
        return self._write(body, expected=body["metadata"].get("resourceVersion"))

    def _write(self, body: dict[str, Any], expected: str | None) -> dict[str, Any]:
        current = None if self.stored is None else self.stored["metadata"]["resourceVersion"]
        if self.conflicts or expected != current:
            self.conflicts = max(0, self.conflicts - 1)
            self.version += 1  # someone else wrote
            if self.stored is not None:
                self.stored["metadata"]["resourceVersion"] = str(self.version)
            raise ConflictError(409, "Conflict", "the object has been modified")
        self.version += 1
        self.writes += 1
        self.stored = copy.deepcopy(body)
        self.stored["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.stored)


def _failure(uid: str, pool: str = "pool-0", minutes: float = 0) -> DomainFailure:
    return DomainFailure(KEY, pool, Cause.NODE_NOT_READY, T0 + timedelta(minutes=minutes),
                         f"train/{uid}", uid, "node n0 (pool pool-0) is NotReady")


def _ledger(api: FakeConfigMaps, minutes: float = 1, config: ControllerConfig | None = None
            ) -> tuple[SliceHealthLedger, Metrics]:
    metrics = Metrics()
    policy = health_policy(config or ControllerConfig())
    wall = lambda: T0 + timedelta(minutes=minutes)  # noqa: E731
    return SliceHealthLedger(api, NS, policy, metrics, wall), metrics  # type: ignore[arg-type]


async def test_a_new_leader_reads_back_what_its_predecessor_recorded() -> None:
    api = FakeConfigMaps()
    first, metrics = _ledger(api)
    await first.record([_failure("u1")])
    await first.record([_failure("u1")])  # the same failure again: no write, no count
    assert api.writes == 1
    assert metrics.sample("jobset_topology_domain_failures_total", {"cause": "node_not_ready"}) == 1
    successor, successor_metrics = _ledger(api)
    assert successor.kept_out() == {}  # nothing known before the ledger is loaded
    await successor.load()
    assert [f.job_uid for f in successor.failures] == ["u1"]
    assert list(successor.kept_out()) == [(KEY, "pool-0")]
    assert successor_metrics.sample("jobset_topology_domains_kept_out") == 1


async def test_a_write_that_lost_a_race_is_merged_again_and_nothing_is_lost() -> None:
    api = FakeConfigMaps()
    ledger, _ = _ledger(api)
    await ledger.record([_failure("u1")])
    api.conflicts = 2
    await ledger.record([_failure("u2", "pool-1")])
    stored = api.stored["data"][LEDGER_KEY] if api.stored else ""
    assert '"u1"' in stored and '"u2"' in stored


async def test_a_ledger_that_keeps_losing_the_race_leaves_the_retry_to_the_pass() -> None:
    api = FakeConfigMaps(conflicts=99)
    ledger, _ = _ledger(api)
    with pytest.raises(ConflictError):
        await ledger.record([_failure("u1")])
    assert ledger.failures == ()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("not json", id="text that is not JSON is an empty ledger"),
        pytest.param('{"failures": [{"domain": 1}]}', id="entries that do not parse are skipped"),
    ],
)
async def test_a_ledger_edited_by_hand_never_stops_the_controller(text: str) -> None:
    api = FakeConfigMaps()
    api.stored = {"metadata": {"name": LEDGER_CONFIGMAP, "resourceVersion": "1"},
                  "data": {LEDGER_KEY: text}}
    ledger, _ = _ledger(api)
    await ledger.load()
    assert ledger.failures == ()
    await ledger.record([_failure("u1")])
    assert [f.job_uid for f in ledger.failures] == ["u1"]


async def test_a_half_life_of_zero_keeps_nothing_out_and_writes_nothing() -> None:
    api = FakeConfigMaps()
    config = ControllerConfig.from_dict({"placement": {"keepOutHalfLife": "0s"}})
    ledger, _ = _ledger(api, config=config)
    await ledger.record([_failure("u1")])
    assert api.stored is None and ledger.kept_out() == {}


class NoNamespace(FakeConfigMaps):
    """The controller run out of cluster: its namespace does not exist, so the create 404s."""

    async def create(self, res: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        raise NotFoundError(404, "NotFound", f'namespaces "{namespace}" not found')


async def test_a_ledger_that_cannot_be_written_keeps_the_failure_in_memory_and_goes_on() -> None:
    # It raised before, failing every pass of the JobSet: the sim demo's restart never came.
    api = NoNamespace()
    ledger, metrics = _ledger(api)
    await ledger.record([_failure("u1")])
    assert api.stored is None
    assert [f.job_uid for f in ledger.failures] == ["u1"]
    assert list(ledger.kept_out()) == [(KEY, "pool-0")]
    assert metrics.sample("jobset_topology_domain_failures_total", {"cause": "node_not_ready"}) == 1
