"""Which placement strategy a Job gets (pure): a closed choice, dispatched through tables.

* DOMAINS: the controller assigns a free domain through a nodeSelector (ours, no webhook).
* AFFINITY: pod affinity + anti-affinity on the Job's pod template, as upstream v0.2 did; used
  when asked for, or automatically when the controller can neither list Nodes nor has declared
  domains (it then cannot know which domains exist).
* NODE_SELECTOR: upstream's `alpha.jobset.sigs.k8s.io/node-selector` strategy: an administrator
  labelled one node pool per Job; construction adds the namespaced-job selector and toleration.
* NONE: no exclusive placement (no annotation, or the controller's mode is off).

Which Jobs are eligible at all is decided here too, once, from their annotations
(`exclusive_topology`, `node_selector_strategy`, `placed_by_controller`) and which annotations a
child Job inherits from its JobSet and replicated job (`child_job_annotations`). The core, the
occupancy views, the runtime's lock and the preview check ask these functions;
`test_exclusive_placement_is_decided_once` fails when another module reads the annotations.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import PlacementMode

__all__ = [
    "Strategy",
    "child_job_annotations",
    "exclusive_topology",
    "node_selector_strategy",
    "placed_by_controller",
    "strategy_for",
]


class Strategy(StrEnum):
    """How one child Job is kept alone in its topology domain."""

    DOMAINS = "domains"
    AFFINITY = "affinity"
    NODE_SELECTOR = "node-selector"
    NONE = "none"


_BY_MODE: Mapping[PlacementMode, Strategy | None] = {
    PlacementMode.AUTO: None,  # decided by whether domains are known
    PlacementMode.EXCLUSIVE: Strategy.DOMAINS,
    PlacementMode.AFFINITY: Strategy.AFFINITY,
    PlacementMode.OFF: Strategy.NONE,
}


def strategy_for(
    annotations: Mapping[str, str], mode: PlacementMode | str, domains_known: bool
) -> Strategy:
    """Return the strategy for a Job with these (Job-level) annotations.

    `domains_known` is False when the controller may not list Nodes and declares no domains.
    Raises ValueError naming the allowed modes for an unknown mode.
    """
    if exclusive_topology(annotations) is None:
        return Strategy.NONE
    if node_selector_strategy(annotations):
        return Strategy.NODE_SELECTOR
    try:
        chosen = _BY_MODE[PlacementMode(mode)]
    except ValueError:
        allowed = ", ".join(m.value for m in PlacementMode)
        raise ValueError(f"placement.mode: unknown mode {mode!r}; use one of {allowed}") from None
    if chosen is not None:
        return chosen
    return Strategy.DOMAINS if domains_known else Strategy.AFFINITY


def exclusive_topology(annotations: Mapping[str, str]) -> str | None:
    """Return the topology key (a node label) whose domain a Job asks to have to itself; None
    when its annotations ask for no exclusive placement (no annotation, or an empty key)."""
    key = annotations.get(c.EXCLUSIVE_KEY)
    return str(key) if key else None


def node_selector_strategy(annotations: Mapping[str, str]) -> bool:
    """Return whether a Job uses upstream's node-selector strategy: exclusive, with the
    node-selector annotation (an administrator labelled one pool per Job; the Job is pinned
    by its namespaced name at construction, and the controller assigns it nothing)."""
    return exclusive_topology(annotations) is not None and (
        c.NODE_SELECTOR_STRATEGY_KEY in annotations
    )


def placed_by_controller(annotations: Mapping[str, str]) -> bool:
    """Return whether the controller decides where a Job goes (a free domain, or affinity)."""
    return exclusive_topology(annotations) is not None and not node_selector_strategy(annotations)


def child_job_annotations(
    jobset: Mapping[str, str], replicated_job: Mapping[str, str]
) -> dict[str, str]:
    """Return the exclusive-placement annotations a child Job carries, from its JobSet's and its
    replicated job's template annotations: the replicated job's win (upstream #389), and the
    node-selector annotation comes with the exclusive key of its own level."""
    out: dict[str, str] = {}
    for source in (jobset, replicated_job):
        if c.EXCLUSIVE_KEY in source:
            out[c.EXCLUSIVE_KEY] = source[c.EXCLUSIVE_KEY]
            if c.NODE_SELECTOR_STRATEGY_KEY in source:
                out[c.NODE_SELECTOR_STRATEGY_KEY] = source[c.NODE_SELECTOR_STRATEGY_KEY]
    return out
