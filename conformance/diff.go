package main

// Field-by-field comparison of two canonical responses, on their proto3 JSON
// form, so that paths read like the vector files: actions[1].updateStatus.status.ready.

import (
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/protodiff"
)

// fieldDiff is one differing field: Left is upstream's value, Right the other side's.
type fieldDiff = protodiff.Field

func toGeneric(r *pb.DecideJobResponse) any { return toGenericMsg(r) }

// toGenericMsg is a message's proto3 JSON form as maps and slices. Marshalling
// a message the harness built itself cannot fail short of a bug.
func toGenericMsg(m proto.Message) any {
	v, err := protodiff.Generic(m)
	if err != nil {
		panic(err)
	}
	return v
}

func diffResponses(left, right *pb.DecideJobResponse) []fieldDiff {
	return protodiff.Values("", toGeneric(left), toGeneric(right))
}

func diffValues(path string, l, r any, out *[]fieldDiff) {
	*out = append(*out, protodiff.Values(path, l, r)...)
}

// formatDiff prints a block per differing field.
func formatDiff(d []fieldDiff, left, right string) string {
	return protodiff.Format(d, "  ", left, right)
}
