package request

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// leanPodsField is DecideJobRequest.lean_pods, the last field: a request's
// other fields followed by its lean pods is the order proto.Marshal writes.
const leanPodsField protowire.Number = 7

// Codec is gRPC's proto codec, except that a DecideJobRequest with many lean
// pods is marshalled on every CPU, a range of pods each, into buffers sent
// one after another (no copy joins them). Pass it to a call with
// grpc.ForceCodecV2(request.Codec{}); the server sees the same bytes.
type Codec struct{}

// Name is the proto codec's: the content type does not change.
func (Codec) Name() string { return grpcproto.Name }

// Marshal marshals v; anything but a large lean request goes to gRPC's own codec.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	req, ok := v.(*pb.DecideJobRequest)
	if !ok || len(req.GetLeanPods()) < 2*parallelMin {
		return protoCodec().Marshal(v)
	}
	// Every field but lean_pods, by reflection, so that a field added later is carried.
	head := &pb.DecideJobRequest{}
	dst := head.ProtoReflect()
	req.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		if fd.Number() != leanPodsField {
			dst.Set(fd, val)
		}
		return true
	})
	first, err := proto.Marshal(head)
	if err != nil {
		return nil, err
	}
	pods := req.GetLeanPods()
	parts := make([][]byte, workersFor(len(pods)))
	err = inParallel(len(pods), len(parts), func(w, from, to int) error {
		// Sizes first (proto.Size caches them for UseCachedSize), so that
		// the buffer is allocated once, at its final length.
		sizes := make([]int, to-from)
		total := 0
		for i, p := range pods[from:to] {
			sizes[i] = proto.Size(p)
			total += protowire.SizeTag(leanPodsField) + protowire.SizeBytes(sizes[i])
		}
		buf := make([]byte, 0, total)
		opts := proto.MarshalOptions{UseCachedSize: true}
		for i, p := range pods[from:to] {
			buf = protowire.AppendTag(buf, leanPodsField, protowire.BytesType)
			buf = protowire.AppendVarint(buf, uint64(sizes[i]))
			var err error
			if buf, err = opts.MarshalAppend(buf, p); err != nil {
				return err
			}
		}
		parts[w] = buf
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("marshalling lean pods: %w", err)
	}
	out := mem.BufferSlice{mem.SliceBuffer(first)}
	for _, p := range parts {
		if len(p) > 0 {
			out = append(out, mem.SliceBuffer(p))
		}
	}
	return out, nil
}

// Unmarshal is gRPC's proto codec's.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error { return protoCodec().Unmarshal(data, v) }

func protoCodec() encoding.CodecV2 { return encoding.GetCodecV2(grpcproto.Name) }
