"""Render a kubeconfig for a GKE cluster that authenticates with gke-gcloud-auth-plugin.

Pure: values in, YAML text out. The user entry uses the client-go exec credential plugin; the
``auth-provider: gcp`` form was removed from kubectl and client-go and is never produced
(reference gke-tpu.md §3.4).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["EXEC_API_VERSION", "GKE_AUTH_PLUGIN", "context_name", "render_kubeconfig"]

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
GKE_AUTH_PLUGIN = "gke-gcloud-auth-plugin"
_INSTALL_HINT = (
    "Install gke-gcloud-auth-plugin for use with kubectl by following "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl"
    "#install_plugin"
)


def context_name(project: str, location: str, cluster: str) -> str:
    """Return the context name gcloud uses for a cluster: gke_<project>_<location>_<name>."""
    return f"gke_{project}_{location}_{cluster}"


def render_kubeconfig(*, context: str, endpoint: str, ca_certificate: str) -> str:
    """Return kubeconfig YAML for one cluster: https endpoint, CA data and the exec plugin.

    ``ca_certificate`` is the base64 PEM GKE reports as masterAuth.clusterCaCertificate.
    """
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": f"https://{endpoint}",
                    "certificate-authority-data": ca_certificate,
                },
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "preferences": {},
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": EXEC_API_VERSION,
                        "command": GKE_AUTH_PLUGIN,
                        "installHint": _INSTALL_HINT,
                        "provideClusterInfo": True,
                        "interactiveMode": "IfAvailable",
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)
