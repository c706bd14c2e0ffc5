"""Every exact string upstream JobSet defines, spelled exactly as upstream spells it.

Nothing else in jobset_infra may restate one of these strings: labels, annotations, condition
types, reasons, messages, event reasons, feature gates, the API coordinates, field indexes and
metric names all come from here, so a typo is a NameError instead of a silent incompatibility.
Sources: upstream `api/jobset/v1alpha2/jobset_types.go`, `pkg/constants/constants.go`,
`pkg/features/features.go`, `pkg/metrics/metrics.go`, `pkg/webhooks/jobset_webhook.go`.
"""

from __future__ import annotations

from typing import Final

# --- API coordinates -----------------------------------------------------------------------------

# API group of the JobSet CRD.
GROUP: Final = "jobset.x-k8s.io"
# The only served and storage version.
VERSION: Final = "v1alpha2"
# apiVersion field value of a JobSet manifest.
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "JobSet"
LIST_KIND: Final = "JobSetList"
# Resource plural (REST path segment).
PLURAL: Final = "jobsets"
SINGULAR: Final = "jobset"
# Name of the CustomResourceDefinition object.
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
# Group/version of child Jobs.
JOB_API_VERSION: Final = "batch/v1"
JOB_KIND: Final = "Job"
# batch/v1 Job condition types the controller reads (set by the kube Job controller).
JOB_CONDITION_COMPLETE: Final = "Complete"
# A Job failed (all its pods have terminated).
JOB_CONDITION_FAILED: Final = "Failed"
# A Job's failure is decided; Failed follows once its pods have terminated (K8s >= 1.31).
JOB_CONDITION_FAILURE_TARGET: Final = "FailureTarget"
# A Job's success is decided; Complete follows once its pods have terminated.
JOB_CONDITION_SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

# --- Labels and annotations set on child Jobs and their pod templates (label + annotation) ------

# JobSet name; also the headless Service selector and PVC label.
JOBSET_NAME_KEY: Final = "jobset.sigs.k8s.io/jobset-name"
# JobSet UID.
JOBSET_UID_KEY: Final = "jobset.sigs.k8s.io/jobset-uid"
# Replicated job name.
REPLICATED_JOB_NAME_KEY: Final = "jobset.sigs.k8s.io/replicatedjob-name"
# Replicated job replica count.
REPLICATED_JOB_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/replicatedjob-replicas"
# Sum of replicas over all replicated jobs.
GLOBAL_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/global-replicas"
# Index of the Job within its replicated job (0..replicas-1).
JOB_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-index"
# Cumulative Job index across replicated jobs in spec order.
JOB_GLOBAL_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-global-index"
# SHA1 hex of "<namespace>/<jobName>" (upstream comments wrongly say SHA256).
JOB_KEY: Final = "jobset.sigs.k8s.io/job-key"
# Group name of the replicated job.
GROUP_NAME_KEY: Final = "jobset.sigs.k8s.io/group-name"
# Sum of replicas of replicated jobs in the same group.
GROUP_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/group-replicas"
# Index of the Job within its group, in spec order.
JOB_GROUP_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-group-index"
# status.restarts at the time the Job was created.
RESTARTS_KEY: Final = "jobset.sigs.k8s.io/restart-attempt"
# Per-Job restart attempt (RestartJob gate only).
JOB_RESTART_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/job-restart-attempt"
# Coordinator endpoint "<js>-<rjob>-<jobIdx>-<podIdx>.<subdomain>" when spec.coordinator is set.
COORDINATOR_KEY: Final = "jobset.sigs.k8s.io/coordinator"

# --- Exclusive placement -----------------------------------------------------------------------

