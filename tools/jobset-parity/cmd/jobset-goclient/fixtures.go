package main

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	wrap "sigs.k8s.io/jobset/pkg/util/testing"
)

// shape is one JobSet as upstream's test fixtures build it, with upstream's Go types and its
// own builders (pkg/util/testing), so the JSON is exactly what Go sends: empty rule names,
// `network: {}`, omitted zero replicas, `suspend: false`, `ttlSecondsAfterFinished: 0`,
// template metadata with a namespace, PVC templates with `status: {}`.
type shape struct {
	id           string
	js           *jobset.JobSet
	generateName bool
}

var busybox = wrap.TestPodSpec

func template(ns string) *wrap.JobTemplateWrapper {
	return wrap.MakeJobTemplate("job", ns).PodSpec(busybox)
}

func rjob(name string, replicas int32, tpl batchv1.JobTemplateSpec) jobset.ReplicatedJob {
	return wrap.MakeReplicatedJob(name).Job(tpl).Replicas(replicas).Obj()
}

func indexed(ns string, n int32) batchv1.JobTemplateSpec {
	return template(ns).CompletionMode(batchv1.IndexedCompletion).Parallelism(n).Completions(n).Obj()
}

func base(ns string) *wrap.JobSetWrapper {
	return wrap.MakeJobSet("js", ns).ReplicatedJob(rjob("leader", 1, template(ns).Obj())).
		ReplicatedJob(rjob("workers", 2, template(ns).Obj()))
}

func volumeClaimPolicy(retention *jobset.VolumeRetentionPolicy) jobset.VolumeClaimPolicy {
	return jobset.VolumeClaimPolicy{
		Templates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}},
		RetentionPolicy: retention,
	}
}

func mounting(ns string) batchv1.JobTemplateSpec {
	pod := *busybox.DeepCopy()
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return template(ns).PodSpec(pod).Obj()
}

