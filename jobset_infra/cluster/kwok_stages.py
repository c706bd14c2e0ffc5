"""kwok's Stages for the local cluster: what the fake kubelet does to Nodes and Pods, and when.

kwok runs no containers; a Stage matches objects by jq expressions and patches their status from
a Go template. Ours make a managed Node Ready and keep it heartbeating, run a scheduled Pod
(Running and Ready, pod IP), end a Pod when someone asks through an annotation, and finish
deletes (there is no kubelet to confirm a graceful delete). Pure: `stages(auto_complete)`
returns the documents `cluster up` writes to kwok's `--config` file.

A test or a user ends a running Pod by annotating it, as a container would by exiting:

    kubectl annotate pod P jobset-infra.dev/exit-code=1 jobset-infra.dev/exit-reason=OOMKilled

exit code 0 makes the Pod Succeeded; any other code Failed, with that code and reason (default
`Completed` / `Error`) in its container's terminated state, so a Job's podFailurePolicy sees it.

A Node goes NotReady (its kubelet stops reporting Ready, as a dead host's does) while it carries
the annotation `jobset-infra.dev/not-ready`, and Ready again once it is removed:

    kubectl annotate node N jobset-infra.dev/not-ready=true
"""

from __future__ import annotations

from typing import Any, Final

EXIT_CODE_ANNOTATION: Final = "jobset-infra.dev/exit-code"
EXIT_REASON_ANNOTATION: Final = "jobset-infra.dev/exit-reason"
NOT_READY_ANNOTATION: Final = "jobset-infra.dev/not-ready"
STAGE_API: Final = "kwok.x-k8s.io/v1alpha1"

JsonObj = dict[str, Any]


def _annotation(key: str) -> str:
    return f'.metadata.annotations["{key}"]'