# Annotation (JobSet or rjob template): node label key naming the exclusive topology domain.
EXCLUSIVE_KEY: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"
# Annotation flag selecting the node-selector placement strategy (value ignored).
NODE_SELECTOR_STRATEGY_KEY: Final = "alpha.jobset.sigs.k8s.io/node-selector"
# nodeSelector key injected by the node-selector strategy; value "<namespace>_<jobName>".
NAMESPACED_JOB_KEY: Final = "alpha.jobset.sigs.k8s.io/namespaced-job"
# Toleration key (Exists, NoSchedule) injected by the node-selector strategy.
NO_SCHEDULE_TAINT_KEY: Final = "alpha.jobset.sigs.k8s.io/no-schedule"
# Pod label carrying pod.spec.priority, added by upstream's pod webhook.
PRIORITY_KEY: Final = "jobset.sigs.k8s.io/priority"
# Pod annotation set by the Job controller; "0" identifies the leader pod.
JOB_COMPLETION_INDEX_KEY: Final = "batch.kubernetes.io/job-completion-index"
# Pod condition reason for an exclusive placement violation (defined upstream, not an event).
EXCLUSIVE_PLACEMENT_VIOLATION_REASON: Final = "ExclusivePlacementViolation"
# jobset-infra only (upstream has no such condition: its webhook rejects pods instead).
# JobSet condition type: True while child Jobs wait for a free exclusive topology domain.
CONDITION_PLACEMENT_PENDING: Final = "ExclusivePlacementPending"
# Reason of ExclusivePlacementPending=True: no complete set of free, fitting domains now.
PLACEMENT_NO_FIT_REASON: Final = "NoFreeTopologyDomain"
# Reason of ExclusivePlacementPending=False: every waiting Job got a domain.
PLACEMENT_ASSIGNED_REASON: Final = "TopologyDomainsAssigned"
# Message of ExclusivePlacementPending=False.
PLACEMENT_ASSIGNED_MESSAGE: Final = "every Job that needs an exclusive topology domain has one"
# Reason of a Warning event when a Job's pod template cannot be read for placement (bad quantity).
PLACEMENT_INVALID_REASON: Final = "ExclusivePlacementInvalid"

# --- In-place restart --------------------------------------------------------------------------

# Pod annotation written by the in-place-restart agent (int >= 0).
IN_PLACE_RESTART_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/in-place-restart-attempt"
# JobSet annotation that makes the agent bypass its barrier.
DISABLE_IN_PLACE_RESTART_KEY: Final = "jobset.sigs.k8s.io/disable-in-place-restart"

# Job and pod-template annotation: status.executionAttempts at create/resume (KEP-1282).
EXECUTION_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/execution-attempt"

# --- managedBy ---------------------------------------------------------------------------------

# Reserved spec.managedBy value meaning "this controller".
JOBSET_CONTROLLER_NAME: Final = "jobset.sigs.k8s.io/jobset-controller"
# spec.managedBy value MultiKueue uses.
MULTIKUEUE_CONTROLLER_NAME: Final = "kueue.x-k8s.io/multikueue"

# --- Condition types ---------------------------------------------------------------------------

# All Jobs needed by the success policy completed.
CONDITION_COMPLETED: Final = "Completed"
CONDITION_FAILED: Final = "Failed"
CONDITION_SUSPENDED: Final = "Suspended"
# A JobSet-level restart is in progress.
CONDITION_RESTARTING: Final = "RestartingJobSet"
# InOrder startup has not finished.
CONDITION_STARTUP_POLICY_IN_PROGRESS: Final = "StartupPolicyInProgress"
CONDITION_STARTUP_POLICY_COMPLETED: Final = "StartupPolicyCompleted"

# --- Condition reasons and messages (…_REASON / …_MESSAGE pairs) -------------------------------

