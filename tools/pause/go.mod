// The pod sandbox's process for the real nodes of `jobset-infra cluster` (containerd's sandbox
// image holds only this binary): our own, standard library only, as no registry is reachable to
// pull registry.k8s.io/pause. Built by tools/build.py (make tools).
module jobset-infra.local/tools/pause

go 1.26.0
