"""`python -m benchmarks.settled_pass`: a settled JobSet's pass plans nothing and is timed."""

from __future__ import annotations

from benchmarks import settled_pass


def test_a_settled_pass_plans_nothing_and_costs_some_cpu() -> None:
    assert settled_pass.pass_ms(16, runs=1) > 0  # raises if the settled JobSet planned an action