# Completed=True.
ALL_JOBS_COMPLETED_REASON: Final = "AllJobsCompleted"
# Completed=True message; also RestartingJobSet=False/JobSetCompleted message.
ALL_JOBS_COMPLETED_MESSAGE: Final = "jobset completed successfully"
# Failed=True with no failure policy.
FAILED_JOBS_REASON: Final = "FailedJobs"
# Message for FailedJobs, followed by FIRST_FAILED_JOB_SUFFIX.
FAILED_JOBS_MESSAGE: Final = "jobset failed due to one or more job failures"
# Failed=True after reaching maxRestarts.
REACHED_MAX_RESTARTS_REASON: Final = "ReachedMaxRestarts"
# Message for ReachedMaxRestarts, followed by FIRST_FAILED_JOB_SUFFIX (not on the in-place path).
REACHED_MAX_RESTARTS_MESSAGE: Final = "jobset failed due to reaching max number of restarts"
# Failed=True by a FailJobSet rule.
FAIL_JOBSET_ACTION_REASON: Final = "FailJobSetFailurePolicyAction"
# Suffix appended to failure messages; format with the first failed Job's name.
FIRST_FAILED_JOB_SUFFIX: Final = " (first failed job: {job})"
# Template of failure-policy action messages; format with the action name.
FAILURE_POLICY_ACTION_MESSAGE: Final = "applying {action} failure policy action"
# Suspended=True.
SUSPENDED_REASON: Final = "SuspendedJobs"
# Suspended=True message; also RestartingJobSet=False/JobSetSuspended message.
SUSPENDED_MESSAGE: Final = "jobset is suspended"
# Suspended=False.
RESUMED_REASON: Final = "ResumeJobs"
RESUMED_MESSAGE: Final = "jobset is resumed"
# RestartingJobSet=True reason prefix; followed by the rule name.
FAILURE_POLICY_RULE_REASON_PREFIX: Final = "FailurePolicy_"
# RestartingJobSet=True reason when no rule matched.
DEFAULT_FAILURE_POLICY_REASON: Final = "DefaultFailurePolicy"
# RestartingJobSet=False once all Jobs are ready again.
JOBS_READY_REASON: Final = "JobsReady"
JOBS_READY_MESSAGE: Final = "all jobs are ready"
# RestartingJobSet=False because the JobSet failed.
JOBSET_FAILED_REASON: Final = "JobSetFailed"
JOBSET_FAILED_MESSAGE: Final = "jobset failed"
# RestartingJobSet=False because the JobSet completed (message ALL_JOBS_COMPLETED_MESSAGE).
JOBSET_COMPLETED_REASON: Final = "JobSetCompleted"
# RestartingJobSet=False because the JobSet was suspended (message SUSPENDED_MESSAGE).
JOBSET_SUSPENDED_REASON: Final = "JobSetSuspended"
# StartupPolicyInProgress=True.
IN_ORDER_STARTUP_IN_PROGRESS_REASON: Final = "InOrderStartupPolicyInProgress"
IN_ORDER_STARTUP_IN_PROGRESS_MESSAGE: Final = "in order startup policy is in progress"
# StartupPolicyCompleted=True.
IN_ORDER_STARTUP_COMPLETED_REASON: Final = "InOrderStartupPolicyCompleted"
IN_ORDER_STARTUP_COMPLETED_MESSAGE: Final = "in order startup policy has completed"

# --- Event reasons (besides condition reasons, which are also emitted as events) ---------------

# Warning queued with the status write for a RestartJobSet action.
RESTART_JOBSET_ACTION_EVENT: Final = "RestartJobSetFailurePolicyAction"
# Warning for a RestartJobSetAndIgnoreMaxRestarts action.
RESTART_JOBSET_IGNORE_MAX_ACTION_EVENT: Final = (
    "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
)
# Warning for a RestartJob action.
RESTART_JOB_ACTION_EVENT: Final = "RestartJobFailurePolicyAction"
# Warning for a RestartJobAndIgnoreMaxRestarts action.
RESTART_JOB_IGNORE_MAX_ACTION_EVENT: Final = "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
# Warning emitted immediately when creating a child Job fails.
JOB_CREATION_FAILED_EVENT: Final = "JobCreationFailed"
# Warning emitted immediately when creating the headless Service fails.
HEADLESS_SERVICE_CREATION_FAILED_EVENT: Final = "HeadlessServiceCreationFailed"
# Warning emitted immediately when creating a PVC fails.
PVC_CREATION_FAILED_EVENT: Final = "PVCCreationFailed"
# Warning when the API server refuses a resume that carries new container resources (KEP-1150).
FAILED_RESOURCE_PROPAGATION_EVENT: Final = "FailedResourcePropagation"
FAILED_RESOURCE_PROPAGATION_MESSAGE: Final = (
    "Failed to propagate mutated resources to child Job: {error}. Ensure "
    "MutablePodResourcesForSuspendedJobs is enabled on the API server."
)
# Defined upstream but unused there.
RESTARTING_EVENT: Final = "Restarting"
# Event action string upstream's recorder uses.
RECONCILING_ACTION: Final = "Reconciling"
# Event reporting controller name for JobSet events.
JOBSET_EVENT_SOURCE: Final = "jobset"
# Event reporting controller name for Pod events.
POD_EVENT_SOURCE: Final = "pod"

# --- Ours, not upstream's (controller core): strings for cases upstream handles by erroring ----

