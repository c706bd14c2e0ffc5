"""The simulated cluster: an in-process Kubernetes API server with Kubernetes' semantics.

Server (see docs/sim.md):
- `store.Store`: objects, resourceVersions, conflicts, status subresource, finalizers, garbage
  collection (`gc`) and watches (`watch`), callable in-process; `objects` indexes them,
  `updates`/`listing`/`patch`/`apply`/`managed_fields` are the pure steps of reads and writes,
  `strategies` the built-in kinds' special behaviour, `crds` serves CustomResourceDefinitions.
- `server.Sim` / `server.SimThread`: the store over HTTP on 127.0.0.1; `routes` (parsing, auth,
  discovery), `verbs`, `streaming` (watches), `tables`, `openapi`, `discovery`, `tls`.
- `hooks`: the request hook protocol (fault injection) and request statistics.

Workloads (built on the store): `job_controller` (fake Job controller), `scheduler`, `faults`,
`nodes`, and the `jobset-infra sim` command (`command`).
"""
