"""The JobSet CustomResourceDefinition: generated from the models (`generate`), its schema and
CEL rules checked as the API server checks them (`schema`, `cel`, `formats`, `checks`), and the
`jobset-infra crd` command (`command`). The committed CRD is `jobset.x-k8s.io_jobsets.yaml`."""
