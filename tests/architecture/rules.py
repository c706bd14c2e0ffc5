"""The architecture rules of jobset_infra a linter cannot express, as data, with allow-lists.

The import layering is the import-linter contract in /.importlinter. Source: DESIGN.md
("Dependencies point one way") and style-anchors.md section 10 guidelines 1, 2, 4 and 10.
docs/architecture.md explains each rule; the tests in this folder enforce them. An allow-list
entry is a known violation in a file whose owner is still working: it names the file, the
reason and the fix, and the tests fail when an entry is no longer needed, so it is removed in
the commit that fixes the violation.
"""

from __future__ import annotations

from typing import Final

# The import layering itself is the import-linter contract in /.importlinter (checked by
# test_import_contract.py and `lint-imports` in .ci/run). What a linter cannot see stays here.

# Composition roots load what they wire only lazily (inside a function or by importlib), so
# `jobset-infra validate` starts without Pulumi, aiohttp or the sim: module -> what it may not
# import at module level.
LAZY_ONLY: Final[dict[str, tuple[str, ...]]] = {
    # The namespace packages import nothing of ours (the root holds the version only).
    "jobset_infra": ("jobset_infra",),
    "jobset_infra.controller": ("jobset_infra",),
    "jobset_infra.cli": ("jobset_infra",),  # subcommands are loaded by name
    "jobset_infra.plan.command": ("jobset_infra", "pulumi", "yaml"),
    # `validate --stack` plans the stack; a plain `validate FILE` loads neither.
    "jobset_infra.validate_command": ("jobset_infra.plan", "jobset_infra.stack"),
    # `jobset-infra sim --controller` runs our controller in the same process.
    "jobset_infra.sim.command": ("jobset_infra.controller",),
    # Sim(job_controller=True, scheduler=True) starts those cluster components by name.
    "jobset_infra.sim.apiserver.server": ("jobset_infra.sim.cluster",),
}

# The deciding packages: pure functions over plain data.
PURE_PACKAGES: Final[tuple[str, ...]] = (
    "jobset_infra.api",
    "jobset_infra.tpu",
    "jobset_infra.manifests",
    "jobset_infra.controller.core",
    "jobset_infra.placement",
)

# Reading the clock inside pure code (guideline 10: inject it instead).
# Fully qualified (aliases are resolved through the module's imports).
CLOCK_AND_RANDOM_CALLS: Final[frozenset[str]] = frozenset({
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.datetime.today",
    "datetime.date.today",
    "time.time",
    "time.time_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.process_time",
    "time.sleep",
    "uuid.uuid1",
    "uuid.uuid4",
    "os.urandom",
})

# Guideline 4: exact upstream strings live in api/constants.py.
UPSTREAM_KEY_FRAGMENTS: Final[tuple[str, ...]] = ("jobset.sigs.k8s.io/",)
CONSTANTS_MODULE: Final = "jobset_infra.api.constants"
CONSTANTS_ALLOW_LIST: Final[dict[str, str]] = {}

# Size: the style target is ~400 lines a module; the guard is 450 (400-450 are listed as debts
# in docs/architecture.md), and 60 lines a function in the deciding packages.
MAX_MODULE_LINES: Final = 450
MAX_FUNCTION_LINES: Final = 60
SHORT_FUNCTION_LAYERS: Final[tuple[str, ...]] = (
    "jobset_infra.controller.core",
    "jobset_infra.placement",
    "jobset_infra.tpu",
    "jobset_infra.manifests",
)
MODULE_SIZE_ALLOW_LIST: Final[dict[str, str]] = {}

# Guideline: __all__, where a module declares it, lists exactly its public names.
EXPORT_PACKAGES: Final[tuple[str, ...]] = (
    "jobset_infra.api",
    "jobset_infra.tpu",
    "jobset_infra.controller.core",
    "jobset_infra.placement",
)
EXPORT_ALLOW_LIST: Final[dict[str, frozenset[str]]] = {}


# Guideline 2: one module per policy, each with its own test module.
POLICY_PACKAGE: Final = "jobset_infra.controller.core"
POLICY_TESTS: Final = "tests/controller/core"
EXTRA_POLICY_MODULES: Final[frozenset[str]] = frozenset({"depends_on", "ttl_after_finished"})

# The preamble's "no utils.py": a module is named for what it decides.
GRAB_BAG_NAMES: Final[frozenset[str]] = frozenset({"utils", "util", "helpers", "misc", "common"})

# Guideline 7: table tests have sentence ids (pytest.param(..., id="...")).
ID_TEST_FOLDERS: Final[tuple[str, ...]] = (
    "tests/controller",
    "tests/api",
    "tests/tpu",
    "tests/manifests",
    "tests/architecture",
)

# Guideline 8: allocators and planners get hypothesis properties in these test folders.
PROPERTY_TEST_FOLDERS: Final[tuple[str, ...]] = (
    "tests/tpu",
    "tests/placement",
    "tests/controller/core",
    "tests/api",
)

# Generated files say so in their first line (and a test elsewhere regenerates and compares:
# tests/api/test_crdgen.py for the CRD).
GENERATED_DATA_GLOBS: Final[tuple[str, ...]] = ("jobset_infra/**/*.yaml", "jobset_infra/**/*.json")
GENERATED_HEADER: Final = "DO NOT EDIT"

# Guideline 4 names metric names too: a Prometheus metric's name is a constant from
# api/constants.py, never a literal at the call that defines the metric.
METRIC_CLASSES: Final[frozenset[str]] = frozenset(
    {"Counter", "Gauge", "Histogram", "Summary", "Info", "Enum"}
)
METRIC_ALLOW_LIST: Final[dict[str, str]] = {}


