"""The sim's Kubernetes API server: storage, verbs, patches, apply, watches, CRDs, discovery.

`server.Sim` serves `store.Store` over HTTP; everything else here is a step of a request. See
docs/sim.md ("How to add a kind") for where a new resource's behaviour goes.
"""
