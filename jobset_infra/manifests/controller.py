"""The controller's own objects: Namespace, ConfigMap, Deployment, PDB, metrics Service, monitor.

Pure builders over a validated `ControllerInstall`. The pod meets the "restricted" Pod Security
Standard (the Namespace enforces it, so a regression is refused by the API server too), runs as a
non-root user on a read-only root filesystem, and reads its whole configuration from one file.
"""

from __future__ import annotations

import hashlib

from jobset_infra.api.k8s_openapi import K8S_VERSION
from jobset_infra.manifests.controller_spec import ControllerInstall
from jobset_infra.manifests.meta import Manifest, common_labels, object_meta

__all__ = [
    "CONFIG_CHECKSUM_ANNOTATION",
    "CONFIG_DIR",
    "CONFIG_FILE",
    "CONTAINER_NAME",
    "NONROOT_UID",
    "config_map",
    "deployment",
    "labels",
    "metrics_service",
    "namespace",
    "network_policy",
    "pod_disruption_budget",
    "pod_security_labels",
    "selector_labels",
    "service_monitor",
    "with_image",
]

COMPONENT = "controller"
CONTAINER_NAME = "controller"
CONFIG_DIR = "/etc/jobset-controller"
CONFIG_FILE = "config.yaml"
# Changing the config changes this pod annotation, so the Deployment rolls to pick it up.
CONFIG_CHECKSUM_ANNOTATION = "jobset-infra/config-sha256"
# The Dockerfile's user; numeric so the kubelet can verify runAsNonRoot without /etc/passwd.
NONROOT_UID = 65532
# Every namespace carries its name as this label (since Kubernetes 1.22).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PSS_PREFIX = "pod-security.kubernetes.io"
PSS_ENFORCE_LABEL = f"{PSS_PREFIX}/enforce"
# The Pod Security Standard's version is pinned to the Kubernetes minor our checks and schemas
# are pinned to (api.k8s_openapi), so a cluster upgrade cannot change what is enforced unseen.
PSS_VERSION = f"v{K8S_VERSION}"


def selector_labels(install: ControllerInstall) -> dict[str, str]:
    """Return the labels that select the controller pods (stable across upgrades)."""
    return {"app.kubernetes.io/name": install.name, "app.kubernetes.io/component": COMPONENT}


def labels(install: ControllerInstall) -> dict[str, str]:
    """Return the labels every controller object carries."""
    return common_labels(install.name, COMPONENT)


def pod_security_labels(level: str = "restricted") -> dict[str, str]:
    """Return the Pod Security Admission labels: `level` enforced, audited and warned about,
    each at the pinned version."""
    return {
        f"{PSS_PREFIX}/{mode}{suffix}": value
        for mode in ("enforce", "audit", "warn")
        for suffix, value in (("", level), ("-version", PSS_VERSION))
    }


def namespace(install: ControllerInstall) -> Manifest:
    """Return the controller's Namespace, enforcing the restricted Pod Security Standard."""
    meta = object_meta(install.namespace, {**labels(install), **pod_security_labels()})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _config_text(install: ControllerInstall) -> str:
    return install.effective_config().to_yaml()


def config_map(install: ControllerInstall) -> Manifest:
    """Return the ConfigMap holding the controller's config file."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(f"{install.name}-config", labels(install), install.namespace),
        "data": {CONFIG_FILE: _config_text(install)},
    }


def _container_security_context() -> Manifest:
    return {
        "runAsNonRoot": True,
        "runAsUser": NONROOT_UID,
        "runAsGroup": NONROOT_UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _probe(path: str, initial_delay: int, period: int, failures: int) -> Manifest:
    return {
        "httpGet": {"path": path, "port": "health"},
        "initialDelaySeconds": initial_delay,
        "periodSeconds": period,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }


def _field_env(name: str, field_path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def _container(install: ControllerInstall) -> Manifest:
    health = install.config.health
    return {
        "name": CONTAINER_NAME,
        "image": install.image,
        "imagePullPolicy": install.image_pull_policy,
        "args": [
            *install.effective_config().to_args(config_path=f"{CONFIG_DIR}/{CONFIG_FILE}"),
            # /metrics listens on the pod IP only, not on every interface of the pod.
            f"--metrics-bind-address=$(POD_IP):{install.metrics_port}",
        ],
        "env": [
            # Leader-election identity and namespace, and the metrics address, from the
            # downward API.
            _field_env("POD_NAME", "metadata.name"),
            _field_env("POD_NAMESPACE", "metadata.namespace"),
            _field_env("POD_IP", "status.podIP"),
        ],
        "ports": [
            {"name": "health", "containerPort": install.health_port, "protocol": "TCP"},
            {"name": "metrics", "containerPort": install.metrics_port, "protocol": "TCP"},
        ],
        # Liveness is lenient (a long relist must not get the pod killed). Readiness is read
        # from memory (no API call), so it is asked every 2 s from the first second: the Pod is
        # Ready within 2 s of serving, not at the next of upstream's 10 s periods (a rollout, a
        # `pulumi up` waiting on the Deployment, a handover's new standby), and still turns
        # unready only after 30 s of failures, as before.
        "livenessProbe": _probe(health.liveness_endpoint_name, 15, 10, 6),
        "readinessProbe": _probe(health.readiness_endpoint_name, 1, 2, 15),
        "resources": install.resources.to_dict(),
        "securityContext": _container_security_context(),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            # Python writes temporary files; the root filesystem is read-only.
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _spread(install: ControllerInstall, topology_key: str) -> Manifest:
    # ScheduleAnyway: a one-zone or one-node cluster must still run the controller.
    return {
        "maxSkew": 1,
        "topologyKey": topology_key,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": selector_labels(install)},
    }


def _pod_spec(install: ControllerInstall) -> Manifest:
    return {
        "serviceAccountName": install.name,
        "automountServiceAccountToken": True,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "fsGroup": NONROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_container(install)],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{install.name}-config"}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        ],
        "topologySpreadConstraints": [
            _spread(install, "topology.kubernetes.io/zone"),
            _spread(install, "kubernetes.io/hostname"),
        ],
        "terminationGracePeriodSeconds": 30,
        **({"nodeSelector": dict(install.node_selector)} if install.node_selector else {}),
        **({"tolerations": [dict(t) for t in install.tolerations]} if install.tolerations
           else {}),
    }


def deployment(install: ControllerInstall) -> Manifest:
    """Return the controller Deployment: `replicas` pods, one leader, the rest warm standbys."""
    checksum = hashlib.sha256(_config_text(install).encode()).hexdigest()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(install.name, labels(install), install.namespace),
        "spec": {
            "replicas": install.replicas,
            "selector": {"matchLabels": selector_labels(install)},
            # Surge first: a ready standby exists before an old pod (maybe the leader) goes.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {
                    "labels": labels(install),
                    "annotations": {CONFIG_CHECKSUM_ANNOTATION: checksum},
                },
                "spec": _pod_spec(install),
            },
        },
    }


def pod_disruption_budget(install: ControllerInstall) -> Manifest:
    """Return a PDB letting drains evict one controller pod at a time."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": object_meta(install.name, labels(install), install.namespace),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(install)}},
    }


