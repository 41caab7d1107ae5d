package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

// root is the repository, from this package's directory.
const root = "../../../.."

// example is the bundled KEP-3329 story: a pod fails with exit code 42, a FailJob rule matches.
var example = filepath.Join(root, "examples", "kep-3329-failjob-exit-code-42")

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

// buildQuickstart compiles this package (the quickstart) and returns the binary's path.
func buildQuickstart(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// withoutNow clears the times a plan takes from the request's now (the quickstart
// decides at the current time, the CLI at a time given to it).
func withoutNow(actions []*pb.Action) []*pb.Action {
	out := make([]*pb.Action, len(actions))
	for i, a := range actions {
		a = proto.Clone(a).(*pb.Action)
		if st := a.GetUpdateStatus().GetStatus(); st != nil {
			st.CompletionTime = nil
			for _, c := range st.GetConditions() {
				c.LastProbeTime, c.LastTransitionTime = nil, nil
			}
		}
		out[i] = a
	}
	return out
}

func TestQuickstartPrintsTheServersPlanForTheBundledExample(t *testing.T) {
	addr := liveServer(t)
	bin := buildQuickstart(t)
	decider := cmp.Or(os.Getenv("JOB_DECIDER_BIN"), filepath.Join(root, "target", "debug", "job-decider"))
	job, pods := filepath.Join(example, "job.json"), filepath.Join(example, "pods.json")

	now := time.Now().UTC().Format(time.RFC3339)
	cli, err := exec.Command(decider, "decide", "--job", job, "--pods", pods, "--now", now, "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s decide: %v", decider, err)
	}
	var want pb.DecideJobResponse
	if err := protojson.Unmarshal(cli, &want); err != nil {
		t.Fatalf("the CLI's JSON: %v", err)
	}
	if len(want.GetActions()) == 0 {
		t.Fatal("the CLI's plan has no actions: nothing to compare")
	}

	cmd := exec.Command(bin, job, pods)
	cmd.Env = append(os.Environ(), "JOB_DECIDER_ADDR="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, stderr.String())
	}
	var got []*pb.Action
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a pb.Action
		if err := protojson.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("quickstart printed %q: %v", line, err)
		}
		got = append(got, &a)
	}
	gotPlan := &pb.DecideJobResponse{Actions: withoutNow(got)}
	wantPlan := &pb.DecideJobResponse{Actions: withoutNow(want.GetActions())}
	if !proto.Equal(gotPlan, wantPlan) {
		t.Errorf("quickstart's actions differ from `job-decider decide`'s\n--- got\n%s\n--- want\n%s",
			protojson.Format(gotPlan), protojson.Format(wantPlan))
	}
}

func TestQuickstartPrintsTheFieldOfABadJob(t *testing.T) {
	addr := liveServer(t)
	bin := buildQuickstart(t)
	var job map[string]any
	data, err := os.ReadFile(filepath.Join(example, "job.json"))
	if err == nil {
		err = json.Unmarshal(data, &job)
	}
	if err != nil {
		t.Fatal(err)
	}
	delete(job["metadata"].(map[string]any), "uid")
	bad := filepath.Join(t.TempDir(), "job.json")
	data, _ = json.Marshal(job)
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, bad, filepath.Join(example, "pods.json"))
	cmd.Env = append(os.Environ(), "JOB_DECIDER_ADDR="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("quickstart on a Job without a uid: %v, want exit status 1\n%s", err, stderr.String())
	}
	for _, want := range []string{"\n  job.metadata.uid: ", "\n  reason: INVALID_SNAPSHOT (jobdecider.dev)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// readExample is the bundled example's Job and pods as client-go objects.
func readExample(t *testing.T) (*batchv1.Job, []*corev1.Pod) {
	t.Helper()
	var job batchv1.Job
	var list corev1.PodList
	for path, into := range map[string]any{"job.json": &job, "pods.json": &list} {
		data, err := os.ReadFile(filepath.Join(example, path))
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
	return &job, pods
}

func TestBadRequestsNameTheirFieldInTheErrorDetails(t *testing.T) {
	addr := liveServer(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewJobDeciderClient(conn)

	cases := []struct {
		name, field string
		breakIt     func(job *batchv1.Job, pods []*corev1.Pod)
	}{
		{"a Job without a uid", "job.metadata.uid", func(job *batchv1.Job, _ []*corev1.Pod) { job.UID = "" }},
		{"a pod in a phase the API does not define", "pods[1].status.phase",
			func(_ *batchv1.Job, pods []*corev1.Pod) { pods[1].Status.Phase = "Exploded" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, pods := readExample(t)
			c.breakIt(job, pods)
			req := request.BuildFull(job, pods)
			req.Now = timestamppb.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := client.DecideJob(ctx, req)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("DecideJob: %v, want INVALID_ARGUMENT", err)
			}
			var fields []string
			for _, v := range jobdecider.FieldViolations(err) {
				fields = append(fields, v.GetField())
			}
			if len(fields) == 0 || fields[0] != c.field {
				t.Errorf("field violations name %q, want %q first", fields, c.field)
			}
			info := jobdecider.ErrorInfo(err)
			if info.GetDomain() != jobdecider.Domain || info.GetReason() != "INVALID_SNAPSHOT" {
				t.Errorf("ErrorInfo = %v, want reason INVALID_SNAPSHOT in %s", info, jobdecider.Domain)
			}
		})
	}
}
