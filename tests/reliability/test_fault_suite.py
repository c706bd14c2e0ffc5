"""The fault suite: the workload of `scenario` (success, failure with restarts, suspend/resume,
exclusive placement under contention) on two controller replicas against the sim, with seeded API
faults on every verb and resource, dropped and expired watches, latency spikes, and replicas
crashed at random moments (leader failover). See `chaos` for the rates and docs/reliability.md
for the figures.

CI runs one fault-free run and one run at MODERATE rates with 4 crashes (seed fixed). Soak mode:
`JOBSET_SOAK=<runs>` adds `test_soak`, which runs that many seeds at MODERATE and at HEAVY rates
with 6 crashes each and prints a summary line per run (use `pytest -s`).
"""

from __future__ import annotations

import os

import pytest

from jobset_infra.api.constants import LEADER_ELECTION_ID
from jobset_infra.manifests import rbac
from tests.reliability.chaos import (
    HEAVY,
    MODERATE,
    Chaos,
    Outcome,
    Rates,
    describe,
    fault_free_terminal,
    run,
)

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]
SOAK = int(os.environ.get("JOBSET_SOAK", "0"))
CI_SEED = 7
_baseline: list[Outcome] = []


async def baseline() -> Outcome:
    """The fault-free run (once per session; plain data, so any test's loop may reuse it)."""
    if not _baseline:
        _baseline.append(await run(Chaos(seed=0)))
    return _baseline[0]


def assert_survived(outcome: Outcome, reference: Outcome) -> None:
    assert outcome.terminal == reference.terminal, "every JobSet ends as without faults"
    assert not outcome.violations, "\n".join(outcome.violations)
    # Bounded write volume: retries of faulted writes and re-creating what a crash interrupted
    # are allowed; anything like a hot loop is orders of magnitude above this.
    allowed = 2 * reference.workload_writes + outcome.injected + 10 * outcome.kills
    assert outcome.workload_writes <= allowed, describe(outcome)
    assert not outcome.quiet_writes, f"writes after everything finished: {outcome.quiet_writes}"


async def test_a_fault_free_run_ends_as_each_jobset_should() -> None:
    outcome = await baseline()
    assert outcome.terminal == fault_free_terminal()
    assert not outcome.violations, "\n".join(outcome.violations)
    assert outcome.injected == 0 and outcome.kills == 0
    assert not outcome.quiet_writes, "a controller with nothing to do writes nothing"


async def test_moderate_faults_crashes_and_failover_change_no_outcome() -> None:
    reference = await baseline()
    outcome = await run(Chaos(seed=CI_SEED, rates=MODERATE, kills=4))
    assert outcome.kills == 4
    assert outcome.injected >= 20, f"the faults fired: {describe(outcome)}"
    assert_survived(outcome, reference)


def granted() -> set[tuple[str, str, str]]:
    """(group, resource, verb) of the rendered ClusterRole and leader-election Role."""
    roles = (
        rbac.cluster_role("jobset-controller", {}),
        rbac.leader_election_role(
            "jobset-leader-election", "jobset-system", {}, LEADER_ELECTION_ID
        ),
    )
    return {
        (group, resource, verb)
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def exercised(outcome: Outcome) -> set[tuple[str, str, str]]:
    """(group, resource, verb) of every request the controllers sent during a run."""
    return {
        (group, f"{resource}/{sub}" if sub else resource, verb)
        for group, resource, verb, sub in outcome.requests
        if verb != "discovery"
    }


async def test_the_controller_calls_only_what_its_role_grants() -> None:
    calls = exercised(await baseline())
    assert calls, "requests were recorded"
    assert calls <= granted(), f"called but not granted: {sorted(calls - granted())}"


# That the Role grants nothing the controller never calls is shown by driving it through
# every behaviour: tests/integration/test_rbac_calls.py.


if SOAK:

    @pytest.mark.timeout(0)
    @pytest.mark.parametrize(
        ("rates", "label"), [(MODERATE, "moderate"), (HEAVY, "heavy")], ids=["moderate", "heavy"]
    )
    async def test_soak(rates: Rates, label: str) -> None:
        reference = await baseline()
        failures = []
        for seed in range(1, SOAK + 1):
            outcome = await run(Chaos(seed=seed, rates=rates, kills=6, deadline=120))
            print(f"soak {label} seed={seed} {describe(outcome)}", flush=True)
            try:
                assert_survived(outcome, reference)
            except AssertionError as err:
                failures.append(f"seed {seed}: {err}")
        assert not failures, "\n".join(failures)
