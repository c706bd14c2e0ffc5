"""Kueue's controller-manager Configuration and the Helm values that install it.

We write the whole Configuration rather than patch the chart's: the chart fills only
`internalCertManagement` into a config we give it, and Kueue enables just `batch/job` when
`integrations.frameworks` is given without JobSet, so the JobSet integration must be listed here
explicitly (reference kueue-and-pulumi.md §A1).
"""

from __future__ import annotations

from typing import Any

import yaml

from jobset_infra.api import constants as k
from jobset_infra.manifests.kueue_spec import KueueInstall, image_parts
from jobset_infra.manifests.meta import Manifest

__all__ = ["KUEUE_CHART", "helm_values", "manager_configuration"]

# Kueue's OCI Helm chart; the version comes from KueueInstall (pinned, never "latest").
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"


def manager_configuration(install: KueueInstall) -> Manifest:
    """Return Kueue's `Configuration` with the JobSet integration enabled."""
    config: Manifest = {
        "apiVersion": k.KUEUE_CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": install.namespace,
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True},
        "clientConnection": {"qps": install.client_qps, "burst": install.client_burst},
        "manageJobsWithoutQueueName": install.manage_jobs_without_queue_name,
        "integrations": {
            "frameworks": [k.KUEUE_BATCH_JOB_FRAMEWORK, k.KUEUE_JOBSET_FRAMEWORK],
        },
    }
    if install.exclude_resource_prefixes:
        config["resources"] = {"excludeResourcePrefixes": list(install.exclude_resource_prefixes)}
    return config


def helm_values(install: KueueInstall) -> dict[str, Any]:
    """Return the chart values: our Configuration (as the YAML string the chart expects)."""
    manager: dict[str, Any] = {
        "replicas": install.replicas,
        # With standbys, keep one Kueue (and its webhooks, failurePolicy Fail) up in drains.
        "podDisruptionBudget": {"enabled": install.replicas > 1, "minAvailable": 1},
    }
    if install.image is not None:
        parts = image_parts(install.image)
        assert parts is not None  # KueueInstall checked it
        # Present on the nodes (imported, or pulled once): the chart's default, Always, would
        # ask the registry again at every start, and a local image has none.
        manager["manager"] = {"image": {"repository": parts[0], "tag": parts[1],
                                        "pullPolicy": "IfNotPresent"}}
    if install.node_selector:
        manager["nodeSelector"] = dict(install.node_selector)
    if install.tolerations:
        manager["tolerations"] = [dict(t) for t in install.tolerations]
    return {
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                manager_configuration(install), sort_keys=False
            )
        },
        "controllerManager": manager,
    }
