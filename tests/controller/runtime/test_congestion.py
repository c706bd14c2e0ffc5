"""The congestion window of Job writes (pure): within its bounds whatever the server answers,
cut on throttling and slowness once per round, grown by prompt answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.controller.runtime.congestion import Answer, CongestionWindow, judge

CODES = st.sampled_from([0, 200, 201, 403, 404, 409, 422, 429, 500, 503, 504])
SECONDS = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)
# one step: send a write, or answer one of the writes in flight (by position)
STEPS = st.lists(
    st.one_of(st.just("send"), st.tuples(st.integers(0, 99), CODES, SECONDS)), max_size=300
)
WINDOWS = st.builds(
    lambda ceiling, floor, initial: CongestionWindow(
        ceiling=ceiling, floor=min(floor, ceiling), initial=initial
    ),
    st.integers(1, 64), st.integers(1, 8), st.integers(1, 80),
)


@pytest.mark.parametrize(
    ("code", "seconds", "want"),
    [
        pytest.param(201, 0.01, Answer.PROMPT, id="a prompt create"),
        pytest.param(422, 0.01, Answer.PROMPT, id="a refused template is not congestion"),
        pytest.param(409, 0.01, Answer.PROMPT, id="already exists is not congestion"),
        pytest.param(429, 0.01, Answer.CONGESTED, id="throttled by APF"),
        pytest.param(503, 0.01, Answer.CONGESTED, id="unavailable"),
        pytest.param(504, 0.01, Answer.CONGESTED, id="timed out at the server"),
        pytest.param(0, 0.01, Answer.CONGESTED, id="no answer: timeout or connection lost"),
        pytest.param(201, 1.5, Answer.CONGESTED, id="an answer slower than the threshold"),
        pytest.param(201, 1.0, Answer.PROMPT, id="an answer at the threshold"),
    ],
)
def test_what_counts_as_congestion(code: int, seconds: float, want: Answer) -> None:
    assert judge(code, seconds, slow_after=1.0) is want


@settings(max_examples=200, deadline=None)
@given(window=WINDOWS, steps=STEPS)
def test_the_window_stays_within_its_bounds(
    window: CongestionWindow, steps: list[object]
) -> None:
    in_flight: list[int] = []
    for step in steps:
        if step == "send":
            in_flight.append(window.sent())
        elif in_flight:
            assert isinstance(step, tuple)
            position, code, seconds = step
            window.answered(in_flight[position % len(in_flight)], code, seconds)
        assert window.floor <= window.size <= window.ceiling


@settings(max_examples=200, deadline=None)
@given(window=WINDOWS, steps=STEPS, code=st.sampled_from([0, 429, 503, 504]))
def test_throttling_halves_the_window_once_per_round(
    window: CongestionWindow, steps: list[object], code: int
) -> None:
    tickets: list[int] = []
    for step in steps:
        if step == "send":
            tickets.append(window.sent())
        elif tickets:
            assert isinstance(step, tuple)
            window.answered(tickets[step[0] % len(tickets)], step[1], step[2])
    before, cuts = window.window, window.cuts
    in_this_round = [window.sent() for _ in range(3)]
    window.answered(in_this_round[0], code, 0.01)
    assert window.cuts == cuts + 1
    assert window.window == max(window.floor, before * window.decrease)
    if before >= 2 * window.floor:
        assert window.window < before
    after = window.window
    for ticket in in_this_round[1:]:  # the same round's other throttled answers
        window.answered(ticket, code, 0.01)
    assert (window.window, window.cuts) == (after, cuts + 1), "one cut per round"


@settings(max_examples=50, deadline=None)
@given(window=WINDOWS, seconds=st.floats(0.0, 1.0))
def test_prompt_answers_grow_the_window_up_to_its_ceiling(
    window: CongestionWindow, seconds: float
) -> None:
    for _ in range(4 * window.ceiling * window.ceiling):
        before = window.window
        window.answered(window.sent(), 201, seconds)
        assert window.window >= before
        assert window.window > before or window.size == window.ceiling
    assert window.size == window.ceiling


def test_slow_start_doubles_per_round_and_after_a_cut_growth_is_one_per_round() -> None:
    window = CongestionWindow(ceiling=50, initial=10)
    sizes = []
    for _ in range(3):
        for ticket in [window.sent() for _ in range(window.size)]:  # one round
            window.answered(ticket, 201, 0.005)
        sizes.append(window.size)
    assert sizes == [20, 40, 50]
    window.answered(window.sent(), 429, 0.005)
    assert (window.size, window.threshold) == (25, 25.0)
    for _ in range(2):
        for ticket in [window.sent() for _ in range(window.size)]:
            window.answered(ticket, 201, 0.005)
    assert 26.5 < window.window < 27, "additive increase: about one more per round"


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        pytest.param({"ceiling": 0}, "floor", id="a ceiling below one"),
        pytest.param({"ceiling": 4, "floor": 5}, "floor", id="a floor above the ceiling"),
        pytest.param({"ceiling": 4, "decrease": 1.0}, "decrease",
                     id="a decrease that cuts nothing"),
    ],
)
def test_a_window_that_could_not_work_is_refused(kwargs: dict[str, float], word: str) -> None:
    with pytest.raises(ValueError, match=word):
        CongestionWindow(**kwargs)  # type: ignore[arg-type]
