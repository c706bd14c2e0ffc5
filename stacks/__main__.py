"""The jobset-infra Pulumi program: `pulumi up -s <stack>` for each stacks/Pulumi.<stack>.yaml.

Thin on purpose: the stack's config (stacks/Pulumi.<stack>.yaml) is validated by
`jobset_infra.stack.config` and the platform is built by
`jobset_infra.stack.program`; the JobSet component checks the JobSet against the
pools at preview with the allocator that places it (`jobset_infra.placement`).
`jobset-infra plan --stack NAME` runs this file offline under Pulumi's mocks.
"""

from jobset_infra.stack.program import run

run()
