"""The architecture contract of jobset_infra, as data: layers, allowed edges, allow-lists.

Source: /work/shared/DESIGN.md ("Dependencies point one way") and style-anchors.md section 10
guidelines 1, 2, 4 and 10. docs/architecture.md explains each rule; the tests in this folder
enforce them. An allow-list entry is a known violation in a file whose owner is still working:
it names the file, the reason and the fix (also in /work/notes/quality.md), and the tests fail
when an entry is no longer needed, so it is removed in the commit that fixes the violation.
"""

from __future__ import annotations

from typing import Final

# Dotted-prefix -> layer name. The longest matching prefix wins.
LAYER_PREFIXES: Final[dict[str, str]] = {
    "jobset_infra.api": "api",
    "jobset_infra.tpu": "tpu",
    "jobset_infra.manifests": "manifests",
    "jobset_infra.components": "components",
    "jobset_infra.stack": "stack",
    "jobset_infra.plan": "plan",
    "jobset_infra.controller.core": "controller.core",
    "jobset_infra.placement": "placement",
    "jobset_infra.controller.runtime": "controller.runtime",
    "jobset_infra.sim.apiserver": "sim.apiserver",
    "jobset_infra.sim.cluster": "sim.cluster",
    "jobset_infra.sim": "sim",
    "jobset_infra.testing": "testing",
    "jobset_infra.cluster": "cluster",
    "jobset_infra.cli": "entry",
    "jobset_infra.plan.command": "entry",
    "jobset_infra.kueue_postrender_command": "entry",
    "jobset_infra.tool_paths": "tool_paths",
}
# Packages with nothing in them but a docstring (checked by a test); exact names only, so a new
# module directly under them belongs to no layer until this table names it.
NAMESPACE_PACKAGES: Final[frozenset[str]] = frozenset({"jobset_infra", "jobset_infra.controller"})

# Layer -> the layers its modules may import at module level (besides "namespace").
ALLOWED: Final[dict[str, frozenset[str]]] = {
    "api": frozenset({"api"}),
    "tpu": frozenset({"tpu"}),
    "manifests": frozenset({"manifests", "api", "tpu"}),
    # Placement is pure, so the JobSet component runs the allocator's own check at preview.
    "components": frozenset({"components", "manifests", "placement", "api", "tpu"}),
    # The stack program: its typed config (pure) and the program that builds the components;
    # `validate --stack` checks JobSets against the stack with placement's preview check.
    "stack": frozenset({"stack", "components", "manifests", "placement", "api", "tpu"}),
    # The offline plan: Pulumi's mocks and the pure checks of what a run would create.
    "plan": frozenset({"plan", "manifests", "api"}),
    "placement": frozenset({"placement", "api", "tpu"}),
    "controller.core": frozenset({"controller.core", "placement", "api"}),
    "controller.runtime": frozenset({"controller.runtime", "controller.core", "placement", "api"}),
    # The sim's three rooms: the API server stands alone; the cluster components run on its
    # store (the scheduler shares placement's quantities and matchExpressions); the commands
    # (sim/command.py, sim/demo.py) wire both. Guideline 6: the fluent builders live in
    # jobset_infra.testing because sim and the benchmarks use them too; the transitive test
    # keeps sim's closure free of the controller.
    "sim.apiserver": frozenset({"sim.apiserver", "api"}),
    "sim.cluster": frozenset({"sim.cluster", "sim.apiserver", "placement", "api", "tpu"}),
    "sim": frozenset({"sim", "sim.cluster", "sim.apiserver", "api", "tpu", "testing",
                      "tool_paths"}),
    "testing": frozenset({"testing", "api", "tpu", "controller.core"}),
    # The real local cluster is a shell like the sim: it talks to the API server with the
    # controller's client, installs what `manifests` builds, and shapes kwok Nodes from
    # tpu's node pools (the same `--nodes` strings as the sim). It never imports the sim.
    "cluster": frozenset({"cluster", "controller.runtime", "manifests", "api", "tpu",
                          "tool_paths"}),
    # How sim and cluster commands name kubectl and themselves: the standard library only.
    "tool_paths": frozenset(),
    # Composition roots import what they wire only lazily (see LAZY_ALLOWED).
    "entry": frozenset(),
}

# (importing module, target layer): allowed only as a lazy import (inside a function or via
# importlib), so the importing module stays cheap and the layer graph stays one-way at import.
LAZY_ALLOWED: Final[frozenset[tuple[str, str]]] = frozenset(
    {
        ("jobset_infra.sim.command", "controller.runtime"),  # `jobset-infra sim --controller`
        # Sim(job_controller=True, scheduler=True) starts those cluster components by name.
        ("jobset_infra.sim.apiserver.server", "sim.cluster"),
        ("jobset_infra.plan.command", "plan"),  # `jobset-infra plan` runs the program offline
        ("jobset_infra.plan.command", "api"),  # the stack file is read with the bounded reader
        ("jobset_infra.cli", "api"),  # subcommands are loaded by name
        ("jobset_infra.cli", "entry"),
        ("jobset_infra.cli", "sim"),
        ("jobset_infra.cli", "cluster"),
        # The Helm post-renderer of a loopback Kueue runs the manifests' rewrite.
        ("jobset_infra.kueue_postrender_command", "manifests"),
        # `validate --stack` reads the stack file as `plan` does and checks JobSets against it.
        ("jobset_infra.api.validate_command", "entry"),
        ("jobset_infra.api.validate_command", "stack"),
    }
)

# (importing module, target layer) pairs that break ALLOWED today, in files still being written.
LAYER_ALLOW_LIST: Final[dict[tuple[str, str], str]] = {
}

# Layers whose import sim may reach transitively: sim runs without the controller.
SIM_CLOSURE: Final[frozenset[str]] = frozenset(
    {"sim", "sim.apiserver", "sim.cluster", "placement", "api", "tpu", "testing", "tool_paths",
     "namespace"}
)
# Importing the sim's API server runs nothing of its cluster (nor the controller, nor tpu).
SIM_APISERVER_CLOSURE: Final[frozenset[str]] = frozenset({"sim", "sim.apiserver", "api",
                                                          "namespace"})

# Third-party rules.
PULUMI_LAYERS: Final[frozenset[str]] = frozenset({"components", "stack", "plan"})
PULUMI_LAZY: Final[frozenset[str]] = frozenset({"jobset_infra.plan.command"})
PURE_LAYERS: Final[tuple[str, ...]] = (
    "api",
    "tpu",
    "manifests",
    "controller.core",
    "placement",
)
# Network, Kubernetes clients, asyncio and process I/O have no place in pure code.
IO_MODULES: Final[frozenset[str]] = frozenset(
    {
        "aiohttp",
        "asyncio",
        "kubernetes",
        "kubernetes_asyncio",
        "requests",
        "httpx",
        "urllib3",
        "socket",
        "ssl",
        "subprocess",
        "http.client",
        "urllib.request",
        "prometheus_client",
        "pulumi",
    }
)

# Reading the clock or randomness inside pure code (guideline 10: inject them instead).
CLOCK_AND_RANDOM_MODULES: Final[frozenset[str]] = frozenset({"random", "secrets"})
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


def layer_of(module: str) -> str | None:
    """The layer of one of our modules, None for anything outside the table."""
    if module in NAMESPACE_PACKAGES:
        return "namespace"
    best = max((p for p in LAYER_PREFIXES if module == p or module.startswith(p + ".")),
               key=len, default=None)
    return LAYER_PREFIXES[best] if best else None


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
