// jobset-goclient is a small Go client of JobSets built from upstream's own API module
// (sigs.k8s.io/jobset, the version tools/jobset-parity/go.mod pins): what a Go program, Kueue's
// MultiKueue adapter or any controller-runtime client sends, with Go's zero values as Go
// serialises them.
//
//	jobset-goclient fixtures                 print every shape as Go marshals it (JSON)
//	jobset-goclient apply -namespace NS      create every shape through the typed clientset, read
//	                                         it back, update it as Kueue does (suspend), copy it
//	                                         to a new name as MultiKueue does; print the outcome
//
// The kubeconfig comes from KUBECONFIG. Output is one JSON object keyed by the shapes' ids.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	versioned "sigs.k8s.io/jobset/client-go/clientset/versioned"
)

// outcome is what happened to one shape: each step's error ("" when it was accepted) and the
// spec the API server stored, decoded into upstream's Go types and marshalled again.
type outcome struct {
	Sent         json.RawMessage   `json:"sent"`
	CreateError  string            `json:"createError"`
	Stored       json.RawMessage   `json:"stored,omitempty"`
	SuspendError string            `json:"suspendError"`
	CopyError    string            `json:"copyError"`
	CopyStored   json.RawMessage   `json:"copyStored,omitempty"`
	StoredLabels map[string]string `json:"storedLabels,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: jobset-goclient fixtures | apply -namespace NS")
	}
	switch os.Args[1] {
	case "fixtures":
		out := map[string]json.RawMessage{}
		for _, s := range shapes("default") {
			out[s.id] = marshal(s.js)
		}
		emit(out)
	case "apply":
		flags := flag.NewFlagSet("apply", flag.ExitOnError)
		namespace := flags.String("namespace", "default", "namespace to create the JobSets in")
		only := flags.String("only", "", "apply only the shape with this id")
		_ = flags.Parse(os.Args[2:])
		emit(apply(*namespace, *only))
	default:
		fail("unknown command " + os.Args[1])
	}
}

func apply(namespace, only string) map[string]outcome {
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		fail("kubeconfig: " + err.Error())
	}
	config.QPS, config.Burst = 200, 400 // client-go's 5/10 would pace a test, not a cluster
	client, err := versioned.NewForConfig(config)
	if err != nil {
		fail("client: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jobsets := client.JobsetV1alpha2().JobSets(namespace)
	out := map[string]outcome{}
	// Built in one namespace whichever namespace they go to (the Job templates name it too),
	// so two runs' stored objects compare field for field.
	for i, s := range shapes("fixtures") {
		if only != "" && s.id != only {
			continue
		}
		s.js.Namespace = namespace
		s.js.Name = fmt.Sprintf("shape-%d", i)
		s.js.GenerateName = ""
		if s.generateName {
			s.js.Name, s.js.GenerateName = "", fmt.Sprintf("shape-%d-", i)
		}
		result := outcome{Sent: marshal(s.js)}
		created, err := jobsets.Create(ctx, s.js, metav1.CreateOptions{})
		if err != nil {
			result.CreateError = err.Error()
			out[s.id] = result
			continue
		}
		stored, err := jobsets.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			fail("get " + created.Name + ": " + err.Error())
		}
		result.Stored = marshal(stored.Spec)
		result.StoredLabels = stored.Labels
		// MultiKueue's adapter: a new object with the stored spec, managedBy cleared.
		remote := &jobset.JobSet{
			ObjectMeta: metav1.ObjectMeta{Name: stored.Name + "-copy", Namespace: namespace,
				Labels: stored.Labels, Annotations: stored.Annotations},
			Spec: *stored.Spec.DeepCopy(),
		}
		remote.Spec.ManagedBy = nil
		if copied, err := jobsets.Create(ctx, remote, metav1.CreateOptions{}); err != nil {
			result.CopyError = err.Error()
		} else {
			result.CopyStored = marshal(copied.Spec)
		}
		// Kueue's eviction: read, set spec.suspend, write the whole object back (again on a
		// conflict, as client-go's RetryOnConflict does: a controller may write status between).
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest, err := jobsets.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			latest.Spec.Suspend = ptr.To(true)
			_, err = jobsets.Update(ctx, latest, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			result.SuspendError = err.Error()
		}
		out[s.id] = result
	}
	return out
}

func marshal(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		fail("marshal: " + err.Error())
	}
	return data
}

func emit(v any) {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		fail("marshal: " + err.Error())
	}
	fmt.Println(string(data))
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "jobset-goclient: "+message)
	os.Exit(2)
}
