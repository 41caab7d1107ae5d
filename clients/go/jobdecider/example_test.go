package jobdecider_test

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"job-decider.dev/clients/go/jobdecider"
)

// An error as job-decider returns it for a Job without metadata.uid, built
// here without a server; a DecideJob call's error reads the same way.
func ExampleFieldViolations() {
	st, _ := status.New(codes.InvalidArgument, "snapshot cannot be decided").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{
			Field:       "job.metadata.uid",
			Description: "job.metadata.uid: Required value: a decision needs the Job as stored by the API server",
		}}},
		&errdetails.ErrorInfo{Reason: "INVALID_SNAPSHOT", Domain: jobdecider.Domain},
	)
	err := fmt.Errorf("deciding: %w", st.Err())
	for _, v := range jobdecider.FieldViolations(err) {
		fmt.Println(v.GetField())
	}
	fmt.Println(jobdecider.ErrorInfo(err).GetReason())
	// Output:
	// job.metadata.uid
	// INVALID_SNAPSHOT
}
