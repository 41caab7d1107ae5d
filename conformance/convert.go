package main

// Conversions between the contract's messages and Kubernetes API objects.
//
// The contract's field names are the Kubernetes API's own JSON names, so the
// conversion goes through JSON: protojson on one side, encoding/json on the
// k8s types on the other. The only differences are proto3 JSON's int64 as
// strings (fixed up below) and fields one side does not have.

import (
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// int64Fields are the JSON keys of int64 fields in the contract's Job and Pod
// messages, which proto3 JSON writes as strings.
var int64Fields = map[string]bool{
	"generation":                 true,
	"deletionGracePeriodSeconds": true,
	"activeDeadlineSeconds":      true,
}

func fixInt64Strings(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && int64Fields[k] {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					t[k] = n
				}
				continue
			}
			fixInt64Strings(e)
		}
	case []any:
		for _, e := range t {
			fixInt64Strings(e)
		}
	}
}

// protoToK8s converts a contract message into the k8s object out.
func protoToK8s(m proto.Message, out any) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return err
	}
	fixInt64Strings(generic)
	b, err = json.Marshal(generic)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// k8sToProto converts a k8s object into a contract message. Unknown fields are
// an error: upstream wrote something the contract cannot carry.
func k8sToProto(in any, m proto.Message) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		return fmt.Errorf("the contract cannot carry %s: %w", b, err)
	}
	return nil
}

func jobFromProto(j *pb.Job) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	if err := protoToK8s(j, out); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return out, nil
}

func podFromProto(p *pb.Pod) (*v1.Pod, error) {
	out := &v1.Pod{}
	if err := protoToK8s(p, out); err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.GetMetadata().GetName(), err)
	}
	return out, nil
}

func jobStatusToProto(s *batchv1.JobStatus) (*pb.JobStatus, error) {
	out := &pb.JobStatus{}
	if err := k8sToProto(s, out); err != nil {
		return nil, fmt.Errorf("job status: %w", err)
	}
	return out, nil
}
