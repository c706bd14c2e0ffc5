"""The offline plan: run a stack's Pulumi program under Pulumi's mocks (`offline`), check and
order what it would create (`preview`, pure), and the `jobset-infra plan` command (`command`)."""
