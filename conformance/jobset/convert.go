package main

// From the contract's request to the API objects upstream reads, through
// clients/go/kubejson (the contract's field names are the API's). Then what an API server would have done to the objects before a controller
// reads them: CRD structural defaults and the mutating webhook for the JobSet,
// batch/v1 defaults that upstream relies on for the Jobs.

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
)

// jobSetFromRequest builds the JobSet as a controller would read it.
func jobSetFromRequest(name string, m *pb.JobSet) (*jobset.JobSet, error) {
	g, err := kubejson.ToMap(m)
	if err != nil {
		return nil, fmt.Errorf("%s: request.jobSet: %w", name, err)
	}
	applyCRDDefaults(g)
	js := &jobset.JobSet{}
	if err := kubejson.FromMap(g, js); err != nil {
		return nil, fmt.Errorf("%s: request.jobSet: %w", name, err)
	}
	if js.Name == "" || js.UID == "" {
		return nil, fmt.Errorf("%s: request.jobSet.metadata: name and uid are required", name)
	}
	if js.Namespace == "" {
		js.Namespace = metav1.NamespaceDefault
	}
	if err := defaultJobSet(context.Background(), js); err != nil {
		return nil, fmt.Errorf("%s: request.jobSet: webhook defaulting: %w", name, err)
	}
	return js, nil
}

// applyCRDDefaults applies the JobSet CRD's structural defaults (kubebuilder
// markers in v1alpha2/jobset_types.go), which the API server fills in for
// absent fields before the webhook runs.
func applyCRDDefaults(g map[string]any) {
	spec, _ := g["spec"].(map[string]any)
	if spec == nil {
		return
	}
	rjs, _ := spec["replicatedJobs"].([]any)
	for _, e := range rjs {
		rj, _ := e.(map[string]any)
		if rj == nil {
			continue
		}
		if _, ok := rj["replicas"]; !ok {
			rj["replicas"] = 1
		}
		if _, ok := rj["groupName"]; !ok {
			rj["groupName"] = "default"
		}
	}
	if fp, _ := spec["failurePolicy"].(map[string]any); fp != nil {
		if _, ok := fp["restartStrategy"]; !ok {
			fp["restartStrategy"] = string(jobset.Recreate)
		}
	}
}

// jobFromRequest builds one child Job as the JobSet controller's cache holds it.
func jobFromRequest(name string, i int, m *pb.Job, js *jobset.JobSet) (*batchv1.Job, error) {
	field := fmt.Sprintf("request.jobs[%d]", i)
	g, err := kubejson.ToMap(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, field, err)
	}
	job := &batchv1.Job{}
	if err := kubejson.FromMap(g, job); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, field, err)
	}
	if job.Name == "" {
		return nil, fmt.Errorf("%s: %s.metadata.name: required", name, field)
	}
	if job.Namespace == "" {
		job.Namespace = js.Namespace
	}
	if job.Namespace != js.Namespace {
		return nil, fmt.Errorf("%s: %s.metadata.namespace: %q is not the JobSet's %q", name, field, job.Namespace, js.Namespace)
	}
	// The request holds the JobSet's own Jobs; upstream finds them by their controller reference.
	if c := metav1.GetControllerOf(job); c != nil {
		if c.UID != js.UID {
			return nil, fmt.Errorf("%s: %s.metadata.ownerReferences: controlled by %s %q, not the JobSet", name, field, c.Kind, c.Name)
		}
	} else {
		job.OwnerReferences = append(job.OwnerReferences, *metav1.NewControllerRef(js, jobset.GroupVersion.WithKind("JobSet")))
	}
	// The API server keeps an object with a deletionTimestamp only while a finalizer
	// holds it; foreground deletion (how JobSet deletes) adds this one.
	if job.DeletionTimestamp != nil && len(job.Finalizers) == 0 {
		job.Finalizers = []string{metav1.FinalizerDeleteDependents}
	}
	// batch/v1 defaulting; upstream dereferences spec.parallelism.
	if job.Spec.Parallelism == nil && job.Spec.Completions == nil {
		job.Spec.Completions = ptr.To[int32](1)
	}
	if job.Spec.Parallelism == nil {
		job.Spec.Parallelism = ptr.To[int32](1)
	}
	return job, nil
}
