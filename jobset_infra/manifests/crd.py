"""The JobSet CustomResourceDefinition, as generated from the API models (never written by hand)."""

from __future__ import annotations

import copy
import functools
import importlib.resources
from typing import Any

import yaml

from jobset_infra.api.features import FeatureGates
from jobset_infra.manifests.meta import Manifest

__all__ = ["CRD_FILE", "jobset_crd"]

CRD_FILE = "jobset.x-k8s.io_jobsets.yaml"


@functools.cache
def _crd_text() -> str:
    path = importlib.resources.files("jobset_infra.api.crd").joinpath(CRD_FILE)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"jobset_infra/api/crd/{CRD_FILE} is missing: regenerate it with "
            "`jobset-infra crd`"
        ) from None


@functools.cache
def _parsed() -> dict[str, Any]:
    # The C loader when PyYAML has it: the file is large (~280 kB) and the pure loader slow.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(_crd_text(), Loader=loader)  # a safe loader either way
    if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"jobset_infra/api/crd/{CRD_FILE} is not a CustomResourceDefinition")
    return crd


def jobset_crd(gates: FeatureGates | None = None) -> Manifest:
    """Return the generated JobSet CRD (a fresh copy: callers may change it), for a controller
    running with `gates`: the committed file for the default gates, else the CRD rendered with
    the rules of those gates (ElasticJobSet's scaling is admitted only by the CRD that has it)."""
    if gates is None or gates == FeatureGates():
        return copy.deepcopy(_parsed())
    from jobset_infra.api.crd.generate import crd_gates, generate_crd  # the generator is big

    if crd_gates(gates) == crd_gates(None):
        return copy.deepcopy(_parsed())
    return generate_crd(gates)
