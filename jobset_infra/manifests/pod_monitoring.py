"""GKE Managed Service for Prometheus: a `PodMonitoring` scraping the controller (pure).

`JobSetSystem(pod_monitoring=True)` renders, beside the ServiceMonitor it offers for the
Prometheus operator, a `monitoring.googleapis.com/v1` PodMonitoring selecting the controller's
pods on their `metrics` port. When metrics are served securely (the default: HTTPS, each scrape
authenticated by TokenReview and authorized by SubjectAccessReview), the managed collector needs
a token of an account allowed `GET /metrics`: the objects include that account
(`<name>-metrics-scraper`), its long-lived token Secret, its binding to the
`<name>-metrics-reader` ClusterRole, and a Role letting Managed Prometheus' collector
(`gmp-system/collector`) read that one Secret, which the PodMonitoring's `authorization` names.
"""

from __future__ import annotations

from jobset_infra.api.rbac import scraper_token_rules
from jobset_infra.manifests.controller import labels, selector_labels
from jobset_infra.manifests.controller_spec import ControllerInstall
from jobset_infra.manifests.meta import Manifest, object_meta

__all__ = ["GMP_COLLECTOR", "pod_monitoring_objects"]

# Managed Prometheus' collector: its ServiceAccount and namespace on GKE.
GMP_COLLECTOR = ("collector", "gmp-system")
_RBAC = "rbac.authorization.k8s.io"


def _scraper(install: ControllerInstall) -> str:
    return f"{install.name}-metrics-scraper"


def pod_monitoring(install: ControllerInstall) -> Manifest:
    """Return the PodMonitoring of the controller pods' metrics port."""
    endpoint: Manifest = {"port": "metrics", "path": "/metrics", "interval": "30s"}
    metrics = install.config.metrics
    if metrics.secure_serving:
        endpoint |= {
            "scheme": "https",
            "tls": {"insecureSkipVerify": not metrics.cert_dir},
            "authorization": {"type": "Bearer", "credentials": {
                "secret": {"name": _scraper(install), "key": "token"}}},
        }
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": object_meta(install.name, labels(install), install.namespace),
        "spec": {"selector": {"matchLabels": selector_labels(install)}, "endpoints": [endpoint]},
    }


def pod_monitoring_objects(install: ControllerInstall) -> tuple[Manifest, ...]:
    """Return the PodMonitoring and, with secure metrics, the scraper identity it uses."""
    if not install.config.metrics.secure_serving:
        return (pod_monitoring(install),)
    name, ns, meta_labels = _scraper(install), install.namespace, labels(install)
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": object_meta(name, meta_labels, ns),
               "automountServiceAccountToken": False}
    token_meta = object_meta(name, meta_labels, ns)
    token_meta["annotations"] = {"kubernetes.io/service-account.name": name}
    token = {"apiVersion": "v1", "kind": "Secret", "metadata": token_meta,
             "type": "kubernetes.io/service-account-token"}
    binding = {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
        "metadata": object_meta(name, meta_labels),
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole",
                    "name": f"{install.name}-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    }
    read_token = {
        "apiVersion": f"{_RBAC}/v1", "kind": "Role", "metadata": object_meta(name, meta_labels, ns),
        "rules": [rule.to_dict() for rule in scraper_token_rules(name)],
    }
    collector, collector_ns = GMP_COLLECTOR
    read_token_binding = {
        "apiVersion": f"{_RBAC}/v1", "kind": "RoleBinding",
        "metadata": object_meta(name, meta_labels, ns),
        "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": collector, "namespace": collector_ns}],
    }
    return (account, token, binding, read_token, read_token_binding, pod_monitoring(install))
