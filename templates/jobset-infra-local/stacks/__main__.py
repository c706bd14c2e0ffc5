"""The platform from this project's config (Pulumi.yaml and stacks/Pulumi.<stack>.yaml).

jobset-infra's stack program: the JobSet API served by its controller, Kueue with a queue for
the cluster's TPU pools, and a queued JobSet (docs/config.md lists every key). To compose the
components with resources of your own, build them here instead (docs/stacks.md, "Components in
your own program").
"""

from jobset_infra.stack.program import run

run()
