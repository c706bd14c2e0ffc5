"""Benchmarks on the real local control plane, ours beside upstream JobSet's Go controller.

`python -m benchmarks --real [--quick]` (see `run.py`). Upstream is a benchmark dependency only:
its manager is built by `tools/build.py jobset`, its CRD and webhook configuration are read at
run time from the sigs.k8s.io/jobset module in the Go module cache (`upstream.py`).
"""
