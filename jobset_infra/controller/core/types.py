"""The contract between the pure core and the runtime: what is observed, and the plan to carry out.

Pure data only: frozen, slotted dataclasses and plain dicts. The runtime caches `ChildJob` views
(built once per watch event by `child_job_from_manifest`), assembles an `Observed` per reconcile,
calls `reconcile(observed, now, config)` and executes the returned `Plan`.

How the runtime executes a `Plan` (see /work/notes/core-interfaces.md):

1. Actions run in plan order. Consecutive actions of the same kind (e.g. 4,000 `CreateJob`s) may run
   in parallel (bounded). Execution stops at the first failed action and the key is requeued with
   backoff; the status is then not written in this pass, as upstream.
2. `UpdateStatus` is a barrier. `EmitEvent` and `IncrementMetric` always come after it and run only
   if it succeeded, so a retried status write never double-counts or double-emits.
3. `RequeueAfter` is not a write: it asks for another reconcile after that many seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core.job_view import (
    ChildJob,
    JobCondition,
    child_job_from_manifest,
    format_time,
    parse_time,
)
from jobset_infra.controller.core.pod_view import PodView
from jobset_infra.placement.inputs import PlacementInputs  # placement's inputs
from jobset_infra.placement.pool_health import DomainFailure

__all__ = [
    "NO_NAMES_TAKEN",
    "Action",
    "ChildJob",
    "CoreConfig",
    "CreateJob",
    "CreatePVC",
    "CreateService",
    "DeleteJob",
    "DeleteJobSet",
    "DeleteJobs",
    "EmitEvent",
    "IncrementMetric",
    "JobCondition",
    "Manifest",
    "ManifestFactory",
    "NameHolder",
    "ObjectRef",
    "Observed",
    "PlacementInputs",
    "Plan",
    "PodView",
    "RecordDomainFailure",
    "RequeueAfter",
    "UpdateJob",
    "UpdateStatus",
    "child_job_from_manifest",
    "format_time",
    "parse_time",
]

Manifest: TypeAlias = dict[str, Any]
"""A Kubernetes object as plain JSON-like data (camelCase keys), as sent to or read from the API."""


# --------------------------------------------------------------------------- observed


_J = TypeVar("_J")


@dataclass(frozen=True, slots=True)
class NameHolder:
    """A Job that holds a name one of the JobSet's children needs, and is not its child."""

    controller: str
    """Its controller, as `Kind/name` ("" when it has none: created by hand)."""
    deleting: bool = False
    """It is being deleted (an earlier JobSet of the same name's child, say): wait, say nothing."""


NO_NAMES_TAKEN: Mapping[str, NameHolder] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Observed(Generic[_J]):
    """Everything one reconcile of one JobSet looks at.

    The runtime reads it from its caches with the JobSet as it is stored (`Observed[Manifest]`,
    the raw object); `observe` parses the JobSet into the API model (`Observed[JobSet]`), which
    is what `reconcile` takes: its metadata carries name, namespace, uid, resourceVersion,
    generation, deletionTimestamp, annotations. `jobs` are the child Jobs whose controller
    ownerReference is this JobSet's UID (the core ignores any others it is given).
    """

    jobset: _J
    jobs: tuple[ChildJob, ...] = ()
    service_exists: bool = False
    placement: PlacementInputs | None = None
    pvc_names: frozenset[str] | None = None
    """Names of PVCs in the JobSet's namespace, if the runtime tracks them (VolumeClaimPolicies).
    None: unknown, so the policy's PVCs are planned every pass and AlreadyExists is ignored."""
    spec_problems: tuple[FieldError, ...] | None = None
    """What the spec check (`admission.spec_problems`) found for this metadata.generation, when
    the runtime has it cached; None: the pass checks the spec itself."""
    taken_names: Mapping[str, NameHolder] = field(default_factory=lambda: NO_NAMES_TAKEN)
    """Jobs in the JobSet's namespace that are not its children, by name (the core looks up
    only the names it would create; the runtime answers from its Job cache)."""
    pods: tuple[PodView, ...] | None = None
    """The JobSet's Pods (jobset-name label), watched only with the InPlaceRestart gate on;
    None: not watched, so in-place restart leaves the status alone. Without that watch, the
    runtime gives the Pods of the Jobs `stranded_jobs.stranded_candidates` names (when there
    are any), looked up for that pass: what says whether their pods started."""
    tally: Any = None
    """The runtime's `child_tally.ChildTally` of these children, kept from their events; a pass
    uses it when it was kept for the pass's basis and classifies every Job itself otherwise.
    None: none kept (typed Any here: the tally lives with the classification it keeps)."""


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What an event is about (events.k8s.io `regarding`)."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str


class ManifestFactory(Protocol):
    """Builds the manifests of one replicated job's Jobs (`child_jobs.JobFactory`)."""

    def job_name(self, index: int) -> str:
        """The name of the Job of `index`."""
        ...

    def build(self, index: int, job_attempt: int | None) -> Manifest:
        """The manifest of the Job of `index`."""
        ...


@dataclass(frozen=True, slots=True)
class CreateJob:
    """Create this batch/v1 Job. AlreadyExists is not an error (deterministic names).

    `source` is the manifest itself, or the factory that builds the manifest of the Job of
    `index` (with `job_attempt`) when the executor sends it: a pass that plans 100,000 creates
    holds 100,000 small actions, not 100,000 manifests.
    """

    source: Manifest | ManifestFactory
    index: int = 0
    job_attempt: int | None = None

    @property
    def manifest(self) -> Manifest:
        """The Job to create; from a factory, built anew on each read (read it once)."""
        if isinstance(self.source, dict):
            return self.source
        return self.source.build(self.index, self.job_attempt)

    @property
    def name(self) -> str:
        """The Job's metadata.name."""
        if isinstance(self.source, dict):
            return str(self.source["metadata"]["name"])
        return self.source.job_name(self.index)


