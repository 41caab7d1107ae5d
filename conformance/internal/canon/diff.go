package canon

// Field-by-field comparison of two canonical responses, on their proto3 JSON
// form, so that paths read like the vector files: actions[1].updateStatus.status.ready.

import (
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/testkit/protodiff"
)

// FieldDiff is one differing field: Left is upstream's value, Right the other side's.
type FieldDiff = protodiff.Field

// ToGeneric is a response's proto3 JSON form as maps and slices.
func ToGeneric(r *pb.DecideJobResponse) any { return ToGenericMsg(r) }

// ToGenericMsg is a message's proto3 JSON form as maps and slices. Marshalling
// a message the harness built itself cannot fail short of a bug.
func ToGenericMsg(m proto.Message) any {
	v, err := protodiff.Generic(m)
	if err != nil {
		panic(err)
	}
	return v
}

// DiffResponses lists the fields where two responses differ.
func DiffResponses(left, right *pb.DecideJobResponse) []FieldDiff {
	return protodiff.Values("", ToGeneric(left), ToGeneric(right))
}

// DiffValues appends to out the fields where two generic JSON values differ, under path.
func DiffValues(path string, l, r any, out *[]FieldDiff) {
	*out = append(*out, protodiff.Values(path, l, r)...)
}

// FormatDiff prints a block per differing field.
func FormatDiff(d []FieldDiff, left, right string) string {
	return protodiff.Format(d, "  ", left, right)
}
