"""The simulated cluster, as three machines in three rooms (see docs/sim.md):

- `apiserver`: an in-process Kubernetes API server with Kubernetes' semantics: the `store`
  (objects, resourceVersions, conflicts, status, finalizers, garbage collection, watches), the
  pure steps of writes (`updates`, `patch`, `apply`, `managed_fields`), per-kind `strategies`,
  `crds`, and `server.Sim` serving it all over HTTP on 127.0.0.1 with discovery, OpenAPI,
  tables, request hooks and fault injection (`faults`).
- `cluster`: what runs on top of the API server as a real cluster's other components do: the
  Job controller and kubelet (`job_controller`, `job_sync`, `job_pods`), the `scheduler`, and
  TPU-like `nodes`. It talks to the store only through its public calls.
- the commands: `command` (`jobset-infra sim`) and `demo` (`jobset-infra sim --demo`), which
  wire the two together (and our controller, lazily).

`apiserver` never imports `cluster` at module level; `Sim(job_controller=True, scheduler=True)`
loads them by name when asked (tests/architecture guards both).
"""
