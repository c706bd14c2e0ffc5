"""The simulated cluster: an in-process Kubernetes API server with Kubernetes' semantics.

- `store.Store`: objects, resourceVersions, conflicts, status subresource, finalizers, garbage
  collection and watches, callable in-process (fake Job controller, scheduler).
- `server.Sim` / `server.SimThread`: the store served over HTTP on 127.0.0.1 (kubectl works).
- `hooks`: the request hook protocol (fault injection) and request statistics.
"""
