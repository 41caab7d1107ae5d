package gen

import (
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// lifecycleStream keeps lifecycle i's random numbers apart from single scenario i's.
const lifecycleStream = 1 << 62

// LifecycleName names lifecycle i of a seed.
func LifecycleName(seed uint64, i int) string { return fmt.Sprintf("lifecycle-%d-%d", seed, i) }

// LifecycleStart builds lifecycle i's starting snapshot: mostly a Job just
// created (no status, no pods), sometimes a random mid-life snapshot.
func LifecycleStart(seed uint64, i int) (*pb.DecideJobRequest, *rand.Rand, error) {
	r := rand.New(rand.NewPCG(seed, uint64(i)|lifecycleStream))
	g := &gen{r: r}
	var lastErr error
	for attempt := 0; attempt < 50; attempt++ {
		g.now = BaseNow.Add(time.Duration(g.intn(86400)) * time.Second)
		g.tick = 0
		var req *pb.DecideJobRequest
		if g.chance(0.75) {
			j := g.job()
			j.Metadata.CreationTimestamp = timestamppb.New(g.now)
			if g.chance(0.1) {
				// A bigger Job: dozens of pods at once (slow-start batches,
				// rankings over many pods, several finishing per sync).
				p := int32(10 + g.intn(31))
				j.Spec.Parallelism = proto.Int32(p)
				if j.Spec.Completions != nil {
					j.Spec.Completions = proto.Int32(p + int32(g.intn(40)))
				}
				if j.Spec.MaxFailedIndexes != nil {
					j.Spec.MaxFailedIndexes = proto.Int32(int32(g.intn(int(*j.Spec.Completions)/4 + 1)))
				}
			}
			j.Status = &pb.JobStatus{}
			req = &pb.DecideJobRequest{Job: j, Now: timestamppb.New(g.now)}
			switch {
			case g.chance(0.02):
				j.Spec.ManagedBy = proto.String("example.com/other-controller")
			case g.chance(0.03):
				j.Spec.ManagedBy = proto.String("example.com/job-decider")
				req.ControllerName = "example.com/job-decider"
			}
		} else {
			req = g.request(-1)
			req.Expectations = nil // a cluster has no writes in flight at the start
		}
		if err := ValidateJob(req.Job); err != nil {
			lastErr = err
			continue
		}
		return req, r, nil
	}
	return nil, nil, fmt.Errorf("generator made no valid Job in 50 attempts; last: %v", lastErr)
}
