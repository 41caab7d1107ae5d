package jobdecider_test

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// fakeDecider is an in-process JobDecider whose DecideJob answers with
// respond(attempt) and records each attempt's deadline.
type fakeDecider struct {
	pb.UnimplementedJobDeciderServer
	respond func(ctx context.Context, attempt int) (*pb.DecideJobResponse, error)

	mu        sync.Mutex
	attempts  []time.Time
	deadlines []time.Duration // time left at arrival; -1 for none
}

func (f *fakeDecider) DecideJob(ctx context.Context, _ *pb.DecideJobRequest) (*pb.DecideJobResponse, error) {
	f.mu.Lock()
	f.attempts = append(f.attempts, time.Now())
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	f.deadlines = append(f.deadlines, left)
	attempt := len(f.attempts)
	f.mu.Unlock()
	if f.respond == nil {
		return &pb.DecideJobResponse{}, nil
	}
	return f.respond(ctx, attempt)
}

func (f *fakeDecider) seen() ([]time.Time, []time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.attempts...), append([]time.Duration(nil), f.deadlines...)
}

// serve starts f on a loopback port and returns its address.
func serve(t *testing.T, f *fakeDecider, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterJobDeciderServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func newClient(t *testing.T, target string, opts ...grpc.DialOption) *jobdecider.Client {
	t.Helper()
	client, err := jobdecider.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// The service config is BEHAVIOUR-26's, the one every client shares.
func TestServiceConfigIsTheSharedOne(t *testing.T) {
	const want = `{"loadBalancingConfig":[{"round_robin":{}}],
	 "methodConfig":[{"name":[{"service":"jobdecider.v1.JobDecider"}],
	   "retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"2s","backoffMultiplier":2,
	                  "retryableStatusCodes":["UNAVAILABLE"]}}]}`
	same := func(t *testing.T, got, want string) {
		t.Helper()
		var g, w any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("service config\n got %s\nwant %s", got, want)
		}
	}
	same(t, jobdecider.ServiceConfig(), want)
	throttled := strings.TrimSuffix(want, "}") + `,"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`
	var cfg struct{ RetryThrottling map[string]float64 }
	if err := json.Unmarshal([]byte(throttled), &cfg); err != nil || cfg.RetryThrottling["maxTokens"] != jobdecider.RetryThrottlingMaxTokens {
		t.Fatalf("test's own throttled config: %v %v", err, cfg)
	}
	if jobdecider.ServiceName != pb.JobDecider_ServiceDesc.ServiceName {
		t.Errorf("ServiceName %q, the generated service is %q", jobdecider.ServiceName, pb.JobDecider_ServiceDesc.ServiceName)
	}
}

// Issue 26, defect 3: a call without a deadline gets the 10 s default, and the
// server sees it (grpc-timeout); a per-call deadline and "none" are kept.
func TestTheDefaultDeadlineReachesTheServer(t *testing.T) {
	f := &fakeDecider{}
	client := newClient(t, serve(t, f))

	if _, err := client.DecideJob(context.Background(), &pb.DecideJobRequest{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := client.DecideJob(ctx, &pb.DecideJobRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DecideJob(jobdecider.WithoutDeadline(context.Background()), &pb.DecideJobRequest{}); err != nil {
		t.Fatal(err)
	}

	_, deadlines := f.seen()
	if len(deadlines) != 3 {
		t.Fatalf("%d calls reached the server, want 3", len(deadlines))
	}
	if d := deadlines[0]; d <= jobdecider.DefaultTimeout-time.Second || d > jobdecider.DefaultTimeout {
		t.Errorf("no deadline given: the server saw %v left, want just under %v", d, jobdecider.DefaultTimeout)
	}
	if d := deadlines[1]; d <= 2*time.Second || d > 3*time.Second {
		t.Errorf("a 3 s deadline: the server saw %v left", d)
	}
	if d := deadlines[2]; d != -1 {
		t.Errorf("WithoutDeadline: the server saw a deadline %v away, want none", d)
	}

	// A bare connection sends none: the default is NewClient's doing.
	bare, err := grpc.NewClient(serve(t, f), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := pb.NewJobDeciderClient(bare).DecideJob(context.Background(), &pb.DecideJobRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, deadlines = f.seen(); deadlines[3] != -1 {
		t.Errorf("a bare connection sent a deadline %v away", deadlines[3])
	}
}

// overloaded is the server's OVERLOADED answer, with a pushback when pushback > 0.
func overloaded(ctx context.Context, pushback time.Duration) error {
	if pushback > 0 {
		ms := strconv.FormatInt(pushback.Milliseconds(), 10)
		_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", ms))
	}
	return status.Error(codes.Unavailable, "overloaded")
}

func TestUnavailableIsRetriedUpToFourAttemptsAndNothingElseIs(t *testing.T) {
	cases := []struct {
		name         string
		respond      func(ctx context.Context, attempt int) (*pb.DecideJobResponse, error)
		wantCode     codes.Code
		wantAttempts int
	}{
		{"overloaded twice, then served", func(ctx context.Context, attempt int) (*pb.DecideJobResponse, error) {
			if attempt <= 2 {
				return nil, overloaded(ctx, 0)
			}
			return &pb.DecideJobResponse{}, nil
		}, codes.OK, 3},
		{"overloaded every time", func(ctx context.Context, _ int) (*pb.DecideJobResponse, error) {
			return nil, overloaded(ctx, 0)
		}, codes.Unavailable, jobdecider.RetryMaxAttempts},
		{"a bad request", func(context.Context, int) (*pb.DecideJobResponse, error) {
			return nil, status.Error(codes.InvalidArgument, "job.metadata.uid")
		}, codes.InvalidArgument, 1},
		{"the server's own timeout", func(context.Context, int) (*pb.DecideJobResponse, error) {
			return nil, status.Error(codes.DeadlineExceeded, "DECISION_TIMEOUT")
		}, codes.DeadlineExceeded, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeDecider{respond: c.respond}
			_, err := newClient(t, serve(t, f)).DecideJob(context.Background(), &pb.DecideJobRequest{})
			if status.Code(err) != c.wantCode {
				t.Errorf("DecideJob: %v, want %v", err, c.wantCode)
			}
			if attempts, _ := f.seen(); len(attempts) != c.wantAttempts {
				t.Errorf("%d attempts, want %d", len(attempts), c.wantAttempts)
			}
		})
	}
}

// The server's grpc-retry-pushback-ms wins over the backoff (at most 100 ms
// before the first retry).
func TestTheServersPushbackIsWaited(t *testing.T) {
	const pushback = 400 * time.Millisecond
	f := &fakeDecider{respond: func(ctx context.Context, attempt int) (*pb.DecideJobResponse, error) {
		if attempt == 1 {
			return nil, overloaded(ctx, pushback)
		}
		return &pb.DecideJobResponse{}, nil
	}}
	if _, err := newClient(t, serve(t, f)).DecideJob(context.Background(), &pb.DecideJobRequest{}); err != nil {
		t.Fatal(err)
	}
	attempts, _ := f.seen()
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(attempts))
	}
	if gap := attempts[1].Sub(attempts[0]); gap < pushback {
		t.Errorf("retried %v after a %v pushback", gap, pushback)
	}
}

// The deadline covers every attempt: a retry never outlives the call's deadline.
func TestTheDeadlineCoversTheRetries(t *testing.T) {
	f := &fakeDecider{respond: func(ctx context.Context, _ int) (*pb.DecideJobResponse, error) {
		return nil, overloaded(ctx, time.Second)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newClient(t, serve(t, f)).DecideJob(ctx, &pb.DecideJobRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("DecideJob: %v, want DEADLINE_EXCEEDED", err)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("the call took %v past its 500 ms deadline", took)
	}
	if attempts, _ := f.seen(); len(attempts) != 1 {
		t.Errorf("%d attempts within the deadline, want 1 (the pushback is longer)", len(attempts))
	}
}

// With WithRetryThrottling, gRPC stops retrying once half the tokens are
// spent: a call of 4 failed attempts (10 → 6 tokens), then one attempt more.
func TestRetryThrottlingIsOptIn(t *testing.T) {
	always := func(ctx context.Context, _ int) (*pb.DecideJobResponse, error) { return nil, overloaded(ctx, 0) }
	for _, c := range []struct {
		name string
		opts []grpc.DialOption
		want int
	}{
		{"default", nil, 2 * jobdecider.RetryMaxAttempts},
		{"WithRetryThrottling", []grpc.DialOption{jobdecider.WithRetryThrottling()}, jobdecider.RetryMaxAttempts + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeDecider{respond: always}
			client := newClient(t, serve(t, f), c.opts...)
			for range 2 {
				_, _ = client.DecideJob(context.Background(), &pb.DecideJobRequest{})
			}
			if attempts, _ := f.seen(); len(attempts) != c.want {
				t.Errorf("two calls made %d attempts, want %d", len(attempts), c.want)
			}
		})
	}
}

// A plan over gRPC's default 4 MiB is received (up to 64 MiB); a caller's
// own limit, given after the defaults, wins.
func TestLargePlansAreReceivedAndCallerOptionsWin(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	f := &fakeDecider{respond: func(context.Context, int) (*pb.DecideJobResponse, error) {
		resp := &pb.DecideJobResponse{}
		for range 6 {
			resp.Actions = append(resp.Actions, &pb.Action{Kind: &pb.Action_RecordEvent{
				RecordEvent: &pb.RecordEvent{Type: "Normal", Reason: "Big", Message: big}}})
		}
		return resp, nil
	}}
	addr := serve(t, f)
	resp, err := newClient(t, addr).DecideJob(context.Background(), &pb.DecideJobRequest{})
	if err != nil || len(resp.GetActions()) != 6 {
		t.Fatalf("a 6 MiB plan: %v", err)
	}
	bare, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := pb.NewJobDeciderClient(bare).DecideJob(context.Background(), &pb.DecideJobRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a bare connection on a 6 MiB plan: %v, want RESOURCE_EXHAUSTED (else this test proves nothing)", err)
	}
	limited := newClient(t, addr, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<20)))
	if _, err := limited.DecideJob(context.Background(), &pb.DecideJobRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a caller's 1 MiB limit: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// round_robin: calls spread over every address the name resolves to (a
// headless Service's pods), where gRPC's default, pick_first, pins one.
func TestCallsAreSpreadOverEveryAddress(t *testing.T) {
	a, b := &fakeDecider{}, &fakeDecider{}
	addrs := []resolver.Address{{Addr: serve(t, a)}, {Addr: serve(t, b)}}
	calls := func(t *testing.T, opts ...grpc.DialOption) (int, int) {
		t.Helper()
		a.mu.Lock()
		a.attempts, a.deadlines = nil, nil
		a.mu.Unlock()
		b.mu.Lock()
		b.attempts, b.deadlines = nil, nil
		b.mu.Unlock()
		r := manual.NewBuilderWithScheme("headless")
		r.InitialState(resolver.State{Addresses: addrs})
		conn, err := grpc.NewClient("headless:///job-decider", append(opts, grpc.WithResolvers(r))...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		client := pb.NewJobDeciderClient(conn)
		for range 20 {
			if _, err := client.DecideJob(context.Background(), &pb.DecideJobRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		atA, _ := a.seen()
		atB, _ := b.seen()
		return len(atA), len(atB)
	}
	if atA, atB := calls(t, jobdecider.DialOptions()...); atA == 0 || atB == 0 {
		// Not exactly 10 each: calls go to the first address alone until the second's connection is ready.
		t.Errorf("DialOptions: %d and %d of 20 calls on the two addresses, want both used", atA, atB)
	}
	if atA, atB := calls(t, grpc.WithTransportCredentials(insecure.NewCredentials())); atA != 0 && atB != 0 {
		t.Errorf("pick_first spread the calls too (%d, %d): this test cannot tell round_robin", atA, atB)
	}
}

// Every target form the behaviour names reaches the server over TCP.
func TestTCPTargets(t *testing.T) {
	f := &fakeDecider{}
	addr := serve(t, f)
	for _, target := range []string{addr, "dns:///" + addr, "dns:///" + strings.Replace(addr, "127.0.0.1", "localhost", 1)} {
		if _, err := newClient(t, target).DecideJob(context.Background(), &pb.DecideJobRequest{}); err != nil {
			t.Errorf("%s: %v", target, err)
		}
	}
}
