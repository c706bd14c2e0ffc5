"""The jobset.x-k8s.io/v1alpha2 API: models, constants, defaulting, validation, the CRD."""
