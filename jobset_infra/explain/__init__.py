"""`jobset-infra explain JOBSET`: why a JobSet is (not) running, read-only (diagnosis: pure)."""
