"""The jobset-infra Pulumi program: `pulumi up -s local | v5e-multislice | v5e-dev`.

Thin on purpose: the stack's config (stacks/Pulumi.<stack>.yaml) is validated by
`jobset_infra.components.stack_config` and the platform is built by
`jobset_infra.components.platform_program`. The controller's placement allocator is handed in
here, so the preview checks the JobSet against the pools with the same code that places it.
`jobset-infra plan --stack NAME` runs this file offline under Pulumi's mocks.
"""

from jobset_infra.components.platform_program import run
from jobset_infra.controller.placement import placement_problems

run(placement_check=placement_problems)
