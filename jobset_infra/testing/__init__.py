"""Fluent builders for tests, benchmarks and the sim (JobSets, Jobs, Nodes)."""
