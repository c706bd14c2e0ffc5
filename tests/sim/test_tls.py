"""HTTPS with a bearer token: the in-cluster configuration path of a client, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

from jobset_infra.sim.apiserver.server import SimThread


def test_in_cluster_configuration_reaches_the_sim_over_tls(tmp_path: Path) -> None:
    with SimThread(tls=True, token="sa-token") as sim:
        env = sim.service_account(tmp_path / "sa")
        configuration = client.Configuration()
        InClusterConfigLoader(token_filename=str(tmp_path / "sa/token"),
                              cert_filename=str(tmp_path / "sa/ca.crt"),
                              environ=env).load_and_set(configuration)
        assert configuration.host.startswith("https://127.0.0.1:")
        core = client.CoreV1Api(client.ApiClient(configuration))
        names = {n.metadata.name for n in core.list_namespace().items}
        assert "kube-system" in names


def test_a_wrong_token_is_401_over_tls(tmp_path: Path) -> None:
    with SimThread(tls=True, token="right") as sim:
        configuration = client.Configuration()
        configuration.host = sim.url
        configuration.ssl_ca_cert = str(sim.sim.ca_file) if sim.sim else None
        configuration.api_key = {"authorization": "Bearer wrong"}
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(client.ApiClient(configuration)).list_namespace()
        assert err.value.status == 401
