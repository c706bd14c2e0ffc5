"""The Kubernetes provider a component's children use: from `opts`, as in pulumi-eks.

`ResourceOptions(provider=k8s_provider)` or `ResourceOptions(providers=[k8s_provider])` (or
`{"kubernetes": k8s_provider}`) on the component is the Pulumi way; the `provider` argument the
components took first is still read. A component never falls back to the ambient kubeconfig: with
neither, it fails before registering anything, naming both. A provider reference (a
`pulumi.ProviderResource` of package `kubernetes`, the form a provider takes when a program in
another language hands it to a component package) is accepted as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

__all__ = ["explicit_dependencies", "is_kubernetes_provider", "kubernetes_provider"]


def is_kubernetes_provider(value: object) -> bool:
    """A pulumi_kubernetes.Provider, or a reference to one (the form a provider takes when a
    program in another language passes it to a component package)."""
    return isinstance(value, k8s.Provider) or (
        isinstance(value, pulumi.ProviderResource)
        and getattr(value, "package", None) == "kubernetes")


def kubernetes_provider(component: str, given: object,
                        opts: pulumi.ResourceOptions | None) -> pulumi.ProviderResource:
    """The explicit Kubernetes provider for `component`; raise ValueError naming the fix."""
    if isinstance(given, pulumi.ProviderResource) and is_kubernetes_provider(given):
        return given
    for candidate in _from_options(opts):
        if isinstance(candidate, pulumi.ProviderResource) and is_kubernetes_provider(candidate):
            return candidate
    if given is not None:
        raise ValueError(f"provider: pass the target cluster's pulumi_kubernetes.Provider (got "
                         f"{type(given).__name__}), best in opts (ResourceOptions(providers="
                         "[cluster.provider]))")
    raise ValueError(
        f"provider: pass the target cluster's pulumi_kubernetes.Provider in opts "
        f"(ResourceOptions(providers=[cluster.provider]), e.g. GkeCluster.provider); {component} "
        "never uses the ambient kubeconfig"
    )


def _from_options(opts: pulumi.ResourceOptions | None) -> list[object]:
    if opts is None:
        return []
    found: list[object] = [opts.provider] if opts.provider is not None else []
    providers = opts.providers
    if isinstance(providers, Mapping):
        found += list(providers.values())
    elif isinstance(providers, Sequence):
        found += list(providers)
    return found


def explicit_dependencies(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """Return the component's own `depends_on` resources, for the children that must wait for
    them too (Pulumi does not pass a component's `depends_on` on to its children).

    Kueue: `depends_on=[jobset_system]` makes the release start after the JobSet CRD exists,
    so Kueue's JobSet integration sees the API when it starts (older Kueue needed a restart).
    TpuSlicePools: the stack's pool drain (docs/resilience.md) must end before a pool changes.
    """
    if opts is None or opts.depends_on is None:
        return []
    found = opts.depends_on if isinstance(opts.depends_on, list) else [opts.depends_on]
    return [r for r in found if isinstance(r, pulumi.Resource)]
