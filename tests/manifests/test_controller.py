"""The controller install: valid objects, restricted pods, leader election, clear errors."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.controller_flags import parse_config
from jobset_infra.api.k8s_openapi import validate_builtin
from jobset_infra.manifests import controller
from jobset_infra.manifests.controller_spec import (
    ControllerInstall,
    ControllerInstallError,
    parse_install,
)
from jobset_infra.manifests.pod_security import restricted_violations

IMAGE = "us-docker.pkg.dev/p/r/jobset-controller:0.1.0"


def make_install(**fields: Any) -> ControllerInstall:
    """A valid install, with `fields` overriding the defaults."""
    return parse_install(**{"image": IMAGE, **fields})


def config_from(**sections: Any) -> ControllerConfig:
    return ControllerConfig.from_dict(sections)


def _container(install: ControllerInstall) -> dict[str, Any]:
    container: dict[str, Any] = controller.deployment(install)["spec"]["template"]["spec"][
        "containers"
    ][0]
    return container


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(controller.namespace, id="namespace"),
        pytest.param(controller.config_map, id="config map"),
        pytest.param(controller.deployment, id="deployment"),
        pytest.param(controller.pod_disruption_budget, id="pod disruption budget"),
        pytest.param(controller.metrics_service, id="metrics service"),
    ],
)
def test_controller_objects_validate_against_the_pinned_kubernetes_schema(build: Any) -> None:
    assert validate_builtin(build(make_install())) == []


def test_controller_pod_meets_the_restricted_pod_security_standard() -> None:
    template = controller.deployment(make_install())["spec"]["template"]
    assert restricted_violations(template) == []


def test_namespace_enforces_the_restricted_profile() -> None:
    labels = controller.namespace(make_install())["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_container_is_locked_down() -> None:
    ctx = _container(make_install())["securityContext"]
    assert ctx["runAsNonRoot"] is True
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}


def test_deployment_runs_two_replicas_spread_over_zones_and_nodes() -> None:
    spec = controller.deployment(make_install())["spec"]
    assert spec["replicas"] == 2
    keys = [c["topologyKey"] for c in spec["template"]["spec"]["topologySpreadConstraints"]]
    assert keys == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_a_system_pool_is_chosen_by_node_selector_and_tolerations_and_none_by_default() -> None:
    pod = controller.deployment(make_install())["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod and "tolerations" not in pod
    taint = {"key": "jobset-infra.dev/system-node", "operator": "Exists", "effect": "NoSchedule"}
    install = make_install(node_selector={"jobset-infra.dev/system-node": "true"},
                           tolerations=[taint])
    pod = controller.deployment(install)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"jobset-infra.dev/system-node": "true"}
    assert pod["tolerations"] == [taint]
    assert validate_builtin(controller.deployment(install)) == []


def test_config_file_turns_leader_election_on_in_the_install_namespace() -> None:
    install = make_install(namespace="platform-jobs")
    text = controller.config_map(install)["data"]["config.yaml"]
    config = ControllerConfig.from_yaml(text)
    assert config.leader_election.leader_elect is True
    assert config.leader_election.resource_namespace == "platform-jobs"


def test_controller_flags_reach_the_config_file() -> None:
    install = make_install(
        config=config_from(
            clientConnection={"qps": 50, "burst": 100},
            placement={"mode": "exclusive"},
            logging={"level": "debug"},
        )
    )
    config = ControllerConfig.from_yaml(controller.config_map(install)["data"]["config.yaml"])
    assert (config.client_connection.qps, config.client_connection.burst) == (50, 100)
    assert config.placement.mode == "exclusive"
    assert config.logging.level == "debug"
    assert _container(install)["args"] == [
        "--config=/etc/jobset-controller/config.yaml",
        "--metrics-bind-address=$(POD_IP):8443",
    ]


def test_probes_and_ports_follow_the_config() -> None:
    install = make_install(
        config=config_from(
            health={"healthProbeBindAddress": ":9090"}, metrics={"bindAddress": "0.0.0.0:9100"}
        )
    )
    container = _container(install)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 9090, "metrics": 9100}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    service = controller.metrics_service(install)
    assert service["spec"]["ports"][0]["port"] == 9100


def test_readiness_is_asked_often_and_tolerant_liveness_lenient() -> None:
    container = _container(make_install())
    ready, live = container["readinessProbe"], container["livenessProbe"]
    # Ready within 2 s of serving; unready only after 30 s of failures.
    assert (ready["initialDelaySeconds"], ready["periodSeconds"]) == (1, 2)
    assert ready["periodSeconds"] * ready["failureThreshold"] == 30
    # Restarted only after a minute of failures, never in the first 15 s.
    assert live["initialDelaySeconds"] == 15
    assert live["periodSeconds"] * live["failureThreshold"] == 60


def test_config_change_changes_the_pod_template_checksum() -> None:
    def checksum(install: ControllerInstall) -> str:
        template = controller.deployment(install)["spec"]["template"]
        return str(template["metadata"]["annotations"][controller.CONFIG_CHECKSUM_ANNOTATION])

    base = checksum(make_install())
    assert checksum(make_install()) == base
    assert checksum(make_install(config=config_from(logging={"level": "debug"}))) != base


def test_resources_have_requests_and_limits() -> None:
    resources = _container(make_install())["resources"]
    assert set(resources) == {"requests", "limits"}
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}


def test_pdb_and_services_select_the_controller_pods() -> None:
    install = make_install()
    pod_labels = controller.deployment(install)["spec"]["template"]["metadata"]["labels"]
    for selector in (
        controller.pod_disruption_budget(install)["spec"]["selector"]["matchLabels"],
        controller.metrics_service(install)["spec"]["selector"],
    ):
        assert selector.items() <= pod_labels.items()


def test_service_monitor_scrapes_the_metrics_service() -> None:
    install = make_install()
    monitor = controller.service_monitor(install)
    service = controller.metrics_service(install)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


@pytest.mark.parametrize(
    "image",
    [
        pytest.param("registry/jobset-controller:0.1.0", id="version tag"),
        pytest.param("localhost:5000/jobset-controller:dev-1", id="registry with a port"),
        pytest.param("r/j@sha256:" + "a" * 64, id="digest"),
    ],
)
def test_pinned_images_are_accepted(image: str) -> None:
    assert make_install(image=image).image == image


@pytest.mark.parametrize(
    ("fields", "want_message"),
    [
        pytest.param({"image": "registry/jobset-controller"}, "no pinned tag", id="untagged image"),
        pytest.param({"image": "r/jobset-controller:latest"}, "no pinned tag", id="latest tag"),
        pytest.param({"image": "localhost:5000/jobset"}, "no pinned tag", id="port is not a tag"),
        pytest.param({"image": "Bad Image"}, "not an image reference", id="not a reference"),
        pytest.param({"namespace": "Jobset_System"}, "namespace", id="namespace not a DNS label"),
        pytest.param({"replicas": 0}, "replicas", id="no replicas"),
        pytest.param(
            {"config": config_from(leaderElection={"leaderElect": False})},
            "two active controllers",
            id="two replicas without leader election",
        ),
        pytest.param(
            {"config": config_from(leaderElection={"resourceNamespace": "elsewhere"})},
            "only grants Leases",
            id="lease namespace outside the role",
        ),
        pytest.param(
            {"config": config_from(health={"healthProbeBindAddress": "127.0.0.1:8081"})},
            "loopback",
            id="probes bound to loopback",
        ),
        pytest.param(
            {"config": config_from(health={"healthProbeBindAddress": ":8443"})},
            "both use port 8443",
            id="health and metrics on one port",
        ),
        pytest.param(
            {"resources": {"cpu_request": "lots"}}, "resources.cpu_request", id="bad quantity"
        ),
        pytest.param({"image_pull_policy": "Sometimes"}, "image_pull_policy", id="pull policy"),
        pytest.param({"replica": 2}, "replica", id="misspelled field"),
        pytest.param({"tolerations": [{"key": "a", "operator": "In"}]},
                     r"tolerations.*'In' is not Equal or Exists", id="toleration operator"),
        pytest.param({"tolerations": [{"key": "a", "effect": "NoRun"}]},
                     r"tolerations.*'NoRun' is not NoSchedule", id="toleration effect"),
        pytest.param({"tolerations": [{"key": "a", "seconds": "1"}]},
                     r"tolerations.*unknown toleration field 'seconds'", id="toleration field"),
    ],
)
def test_bad_install_arguments_are_named(fields: dict[str, Any], want_message: str) -> None:
    with pytest.raises(ControllerInstallError, match=want_message):
        make_install(**fields)


def test_one_replica_may_run_without_leader_election() -> None:
    install = make_install(replicas=1, config=config_from(leaderElection={"leaderElect": False}))
    text = controller.config_map(install)["data"]["config.yaml"]
    assert yaml.safe_load(text)["leaderElection"]["leaderElect"] is False


_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)


@given(
    namespace=_NAMES,
    replicas=st.integers(1, 10),
    health=st.integers(1024, 65535),
    metrics=st.integers(1024, 65535),
    qps=st.floats(1, 5000),
)
def test_any_valid_install_renders_a_valid_restricted_deployment(
    namespace: str, replicas: int, health: int, metrics: int, qps: float
) -> None:
    if health == metrics:
        metrics = health - 1
    install = make_install(
        namespace=namespace,
        replicas=replicas,
        config=config_from(
            health={"healthProbeBindAddress": f":{health}"},
            metrics={"bindAddress": f":{metrics}"},
            clientConnection={"qps": qps},
        ),
    )
    deployment = controller.deployment(install)
    assert validate_builtin(deployment) == []
    assert restricted_violations(deployment["spec"]["template"]) == []
    config = ControllerConfig.from_yaml(controller.config_map(install)["data"]["config.yaml"])
    assert config.leader_election.resource_namespace == namespace
    assert config.leader_election.leader_elect is True
    # The Deployment is awaited by Pulumi: nothing may opt it out.
    assert "pulumi.com/skipAwait" not in deployment["metadata"].get("annotations", {})


# The ServiceMonitor fields we render, as the Prometheus operator documents them
# (monitoring.coreos.com/v1): unknown fields are errors, so a misspelling fails here.
_SERVICE_MONITOR_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {"type": "object", "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchLabels": {"type": "object"}},
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchNames": {"type": "array", "items": {"type": "string"}}},
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            "scheme": {"enum": ["http", "https"]},
                            "bearerTokenFile": {"type": "string"},
                            "tlsConfig": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {"insecureSkipVerify": {"type": "boolean"}},
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_service_monitor_has_only_documented_fields() -> None:
    monitor = controller.service_monitor(make_install())
    errors = list(jsonschema.Draft202012Validator(_SERVICE_MONITOR_SCHEMA).iter_errors(monitor))
    assert errors == []


def test_the_controller_parses_the_deployment_args_and_config_file_as_rendered() -> None:
    install = make_install(config=config_from(logging={"level": "warning"}))
    files = {
        f"{controller.CONFIG_DIR}/{controller.CONFIG_FILE}": controller.config_map(install)["data"][
            controller.CONFIG_FILE
        ]
    }
    config, _ = parse_config(_container(install)["args"], read_file=files.__getitem__)
    # The kubelet replaces $(POD_IP) (the container's POD_IP variable) before the process starts.
    effective = install.effective_config()
    bound = effective.metrics.model_copy(update={"bind_address": "$(POD_IP):8443"})
    assert config == effective.model_copy(update={"metrics": bound})


def test_metrics_listen_on_the_pod_ip_from_the_downward_api() -> None:
    container = _container(make_install())
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in
           container["env"]}
    assert env["POD_IP"] == "status.podIP"
    assert "--metrics-bind-address=$(POD_IP):8443" in container["args"]


PORTS = [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]


def _from(namespace: str, **pods: str) -> dict[str, object]:
    peer: dict[str, object] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    if pods:
        peer["podSelector"] = {"matchLabels": pods}
    return peer


@pytest.mark.parametrize(
    ("options", "ingress_from", "egress"),
    [
        pytest.param({}, [_from("gmp-system"), _from("monitoring")], {"ports": PORTS},
                     id="by default: scrapers of GKE Managed Prometheus and monitoring; out, "
                        "443/6443 anywhere (the API server has no other name)"),
        pytest.param({"api_server_cidrs": ("34.1.2.3",)}, [_from("gmp-system"),
                                                           _from("monitoring")],
                     {"to": [{"ipBlock": {"cidr": "34.1.2.3/32"}}], "ports": PORTS},
                     id="the API server's address given: out only to it"),
        pytest.param({"metrics_scrapers": [{"namespace": "obs",
                                            "pod_labels": {"app": "prometheus"}}]},
                     [_from("obs", app="prometheus")], {"ports": PORTS},
                     id="scrapers chosen by namespace and pod labels"),
        pytest.param({"metrics_scrapers": []}, None, {"ports": PORTS},
                     id="no scrapers: nothing gets in"),
    ],
)
def test_the_network_policy_admits_only_scrapers_and_lets_out_only_the_api_server(
    options: dict[str, object], ingress_from: list[object] | None, egress: dict[str, object]
) -> None:
    install = make_install(**options)
    policy = controller.network_policy(install)
    assert validate_builtin(policy) == []
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == controller.selector_labels(install)
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    expected = [] if ingress_from is None else [
        {"from": ingress_from, "ports": [{"port": 8443, "protocol": "TCP"}]}]
    assert spec["ingress"] == expected
    assert spec["egress"] == [egress]


def test_a_bad_api_server_cidr_names_the_field() -> None:
    with pytest.raises(ControllerInstallError, match=r"api_server_cidrs.*34\.1\.2\.3/32"):
        make_install(api_server_cidrs=("the api server",))


def test_the_service_monitor_scrapes_secure_metrics_with_its_token() -> None:
    (endpoint,) = controller.service_monitor(make_install())["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"].endswith("serviceaccount/token")
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}  # the self-signed default
