"""The generated CRD kept on disk for `check`: the same dict, read back instead of generated,
named by what it is made from, and a torn file costs only a generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset_infra.api.crd import generate
from jobset_infra.api.features import Feature, FeatureGates


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "jobset-infra"


def _never(gates: FeatureGates | None = None) -> dict[str, object]:
    raise AssertionError("generated again")


def test_the_kept_crd_is_the_generated_one_read_back(cache: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    gates = generate.crd_gates(None)
    assert generate._kept_crd(gates) == generate.generate_crd(gates)
    assert len(list(cache.glob("crd-*.json"))) == 1
    monkeypatch.setattr(generate, "generate_crd", _never)
    assert generate._kept_crd(gates) == generate._generated(gates)


def test_other_gates_keep_another_file(cache: Path) -> None:
    elastic = generate.crd_gates(FeatureGates(frozenset({Feature.ELASTIC_JOBSET})))
    generate._kept_crd(generate.crd_gates(None))
    generate._kept_crd(elastic)
    assert len(list(cache.glob("crd-*.json"))) == 2
    assert generate._kept_crd(elastic) == generate.generate_crd(elastic)


def test_a_torn_file_is_generated_again(cache: Path) -> None:
    gates = generate.crd_gates(None)
    generate._kept_crd(gates)
    (kept,) = cache.glob("crd-*.json")
    kept.write_text(kept.read_text()[:100])
    assert generate._kept_crd(gates) == generate.generate_crd(gates)
