"""Reproducible benchmarks of jobset-infra: `python -m benchmarks [--quick]`."""
