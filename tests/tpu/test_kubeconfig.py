"""render_kubeconfig: exec-plugin credentials, checked by the real kubectl binary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from jobset_infra.tpu.kubeconfig import context_name, render_kubeconfig

KUBECTL = Path(sys.executable).parent / "kubectl"


def _render() -> str:
    return render_kubeconfig(
        context=context_name("my-project", "us-west4", "train"),
        endpoint="203.0.113.10",
        ca_certificate="Q0FEQVRB",
    )


def test_exec_plugin_and_never_the_removed_gcp_auth_provider() -> None:
    config = yaml.safe_load(_render())
    assert config["current-context"] == "gke_my-project_us-west4_train"
    user = config["users"][0]["user"]
    assert set(user) == {"exec"}
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert user["exec"]["provideClusterInfo"] is True
    assert config["clusters"][0]["cluster"]["server"] == "https://203.0.113.10"


def test_kubectl_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(_render())
    shown = subprocess.run(
        [str(KUBECTL), "config", "view", "--raw", "-o", "json", "--kubeconfig", str(path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    view = json.loads(shown.stdout)
    assert view["current-context"] == "gke_my-project_us-west4_train"
    assert view["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert view["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0FEQVRB"
