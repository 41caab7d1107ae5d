package request

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// echoDecider keeps each request it reads and answers with one empty action.
type echoDecider struct {
	pb.UnimplementedJobDeciderServer
	got chan *pb.DecideJobRequest
}

func (e *echoDecider) DecideJob(_ context.Context, req *pb.DecideJobRequest) (*pb.DecideJobResponse, error) {
	e.got <- req
	return &pb.DecideJobResponse{Actions: []*pb.Action{{}}}, nil
}

// TestCodecOverGRPC sends a request large enough to be marshalled in parallel
// through a real gRPC connection (loopback) and checks the server reads it whole.
func TestCodecOverGRPC(t *testing.T) {
	pods := manyPods(t, 2*parallelMin+3)
	req, err := Build(trimJob(), pods)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	dec := &echoDecider{got: make(chan *pb.DecideJobRequest, 1)}
	pb.RegisterJobDeciderServer(srv, dec)
	go srv.Serve(l)
	defer srv.Stop()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := pb.NewJobDeciderClient(conn).DecideJob(context.Background(), req, grpc.ForceCodecV2(Codec{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetActions()) != 1 {
		t.Errorf("response %v", resp)
	}
	if got := <-dec.got; !proto.Equal(got, req) {
		t.Errorf("the server read %d lean pods, not the %d sent", len(got.GetLeanPods()), len(req.GetLeanPods()))
	}
}
