package upstream

import (
	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/canon"
)

// Canonical runs upstream's syncJob on a request and returns its
// canonical response (what vectors pin).
func Canonical(req *pb.DecideJobRequest) (*pb.DecideJobResponse, *Result, error) {
	return CanonicalWith(req, Opts{})
}

// Whole is upstream for generated scenarios: syncJob, and for a
// finished Job the orphan-pod worker's sweep (the scope of job-decider's plan).
var Whole = Opts{OrphanSweep: true}

// CanonicalWith is Canonical covering as much of the controller as opts say.
func CanonicalWith(req *pb.DecideJobRequest, opts Opts) (*pb.DecideJobResponse, *Result, error) {
	run, err := Run(req, opts)
	if err != nil {
		return nil, nil, err
	}
	return canon.Canonicalize(run.Resp, req.GetJob()), run, nil
}

// OptsFor is how much of upstream a vector's expected records (its scope).
func OptsFor(scope string) Opts {
	if scope == "controller" {
		return Whole
	}
	return Opts{}
}
