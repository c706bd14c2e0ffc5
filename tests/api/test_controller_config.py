"""ControllerConfig: upstream defaults, config file + flags precedence, clear errors."""

from __future__ import annotations

import pytest

from jobset_infra.api.controller_config import (
    ControllerConfig,
    ControllerConfigError,
    PlacementMode,
    format_duration,
    parse_duration,
)
from jobset_infra.api.controller_flags import parse_config
from jobset_infra.api.features import Feature

UPSTREAM_SHIPPED_CONFIG = """
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: true
internalCertManagement:
  enable: true
"""


def _files(**files: str):  # type: ignore[no-untyped-def]
    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory")
        return files[path]

    return read


def test_defaults_are_upstreams() -> None:
    config = ControllerConfig()
    assert (config.client_connection.qps, config.client_connection.burst) == (500, 500)
    le = config.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15, 10, 2)
    assert le.resource_name == "6d4f6a47.jobset.x-k8s.io"
    assert le.leader_elect is False
    assert config.metrics.bind_address == ":8443"
    assert config.health.health_probe_bind_address == ":8081"
    assert config.controller.max_parallelism == 50
    assert config.placement.mode is PlacementMode.AUTO
    assert config.gates().enabled(Feature.TLS_OPTIONS) is True
    assert config.gates().enabled(Feature.RESTART_JOB) is False


def test_upstream_shipped_config_file_loads_and_reports_ignored_sections() -> None:
    config = ControllerConfig.from_yaml(UPSTREAM_SHIPPED_CONFIG)
    assert config.leader_election.leader_elect is True
    assert config.ignored_upstream_sections() == ["internalCertManagement"]


def test_yaml_round_trip_keeps_every_field() -> None:
    config = ControllerConfig.from_dict(
        {
            "leaderElection": {"leaseDuration": "1m30s", "renewDeadline": "20s"},
            "placement": {
                "mode": "exclusive",
                "domains": [
                    {
                        "name": "pool-a",
                        "nodeCount": 4,
                        "labels": {"cloud.google.com/gke-tpu-topology": "4x4"},
                        "allocatable": {"google.com/tpu": "4"},
                    }
                ],
            },
            "featureGates": {"RestartJob": True},
        }
    )
    text = config.to_yaml()
    assert "leaseDuration: 90s" in text
    assert ControllerConfig.from_yaml(text) == config
    assert config.placement.domains[0].topology_key == "cloud.google.com/gke-nodepool"


@pytest.mark.parametrize(
    ("text", "want_fragment"),
    [
        pytest.param(
            "leaderElection: {leaseDuration: 5s}",
            "leaderElection: leaseDuration (5s) must be greater than renewDeadline (10s)",
            id="lease shorter than renew deadline names both keys",
        ),
        pytest.param(
            "clientConnection: {qpps: 5}",
            "clientConnection.qpps: unknown key",
            id="misspelt key is rejected, not ignored",
        ),
        pytest.param(
            "featureGates: {Nope: true}",
            "featureGates: unknown feature gate 'Nope'; known: CreateChildrenOnFirstResume, "
            "ElasticJobSet",
            id="unknown feature gate lists the known ones",
        ),
        pytest.param(
            "placement: {mode: sideways}",
            "placement.mode: Input should be 'auto', 'exclusive', 'affinity' or 'off'",
            id="placement mode outside the enum",
        ),
        pytest.param(
            "leaderElection: {retryPeriod: soon}",
            "leaderElection.retryPeriod: expected a duration like '15s'",
            id="unparseable duration",
        ),
        pytest.param(
            "placement: {domains: [{name: a, nodeCount: 1}, {name: a, nodeCount: 2}]}",
            "domain 'a' (topologyKey 'cloud.google.com/gke-nodepool') is declared twice",
            id="duplicate domain",
        ),
        pytest.param("- 1", "expected a mapping", id="top level is a list"),
        pytest.param("a: [", "not valid YAML", id="broken yaml"),
        pytest.param("kind: Config", "kind: must be 'Configuration'", id="wrong kind"),
    ],
)
def test_bad_config_file_is_a_clear_error(text: str, want_fragment: str) -> None:
    with pytest.raises(ControllerConfigError) as err:
        ControllerConfig.from_yaml(text, source="cfg.yaml")
    assert want_fragment in str(err.value)
    assert str(err.value).startswith("cfg.yaml: ")


def test_explicit_flags_override_the_config_file() -> None:
    read = _files(**{"/etc/c.yaml": "clientConnection: {qps: 100, burst: 200}"})
    config, _ = parse_config(["--config=/etc/c.yaml", "--kube-api-qps=50"], read_file=read)
    assert config.client_connection.qps == 50
    assert config.client_connection.burst == 200


def test_flags_without_file_and_feature_gates() -> None:
    config, args = parse_config(
        [
            "--leader-elect=true",
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=500ms",
            "--feature-gates=RestartJob=true,ElasticJobSet=false",
            "--kubeconfig=/k",
        ]
    )
    assert config.leader_election.leader_elect is True
    assert config.leader_election.retry_period == 0.5
    assert config.gates().enabled(Feature.RESTART_JOB) is True
    assert args.kubeconfig == "/k"


@pytest.mark.parametrize(
    ("argv", "want_fragment"),
    [
        pytest.param(["--workers=0"], "--workers: Input should be greater than", id="zero workers"),
        pytest.param(["--leader-elect=maybe"], "--leader-elect: expected true or false", id="bool"),
        pytest.param(["--feature-gates=RestartJob"], "must look like Name=true", id="gate form"),
        pytest.param(["--config=/missing"], "--config: cannot read /missing", id="missing file"),
        pytest.param(
            ["--feature-gates=Bogus=true"], "--feature-gates: unknown feature gate", id="gate name"
        ),
    ],
)
def test_bad_flags_are_clear_errors(argv: list[str], want_fragment: str) -> None:
    with pytest.raises(ControllerConfigError) as err:
        parse_config(argv, read_file=_files())
    assert want_fragment in str(err.value)


def test_to_args_round_trips_through_the_flag_parser() -> None:
    config = ControllerConfig.from_dict(
        {"leaderElection": {"leaderElect": True, "retryPeriod": "1s"}, "controller": {"workers": 8}}
    )
    parsed, _ = parse_config(config.to_args())
    assert parsed == config


def test_to_args_with_domains_needs_a_config_file() -> None:
    config = ControllerConfig.from_dict({"placement": {"domains": [{"name": "a", "nodeCount": 1}]}})
    with pytest.raises(ControllerConfigError, match=r"placement\.domains cannot be passed"):
        config.to_args()
    assert config.to_args(config_path="/etc/jobset/config.yaml") == [
        "--config=/etc/jobset/config.yaml"
    ]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes and seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("2h", 7200.0, id="hours"),
        pytest.param(3, 3.0, id="plain number"),
    ],
)
def test_parse_duration(text: str | int, want: float) -> None:
    assert parse_duration(text) == want
    assert parse_duration(format_duration(want)) == want


def test_default_topology_key_is_gkes_node_pool_label() -> None:
    from jobset_infra.api.controller_config import DEFAULT_TOPOLOGY_KEY
    from jobset_infra.tpu.constants import GKE_NODEPOOL_LABEL

    assert DEFAULT_TOPOLOGY_KEY == GKE_NODEPOOL_LABEL


def test_leader_elect_alone_means_true_like_the_go_flag() -> None:
    config, _ = parse_config(["--leader-elect"])
    assert config.leader_election.leader_elect is True
