package main

// The job-decider side: a gRPC client (the generated Go client) to a running
// server, or a `job-decider serve` the harness starts itself on a loopback
// port, and the comparison of its answers with upstream's.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	jobutil "k8s.io/kubernetes/pkg/controller/job/util"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/knowndiff"
	"job-decider.dev/clients/go/vectors"
	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/upstream"
)

// defaultServeArgs starts job-decider's server on the harness's loopback
// port, with its metrics endpoint on another free loopback port.
const defaultServeArgs = "serve --addr {addr} --metrics-addr 127.0.0.1:0 --log-level error"

type targetFlags struct {
	server    string
	serve     string
	serveArgs string
	timeout   time.Duration
}

func (t *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.server, "server", "", "address of a running job-decider (host:port)")
	fs.StringVar(&t.serve, "serve", "", "job-decider binary to start on an ephemeral loopback port")
	fs.StringVar(&t.serveArgs, "serve-args", envOr("JOB_DECIDER_SERVE_ARGS", defaultServeArgs),
		"arguments for --serve; {addr} becomes the loopback address")
	fs.DurationVar(&t.timeout, "timeout", 30*time.Second, "deadline of one DecideJob call")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// decider is a connection to job-decider.
type decider struct {
	client  pb.JobDeciderClient
	conn    *grpc.ClientConn
	proc    *exec.Cmd
	timeout time.Duration
}

func (t *targetFlags) connect() (*decider, error) {
	if (t.server == "") == (t.serve == "") {
		return nil, fmt.Errorf("give exactly one of --server ADDR or --serve BINARY")
	}
	d := &decider{timeout: t.timeout}
	addr := t.server
	if t.serve != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr = l.Addr().String()
		l.Close()
		args := strings.Fields(strings.ReplaceAll(t.serveArgs, "{addr}", addr))
		d.proc = exec.Command(t.serve, args...)
		d.proc.Stdout = os.Stderr
		d.proc.Stderr = os.Stderr
		if err := d.proc.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", t.serve, err)
		}
		fmt.Fprintf(os.Stderr, "started %s %s (pid %d)\n", t.serve, strings.Join(args, " "), d.proc.Process.Pid)
		if err := waitForPort(addr, 30*time.Second, d.proc); err != nil {
			d.close()
			return nil, err
		}
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		d.close()
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

