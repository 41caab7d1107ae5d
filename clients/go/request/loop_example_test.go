package request_test

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

// One sync of a controller: the previous plan's State goes back, the plan is
// applied, and the Job is synced again after RequeueAfter unless an informer
// event comes first. Compiled, not run (it needs a server and a cluster).
func ExampleBuildWith() {
	client, err := jobdecider.NewClient("dns:///job-decider.job-decider.svc:50051")
	if err != nil {
		panic(err)
	}
	defer client.Close()
	states := map[types.UID]*pb.ControllerState{} // per Job; forget it when the Job goes

	sync := func(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (time.Duration, error) {
		req := request.BuildWith(job, pods, request.Options{
			Now:            time.Now(),
			State:          states[job.UID],
			ControllerName: "example.com/my-controller", // the Jobs' spec.managedBy
			Explain:        false,                       // true to log why: resp.GetExplanation()
		})
		resp, err := client.DecideJob(ctx, req)
		if err != nil {
			return 0, err // requeue with the work queue's backoff
		}
		// Apply resp.GetActions() in order here. Keep the State once the plan's
		// status write succeeded (it describes the Job as of that write, as
		// in the shim); a failure before it syncs again with the old State.
		states[job.UID] = resp.GetState()
		if after := resp.GetRequeueAfter(); after != nil {
			return after.AsDuration(), nil // queue.AddAfter(key, after)
		}
		return 0, nil
	}
	_ = sync
}
