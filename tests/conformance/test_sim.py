"""The sim answers the corpus as the real kube-apiserver did (the golden files), except for the
differences listed, each with its reason, in differences.yaml. Fast tier: no binaries needed."""

from __future__ import annotations

from functools import cache

import pytest

from tests.conformance.compare import Listed, diff, load_differences
from tests.conformance.record import answers_of, load_golden
from tests.conformance.runner import load_corpus, request_count
from tests.conformance.servers import sim_target

SEQUENCES = load_corpus()
Found = dict[str, list[tuple[int, str, object, object]]]


@cache
def sim_differences() -> Found:
    """sequence id -> (step, path, real, sim) for every difference from the golden answers."""
    golden = load_golden()
    with sim_target() as target:
        played = answers_of(target, SEQUENCES)
    out: Found = {}
    for sequence in SEQUENCES:
        want = golden.get(sequence.file, {}).get(sequence.id)
        got = played[sequence.file][sequence.id]
        assert want is not None and len(want) == len(got), (
            f"{sequence.id}: no golden answers for its {len(got)} steps; record them with "
            "python -m tests.conformance.record")
        out[sequence.id] = [(step, path, a, b) for step, (w, g) in enumerate(zip(
            want, got, strict=True)) for path, a, b in diff(w, g)]
    return out


@cache
def listed() -> tuple[Listed, ...]:
    return tuple(load_differences())


def test_the_corpus_holds_at_least_300_requests() -> None:
    assert request_count(SEQUENCES) >= 300


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.id for s in SEQUENCES])
def test_the_sim_answers_as_the_real_server(sequence: object) -> None:
    seq_id = getattr(sequence, "id")  # noqa: B009
    unlisted = [f"step {step} {path}: real {real!r}, sim {sim!r}"
                for step, path, real, sim in sim_differences()[seq_id]
                if not any(entry.covers(seq_id, step, path) for entry in listed())]
    assert not unlisted, "\n".join(unlisted)


def test_every_listed_difference_is_still_a_difference() -> None:
    found = sim_differences()
    stale = [entry for entry in listed() if not any(
        entry.covers(seq_id, step, path)
        for seq_id, diffs in found.items() for step, path, _, _ in diffs)]
    assert not stale, "fixed or never seen, remove from differences.yaml: " + "; ".join(
        f"{e.sequence} {e.path}" for e in stale)