def metrics_service(install: ControllerInstall) -> Manifest:
    """Return the ClusterIP Service in front of every controller pod's /metrics."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(f"{install.name}-metrics", labels(install), install.namespace),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(install),
            "ports": [
                {
                    "name": "metrics",
                    "port": install.metrics_port,
                    "targetPort": "metrics",
                    "protocol": "TCP",
                }
            ],
        },
    }


def service_monitor(install: ControllerInstall) -> Manifest:
    """Return a Prometheus-operator ServiceMonitor scraping the metrics Service: over HTTPS with
    Prometheus' ServiceAccount token when metrics are secure (bind that account to the
    `<name>-metrics-reader` ClusterRole), the certificate not verified when it is self-signed."""
    endpoint: Manifest = {"port": "metrics", "path": "/metrics", "interval": "30s"}
    metrics = install.config.metrics
    if metrics.secure_serving:
        endpoint |= {
            "scheme": "https",
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "tlsConfig": {"insecureSkipVerify": not metrics.cert_dir},
        }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": object_meta(install.name, labels(install), install.namespace),
        "spec": {
            "selector": {"matchLabels": labels(install)},
            "namespaceSelector": {"matchNames": [install.namespace]},
            "endpoints": [endpoint],
        },
    }


# The API server: the `kubernetes` Service's port and the control plane's (GKE serves 443, a
# kubeadm or local control plane 6443). The in-cluster client dials the Service IP, no DNS.
API_SERVER_PORTS = (443, 6443)


def network_policy(install: ControllerInstall) -> Manifest:
    """Return the NetworkPolicy of the controller pods: in, only the metrics port, and only from
    `install.metrics_scrapers`; out, only the API server: `install.api_server_cidrs` on TCP 443
    and 6443, or those ports on any address when no CIDR is given.

    Kubelet probes need no rule: traffic between a pod and its own node is always allowed. The
    in-cluster client dials the `kubernetes` Service IP, so no DNS egress is needed.
    """
    scrapers = [_peer(s.namespace, s.pod_labels) for s in install.metrics_scrapers]
    ingress = [{"from": scrapers,
                "ports": [{"port": install.metrics_port, "protocol": "TCP"}]}] if scrapers else []
    egress: Manifest = {"ports": [{"port": p, "protocol": "TCP"} for p in API_SERVER_PORTS]}
    if install.api_server_cidrs:
        egress["to"] = [{"ipBlock": {"cidr": cidr}} for cidr in install.api_server_cidrs]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(install.name, labels(install), install.namespace),
        "spec": {
            "podSelector": {"matchLabels": selector_labels(install)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": [egress],
        },
    }


def _peer(namespace: str, pod_labels: dict[str, str]) -> Manifest:
    peer: Manifest = {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}
    if pod_labels:
        peer["podSelector"] = {"matchLabels": dict(pod_labels)}
    return peer


def with_image(deployment: Manifest, image: str) -> Manifest:
    """Return a copy of a controller Deployment manifest running `image` instead."""
    spec = dict(deployment["spec"])
    template = dict(spec["template"])
    pod = dict(template["spec"])
    pod["containers"] = [{**pod["containers"][0], "image": image}, *pod["containers"][1:]]
    template["spec"] = pod
    spec["template"] = template
    return {**deployment, "spec": spec}
