"""examples/outputs-in with the real engine on the local cluster: its Kubernetes half (marker real).

A program that feeds the components other resources' Outputs: the controller image is a
ConfigMap's output (as an image build's digest ref is on GCP, whose half runs under mocks in
tests/examples), and a JobSet is created as soon as JobSetSystem is `ready`, which used to race
the API server (a create of the new kind refused with 503 "Resource kind ... JobSet not found"
until its admission caught up; now the controller is ready only once a create is taken). The
program previews, deploys, its JobSet completes, and it is destroyed; a wrong plain value fails
preview naming the field, and so does a wrong value of the Output, known at preview.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jobset_infra.cluster.command import controller_image
from jobset_infra.cluster.deploy import watch_jobset
from jobset_infra.cluster.engine import Engine, EngineError, engine_env
from jobset_infra.cluster.install import system_node_placement
from tests.realcluster import real_cluster
from tests.realpulumi import edit_stack_config, engine_or_skip, example_copy

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(900)]

STACK = "local"


def test_a_program_of_outputs_previews_deploys_and_its_jobset_completes(tmp_path: Path) -> None:
    engine_or_skip()
    # The controller runs from its image on the cluster's system node (nodeSelector and
    # tolerations from the program's config); the JobSet's Pods on kwok's CPU pool.
    with real_cluster("cpu:2", auto_complete_seconds=3, system_node=True) as cluster:
        project = example_copy("outputs-in", tmp_path / "project")
        state = cluster.layout.folder / "pulumi"
        engine = Engine(project, state, engine_env(state))
        engine.select(STACK)
        engine.config_set(STACK, "kubeconfig", str(cluster.kubeconfig))
        engine.config_set(STACK, "retainCrd", "false")
        placement = system_node_placement()
        edit_stack_config(project, STACK, lambda config: config.update({
            "outputs-in:nodeSelector": placement["node_selector"],
            "outputs-in:tolerations": placement["tolerations"]}))
        image = controller_image()  # by digest, as the cluster imported it

        engine.config_set(STACK, "controllerReplicas", "0")
        with pytest.raises(EngineError, match="replicas: Input should be greater than or equal"):
            engine.preview(STACK)
        engine.config_set(STACK, "controllerReplicas", "1")
        engine.config_set(STACK, "image", "jobset-controller")  # the ConfigMap's output
        with pytest.raises(EngineError, match="image: 'jobset-controller' has no pinned tag"):
            engine.preview(STACK)
        engine.config_set(STACK, "image", image)

        preview = engine.preview(STACK)
        assert set(preview.ops().values()) == {"create"}
        update = engine.up(STACK)
        assert update.outputs["jobset"] == "hello-outputs"
        assert update.outputs["image"] == image
        ended = asyncio.run(watch_jobset(cluster, "default", "hello-outputs", 300,
                                         lambda _line: None))
        assert ended == "Completed"
        print(f"preview {preview.seconds:.0f} s, up {update.seconds:.0f} s")
        engine.destroy(STACK)