# Warning: a RestartJob* rule matched while the RestartJob gate is off (webhook-less setups).
RESTART_JOB_GATE_DISABLED_EVENT: Final = "RestartJobFeatureGateDisabled"
RESTART_JOB_GATE_DISABLED_MESSAGE: Final = (
    "failure policy rule uses a RestartJob action but the controller's RestartJob feature gate "
    "is off; the JobSet was restarted instead (enable the gate or use RestartJobSet)"
)
# Condition type set while the JobSet object cannot be parsed (it bypassed validation).
CONDITION_INVALID_SPEC: Final = "InvalidSpec"
# InvalidSpec=True reason; the message names the field and the fix.
INVALID_SPEC_REASON: Final = "InvalidJobSetSpec"
# InvalidSpec=False reason once the object parses again.
VALID_SPEC_REASON: Final = "ValidJobSetSpec"
VALID_SPEC_MESSAGE: Final = "jobset spec is valid"
# Condition type set while Jobs that are not the JobSet's children hold names its children need.
CONDITION_JOB_NAME_CONFLICT: Final = "JobNameConflict"
# JobNameConflict=True reason (with a Warning event); the message names the Jobs and the fix.
JOB_NAME_TAKEN_REASON: Final = "JobNameTaken"
# JobNameConflict=False reason once every child name is free (only flips an existing condition).
JOB_NAMES_FREE_REASON: Final = "JobNamesFree"
JOB_NAMES_FREE_MESSAGE: Final = "no Job outside the jobset holds a child Job's name"

# --- Enum values -------------------------------------------------------------------------------

# Job completionMode the webhook defaults to.
COMPLETION_MODE_INDEXED: Final = "Indexed"
COMPLETION_MODE_NON_INDEXED: Final = "NonIndexed"
# Pod restartPolicy the webhook defaults to.
RESTART_POLICY_ON_FAILURE: Final = "OnFailure"
# CRD default of replicatedJobs[].groupName.
DEFAULT_GROUP_NAME: Final = "default"
# Prefix of a defaulted failure-policy rule name; followed by the rule index.
DEFAULT_RULE_NAME_PREFIX: Final = "failurePolicyRule"
# Job failure reasons a failure-policy rule may match (onJobFailureReasons).
JOB_REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
JOB_REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
JOB_REASON_FAILED_INDEXES: Final = "FailedIndexes"
JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
JOB_REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
# The set of allowed onJobFailureReasons, in upstream's order.
VALID_JOB_FAILURE_REASONS: Final = (
    JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
    JOB_REASON_DEADLINE_EXCEEDED,
    JOB_REASON_FAILED_INDEXES,
    JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED,
    JOB_REASON_POD_FAILURE_POLICY,
)

# --- Limits ------------------------------------------------------------------------------------

# Max replicas per rjob when RestartJob actions are used (jobRestarts arrays are this long).
MAX_REPLICAS_WITH_RESTART_JOB: Final = 1024
# Max spec.replicatedJobs with ElasticJobSet on: its scaling rule's CEL cost (see docs/api.md).
MAX_REPLICATED_JOBS_WITH_ELASTIC: Final = 1024
# Max items of spec.volumeClaimPolicies and of each policy's templates.
MAX_VOLUME_CLAIM_POLICIES: Final = 50
# Max items of replicatedJobs[].dependsOn.
MAX_DEPENDS_ON: Final = 5
# Failure-policy rule name: length bounds and the pattern it must match.
RULE_NAME_MIN_LENGTH: Final = 1
RULE_NAME_MAX_LENGTH: Final = 128
RULE_NAME_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
# What the CRD admits as a rule name: a name, or "" (upstream's Go type has no omitempty, so
# every Go client sends an unnamed rule as ""; upstream's webhook, our defaulting policy and the
# controller all name it failurePolicyRule<index>).
RULE_NAME_OR_UNSET_PATTERN: Final = f"^({RULE_NAME_PATTERN[1:-1]})?$"
# Max parallel Job creates/deletes per reconcile.
MAX_PARALLELISM: Final = 50
# backoffLimit required with restartStrategy InPlaceRestart (MaxInt32).
MAX_INT32: Final = 2_147_483_647

# --- Validation messages (webhook wording) ------------------------------------------------------

