"""The children tallied one Job event at a time equal the full classification and counts after
any sequence of events (and so do the names, the missing-Job check, the Jobs the recovery phase
counts ready and the failing Jobs it reads from the tally, the Jobs suspending patches and those
elastic scaling patches), and a pass given the tally plans what a pass without it plans."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api.features import FeatureGates
from jobset_infra.api.models import ReplicatedJob
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.child_jobs import pending_jobs
from jobset_infra.controller.core.child_tally import ChildTally, TallyBasis, tally_basis
from jobset_infra.controller.core.classify import ChildJobs, classify_child_jobs
from jobset_infra.controller.core.elastic import scaling_updates
from jobset_infra.controller.core.recovery import failures_of, phase_of, ready_in_attempt
from jobset_infra.controller.core.replicated_jobs_status import count_replicated_jobs
from jobset_infra.controller.core.suspend_resume import suspend_jobs
from jobset_infra.controller.core.types import ChildJob, CoreConfig, JobCondition, Observed, Plan
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset

UID = "js-uid"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = [f"js-{r}-{i}" for r in ("w", "v") for i in range(4)]
OUTCOMES = {
    "running": (),
    "failing": (JobCondition(c.JOB_CONDITION_FAILURE_TARGET, "True", "BackoffLimitExceeded"),),
    "failed": (JobCondition(c.JOB_CONDITION_FAILED, "True", "BackoffLimitExceeded"),),
    "complete": (JobCondition(c.JOB_CONDITION_COMPLETE, "True"),),
}


@st.composite
def child_jobs(draw: st.DrawFn) -> ChildJob:
    name = draw(st.sampled_from(NAMES))
    rjob, index = name.split("-")[1], name.split("-")[2]
    keys = {c.REPLICATED_JOB_NAME_KEY: rjob, c.JOB_INDEX_KEY: index}
    attempt = draw(st.sampled_from([None, "0", "1", "2", "x"]))
    if attempt is not None:
        keys[c.RESTARTS_KEY] = attempt
    job_attempt = draw(st.sampled_from([None, "0", "1"]))
    if job_attempt is not None:
        keys[c.JOB_RESTART_ATTEMPT_KEY] = job_attempt
    return ChildJob(
        name=name, namespace="ns", uid=f"{name}-{draw(st.integers(0, 2))}",
        controller_uid=draw(st.sampled_from([UID, UID, UID, "other"])), labels=keys,
        conditions=OUTCOMES[draw(st.sampled_from(sorted(OUTCOMES)))],
        active=draw(st.integers(0, 1)), ready=draw(st.integers(0, 2)),
        succeeded=draw(st.integers(0, 1)), suspend=draw(st.booleans()),
        parallelism=draw(st.sampled_from([None, 1, 2])),
        completions=draw(st.sampled_from([None, 1, 2])),
        deletion_timestamp=draw(st.sampled_from([None, None, NOW])),
    )


EVENTS = st.lists(st.one_of(child_jobs(), st.sampled_from(NAMES)), max_size=40)
BASES = st.builds(
    TallyBasis.of, st.just(UID), st.integers(0, 2),
    st.one_of(st.none(), st.just({"w": (0, 1, 1, 0)}), st.just({"v": (1,), "w": ()})),
    st.sampled_from(["js", "js", ""]),
)
RJOBS = [ReplicatedJob.model_validate({"name": n, "replicas": 4, "template": {}})
         for n in ("w", "v", "u")]


def by_name(jobs: ChildJobs) -> tuple[list[str], ...]:
    return tuple(sorted(j.name for j in group)
                 for group in (jobs.active, jobs.successful, jobs.failed, jobs.previous))


@settings(max_examples=100, deadline=None)
@given(basis=BASES, events=EVENTS)
def test_a_tally_kept_from_events_equals_the_full_classification_and_counts(
    basis: TallyBasis, events: list[ChildJob | str]
) -> None:
    tally = ChildTally(basis)
    cached: dict[str, ChildJob] = {}
    for event in events:
        name = event if isinstance(event, str) else event.name
        old = cached.pop(name, None)
        new = None if isinstance(event, str) else event
        if new is not None:
            cached[name] = new
        tally.apply(old, new)
        full = classify_child_jobs(cached.values(), UID, basis.restarts, basis.targets())
        assert by_name(tally.child_jobs()) == by_name(full)
        assert tally.counts(RJOBS) == count_replicated_jobs(RJOBS, full)
        assert len(tally) == sum(1 for _ in full.all())
        assert_the_per_pass_walks_agree(tally, basis, full)
    rebuilt = ChildTally(basis, cached.values())
    assert by_name(rebuilt.child_jobs()) == by_name(tally.child_jobs())


JS = make_jobset("js", "ns").uid(UID).replicated_job("w", replicas=4).obj()
PARSED = observe(JS).jobset
SIZED = {(name, replicas): ReplicatedJob.model_validate(
    {"name": name, "replicas": replicas, "template": {}})
    for name in ("w", "v", "u") for replicas in range(6)}
# templates of every size elastic scaling propagates (parallelism == completions) or not
SCALED = [
    [ReplicatedJob.model_validate(
        {"name": name, "replicas": 4, "template": {"spec": {**spec, "template": {}}}})
     for name, spec in zip(("w", "v", "u"), specs, strict=True)]
    for specs in (
        ({"parallelism": 1, "completions": 1}, {"parallelism": 2, "completions": 2}, {}),
        ({"parallelism": 2, "completions": 2}, {"parallelism": 2, "completions": 1},
         {"parallelism": 1, "completions": 1}),
        ({"parallelism": 3, "completions": 3}, {"parallelism": 1, "completions": 1},
         {"parallelism": 2}),
    )
]


def assert_the_per_pass_walks_agree(tally: ChildTally, basis: TallyBasis, full: ChildJobs) -> None:
    """What the tally answers for the steps that walked every child equals their walk."""
    owned = list(full.all())
    names = {j.name for j in owned}
    assert tally.names() == names
    assert sorted(j.name for j in tally.jobs()) == sorted(names), "the runtime's snapshot"
    assert tally.jobs() is tally.jobs(), "no event since: nothing walked again"
    for (name, replicas), rjob in SIZED.items():
        missing = pending_jobs(PARSED, rjob, names, basis.restarts)
        past = any(j.rjob == name and (j.job_index or 0) >= replicas for j in owned)
        # every generated child is named for the index its labels carry, so covering is
        # exactly having no Job missing, unless the tally is not sure: it has no name, or Jobs
        # past `replicas` (a scale-down's)
        sure = bool(basis.jobset_name) and not past
        assert tally.covers(name, replicas) is (not missing and sure)
    for attempt in range(3):
        ready = sum(ready_in_attempt(j, attempt) for j in owned)
        assert tally.ready_in(attempt) == (ready if attempt == basis.restarts else None)
        stored = {**JS, "status": {"restarts": attempt}}
        assert phase_of(stored, owned, tally.ready_in) == phase_of(stored, owned)
    failing = {f.job_uid for f in failures_of(owned, Plan())}
    assert {f.job_uid for f in failures_of(tally.failing(), Plan())} == failing
    # step 16 patches the active Jobs not suspended; in the order of the walk over them
    assert suspend_jobs(tally.unsuspended()) == suspend_jobs(full.active)
    # step 14 patches the active Jobs of another size than their template's
    for rjobs in SCALED:
        walked = scaling_updates(rjobs, full.active)
        assert scaling_updates(rjobs, (), tally.sized_otherwise) == walked
    for name in ("w", "v", "u"):
        for size in (1, 2, 3):
            off = {j.name for j in full.active
                   if j.rjob == name and (j.parallelism, j.completions) != (size, size)}
            assert {j.name for j in tally.sized_otherwise(name, size)} == off


def test_a_child_not_named_for_its_index_never_lets_the_tally_cover() -> None:
    """A Job named `js-w-0` whose labels say index 1: its name exists, so the missing-Job
    check finds nothing missing, but the tally says only that it is not sure (the pass then
    checks name by name), never that a name exists that does not."""
    basis = TallyBasis.of(UID, 0, None, "js")
    odd = make_job("js", "ns", rjob="w", index=1, jobset_uid=UID).view()
    odd = ChildJob(**{**{f: getattr(odd, f) for f in ("namespace", "uid", "controller_uid",
                                                       "labels", "annotations")},
                      "name": "js-w-0"})
    tally = ChildTally(basis, [odd])
    assert not tally.covers("w", 1)
    assert not tally.covers("w", 2), "index 1 is no Job's: js-w-1 does not exist"


CHILDREN = st.lists(  # per Job: outcome, parallelism, completions, suspended
    st.tuples(st.sampled_from(sorted(OUTCOMES)), st.integers(1, 2), st.integers(1, 2),
              st.booleans()),
    min_size=3, max_size=4,
)
GATES = st.fixed_dictionaries({"RestartJob": st.booleans(), "ElasticJobSet": st.booleans()})


@settings(max_examples=80, deadline=None)
@given(children=CHILDREN, restarts=st.integers(0, 1), gates=GATES, suspended=st.booleans(),
       size=st.integers(1, 2))
def test_a_pass_with_the_tally_plans_what_a_pass_without_it_plans(
    children: list[tuple[str, int, int, bool]], restarts: int, gates: dict[str, bool],
    suspended: bool, size: int,
) -> None:
    """Also a suspended JobSet (step 16 patches the running Jobs) and an elastic one whose
    template was resized (step 14 patches the Jobs of another size)."""
    js = (make_jobset("js", "ns").uid(UID).replicated_job("w", 4, size, size)
          .suspend(suspended).obj())
    js["status"] = {"restarts": restarts}
    steps = {
        "running": lambda b: b.started().ready(),
        "failing": lambda b: b.started().failure_target(),
        "failed": lambda b: b.started().failed(),
        "complete": lambda b: b.started().completed(),
    }
    jobs = [
        steps[outcome](make_job("js", "ns", rjob="w", index=index, jobset_uid=UID,
                                restart_attempt=restarts)
                       .parallelism(parallelism, completions).suspend(suspend)).view()
        for index, (outcome, parallelism, completions, suspend) in enumerate(children)
    ]
    config = CoreConfig(gates=FeatureGates.of(gates))
    parsed = observe(js, jobs)
    tally = ChildTally(tally_basis(parsed.jobset, config), jobs)
    without = Observed(parsed.jobset, parsed.jobs)
    want = reconcile(without, NOW, config)
    assert reconcile(Observed(parsed.jobset, parsed.jobs, tally=tally), NOW, config) == want
    stale = ChildTally(TallyBasis.of(UID, restarts + 1, None), jobs)  # kept for another basis
    assert reconcile(Observed(parsed.jobset, parsed.jobs, tally=stale), NOW, config) == want
