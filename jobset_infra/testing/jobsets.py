"""Fluent builder of JobSet manifests for tests, benchmarks and the sim.

    make_jobset("js", "ns").replicated_job("w", replicas=4, parallelism=2)
        .failure_policy(max_restarts=3).obj()          # manifest dict
    make_jobset("js").replicated_job("w").model()      # pydantic JobSet

The builder writes only what it is told (no defaulting), so tests see exactly what they built;
call `jobset_infra.api.defaults.default` on the model when a defaulted JobSet is wanted.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from jobset_infra.api import constants as c
from jobset_infra.api.models import JobSet

__all__ = ["JobSetBuilder", "job_template", "make_jobset"]


def job_template(
    parallelism: int | None = 1,
    completions: int | None = None,
    *,
    image: str = "busybox:1.36",
    container: str = "main",
    command: list[str] | None = None,
    completion_mode: str | None = None,
) -> dict[str, Any]:
    """A small batch/v1 JobTemplateSpec; completions default to parallelism."""
    main: dict[str, Any] = {"name": container, "image": image}
    if command is not None:
        main["command"] = list(command)
    spec: dict[str, Any] = {"template": {"spec": {"containers": [main]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is None:
        completions = parallelism
    if completions is not None:
        spec["completions"] = completions
    if completion_mode is not None:
        spec["completionMode"] = completion_mode
    return {"spec": spec}


class JobSetBuilder:
    """Builds one JobSet manifest step by step; `obj()` returns a deep copy."""

    def __init__(self, name: str, namespace: str | None) -> None:
        metadata: dict[str, Any] = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        self._js: dict[str, Any] = {
            "apiVersion": c.API_VERSION,
            "kind": c.KIND,
            "metadata": metadata,
            "spec": {"replicatedJobs": []},
        }

    # -- metadata ---------------------------------------------------------------------------

    def generate_name(self, prefix: str) -> Self:
        """Use metadata.generateName instead of a name."""
        self._js["metadata"].pop("name", None)
        self._js["metadata"]["generateName"] = prefix
        return self

    def uid(self, uid: str) -> Self:
        """Set metadata.uid."""
        self._js["metadata"]["uid"] = uid
        return self

    def generation(self, generation: int) -> Self:
        """Set metadata.generation."""
        self._js["metadata"]["generation"] = generation
        return self

    def label(self, key: str, value: str) -> Self:
        """Set a JobSet label."""
        self._js["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        """Set a JobSet annotation."""
        self._js["metadata"].setdefault("annotations", {})[key] = value
        return self

    def exclusive(self, topology_key: str) -> Self:
        """Ask for exclusive placement per topology domain (node label key)."""
        return self.annotation(c.EXCLUSIVE_KEY, topology_key)

    # -- replicated jobs --------------------------------------------------------------------

    def replicated_job(
        self,
        name: str,
        replicas: int | None = 1,
        parallelism: int | None = 1,
        completions: int | None = None,
        *,
        template: dict[str, Any] | None = None,
        group_name: str | None = None,
        depends_on: list[tuple[str, str]] | None = None,
        completion_mode: str | None = None,
        image: str = "busybox:1.36",
    ) -> Self:
        """Append a replicated job (replicas/groupName omitted when None)."""
        rjob: dict[str, Any] = {"name": name}
        if group_name is not None:
            rjob["groupName"] = group_name
        rjob["template"] = copy.deepcopy(template) or job_template(
            parallelism, completions, image=image, completion_mode=completion_mode
        )
        if replicas is not None:
            rjob["replicas"] = replicas
        if depends_on is not None:
            rjob["dependsOn"] = [{"name": n, "status": s} for n, s in depends_on]
        self._js["spec"]["replicatedJobs"].append(rjob)
        return self

    def job_spec(self, rjob: str, **fields: Any) -> Self:
        """Set fields of one replicated job's Job spec (camelCase keys)."""
        self._rjob(rjob)["template"].setdefault("spec", {}).update(copy.deepcopy(fields))
        return self

    def pod_spec(self, rjob: str, **fields: Any) -> Self:
        """Set fields of one replicated job's pod spec (camelCase keys)."""
        pod = self._rjob(rjob)["template"]["spec"]["template"].setdefault("spec", {})
        pod.update(copy.deepcopy(fields))
        return self

    def pod_metadata(self, rjob: str, **fields: Any) -> Self:
        """Set fields of one replicated job's pod template metadata."""
        meta = self._rjob(rjob)["template"]["spec"]["template"].setdefault("metadata", {})
        meta.update(copy.deepcopy(fields))
        return self

    def job_metadata(self, rjob: str, **fields: Any) -> Self:
        """Set fields of one replicated job's Job template metadata."""
        self._rjob(rjob)["template"].setdefault("metadata", {}).update(copy.deepcopy(fields))
        return self

    def volume_mount(self, rjob: str, volume: str, mount_path: str = "/data") -> Self:
        """Mount a volume into the first container of a replicated job."""
        container = self._rjob(rjob)["template"]["spec"]["template"]["spec"]["containers"][0]
        container.setdefault("volumeMounts", []).append({"name": volume, "mountPath": mount_path})
        return self

    # -- policies ---------------------------------------------------------------------------

    def failure_policy(
        self, max_restarts: int | None = None, restart_strategy: str | None = None
    ) -> Self:
        """Set spec.failurePolicy (fields omitted when None)."""
        policy = self._js["spec"].setdefault("failurePolicy", {})
        if max_restarts is not None:
            policy["maxRestarts"] = max_restarts
        if restart_strategy is not None:
            policy["restartStrategy"] = restart_strategy
        return self

    def rule(
        self,
        action: str,
        name: str | None = None,
        *,
        targets: list[str] | None = None,
        reasons: list[str] | None = None,
        patterns: list[str] | None = None,
    ) -> Self:
        """Append a failure-policy rule (creating the policy if needed)."""
        rule: dict[str, Any] = {"action": action}
        if name is not None:
            rule["name"] = name
        if reasons is not None:
            rule["onJobFailureReasons"] = list(reasons)
        if patterns is not None:
            rule["onJobFailureMessagePatterns"] = list(patterns)
        if targets is not None:
            rule["targetReplicatedJobs"] = list(targets)
        self._js["spec"].setdefault("failurePolicy", {}).setdefault("rules", []).append(rule)
        return self

    def success_policy(self, operator: str = "All", targets: list[str] | None = None) -> Self:
        """Set spec.successPolicy."""
        policy: dict[str, Any] = {"operator": operator}
        if targets is not None:
            policy["targetReplicatedJobs"] = list(targets)
        self._js["spec"]["successPolicy"] = policy
        return self

    def startup_policy(self, order: str) -> Self:
        """Set spec.startupPolicy.startupPolicyOrder."""
        self._js["spec"]["startupPolicy"] = {"startupPolicyOrder": order}
        return self

    def network(
        self,
        enable_dns_hostnames: bool | None = None,
        subdomain: str | None = None,
        publish_not_ready_addresses: bool | None = None,
    ) -> Self:
        """Set spec.network (fields omitted when None)."""
        net: dict[str, Any] = {}
        if enable_dns_hostnames is not None:
            net["enableDNSHostnames"] = enable_dns_hostnames
        if subdomain is not None:
            net["subdomain"] = subdomain
        if publish_not_ready_addresses is not None:
            net["publishNotReadyAddresses"] = publish_not_ready_addresses
        self._js["spec"]["network"] = net
        return self

    def suspend(self, suspend: bool = True) -> Self:
        """Set spec.suspend."""
        self._js["spec"]["suspend"] = suspend
        return self

    def coordinator(self, rjob: str, job_index: int = 0, pod_index: int = 0) -> Self:
        """Set spec.coordinator."""
        self._js["spec"]["coordinator"] = {
            "replicatedJob": rjob,
            "jobIndex": job_index,
            "podIndex": pod_index,
        }
        return self

    def managed_by(self, controller: str) -> Self:
        """Set spec.managedBy."""
        self._js["spec"]["managedBy"] = controller
        return self

    def ttl_after_finished(self, seconds: int) -> Self:
        """Set spec.ttlSecondsAfterFinished."""
        self._js["spec"]["ttlSecondsAfterFinished"] = seconds
        return self

    def volume_claim_policy(
        self, *templates: str, when_deleted: str | None = None, storage: str = "1Gi"
    ) -> Self:
        """Append a VolumeClaimPolicy with one small ReadWriteOnce PVC template per name."""
        policy: dict[str, Any] = {
            "templates": [
                {
                    "metadata": {"name": name},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": storage}},
                    },
                }
                for name in templates
            ]
        }
        if when_deleted is not None:
            policy["retentionPolicy"] = {"whenDeleted": when_deleted}
        self._js["spec"].setdefault("volumeClaimPolicies", []).append(policy)
        return self

    def spec_field(self, key: str, value: Any) -> Self:
        """Set any spec key verbatim (for invalid-input tests)."""
        self._js["spec"][key] = copy.deepcopy(value)
        return self

    # -- status -----------------------------------------------------------------------------

    def condition(
        self,
        type_: str,
        status: str = "True",
        reason: str = "Test",
        message: str = "",
        at: str = "2026-01-01T00:00:00Z",
    ) -> Self:
        """Append a status condition."""
        self._status().setdefault("conditions", []).append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": at,
            }
        )
        return self

    def terminal_state(self, state: str) -> Self:
        """Set status.terminalState."""
        self._status()["terminalState"] = state
        return self

    def restarts(self, restarts: int, counting: int | None = None) -> Self:
        """Set status.restarts (and restartsCountTowardsMax)."""
        self._status()["restarts"] = restarts
        if counting is not None:
            self._status()["restartsCountTowardsMax"] = counting
        return self

    def in_place_restart_attempts(
        self, current: int | None = None, previous: int | None = None
    ) -> Self:
        """Set status.current/previousInPlaceRestartAttempt (omitted when None)."""
        if current is not None:
            self._status()["currentInPlaceRestartAttempt"] = current
        if previous is not None:
            self._status()["previousInPlaceRestartAttempt"] = previous
        return self

    # -- results ----------------------------------------------------------------------------

    def obj(self) -> dict[str, Any]:
        """The manifest (a deep copy; the builder can keep going)."""
        return copy.deepcopy(self._js)

    def model(self) -> JobSet:
        """The manifest parsed into the pydantic JobSet."""
        return JobSet.model_validate(self.obj())

    def _rjob(self, name: str) -> dict[str, Any]:
        for rjob in self._js["spec"]["replicatedJobs"]:
            if rjob["name"] == name:
                found: dict[str, Any] = rjob
                return found
        raise KeyError(f"no replicated job {name!r} in this builder; add it first")

    def _status(self) -> dict[str, Any]:
        status: dict[str, Any] = self._js.setdefault("status", {"restarts": 0})
        return status


def make_jobset(name: str, namespace: str | None = "default") -> JobSetBuilder:
    """Start a JobSet named `name` in `namespace` (None leaves metadata.namespace unset)."""
    return JobSetBuilder(name, namespace)