# replicatedJobs[0].dependsOn set.
FIRST_RJOB_DEPENDS_ON_MESSAGE: Final = "DependsOn can't be set for the first ReplicatedJob"
# A dependsOn target that is not a previously listed rjob; format rjob and dep.
DEPENDS_ON_ORDER_MESSAGE: Final = "replicatedJob: {rjob} cannot depend on replicatedJob: {dep}"
JOB_NAME_TOO_LONG_MESSAGE: Final = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG_MESSAGE: Final = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)
# A successPolicy / failurePolicy target that does not exist; format name.
UNKNOWN_TARGET_MESSAGE: Final = (
    "invalid replicatedJob name '{name}' does not appear in .spec.ReplicatedJobs"
)
# Duplicate failure-policy rule names; format indices and name.
DUPLICATE_RULE_NAMES_MESSAGE: Final = (
    "rule names are not unique, rules with indices {indices} all have the same name '{name}'"
)
# A VolumeClaimPolicy template with no matching volumeMount; format name.
VCP_NO_MOUNT_MESSAGE: Final = (
    "replicatedJob containers don't have a matching volumeMount: {name} from VolumeClaimPolicies"
)
# Existing PVC with a non-Retain policy.
VCP_RETAIN_MESSAGE: Final = "retentionPolicy must be retain when PVC exists"
# Generic immutable-field message (apimachinery ValidateImmutableField).
FIELD_IMMUTABLE_MESSAGE: Final = "field is immutable"
# A suspended JobSet's replicated jobs changed beyond what upstream's ValidateUpdate allows.
RJOBS_SUSPENDED_CHANGES_MESSAGE: Final = (
    f"{FIELD_IMMUTABLE_MESSAGE}: while the JobSet is suspended only the pod templates' labels, "
    "annotations, nodeSelector, tolerations and schedulingGates may change"
)
# CEL immutability message used in the CRD.
VALUE_IMMUTABLE_MESSAGE: Final = "Value is immutable"
# CEL message for startupPolicy InOrder together with dependsOn.
STARTUP_POLICY_DEPENDS_ON_EXCLUSIVE_MESSAGE: Final = (
    "StartupPolicy and DependsOn APIs are mutually exclusive"
)
# CEL message for a namespaced PVC template.
VCP_NAMESPACE_MESSAGE: Final = "namespace cannot be set for VolumeClaimPolicies templates"
# Elastic scaling of a finished JobSet.
ELASTIC_TERMINAL_MESSAGE: Final = (
    "Cannot mutate parallelism or completions when JobSet is in a terminal state "
    "(Completed or Failed)"
)
# Elastic scaling below one.
ELASTIC_MIN_MESSAGE: Final = "parallelism must be >= 1"
# Elastic scaling with parallelism != completions.
ELASTIC_EQUAL_MESSAGE: Final = "completions must be equal to parallelism for Elastic Indexed Jobs"

# Feature gates: the registry in api/features.py (name, default, stage of each).

# --- Controller internals ----------------------------------------------------------------------

# Kubernetes' finalizer held by Jobs during foreground deletion (JobSet defines none of its own).
FOREGROUND_DELETION_FINALIZER: Final = "foregroundDeletion"
# Deletion propagation policy upstream uses for Jobs and for TTL deletion of the JobSet.
PROPAGATION_FOREGROUND: Final = "Foreground"

# Field index: Jobs by controller owner UID.
JOB_OWNER_INDEX: Final = ".metadata.controller"
# Field index: Pods by "<ns>/<jobset-name>" (InPlaceRestart gate).
POD_JOBSET_INDEX: Final = "podsIndexByJobSet"
# Field index: Pods by job-key label.
POD_JOB_KEY_INDEX: Final = "podJobKey"
# Field index: Pods by name minus the last "-suffix".
POD_NAME_INDEX: Final = "podName"
# Leader election ID of the controller manager.
LEADER_ELECTION_ID: Final = "6d4f6a47.jobset.x-k8s.io"
# apiVersion and kind of the controller manager's config file (api/config/v1alpha1).
CONFIG_API_VERSION: Final = "config.jobset.x-k8s.io/v1alpha1"
CONFIG_KIND: Final = "Configuration"
# Controller name label of controller-runtime metrics.
CONTROLLER_NAME: Final = "jobset"

# --- Metrics -----------------------------------------------------------------------------------
# Upstream's jobset_* counters (labels jobset_name, namespace); controller-runtime's reconcile
# metrics (label controller; reconcile_total also result); client-go's workqueue_* (labels name,
# controller) and rest_client_* (code/method or verb, host); leader_election_master_status (name).