func (d *decider) close() {
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

func (d *decider) decide(req *pb.DecideJobRequest) (*pb.DecideJobResponse, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	start := time.Now()
	resp, err := d.client.DecideJob(ctx, req)
	return resp, time.Since(start), err
}

// outcome of comparing one scenario.
type outcome struct {
	name     string
	skipped  string // why the scenario was not compared (upstream could not run it)
	diffs    []canon.FieldDiff
	excused  bool
	upstream *pb.DecideJobResponse
	decided  *pb.DecideJobResponse
	request  *pb.DecideJobRequest // what job-decider was sent
	upTime   time.Duration
	jdTime   time.Duration
	// encDiffs are where the lean encoding's answer differs from the full
	// one's: never excused. notLean is why the request went full only.
	encDiffs []canon.FieldDiff
	notLean  string
}

// mismatch: a difference from upstream no known difference covers, or any
// difference between the two encodings.
func (o *outcome) mismatch() bool { return (len(o.diffs) > 0 && !o.excused) || len(o.encDiffs) > 0 }

// class is the mismatch's shape: the encodings' difference first, as no
// known difference can cover it.
func (o *outcome) class() string {
	if len(o.encDiffs) > 0 {
		return mismatchClass(o.encDiffs)
	}
	return mismatchClass(o.diffs)
}

// differs: any difference at all, excused or not.
func (o *outcome) differs() bool { return len(o.diffs) > 0 || len(o.encDiffs) > 0 }

// compare runs both sides on one request. A generated request goes to
// upstream whole (upstream.Whole) and to job-decider as the contract has a
// caller send it (contractRequest); a vector goes to both as it is.
func compare(d *decider, known *knowndiff.List, name string, req *pb.DecideJobRequest, generated bool, opts upstream.Opts) *outcome {
	o := &outcome{name: name, request: req}
	if generated {
		opts = upstream.Whole
		o.request = contractRequest(req)
	}
	up, run, err := upstream.CanonicalWith(req, opts)
	if err != nil {
		o.skipped = "upstream cannot run this upstream.Snapshot: " + err.Error()
		return o
	}
	o.upstream, o.upTime = up, run.Elapsed
	if run.SyncErr != nil {
		o.skipped = "upstream's syncJob returned an error: " + run.SyncErr.Error()
		return o
	}
	resp, took, err := d.decide(o.request)
	o.jdTime = took
	if err != nil {
		o.diffs = []canon.FieldDiff{{Path: "(rpc)", Left: "a plan", Right: "error: " + err.Error()}}
	} else {
		o.decided = canon.Canonicalize(resp, req.GetJob())
		o.diffs = canon.DiffResponses(up, o.decided)
	}
	if len(o.diffs) > 0 {
		o.excused = excuses(known, name, o.diffs, shapes(req)...)
	}
	o.encDiffs, o.notLean = d.checkLean(o.request, resp, err)
	return o
}

// report prints a mismatch and saves its snapshot as a vector file.
func (o *outcome) report(w io.Writer, req *pb.DecideJobRequest, saveDir, origin string) {
	if len(o.diffs) > 0 {
		label := "MISMATCH"
		if o.excused {
			label = "known difference"
		}
		fmt.Fprintf(w, "%s %s: %d field(s) differ\n%s", label, o.name, len(o.diffs), canon.FormatDiff(o.diffs, "upstream", "job-decider"))
	}
	if len(o.encDiffs) > 0 {
		fmt.Fprintf(w, "MISMATCH %s: the lean encoding's answer differs from the full one's in %d field(s)\n%s",
			o.name, len(o.encDiffs), canon.FormatDiff(o.encDiffs, "full", "lean"))
	}
	if !o.mismatch() || saveDir == "" {
		return
	}
	if err := os.MkdirAll(saveDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	diffs := slices.Concat(o.diffs, o.encDiffs)
	var paths []string
	for i, f := range diffs {
		if i == 5 {
			paths = append(paths, "...")
			break
		}
		paths = append(paths, f.Path)
	}
	sweepNote, scope := "", ""
	if origin != "check" {
		sweepNote = " (syncJob, and for a finished Job the orphan-pod worker's sweep of its pods, as `random` and `lifecycle` run it)"
		scope = "controller"
	}
	desc := fmt.Sprintf("Regression case saved by `conformance %s`: job-decider differed from upstream at %s. "+
		"expected is upstream's response%s.", origin, strings.Join(paths, ", "), sweepNote)
	path := filepath.Join(saveDir, safeFileName(o.name)+".yaml")
	v, err := vectors.NewJob(path, o.name, desc, scope, req, o.upstream)
	if err == nil {
		err = v.Save()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "saving", path, ":", err)
		return
	}
	fmt.Fprintf(w, "  saved %s\n", path)
}

// contractRequest is a generated request as a caller sends it by contract:
// the Job's own pods and orphans only. Pods controlled by another owner
// cannot change upstream's sync (its pod listing skips them), and
// job-decider refuses them (known-differences.md, adopt-only-matching).
func contractRequest(req *pb.DecideJobRequest) *pb.DecideJobRequest {
	uid := req.GetJob().GetMetadata().GetUid()
	foreign := func(p *pb.Pod) bool {
		for _, r := range p.GetMetadata().GetOwnerReferences() {
			if r.GetController() && r.GetUid() != uid {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(req.GetPods(), foreign) {
		return req
	}
	out := proto.Clone(req).(*pb.DecideJobRequest)
	out.Pods = slices.DeleteFunc(out.Pods, foreign)
	return out
}

// shapes names the kinds of snapshot a request is, for known-differences.md
// entries that cover every generated scenario of one kind.
func shapes(req *pb.DecideJobRequest) []string {
	s, err := upstream.SnapshotFromRequest(req)
	if err != nil {
		return nil
	}
	var out []string
	if !s.Ours && jobutil.IsJobFinished(s.Job) {
		out = append(out, "shape:finished-managed-elsewhere")
	}
	return out
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeFileName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	var tf targetFlags
	tf.register(fs)
	saveDir := fs.String("save-dir", "mismatches", "where to save mismatching snapshots (empty: don't)")
	knownFile := fs.String("known", defaultKnownFile(), "known differences file")
	fs.Parse(args)
	files, err := vectors.Files(fs.Args())
	if err != nil {
		return err
	}
	if len(files) == 0 {
		usage()
	}
	known, err := loadKnown(*knownFile)
	if err != nil {
		return err
	}
	d, err := tf.connect()
	if err != nil {
		return err
	}
	defer d.close()
	var mismatches, excused, skipped int
	var enc encodingTally
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			return err
		}
		o := compare(d, known, v.Name, v.Request, false, upstream.OptsFor(v.Scope))
		if o.skipped == "" {
			enc.add(v.Name, o.notLean)
		}
		switch {
		case o.skipped != "":
			skipped++
			fmt.Printf("skipped %s: %s\n", v.Name, o.skipped)
		case !o.differs():
			fmt.Printf("ok %s\n", v.Name)
		default:
			if !o.mismatch() {
				excused++
			} else {
				mismatches++
			}
			o.report(os.Stdout, v.Request, *saveDir, "check")
		}
	}
	fmt.Printf("%d vectors: %d match, %d mismatch, %d known differences, %d skipped\n",
		len(files), len(files)-mismatches-excused-skipped, mismatches, excused, skipped)
	fmt.Println(enc.String())
	if mismatches > 0 || skipped > 0 {
		return fmt.Errorf("%d unlisted mismatches, %d vectors upstream could not run", mismatches, skipped)
	}
	return nil
}
