"""The domains exclusive Jobs hold: the cache's views plus the Jobs created but not yet seen."""

from __future__ import annotations

from jobset_infra.api.constants import EXCLUSIVE_KEY
from jobset_infra.controller.runtime.caches import CachedJob, cache_job
from jobset_infra.controller.runtime.held_domains import HeldDomains, freed_domain
from jobset_infra.testing.jobs import JobBuilder, make_job

POOL = "cloud.google.com/gke-nodepool"


def exclusive(rv: str, domain: str = "pool-a") -> JobBuilder:
    return (make_job("js", rjob="a").annotation(EXCLUSIVE_KEY, POOL)
            .node_selector(**{POOL: domain}).resource_version(rv))


def cached(job: JobBuilder) -> CachedJob:
    entry = cache_job(job.obj())
    assert isinstance(entry, CachedJob)
    return entry


def test_a_created_job_holds_its_domain_until_the_cache_shows_it() -> None:
    held = HeldDomains()
    created = exclusive("5").obj()
    held.record_created(created)
    key = f"{created['metadata']['namespace']}/{created['metadata']['name']}"
    assert [v.domain for v in held.views()] == ["pool-a"]
    held.track(key, cached(exclusive("4")))  # an older event: the creation still counts
    assert sorted(v.resource_version for v in held.views()) == ["4", "5"]
    held.track(key, cached(exclusive("5")))
    assert [v.resource_version for v in held.views()] == ["5"]
    held.track(key, None)
    assert held.views() == []


def test_a_job_seen_in_the_cache_is_not_also_in_flight() -> None:
    held = HeldDomains()
    job = exclusive("7").obj()
    key = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
    held.track(key, cached(exclusive("7")))
    held.record_created(job)  # a re-pin written after the cache saw it
    assert len(held.views()) == 1


def test_a_job_that_stops_holding_its_domain_frees_it() -> None:
    running = cached(exclusive("1").started().ready())
    done = cached(exclusive("2").started().completed())
    assert freed_domain(running, done)
    assert freed_domain(running, None)
    assert not freed_domain(done, None)
    assert not freed_domain(None, running)