METRIC_FAILED_TOTAL: Final = "jobset_failed_total"
METRIC_COMPLETED_TOTAL: Final = "jobset_completed_total"
METRIC_RECONCILE_ERRORS_TOTAL: Final = "controller_runtime_reconcile_errors_total"
METRIC_RECONCILE_TIME_SECONDS: Final = "controller_runtime_reconcile_time_seconds"
METRIC_RECONCILE_TOTAL: Final = "controller_runtime_reconcile_total"
# controller-runtime: reconciles that panicked (raised), label controller.
METRIC_RECONCILE_PANICS_TOTAL: Final = "controller_runtime_reconcile_panics_total"
METRIC_MAX_CONCURRENT_RECONCILES: Final = "controller_runtime_max_concurrent_reconciles"
METRIC_ACTIVE_WORKERS: Final = "controller_runtime_active_workers"
METRIC_WORKQUEUE_DEPTH: Final = "workqueue_depth"
METRIC_WORKQUEUE_ADDS_TOTAL: Final = "workqueue_adds_total"
# Workqueue: time an item waited before a worker took it.
METRIC_WORKQUEUE_QUEUE_DURATION_SECONDS: Final = "workqueue_queue_duration_seconds"
METRIC_WORKQUEUE_WORK_DURATION_SECONDS: Final = "workqueue_work_duration_seconds"
# Workqueue: seconds of work in progress not yet observed by work_duration.
METRIC_WORKQUEUE_UNFINISHED_WORK_SECONDS: Final = "workqueue_unfinished_work_seconds"
# Workqueue: age of the longest-running item.
METRIC_WORKQUEUE_LONGEST_RUNNING_SECONDS: Final = "workqueue_longest_running_processor_seconds"
METRIC_WORKQUEUE_RETRIES_TOTAL: Final = "workqueue_retries_total"
METRIC_REST_REQUESTS_TOTAL: Final = "rest_client_requests_total"
METRIC_REST_REQUEST_DURATION_SECONDS: Final = "rest_client_request_duration_seconds"
# REST client: time spent waiting for the client-side rate limiter.
METRIC_REST_RATE_LIMITER_DURATION_SECONDS: Final = "rest_client_rate_limiter_duration_seconds"
METRIC_REST_REQUEST_RETRIES_TOTAL: Final = "rest_client_request_retries_total"
METRIC_LEADER_ELECTION_MASTER_STATUS: Final = "leader_election_master_status"
# jobset-infra: reconciles that went ahead because create/delete expectations timed out.
METRIC_EXPECTATIONS_EXPIRED_TOTAL: Final = "jobset_controller_expectations_expired_total"
# jobset-infra: Job writes the congestion window lets be in flight (runtime/congestion.py).
METRIC_JOB_WRITE_WINDOW: Final = "jobset_controller_job_write_window"
# jobset-infra: times the window was halved (429, 503/504, timeouts, slow answers).
METRIC_JOB_WRITE_WINDOW_CUTS_TOTAL: Final = "jobset_controller_job_write_window_cuts_total"
METRIC_LABEL_JOBSET_NAME: Final = "jobset_name"
METRIC_LABEL_NAMESPACE: Final = "namespace"

# --- Kueue (upstream kubernetes-sigs/kueue; the platform's queues and its JobSet integration) ----

# API version of every Kueue object we create (storage version since Kueue 0.16).
KUEUE_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
# API group of Kueue objects (AdmissionCheck parameters reference it).
KUEUE_GROUP: Final = "kueue.x-k8s.io"
# API version of Kueue's controller-manager Configuration.
KUEUE_CONFIG_API_VERSION: Final = "config.kueue.x-k8s.io/v1beta2"
# Kueue integration framework name of JobSet (`integrations.frameworks`).
KUEUE_JOBSET_FRAMEWORK: Final = "jobset.x-k8s.io/jobset"
# Kueue integration framework name of batch/v1 Job.
KUEUE_BATCH_JOB_FRAMEWORK: Final = "batch/job"
# Label on a JobSet naming its LocalQueue.
KUEUE_QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
# Label on a JobSet naming its WorkloadPriorityClass.
KUEUE_PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
# AdmissionCheck controllerName of Kueue's ProvisioningRequest admission check.
KUEUE_PROVISIONING_REQUEST_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
# ProvisioningRequest class of GKE queued provisioning (flex-start / DWS).
GKE_QUEUED_PROVISIONING_CLASS: Final = "queued-provisioning.gke.io"
# Node label GKE sets to the ProvisioningRequest a node was created for.
GKE_PROVISIONING_REQUEST_LABEL: Final = "autoscaling.gke.io/provisioning-request"
# ProvisioningClassDetails key with that request's name (valueFromProvisioningClassDetail).
GKE_RESIZE_REQUEST_NAME_DETAIL: Final = "ResizeRequestName"
