// Package jobdecider connects to job-decider with the behaviour every client
// shares (NewClient, DialOptions: round_robin, retries of UNAVAILABLE, a
// default deadline, keepalive, TLS from a cert-manager Secret directory) and
// reads its errors: the field violations and the ErrorInfo that every
// INVALID_ARGUMENT (and every other error) carries as google.rpc details. The
// generated client is the v1 package beside it.
package jobdecider

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of every error job-decider returns.
const Domain = "jobdecider.dev"

// FieldViolations is the google.rpc.BadRequest field violations of err, a
// gRPC error from job-decider (or one wrapping it): each names the offending
// field as a proto3 JSON path of the request, e.g. "job.metadata.uid" or
// "pods[2].status.phase". It is nil when err is not a gRPC status or carries
// no BadRequest.
func FieldViolations(err error) []*errdetails.BadRequest_FieldViolation {
	var out []*errdetails.BadRequest_FieldViolation
	for _, detail := range details(err) {
		if bad, ok := detail.(*errdetails.BadRequest); ok {
			out = append(out, bad.GetFieldViolations()...)
		}
	}
	return out
}

// ErrorInfo is the google.rpc.ErrorInfo of err: its Reason is stable
// (INVALID_SNAPSHOT, INVALID_JOB, OVERLOADED, ...) and its Domain is Domain.
// It is nil when err is not a gRPC status or carries no ErrorInfo.
func ErrorInfo(err error) *errdetails.ErrorInfo {
	for _, detail := range details(err) {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// details is the decoded details of err's gRPC status; undecodable ones are skipped.
func details(err error) []any {
	if err == nil {
		return nil
	}
	// status.FromError unwraps, so an error wrapped with %w still reads.
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	return st.Details()
}
