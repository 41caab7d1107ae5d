package main

// The canonical form both plans are compared in, and the field-by-field diff.
//
//   - The explanation is dropped: it is for people and upstream has none.
//   - Within a deleteJobs action, Jobs are sorted by name: upstream deletes
//     them in parallel (workqueue.ParallelizeUntil), so its order means nothing.
//   - jobsToCreate is sorted by name, for the same reason.
//   - Action order is kept: deletes, then the status write, then the events in
//     the order they were queued, which is the order upstream issues them.

import (
	"sort"

	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/testkit/protodiff"
)

func canonicalise(r *pb.DecideJobSetResponse) {
	r.Explanation = nil
	for _, a := range r.GetActions() {
		if d := a.GetDeleteJobs(); d != nil {
			sort.SliceStable(d.Jobs, func(i, j int) bool { return d.Jobs[i].GetName() < d.Jobs[j].GetName() })
		}
	}
	sort.SliceStable(r.JobsToCreate, func(i, j int) bool { return r.JobsToCreate[i].GetName() < r.JobsToCreate[j].GetName() })
}

// canonicalCopy returns a canonical copy, leaving the original alone.
func canonicalCopy(r *pb.DecideJobSetResponse) *pb.DecideJobSetResponse {
	c := proto.Clone(r).(*pb.DecideJobSetResponse)
	canonicalise(c)
	return c
}

// fieldDiff is one differing field: Left is upstream's value, Right the vector's.
type fieldDiff = protodiff.Field

func diffResponses(upstream, expected *pb.DecideJobSetResponse) ([]fieldDiff, error) {
	return protodiff.Messages(upstream, expected)
}

// formatDiffs prints one block per differing field, upstream's value first.
func formatDiffs(ds []fieldDiff, indent string) string {
	return protodiff.Format(ds, indent, "upstream", "expected")
}
