package request_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"job-decider.dev/clients/go/request"
)

// readJSON reads a file kubectl wrote with `-o json`.
func readJSON(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// A Job and its pods as `kubectl get -o json` prints them (the bundled KEP-3329
// example), as the DecideJob request a Go controller sends: pods in the lean
// encoding, with the Kubernetes-shaped encoding when a pod has no lean form.
func ExampleBuild() {
	const dir = "../../../examples/kep-3329-failjob-exit-code-42/"
	var job batchv1.Job
	var list corev1.PodList
	if err := errors.Join(readJSON(dir+"job.json", &job), readJSON(dir+"pods.json", &list)); err != nil {
		fmt.Println(err)
		return
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}

	req, err := request.Build(&job, pods)
	var notLean *request.NotLeanError
	if errors.As(err, &notLean) {
		req = request.BuildFull(&job, pods)
	}
	req.Now = timestamppb.Now()

	fmt.Println("job:", req.GetJob().GetMetadata().GetName(), req.GetJob().GetMetadata().GetUid())
	for _, p := range req.GetLeanPods() {
		fmt.Println("pod:", p.GetName(), p.GetPhase(), "controlled by the job:", p.GetControlledByJob())
	}
	// Output:
	// job: job-pod-failure-policy-example 3b3a8f5e-4f7d-4f22-9d0b-6c1f7e8a2b41
	// pod: job-pod-failure-policy-example-5s7hq LEAN_POD_PHASE_FAILED controlled by the job: true
	// pod: job-pod-failure-policy-example-k2x9d LEAN_POD_PHASE_RUNNING controlled by the job: true
	// pod: job-pod-failure-policy-example-q8wzt LEAN_POD_PHASE_RUNNING controlled by the job: true
}

// A pod in a phase the Kubernetes API does not define has no lean form: Build
// says which pod, and BuildFull carries it for the server to judge.
func ExampleBuildFull() {
	job := &batchv1.Job{}
	job.Name, job.UID = "pi", "job-uid"
	pod := &corev1.Pod{}
	pod.Name, pod.UID, pod.Status.Phase = "pi-abc", "pod-uid", "Exploded"

	_, err := request.Build(job, []*corev1.Pod{pod})
	fmt.Println(err)
	req := request.BuildFull(job, []*corev1.Pod{pod})
	fmt.Println(req.GetPods()[0].GetStatus().GetPhase())
	// Output:
	// pods[0].status.phase "Exploded" has no lean form (not a value the Kubernetes API defines)
	// Exploded
}
