package request

import (
	"fmt"
	"testing"

	grpcencoding "google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkBuildAndMarshal is Build then gRPC's proto codec on 100,000 small
// pods (a small heap, unlike an informer's):
//
//	cd clients/go && go test -run '^$' -bench BuildAndMarshal ./request
func BenchmarkBuildAndMarshal(b *testing.B) {
	pods := make([]*corev1.Pod, 100_000)
	for i := range pods {
		p := basePod()
		p.Name, p.UID = fmt.Sprintf("pi-%d-x7k2p", i), types.UID(fmt.Sprintf("6f1c2b7e-3d4a-4c3b-9a1e-%012d", i))
		p.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(i)}
		pods[i] = p
	}
	job := trimJob()
	codec := grpcencoding.GetCodecV2(grpcproto.Name)
	for b.Loop() {
		req, err := Build(job, pods)
		if err != nil {
			b.Fatal(err)
		}
		out, err := codec.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(out.Len()))
		out.Free()
	}
}