@dataclass(frozen=True, slots=True)
class DeleteJob:
    """Delete a Job with a UID precondition. NotFound is not an error."""

    namespace: str
    name: str
    uid: str
    propagation: Literal["Foreground", "Background"] = "Foreground"
    why: str = ""
    """A short phrase for logs: "previous restart attempt", "jobset finished"."""


@dataclass(frozen=True, slots=True)
class DeleteJobs:
    """Delete, in one deletecollection request, the Jobs of `namespace` that `label_selector`
    picks (`previous_attempts.py` decides when). `uids` are the Jobs the plan means to delete:
    the runtime waits to see each deleted, as it does for a DeleteJob's."""

    namespace: str
    label_selector: str
    uids: tuple[str, ...]
    propagation: Literal["Foreground", "Background"] = "Foreground"


@dataclass(frozen=True, slots=True)
class UpdateJob:
    """Change a Job: first (optionally) clear status.startTime, then apply a JSON merge patch.

    `clear_start_time`: PATCH the status subresource with `{"status": {"startTime": null}}`
    first; the Job API allows scheduling-directive changes of a template only while it is unset.
    `patch`: an RFC 7386 JSON merge patch for the Job (null deletes a key; lists are replaced).
    `resource_version`: the version the patch was computed from; send it as
    metadata.resourceVersion in the patch so a stale view gets a 409 instead of a lost update.
    """

    namespace: str
    name: str
    resource_version: str
    patch: Manifest
    clear_start_time: bool = False
    why: str = ""
    strategic: bool = False
    """Send `patch` as a strategic merge patch: list entries merge by key (containers by name),
    maps as in a JSON merge patch; a resume that carries container resources needs it."""
    on_refusal: EmitEvent | None = None
    """Emit this at once when the API server refuses the update (`{error}` in its message is
    the refusal), before the error requeues the JobSet."""


@dataclass(frozen=True, slots=True)
class CreateService:
    """Create the headless Service. AlreadyExists is not an error."""

    manifest: Manifest


@dataclass(frozen=True, slots=True)
class CreatePVC:
    """Create a VolumeClaimPolicy PersistentVolumeClaim. AlreadyExists is not an error; any other
    failure emits the Warning event PVCCreationFailed (as upstream)."""

    manifest: Manifest


@dataclass(frozen=True, slots=True)
class UpdateStatus:
    """Replace the JobSet status (PUT .../status) based on `resource_version`; 409 means requeue."""

    namespace: str
    name: str
    resource_version: str
    status: Manifest
    counts_only: bool = False
    """The write moves nothing but the replicated jobs' five counts (ready, succeeded, failed,
    active, suspended): what a pass decided may wait (core/status_pacing)."""


@dataclass(frozen=True, slots=True)
class EmitEvent:
    """An events.k8s.io/v1 event (action "Reconciling"), emitted after the status write succeeds."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    regarding: ObjectRef


@dataclass(frozen=True, slots=True)
class IncrementMetric:
    """Add 1 to a counter (e.g. jobset_completed_total), only after the status write succeeds."""

    name: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class DeleteJobSet:
    """Delete the JobSet itself (TTL after finished), foreground, with a UID precondition."""

    namespace: str
    name: str
    uid: str
    propagation: Literal["Foreground"] = "Foreground"


@dataclass(frozen=True, slots=True)
class RecordDomainFailure:
    """Record a child Job's failure against the topology domain it held, in the slice-health
    ledger (before the status write: a failed write stops the pass, and the retried pass
    records it again; a failure is recorded once per Job UID and domain)."""

    failure: DomainFailure


@dataclass(frozen=True, slots=True)
class RequeueAfter:
    """Reconcile this JobSet again after `seconds` (not a write)."""

    seconds: float


Action: TypeAlias = (
    CreateJob
    | DeleteJob
    | DeleteJobs
    | UpdateJob
    | CreateService
    | CreatePVC
    | UpdateStatus
    | EmitEvent
    | IncrementMetric
    | DeleteJobSet
    | RecordDomainFailure
    | RequeueAfter
)


@dataclass(frozen=True, slots=True)
class Plan:
    """An immutable, ordered tuple of actions. The empty plan means: nothing to do."""

    actions: tuple[Action, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when the plan changes nothing (a lone RequeueAfter is not a change)."""
        return all(isinstance(a, RequeueAfter) for a in self.actions)

    @property
    def requeue_after(self) -> float | None:
        """The smallest RequeueAfter in the plan, or None."""
        waits = [a.seconds for a in self.actions if isinstance(a, RequeueAfter)]
        return min(waits) if waits else None

    @property
    def status_update(self) -> UpdateStatus | None:
        """The plan's status write, if any (there is at most one)."""
        for action in self.actions:
            if isinstance(action, UpdateStatus):
                return action
        return None

    def of_type(self, kind: type[Any]) -> tuple[Any, ...]:
        """Return the actions that are instances of `kind`, in plan order."""
        return tuple(a for a in self.actions if isinstance(a, kind))


# --------------------------------------------------------------------------- config


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """Feature gates and behaviour switches of the core (from ControllerConfig)."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    """Upstream's feature gates (the registry in `api.features`), e.g. RestartJob, ElasticJobSet."""
    exclusive_placement: bool = True
    """Assign exclusive-topology domains in the controller (no webhooks); off = annotation only."""
    controller_name: str = c.JOBSET_CONTROLLER_NAME
    """The spec.managedBy value this controller answers to (nil managedBy also means us)."""

    def enabled(self, feature: Feature) -> bool:
        """True when the feature gate `feature` is on."""
        return self.gates.enabled(feature)
