"""Pod Security Standards, "restricted" profile, as a pure check over a rendered pod template.

The rules follow https://kubernetes.io/docs/concepts/security/pod-security-standards/ (restricted
includes every baseline rule). The controller Deployment is checked with this in tests, and
`jobset-infra plan` can run it on any pod template, so a manifest change that would be rejected by
a namespace labelled `pod-security.kubernetes.io/enforce: restricted` fails before it is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RESTRICTED_RULES", "Violation", "restricted_violations"]

Obj = Mapping[str, Any]

_BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)  # fmt: skip
_SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    }
)  # fmt: skip
_SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
_RESTRICTED_VOLUME_TYPES = frozenset(
    {
        "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
        "projected", "secret",
    }
)  # fmt: skip
_APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True)
class Violation:
    """One broken rule: which rule and where."""

    rule: str
    message: str


def _containers(spec: Obj) -> Iterator[tuple[str, Obj]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            yield f"{field}[{container.get('name', '?')}]", container


def _security_contexts(spec: Obj) -> Iterator[tuple[str, Obj]]:
    """Yield the pod-level then every container-level securityContext (empty if unset)."""
    yield "spec.securityContext", spec.get("securityContext") or {}
    for where, container in _containers(spec):
        yield f"{where}.securityContext", container.get("securityContext") or {}


def _host_process(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in _security_contexts(spec):
        if (ctx.get("windowsOptions") or {}).get("hostProcess"):
            yield f"{where}.windowsOptions.hostProcess must be unset or false"


def _host_namespaces(spec: Obj, _meta: Obj) -> Iterator[str]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"spec.{field} must be unset or false"


def _privileged(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in list(_security_contexts(spec))[1:]:
        if ctx.get("privileged"):
            yield f"{where}.privileged must be unset or false"


def _baseline_capabilities(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in list(_security_contexts(spec))[1:]:
        added = set((ctx.get("capabilities") or {}).get("add") or ()) - _BASELINE_CAPABILITIES
        if added:
            yield f"{where}.capabilities.add has non-baseline {sorted(added)}"


def _host_path_volumes(spec: Obj, _meta: Obj) -> Iterator[str]:
    for volume in spec.get("volumes") or ():
        if "hostPath" in volume:
            yield f"spec.volumes[{volume.get('name')}] must not be a hostPath volume"


def _host_ports(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, container in _containers(spec):
        for port in container.get("ports") or ():
            if port.get("hostPort"):
                yield f"{where}.ports hostPort must be unset or 0"


def _apparmor(spec: Obj, meta: Obj) -> Iterator[str]:
    for where, ctx in _security_contexts(spec):
        kind = (ctx.get("appArmorProfile") or {}).get("type")
        if kind not in (None, "RuntimeDefault", "Localhost"):
            yield f"{where}.appArmorProfile.type must be RuntimeDefault or Localhost"
    for key, value in (meta.get("annotations") or {}).items():
        if key.startswith(_APPARMOR_ANNOTATION) and not (
            value == "runtime/default" or value.startswith("localhost/")
        ):
            yield f"metadata.annotations[{key}] must be runtime/default or localhost/*"


def _selinux(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in _security_contexts(spec):
        options = ctx.get("seLinuxOptions") or {}
        if options.get("type", "") not in _SELINUX_TYPES:
            yield f"{where}.seLinuxOptions.type {options.get('type')!r} is not allowed"
        if options.get("user") or options.get("role"):
            yield f"{where}.seLinuxOptions.user and .role must be unset"


def _proc_mount(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in list(_security_contexts(spec))[1:]:
        if ctx.get("procMount", "Default") != "Default":
            yield f"{where}.procMount must be Default"


def _sysctls(spec: Obj, _meta: Obj) -> Iterator[str]:
    for sysctl in (spec.get("securityContext") or {}).get("sysctls") or ():
        if sysctl.get("name") not in _SAFE_SYSCTLS:
            yield f"spec.securityContext.sysctls {sysctl.get('name')!r} is not a safe sysctl"


def _volume_types(spec: Obj, _meta: Obj) -> Iterator[str]:
    for volume in spec.get("volumes") or ():
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUME_TYPES:
            yield f"spec.volumes[{volume.get('name')}] type {sorted(kinds)} is not allowed"


def _privilege_escalation(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in list(_security_contexts(spec))[1:]:
        if ctx.get("allowPrivilegeEscalation") is not False:
            yield f"{where}.allowPrivilegeEscalation must be false"


def _run_as_non_root(spec: Obj, _meta: Obj) -> Iterator[str]:
    contexts = list(_security_contexts(spec))
    pod_level = contexts[0][1].get("runAsNonRoot") is True
    for where, ctx in contexts[1:]:
        value = ctx.get("runAsNonRoot")
        if value is False or (value is None and not pod_level):
            yield f"{where}.runAsNonRoot must be true (here or in spec.securityContext)"


def _run_as_user(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in _security_contexts(spec):
        if ctx.get("runAsUser") == 0:
            yield f"{where}.runAsUser must not be 0"


def _seccomp(spec: Obj, _meta: Obj) -> Iterator[str]:
    contexts = list(_security_contexts(spec))
    allowed = ("RuntimeDefault", "Localhost")
    pod_type = (contexts[0][1].get("seccompProfile") or {}).get("type")
    if pod_type is not None and pod_type not in allowed:
        yield f"spec.securityContext.seccompProfile.type must be one of {allowed}"
    for where, ctx in contexts[1:]:
        kind = (ctx.get("seccompProfile") or {}).get("type")
        if (kind is None and pod_type not in allowed) or (kind is not None and kind not in allowed):
            yield f"{where}.seccompProfile.type must be one of {allowed} (here or pod-level)"


def _restricted_capabilities(spec: Obj, _meta: Obj) -> Iterator[str]:
    for where, ctx in list(_security_contexts(spec))[1:]:
        capabilities = ctx.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            yield f"{where}.capabilities.drop must include ALL"
        if set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}:
            yield f"{where}.capabilities.add may only contain NET_BIND_SERVICE"


Check = Callable[[Obj, Obj], Iterator[str]]

RESTRICTED_RULES: dict[str, Check] = {
    # baseline
    "host-process": _host_process,
    "host-namespaces": _host_namespaces,
    "privileged": _privileged,
    "baseline-capabilities": _baseline_capabilities,
    "host-path-volumes": _host_path_volumes,
    "host-ports": _host_ports,
    "apparmor": _apparmor,
    "selinux": _selinux,
    "proc-mount": _proc_mount,
    "sysctls": _sysctls,
    # restricted
    "volume-types": _volume_types,
    "privilege-escalation": _privilege_escalation,
    "run-as-non-root": _run_as_non_root,
    "run-as-user": _run_as_user,
    "seccomp": _seccomp,
    "restricted-capabilities": _restricted_capabilities,
}
"""Rule id -> check; every rule of the restricted profile (which includes baseline)."""


def restricted_violations(pod_template: Obj) -> list[Violation]:
    """Return every "restricted" rule the pod template (`{metadata, spec}`) breaks; [] if none."""
    spec = pod_template.get("spec") or {}
    meta = pod_template.get("metadata") or {}
    return [
        Violation(rule, message)
        for rule, check in RESTRICTED_RULES.items()
        for message in check(spec, meta)
    ]
