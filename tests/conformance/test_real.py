"""Real tier: the real kube-apiserver still answers the corpus as the golden files say (so the
sim side compares with the real server, not with a stale recording)."""

from __future__ import annotations

import pytest

from tests.conformance.record import answers_of, drift, load_golden
from tests.conformance.runner import load_corpus
from tests.conformance.servers import real_target

pytestmark = pytest.mark.envtest


def test_the_real_server_answers_as_recorded() -> None:
    sequences = load_corpus()
    with real_target() as target:
        recorded = answers_of(target, sequences)
    problems = drift(recorded, load_golden())
    assert not problems, "re-record with python -m tests.conformance.record:\n" + "\n".join(
        problems[:50])
