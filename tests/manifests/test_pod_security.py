"""The "restricted" Pod Security Standard check: each rule catches its own violation."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from jobset_infra.manifests.pod_security import RESTRICTED_RULES, restricted_violations

Pod = dict[str, Any]


def compliant_pod() -> Pod:
    """A minimal pod template that meets the restricted profile."""
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "main",
                    "image": "img:1",
                    "ports": [{"containerPort": 8080}],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }


def _ctx(pod: Pod) -> dict[str, Any]:
    ctx: dict[str, Any] = pod["spec"]["containers"][0]["securityContext"]
    return ctx


def _set(path: str, value: Any) -> Callable[[Pod], None]:
    def mutate(pod: Pod) -> None:
        *parents, last = path.split(".")
        node = pod
        for part in parents:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[last] = value

    return mutate


def _pop_pod_seccomp(pod: Pod) -> None:
    del pod["spec"]["securityContext"]["seccompProfile"]


def _pop_pod_non_root(pod: Pod) -> None:
    del pod["spec"]["securityContext"]["runAsNonRoot"]


CASES = [
    pytest.param(_set("spec.hostNetwork", True), "host-namespaces", id="host network is shared"),
    pytest.param(_set("spec.hostPID", True), "host-namespaces", id="host PID namespace is shared"),
    pytest.param(
        lambda p: _ctx(p).update(windowsOptions={"hostProcess": True}),
        "host-process",
        id="container is a Windows host process",
    ),
    pytest.param(
        lambda p: _ctx(p).update(privileged=True), "privileged", id="container is privileged"
    ),
    pytest.param(
        lambda p: _ctx(p)["capabilities"].update(add=["SYS_ADMIN"]),
        "baseline-capabilities",
        id="container adds a capability outside the baseline set",
    ),
    pytest.param(
        lambda p: p["spec"]["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
        "host-path-volumes",
        id="pod mounts a hostPath volume",
    ),
    pytest.param(
        lambda p: p["spec"]["containers"][0]["ports"][0].update(hostPort=80),
        "host-ports",
        id="container binds a host port",
    ),
    pytest.param(
        lambda p: _ctx(p).update(appArmorProfile={"type": "Unconfined"}),
        "apparmor",
        id="container runs unconfined by AppArmor",
    ),
    pytest.param(
        lambda p: p["metadata"].update(
            annotations={"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}
        ),
        "apparmor",
        id="AppArmor annotation asks for unconfined",
    ),
    pytest.param(
        lambda p: _ctx(p).update(seLinuxOptions={"type": "spc_t"}),
        "selinux",
        id="container uses a privileged SELinux type",
    ),
    pytest.param(
        lambda p: _ctx(p).update(seLinuxOptions={"user": "root"}),
        "selinux",
        id="container sets an SELinux user",
    ),
    pytest.param(
        lambda p: _ctx(p).update(procMount="Unmasked"), "proc-mount", id="proc mount is unmasked"
    ),
    pytest.param(
        lambda p: p["spec"]["securityContext"].update(
            sysctls=[{"name": "kernel.msgmax", "value": "1"}]
        ),
        "sysctls",
        id="pod sets an unsafe sysctl",
    ),
    pytest.param(
        lambda p: p["spec"]["volumes"].append({"name": "n", "nfs": {"server": "s", "path": "/"}}),
        "volume-types",
        id="pod mounts a volume type outside the restricted list",
    ),
    pytest.param(
        lambda p: _ctx(p).pop("allowPrivilegeEscalation"),
        "privilege-escalation",
        id="container leaves privilege escalation unset",
    ),
    pytest.param(
        lambda p: _ctx(p).update(allowPrivilegeEscalation=True),
        "privilege-escalation",
        id="container allows privilege escalation",
    ),
    pytest.param(_pop_pod_non_root, "run-as-non-root", id="nobody requires a non-root user"),
    pytest.param(
        lambda p: _ctx(p).update(runAsNonRoot=False),
        "run-as-non-root",
        id="container overrides runAsNonRoot to false",
    ),
    pytest.param(
        lambda p: _ctx(p).update(runAsUser=0), "run-as-user", id="container runs as uid 0"
    ),
    pytest.param(_set("spec.securityContext.runAsUser", 0), "run-as-user", id="pod runs as uid 0"),
    pytest.param(_pop_pod_seccomp, "seccomp", id="no seccomp profile anywhere"),
    pytest.param(
        lambda p: _ctx(p).update(seccompProfile={"type": "Unconfined"}),
        "seccomp",
        id="container overrides seccomp to unconfined",
    ),
    pytest.param(
        lambda p: _ctx(p).update(capabilities={}),
        "restricted-capabilities",
        id="container does not drop ALL capabilities",
    ),
    pytest.param(
        lambda p: _ctx(p)["capabilities"].update(add=["CHOWN"]),
        "restricted-capabilities",
        id="container adds a capability other than NET_BIND_SERVICE",
    ),
]


def test_the_compliant_pod_has_no_violations() -> None:
    assert restricted_violations(compliant_pod()) == []


@pytest.mark.parametrize(("mutate", "want_rule"), CASES)
def test_each_rule_reports_its_violation(mutate: Callable[[Pod], Any], want_rule: str) -> None:
    pod = copy.deepcopy(compliant_pod())
    mutate(pod)
    rules = {violation.rule for violation in restricted_violations(pod)}
    assert want_rule in rules


def test_every_rule_has_a_case() -> None:
    covered = {param.values[1] for param in CASES}
    assert covered == set(RESTRICTED_RULES)


def test_container_level_settings_satisfy_the_pod_level_rules() -> None:
    pod = compliant_pod()
    _pop_pod_seccomp(pod)
    _pop_pod_non_root(pod)
    _ctx(pod).update(runAsNonRoot=True, seccompProfile={"type": "Localhost"})
    assert restricted_violations(pod) == []


def test_net_bind_service_may_be_added() -> None:
    pod = compliant_pod()
    _ctx(pod)["capabilities"]["add"] = ["NET_BIND_SERVICE"]
    assert restricted_violations(pod) == []
