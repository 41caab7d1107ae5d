// Package decider is the job-decider side of the harness: a gRPC client (the
// generated Go client) to a running server, or a `job-decider serve` the
// harness starts itself on a loopback port, and the check that its lean and
// full encodings of a request get the same answer.
package decider

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// defaultServeArgs starts job-decider's server on the harness's loopback
// port, with its metrics endpoint on another free loopback port.
const defaultServeArgs = "serve --addr {addr} --metrics-addr 127.0.0.1:0 --log-level error"

// Flags choose the job-decider to check: a running one, or one to start.
type Flags struct {
	Server    string        // address of a running job-decider
	Serve     string        // or a job-decider binary to start
	ServeArgs string        // its arguments, {addr} the loopback address
	Timeout   time.Duration // per call
}

// Register adds the flags that choose the job-decider to check.
func (t *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.Server, "server", "", "address of a running job-decider (host:port)")
	fs.StringVar(&t.Serve, "serve", "", "job-decider binary to start on an ephemeral loopback port")
	fs.StringVar(&t.ServeArgs, "serve-args", envOr("JOB_DECIDER_SERVE_ARGS", defaultServeArgs),
		"arguments for --serve; {addr} becomes the loopback address")
	fs.DurationVar(&t.Timeout, "timeout", 30*time.Second, "deadline of one DecideJob call")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Conn is a connection to job-decider.
type Conn struct {
	client  pb.JobDeciderClient
	conn    *grpc.ClientConn
	proc    *exec.Cmd
	timeout time.Duration
}

// Connect dials the running server, or starts one and waits until it listens.
func (t *Flags) Connect() (*Conn, error) {
	if (t.Server == "") == (t.Serve == "") {
		return nil, fmt.Errorf("give exactly one of --server ADDR or --serve BINARY")
	}
	d := &Conn{timeout: t.Timeout}
	addr := t.Server
	if t.Serve != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr = l.Addr().String()
		l.Close()
		args := strings.Fields(strings.ReplaceAll(t.ServeArgs, "{addr}", addr))
		d.proc = exec.Command(t.Serve, args...)
		d.proc.Stdout = os.Stderr
		d.proc.Stderr = os.Stderr
		if err := d.proc.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", t.Serve, err)
		}
		fmt.Fprintf(os.Stderr, "started %s %s (pid %d)\n", t.Serve, strings.Join(args, " "), d.proc.Process.Pid)
		if err := waitForPort(addr, 30*time.Second, d.proc); err != nil {
			d.Close()
			return nil, err
		}
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		d.Close()
		return nil, err
	}
	d.conn = conn
	d.client = pb.NewJobDeciderClient(conn)
	return d, nil
}

func waitForPort(addr string, limit time.Duration, proc *exec.Cmd) error {
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("job-decider exited before listening: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("job-decider did not listen on %s within %v", addr, limit)
}

// Close closes the connection and stops a server Connect started.
func (d *Conn) Close() {
	if d.conn != nil {
		d.conn.Close()
	}
	if d.proc != nil && d.proc.Process != nil {
		d.proc.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { d.proc.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			d.proc.Process.Kill()
		}
	}
}

// Decide sends one request and says how long the call took.
func (d *Conn) Decide(req *pb.DecideJobRequest) (*pb.DecideJobResponse, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	start := time.Now()
	resp, err := d.client.DecideJob(ctx, req)
	return resp, time.Since(start), err
}