# Concepts declared once (issue 19): concept -> (the module that declares it, literals only that
# declaration has a reason to spell). A second declaration elsewhere fails the guard test.
DECLARED_ONCE_LITERALS: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "Kubernetes quantities": (
        "jobset_infra.api.quantity",
        frozenset({"Ei"}),  # a parser's suffix table
    ),
    "node selector requirements": (
        "jobset_infra.placement.scheduling_terms",
        frozenset({"Gt", "Lt"}),  # node selector operators
    ),
    "hot-spare pool names": (
        "jobset_infra.tpu.spec",
        frozenset({"-spare-"}),  # the f-string part of spare_pool_name (it was spelled thrice)
    ),
}

# Permissions once (issue 19 item 3): the controller's RBAC rules are declared in api/rbac.py;
# the Role is rendered from them, the runtime's client enforces them, and a test compares them
# with the calls the runtime makes (tests/integration/test_rbac_calls.py).
PERMISSIONS_OWNER: Final = "jobset_infra.api.rbac"
RBAC_VERBS: Final[frozenset[str]] = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)
ONE_WORD_API_GROUPS: Final[frozenset[str]] = frozenset(
    {"apps", "batch", "policy", "autoscaling", "storage", "networking"}
)

# Status typed (issue 19 item 4): inside the controller the JobSet status is the api/status.py
# model, never a dict keyed by its wire names. These generic names are also Job status fields.
STATUS_OWNER: Final = "jobset_infra.api.status"
STATUS_SCOPE: Final = "jobset_infra.controller"
STATUS_GENERIC_KEYS: Final[frozenset[str]] = frozenset(
    {"conditions", "restarts", "name", "ready", "succeeded", "failed", "active", "suspended"}
)
# One type for what a reconcile reads (the raw Observed[Manifest] and the parsed
# Observed[JobSet]); a class with these fields elsewhere is a second snapshot type.
OBSERVED_OWNER: Final = ("jobset_infra.controller.core.types", "Observed")
OBSERVED_FIELDS: Final[frozenset[str]] = frozenset({"jobs", "service_exists", "pvc_names"})

# Config once (issue 19 item 1): each install concept has one model, which the stack config
# embeds, the component args carry and the manifest builders read. (module, class) of each:
CONFIG_MODELS: Final[tuple[tuple[str, str], ...]] = (
    ("jobset_infra.manifests.controller_spec", "ControllerOptions"),
    ("jobset_infra.manifests.kueue_spec", "QueueSpec"),
    ("jobset_infra.manifests.kueue_spec", "KueueInstall"),
)
# Defaults only those models spell; a copy under another field name still spells them.
CONFIG_MARKERS: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "Kueue queue names": (
        "jobset_infra.manifests.kueue_spec",
        frozenset({"tpu-queue", "tpu-cluster-queue", "tpu-flex-start"}),
    ),
}

# Rules once (issue 19 item 2): every webhook rule is one entry of api/rules.py, as CEL (in the
# CRD) or as a Python check; the checks live in these modules and restate no CEL rule.
RULES_REGISTRY: Final = "jobset_infra.api.rules"
PYTHON_CHECK_MODULES: Final[tuple[str, ...]] = (
    "jobset_infra.api.validation",
    "jobset_infra.api.validation_update",
)

# Feature gates once (issue 31): every gate is one member of api/features.Feature (name, default,
# stage). Its name is spelled nowhere else, except as the value of an API enum member that shares
# it (RestartStrategy.IN_PLACE_RESTART, FailurePolicyAction.RESTART_JOB in api/model_base.py),
# and no class holds a field per gate (`restart_job_enabled`): they hold a FeatureGates.
FEATURES_OWNER: Final = "jobset_infra.api.features"
API_ENUMS_MODULE: Final = "jobset_infra.api.model_base"

# One home per concept (issue 31); each guard fails when a second declaration appears.
# The child Job name `<jobset>-<rjob>-<index>` (and the Indexed pod name beside it).
CHILD_JOB_NAMES_OWNER: Final = "jobset_infra.api.job_names"
# Which Jobs get exclusive placement, and which annotations a child Job inherits: decided in
# placement/strategy.py. Besides it, only code that writes the annotation on a JobSet it builds
# spells these constants (naming one in a message's f-string is not a use).
PLACEMENT_OWNER: Final = "jobset_infra.placement.strategy"
PLACEMENT_ANNOTATIONS: Final = frozenset({"EXCLUSIVE_KEY", "NODE_SELECTOR_STRATEGY_KEY"})
PLACEMENT_ANNOTATION_WRITERS: Final = frozenset({
    PLACEMENT_OWNER,
    "jobset_infra.api.constants",
    "jobset_infra.manifests.workload",  # puts the annotation on the JobSets it builds
    "jobset_infra.testing.jobsets",  # the builder's .exclusive()
})
# How a stack's pools sit in their cluster (location, channel, version): tpu.cluster's
# pools_in_cluster; the local pools of tpu.pools_text have no GKE cluster and set their own.
POOLS_IN_CLUSTER_OWNER: Final = "jobset_infra.tpu.cluster"
POOLS_LOCATION_SETTERS: Final = frozenset({POOLS_IN_CLUSTER_OWNER, "jobset_infra.tpu.pools_text"})
# TPU VM sizes and node-pool shapes: tpu.node_pools, beside the catalog.
VM_SIZES_OWNER: Final = "jobset_infra.tpu.node_pools"
# The spec check behind InvalidSpec runs through one cache (controller/runtime/spec_cache.py).
SPEC_CACHE_OWNER: Final = "jobset_infra.controller.runtime.spec_cache"
SPEC_CHECK_CALLERS: Final = frozenset({SPEC_CACHE_OWNER, "jobset_infra.controller.core.admission"})
