package main

// bench: both sides timed on the same snapshots by job size. Informational:
// upstream's time is its in-process syncJob (without building the fake
// cluster around it); job-decider's is the gRPC round trip.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// benchRequest is a running NonIndexed or Indexed Job with n pods: most
// running, some succeeded and failed and still carrying the finalizer, so a
// sync has counting and finalizer removal to do as well as pod creation.
func benchRequest(n int, indexed bool) *pb.DecideJobRequest {
	g := &gen{r: rand.New(rand.NewPCG(uint64(n), 1)), now: baseNow}
	j := g.job()
	s := j.Spec
	s.PodFailurePolicy, s.SuccessPolicy, s.BackoffLimitPerIndex, s.MaxFailedIndexes = nil, nil, nil, nil
	s.ActiveDeadlineSeconds, s.Suspend, s.PodReplacementPolicy = nil, nil, nil
	s.Template.Spec.RestartPolicy = "Never"
	s.Parallelism = proto.Int32(int32(n))
	s.Completions = proto.Int32(int32(4 * n))
	s.BackoffLimit = proto.Int32(int32(n))
	s.CompletionMode = proto.String("NonIndexed")
	if indexed {
		s.CompletionMode = proto.String("Indexed")
	}
	j.Status = &pb.JobStatus{StartTime: timestamppb.New(g.now.Add(-time.Hour)), Active: int32(n),
		Ready: proto.Int32(0), Terminating: proto.Int32(0), UncountedTerminatedPods: &pb.UncountedTerminatedPods{}}
	req := &pb.DecideJobRequest{Job: j, Now: timestamppb.New(g.now)}
	owner := &pb.OwnerReference{ApiVersion: "batch/v1", Kind: "Job", Name: j.Metadata.Name, Uid: j.Metadata.Uid,
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)}
	for i := 0; i < n; i++ {
		p := &pb.Pod{
			Metadata: &pb.ObjectMeta{Name: fmt.Sprintf("%s-%06d", j.Metadata.Name, i), Namespace: j.Metadata.Namespace,
				Uid: fmt.Sprintf("pod-uid-%06d", i), CreationTimestamp: timestamppb.New(g.now.Add(-time.Duration(3600-i%3000) * time.Second)),
				Labels: copyMap(s.Template.Metadata.Labels), OwnerReferences: []*pb.OwnerReference{owner}, Finalizers: []string{finalizer}},
			Spec:   &pb.PodSpecSummary{NodeName: "node-a"},
			Status: &pb.PodStatus{Phase: "Running"},
		}
		if indexed {
			p.Metadata.Annotations = map[string]string{indexKey: strconv.Itoa(i)}
			p.Metadata.Labels[indexKey] = strconv.Itoa(i)
		}
		switch i % 10 {
		case 0:
			p.Status.Phase = "Succeeded"
		case 1:
			if i%20 == 1 {
				p.Status.Phase = "Failed"
			}
		}
		p.Status.ContainerStatuses = []*pb.ContainerStatus{{Name: "main", State: &pb.ContainerState{
			Terminated: &pb.ContainerStateTerminated{ExitCode: map[bool]int32{true: 0, false: 1}[p.Status.Phase == "Succeeded"],
				FinishedAt: timestamppb.New(g.now.Add(-time.Duration(600+i%500) * time.Second))}}}}
		if p.Status.Phase == "Running" {
			p.Status.ContainerStatuses[0].State = &pb.ContainerState{Running: &pb.ContainerStateRunning{StartedAt: p.Metadata.CreationTimestamp}}
		}
		req.Pods = append(req.Pods, p)
	}
	return req
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

func cmdBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	var tf targetFlags
	tf.register(fs)
	sizesFlag := fs.String("sizes", "10,100,1000,10000", "job sizes (pods)")
	upstreamOnly := fs.Bool("upstream-only", false, "time upstream only")
	fs.Parse(args)
	var d *decider
	var err error
	if !*upstreamOnly {
		if d, err = tf.connect(); err != nil {
			return err
		}
		defer d.close()
	}
	fmt.Printf("%-8s %-10s %14s %14s %14s %8s  %s\n", "pods", "mode", "upstream sync", "upstream+setup", "job-decider", "ratio", "same plan")
	for _, f := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		reps := max(3, min(20, 20000/max(n, 1)))
		for _, indexed := range []bool{false, true} {
			req := benchRequest(n, indexed)
			var up, upTotal, jd []time.Duration
			var upResp *pb.DecideJobResponse
			for r := 0; r < reps; r++ {
				start := time.Now()
				resp, run, err := upstreamCanonical(req)
				if err != nil {
					return err
				}
				upTotal = append(upTotal, time.Since(start))
				up = append(up, run.elapsed)
				upResp = resp
			}
			mode := map[bool]string{true: "Indexed", false: "NonIndexed"}[indexed]
			if d == nil {
				fmt.Printf("%-8d %-10s %14v %14v %14s %8s  %s\n", n, mode, median(up).Round(time.Microsecond), median(upTotal).Round(time.Microsecond), "-", "-", "-")
				continue
			}
			same := "yes"
			for r := 0; r < reps; r++ {
				resp, took, err := d.decide(req)
				if err != nil {
					same = "error: " + err.Error()
					break
				}
				jd = append(jd, took)
				if r == 0 {
					if diffs := diffResponses(upResp, canonicalize(resp, req.Job)); len(diffs) > 0 {
						same = fmt.Sprintf("no (%d fields)", len(diffs))
					}
				}
			}
			if len(jd) == 0 {
				fmt.Printf("%-8d %-10s %14v %14v %14s %8s  %s\n", n, mode, median(up).Round(time.Microsecond), median(upTotal).Round(time.Microsecond), "-", "-", same)
				continue
			}
			ratio := float64(median(jd)) / float64(median(up))
			fmt.Printf("%-8d %-10s %14v %14v %14v %7.2fx  %s\n", n, mode, median(up).Round(time.Microsecond),
				median(upTotal).Round(time.Microsecond), median(jd).Round(time.Microsecond), ratio, same)
		}
	}
	fmt.Println("ratio = job-decider round trip / upstream's in-process syncJob (informational, not pass/fail)")
	return nil
}