def _stage(name: str, kind: str, expressions: list[JsonObj], next_: JsonObj | None, *,
           delay_ms: int | None = None, jitter_ms: int | None = None,
           steps: list[JsonObj] | None = None) -> JsonObj:
    spec: JsonObj = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": expressions},
    }
    if next_ is not None:
        spec["next"] = next_
    if steps is not None:
        spec["steps"] = steps
    if delay_ms is not None:
        spec["delay"] = {"durationMilliseconds": delay_ms,
                         "jitterDurationMilliseconds": jitter_ms or delay_ms}
    return {"apiVersion": STAGE_API, "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def _has(key: str) -> JsonObj:
    return {"key": key, "operator": "Exists"}


def _lacks(key: str) -> JsonObj:
    return {"key": key, "operator": "DoesNotExist"}


def _is(key: str, *values: str) -> JsonObj:
    return {"key": key, "operator": "In", "values": list(values)}


def _is_not(key: str, *values: str) -> JsonObj:
    return {"key": key, "operator": "NotIn", "values": list(values)}


_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
_NOT_READY = _annotation(NOT_READY_ANNOTATION)

# A healthy kubelet's Node conditions, as of now (a heartbeat is the same report again).
_NODE_HEARTBEAT: Final = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
"""
# The first report adds the rest: allocatable and capacity are the ones we created the Node
# with (TPU chips included), never kwok's defaults.
_NODE_STATUS: Final = _NODE_HEARTBEAT + """\
{{ with .status.addresses }}
addresses:
{{ YAML . 1 }}
{{ end }}
{{ with NodePort }}
daemonEndpoints:
  kubeletEndpoint:
    Port: {{ . }}
{{ end }}
allocatable:
{{ YAML .status.allocatable 1 }}
capacity:
{{ YAML .status.capacity 1 }}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: {{ or .status.nodeInfo.kubeletVersion (printf "kwok-%s" Version) }}
  containerRuntimeVersion: {{ printf "kwok-%s" Version }}
  kernelVersion: {{ printf "kwok-%s" Version }}
  kubeProxyVersion: {{ printf "kwok-%s" Version }}
  bootID: ""
  machineID: ""
  osImage: ""
  systemUUID: ""
phase: Running
"""

# A kubelet that stopped reporting: Ready False (the node lifecycle controller then taints the
# Node not-ready, so nothing new is scheduled there).
_NODE_NOT_READY: Final = """\
{{ $now := Now }}
conditions:
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: "kubelet stopped posting node status (jobset-infra.dev/not-ready)"
  reason: KubeletNotReady
  status: "False"
  type: Ready
"""

_POD_RUNNING: Final = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodReadyToStartContainers
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
{{ with NodeIPsWith .spec.nodeName }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""


def _pod_exit(phase: str, code: str, reason: str) -> str:
    """Every container terminated with `code` and `reason` (Go template expressions)."""
    return f"""\
{{{{ $now := Now }}}}
{{{{ $root := . }}}}
conditions:
{{{{ range $root.status.conditions }}}}{{{{ if eq .type "DisruptionTarget" }}}}
- type: DisruptionTarget
  status: {{{{ .status | Quote }}}}
  reason: {{{{ .reason | Quote }}}}
  message: {{{{ .message | Quote }}}}
  lastTransitionTime: {{{{ .lastTransitionTime | Quote }}}}
{{{{ end }}}}{{{{ end }}}}
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: Ready
  reason: PodCompleted
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: ContainersReady
  reason: PodCompleted
containerStatuses:
{{{{ range .spec.containers }}}}
- image: {{{{ .image | Quote }}}}
  name: {{{{ .name | Quote }}}}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: {code}
      reason: {reason}
      startedAt: {{{{ or $root.status.startTime $now | Quote }}}}
      finishedAt: {{{{ $now | Quote }}}}
{{{{ end }}}}
phase: {phase}
"""


_CODE = f'{{{{ index $root.metadata.annotations "{EXIT_CODE_ANNOTATION}" }}}}'


def _reason(default: str) -> str:
    return (f'{{{{ or (index $root.metadata.annotations "{EXIT_REASON_ANNOTATION}") '
            f'"{default}" | Quote }}}}')


_ALIVE = _lacks(".metadata.deletionTimestamp")
_RUNNING = _is(".status.phase", "Running")


# A claim with no volume gets one made for it, bound by claimRef; the controller-manager's
# PersistentVolume binder then binds the claim, as it does behind a real provisioner.
_PROVISIONED_VOLUME: Final = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pvc-{{ .metadata.uid }}
  annotations:
    pv.kubernetes.io/provisioned-by: jobset-infra.dev/kwok
spec:
  accessModes:
{{ YAML .spec.accessModes 1 }}
  capacity:
{{ YAML .spec.resources.requests 2 }}
  persistentVolumeReclaimPolicy: Delete
  storageClassName: {{ or .spec.storageClassName "" | Quote }}
  volumeMode: {{ or .spec.volumeMode "Filesystem" | Quote }}
  claimRef:
    apiVersion: v1
    kind: PersistentVolumeClaim
    name: {{ .metadata.name | Quote }}
    namespace: {{ .metadata.namespace | Quote }}
    uid: {{ .metadata.uid | Quote }}
  hostPath:
    path: /nonexistent/kwok/pvc-{{ .metadata.uid }}
"""


def stages(auto_complete_seconds: float | None = None) -> list[JsonObj]:
    """The Stage documents, in the order kwok should consider them."""
    out = [
        _stage("node-ready", "Node", [_is_not(_READY, "True"), _lacks(_NOT_READY)],
               {"statusTemplate": _NODE_STATUS}),
        _stage("node-not-ready", "Node", [_is(_READY, "True"), _has(_NOT_READY)],
               {"statusTemplate": _NODE_NOT_READY}),
        _stage("node-heartbeat", "Node", [_is(".status.phase", "Running"), _is(_READY, "True"),
                                          _lacks(_NOT_READY)],
               {"statusTemplate": _NODE_HEARTBEAT}, delay_ms=20_000, jitter_ms=25_000),
        _stage("pod-running", "Pod", [_ALIVE, _is(".status.phase", "Pending")],
               {"statusTemplate": _POD_RUNNING}),
        _stage("pod-succeeded", "Pod",
               [_ALIVE, _RUNNING, _is(_annotation(EXIT_CODE_ANNOTATION), "0")],
               {"statusTemplate": _pod_exit("Succeeded", "0", _reason("Completed"))}),
        _stage("pod-failed", "Pod",
               [_ALIVE, _RUNNING, _has(_annotation(EXIT_CODE_ANNOTATION)),
                _is_not(_annotation(EXIT_CODE_ANNOTATION), "0")],
               {"statusTemplate": _pod_exit("Failed", _CODE, _reason("Error"))}),
        _stage("pod-delete", "Pod", [_has(".metadata.deletionTimestamp")], {"delete": True}),
        _stage("pvc-provision", "PersistentVolumeClaim",
               [_lacks(".metadata.deletionTimestamp"), _lacks(".spec.volumeName")],
               None, steps=[{"apply": {"template": _PROVISIONED_VOLUME}}]),
    ]
    if auto_complete_seconds is not None:
        delay = max(0, int(auto_complete_seconds * 1000))
        out.insert(6, _stage(
            "pod-auto-complete", "Pod",
            [_ALIVE, _RUNNING, _lacks(_annotation(EXIT_CODE_ANNOTATION)),
             _is(".metadata.ownerReferences.[].kind", "Job")],
            {"statusTemplate": _pod_exit("Succeeded", "0", '"Completed"')},
            delay_ms=delay, jitter_ms=delay,
        ))
    return out