func shapes(ns string) []shape {
	unnamedRule := jobset.FailurePolicyRule{Action: jobset.FailJobSet,
		OnJobFailureReasons: []string{batchv1.JobReasonPodFailurePolicy}}
	podFailurePolicy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	noRestartPolicy := *busybox.DeepCopy()
	noRestartPolicy.RestartPolicy = ""
	return []shape{
		{id: "the controller suite's base JobSet", js: wrap.MakeJobSet("js", ns).
			SuccessPolicy(&jobset.SuccessPolicy{Operator: jobset.OperatorAll, TargetReplicatedJobs: []string{}}).
			EnableDNSHostnames(true).
			ReplicatedJob(rjob("replicated-job-a", 1, template(ns).Obj())).
			ReplicatedJob(rjob("replicated-job-b", 3, template(ns).CompletionMode(batchv1.IndexedCompletion).Obj())).
			Obj()},
		{id: "a replicated job without replicas (Go omits the zero)", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(wrap.MakeReplicatedJob("rjob").Job(template(ns).Obj()).Obj()).Obj()},
		{id: "a failure-policy rule without a name", js: base(ns).
			FailurePolicy(&jobset.FailurePolicy{MaxRestarts: 1, Rules: []jobset.FailurePolicyRule{unnamedRule}}).Obj()},
		{id: "a named rule followed by an unnamed one", js: base(ns).
			FailurePolicy(&jobset.FailurePolicy{Rules: []jobset.FailurePolicyRule{
				{Name: "ruleA", Action: jobset.RestartJobSet, TargetReplicatedJobs: []string{"leader"}},
				{Action: jobset.RestartJobSetAndIgnoreMaxRestarts, OnJobFailureMessagePatterns: []string{"critical"}},
			}}).Obj()},
		{id: "three unnamed rules with blocking recreate", js: base(ns).
			FailurePolicy(&jobset.FailurePolicy{MaxRestarts: 3, RestartStrategy: jobset.BlockingRecreate,
				Rules: []jobset.FailurePolicyRule{unnamedRule,
					{Action: jobset.RestartJobSet, TargetReplicatedJobs: []string{"workers"}},
					{Action: jobset.FailJobSet}}}).Obj()},
		{id: "an empty failure policy", js: base(ns).FailurePolicy(&jobset.FailurePolicy{}).Obj()},
		{id: "a success policy Any on one replicated job", js: base(ns).
			SuccessPolicy(&jobset.SuccessPolicy{Operator: jobset.OperatorAny, TargetReplicatedJobs: []string{"leader"}}).Obj()},
		{id: "the InOrder startup policy", js: base(ns).
			StartupPolicy(&jobset.StartupPolicy{StartupPolicyOrder: jobset.InOrder}).Obj()},
		{id: "dependsOn beside the AnyOrder startup policy", js: wrap.MakeJobSet("js", ns).
			StartupPolicy(&jobset.StartupPolicy{StartupPolicyOrder: jobset.AnyOrder}).
			ReplicatedJob(rjob("rjob-1", 1, template(ns).Obj())).
			ReplicatedJob(wrap.MakeReplicatedJob("rjob-2").Job(template(ns).Obj()).Replicas(1).
				DependsOn([]jobset.DependsOn{{Name: "rjob-1", Status: jobset.DependencyReady}}).Obj()).
			ReplicatedJob(wrap.MakeReplicatedJob("rjob-3").Job(template(ns).Obj()).Replicas(1).
				DependsOn([]jobset.DependsOn{{Name: "rjob-1", Status: jobset.DependencyComplete},
					{Name: "rjob-2", Status: jobset.DependencyReady}}).Obj()).Obj()},
		{id: "a coordinator at job 0 pod 0 (Go omits both zeros)", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("leader", 1, indexed(ns, 2))).
			Coordinator(&jobset.Coordinator{ReplicatedJob: "leader"}).Obj()},
		{id: "a coordinator at job 1 pod 2", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 2, indexed(ns, 3))).
			Coordinator(&jobset.Coordinator{ReplicatedJob: "workers", JobIndex: 1, PodIndex: 2}).Obj()},
		{id: "a subdomain with DNS hostnames off", js: base(ns).NetworkSubdomain("my-subdomain").
			EnableDNSHostnames(false).Obj()},
		{id: "publishNotReadyAddresses off", js: base(ns).PublishNotReadyAddresses(false).Obj()},
		{id: "created suspended", js: base(ns).Suspend(true).Obj()},
		{id: "suspend false sent explicitly", js: base(ns).Suspend(false).Obj()},
		{id: "managed by MultiKueue", js: base(ns).ManagedBy("kueue.x-k8s.io/multikueue").Suspend(true).Obj()},
		{id: "ttlSecondsAfterFinished zero sent explicitly", js: base(ns).TTLSecondsAfterFinished(0).Obj()},
		{id: "a volume claim policy without a retention policy", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 1, mounting(ns))).
			VolumeClaimPolicies([]jobset.VolumeClaimPolicy{volumeClaimPolicy(nil)}).Obj()},
		{id: "a volume claim policy that retains its PVCs", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 1, mounting(ns))).
			VolumeClaimPolicies([]jobset.VolumeClaimPolicy{volumeClaimPolicy(&jobset.VolumeRetentionPolicy{
				WhenDeleted: ptr.To(jobset.RetentionPolicyRetain)})}).Obj()},
		{id: "a NonIndexed Job template", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 2, template(ns).CompletionMode(batchv1.NonIndexedCompletion).Obj())).Obj()},
		{id: "a pod template without a restart policy", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 1, template(ns).PodSpec(noRestartPolicy).Obj())).Obj()},
		{id: "group names on two replicated jobs", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(wrap.MakeReplicatedJob("a").Job(template(ns).Obj()).GroupName("group-1").Replicas(1).Obj()).
			ReplicatedJob(wrap.MakeReplicatedJob("b").Job(template(ns).Obj()).GroupName("group-1").Replicas(2).Obj()).Obj()},
		{id: "exclusive placement annotations and labels", js: base(ns).
			SetAnnotations(map[string]string{jobset.ExclusiveKey: "cloud.google.com/gke-nodepool"}).
			SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "lq"}).Obj()},
		{id: "a Job template with a pod failure policy", js: wrap.MakeJobSet("js", ns).
			FailurePolicy(&jobset.FailurePolicy{MaxRestarts: 2, Rules: []jobset.FailurePolicyRule{unnamedRule}}).
			ReplicatedJob(rjob("workers", 2, template(ns).PodFailurePolicy(podFailurePolicy).Obj())).Obj()},
		{id: "a generated name", js: base(ns).Obj(), generateName: true},
		{id: "a status filled by a Go client copying a live object", js: base(ns).
			SetStatus(jobset.JobSetStatus{Restarts: 2, TerminalState: string(jobset.JobSetCompleted)}).Obj()},
		{id: "pod template labels and annotations", js: wrap.MakeJobSet("js", ns).
			ReplicatedJob(rjob("workers", 1, template(ns).SetPodLabels(map[string]string{"app": "x"}).
				SetPodAnnotations(map[string]string{"note": "y"}).SetLabels(map[string]string{"job": "z"}).Obj())).Obj()},
	}
}
