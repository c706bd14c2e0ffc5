"""jobset-infra's components inside a program of your own, fed other resources' Outputs.

On GCP (`pulumi config set project ...`): a VPC whose self link is the cluster's `network`, and the
controller image built and pushed by pulumi-docker-build, whose digest ref (`Image.ref`, known only
once the push is done) is what JobSetSystem runs. Each Output is checked by the same rules as a
plain value when it resolves, and its error names the field (`image: ... has no pinned tag`). With
`kubeconfig` set, the Kubernetes half on a cluster of your own (the local one: `jobset-infra
cluster up --nodes cpu:2 --system-node`): the image ref is another resource's output there too, a
ConfigMap recording it (no registry build here); `nodeSelector` and `tolerations` place the
controller's Pods (the local cluster's system node: `jobset-infra.dev/system-node`). A JobSet is
created as soon as JobSetSystem is `ready`. A wrong plain value (`controllerReplicas: 0`) fails
preview naming `replicas`.

    pulumi config set project my-project && pulumi up           # on GCP
    pulumi config set kubeconfig ~/.cache/jobset-infra/clusters/local/kubeconfig && pulumi up
"""

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from jobset_infra.components.jobset import JobSet, JobSetArgs
from jobset_infra.components.jobset_system import JobSetSystem, JobSetSystemArgs

config = pulumi.Config()
kubeconfig = config.get("kubeconfig")


def on_gcp() -> tuple[pulumi.ProviderResource, pulumi.Output[str]]:
    """A VPC and a GKE cluster in it; the controller image built and pushed by digest."""
    import pulumi_gcp as gcp
    from pulumi_docker_build import Image, Platform

    from jobset_infra.components.gke_cluster import GkeCluster

    project = config.require("project")
    location = config.get("location") or "us-west4"
    vpc = gcp.compute.Network("vpc", project=project, auto_create_subnetworks=False)
    subnet = gcp.compute.Subnetwork("nodes", project=project, region=location,
                                    network=vpc.self_link, ip_cidr_range="10.10.0.0/20")
    cluster = GkeCluster("gke", {"project": project, "location": location,
                                 "network": vpc.self_link, "subnetwork": subnet.self_link})
    registry = f"{location}-docker.pkg.dev/{project}/jobset-infra/jobset-controller"
    image = Image("controller-image", context={"location": str(Path.cwd() / "../..")},
                  platforms=[Platform.LINUX_AMD64], tags=[f"{registry}:v1"], push=True)
    return cluster.provider, image.ref


def on_own_cluster(path: str) -> tuple[pulumi.ProviderResource, pulumi.Output[str]]:
    """The cluster's provider; the image ref as a ConfigMap's output."""
    provider = k8s.Provider("cluster", kubeconfig=Path(path).expanduser().read_text())
    image = config.get("image") or "jobset-infra.local/jobset-controller:0.1.0"
    record = k8s.core.v1.ConfigMap("controller-image", data={"ref": image},
                                   opts=pulumi.ResourceOptions(provider=provider))
    return provider, record.data.apply(lambda data: data["ref"])


provider, image = on_own_cluster(kubeconfig) if kubeconfig else on_gcp()
k8s_opts = pulumi.ResourceOptions(providers=[provider])
replicas = config.get_int("controllerReplicas")
# Where the controller's Pods go: e.g. a tainted system pool (the local cluster's system node).
placement = {"node_selector": config.get_object("nodeSelector") or {},
             "tolerations": config.get_object("tolerations") or ()}
system = JobSetSystem("jobset", JobSetSystemArgs(
    image=image, replicas=1 if replicas is None else replicas,
    retain_crd=config.get_bool("retainCrd") is not False, **placement), opts=k8s_opts)
hello = JobSet("hello", JobSetArgs(
    name="hello-outputs", system=system,
    replicated_jobs=[{"name": "workers", "replicas": 2, "template": {"spec": {
        "parallelism": 1, "completions": 1, "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "main", "image": "python:3.12",
            "command": ["python", "-c", "print('hello')"]}]}}}}}]),
    opts=k8s_opts)
pulumi.export("image", system.image)
pulumi.export("ready", system.ready)
pulumi.export("jobset", hello.name)
