package jobdecider_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

// The live tests call the server at JOB_DECIDER_ADDR (clients/go/test.sh runs
// them under tools/with-server.sh: once over TCP, once over a Unix socket and
// once at one slot, JOB_DECIDER_MAX_CONCURRENT=1).

// liveServer is the server's address, or a skip when the tests run without one.
func liveServer(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("JOB_DECIDER_ADDR")
	if addr == "" {
		t.Skip("JOB_DECIDER_ADDR is not set: these tests call a live server; " +
			"run `tools/with-server.sh bash clients/go/test.sh` from the repository root")
	}
	return addr
}

// exampleRequest is the bundled FailJob example's request, decided now.
func exampleRequest(t *testing.T) *pb.DecideJobRequest {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "examples", "kep-3329-failjob-exit-code-42")
	var job batchv1.Job
	var list corev1.PodList
	for file, into := range map[string]any{"job.json": &job, "pods.json": &list} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err == nil {
			err = json.Unmarshal(data, into)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	req := request.BuildFull(&job, pods)
	req.Now = timestamppb.Now()
	return req
}

// concurrentCalls makes n DecideJob calls at once and counts their status codes.
func concurrentCalls(t *testing.T, client pb.JobDeciderClient, n int) map[codes.Code]int {
	t.Helper()
	req := exampleRequest(t)
	var mu sync.Mutex
	counts := map[codes.Code]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := client.DecideJob(ctx, req)
			mu.Lock()
			counts[status.Code(err)]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return counts
}

// Issue 26, defect 2: at one slot, a burst of calls on a client without a
// retry policy sees UNAVAILABLE (OVERLOADED); NewClient's retries absorb it.
func TestOverloadIsRetriedOnAServerAtOneSlot(t *testing.T) {
	addr := liveServer(t)
	if os.Getenv("JOB_DECIDER_MAX_CONCURRENT") != "1" {
		t.Skip("needs a server at one slot: JOB_DECIDER_MAX_CONCURRENT=1 with " +
			`WITH_SERVER_ARGS="--max-concurrent-requests 1" (clients/go/test.sh)`)
	}
	const calls = 30

	// The server does shed load: without the service config some calls fail.
	bare, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	var shed map[codes.Code]int
	for range 5 { // a burst can be served one by one by chance; a few tries
		shed = concurrentCalls(t, pb.NewJobDeciderClient(bare), calls)
		if shed[codes.Unavailable] > 0 {
			break
		}
	}
	t.Logf("without a retry policy: %v", shed)
	if shed[codes.Unavailable] == 0 {
		t.Fatalf("no call failed UNAVAILABLE without retries (%v): the server is not at one slot", shed)
	}

	client, err := jobdecider.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	got := concurrentCalls(t, client, calls)
	t.Logf("with NewClient: %v", got)
	if got[codes.OK] != calls {
		t.Errorf("NewClient: %v, want all %d calls OK", got, calls)
	}
}

// A server on a Unix socket, by its absolute target and by a relative one.
func TestNewClientCallsAServerOnAUnixSocket(t *testing.T) {
	addr := liveServer(t)
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		t.Skip("JOB_DECIDER_ADDR is not a unix:// socket: run under WITH_SERVER_SOCKET=1 (clients/go/test.sh)")
	}
	req := exampleRequest(t)
	call := func(t *testing.T, target string) {
		client, err := jobdecider.NewClient(target)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		resp, err := client.DecideJob(context.Background(), req)
		if err != nil {
			t.Fatalf("DecideJob on %s: %v", target, err)
		}
		if len(resp.GetActions()) == 0 {
			t.Errorf("DecideJob on %s: a plan without actions", target)
		}
	}
	t.Run("unix:///abs", func(t *testing.T) { call(t, "unix://"+path) })
	t.Run("unix:relative", func(t *testing.T) {
		t.Chdir(filepath.Dir(path))
		call(t, "unix:"+filepath.Base(path))
	})
}
