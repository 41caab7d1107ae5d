package vectors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// root is the repository, from this package's directory (testkit/vectors).
var root = filepath.Join("..", "..")

// TestEveryVectorLoads reads every Job and JobSet vector the repository holds;
// the minimums are fewer than it has, so the test cannot pass by reading nothing.
func TestEveryVectorLoads(t *testing.T) {
	for _, c := range []struct {
		dir  string
		flat bool
		min  int
	}{
		{filepath.Join(root, "tests", "vectors"), false, 120},
		{filepath.Join(root, "tests", "vectors-extended"), true, 24},
	} {
		list := Files
		if c.flat {
			list = FilesFlat
		}
		files, err := list([]string{c.dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(files) < c.min {
			t.Fatalf("%s: %d vectors, want at least %d", c.dir, len(files), c.min)
		}
		for _, f := range files {
			if strings.Contains(f, string(filepath.Separator)+"jobset"+string(filepath.Separator)) {
				t.Errorf("%s: a JobSet vector among the Job vectors", f)
			}
			v, err := LoadJob(f)
			if err != nil {
				t.Error(err)
				continue
			}
			if v.Name != v.Stem() || v.Request.GetJob() == nil || v.Expected == nil {
				t.Errorf("%s: name %q, job %v, expected %v", f, v.Name, v.Request.GetJob() != nil, v.Expected != nil)
			}
		}
	}
	files, err := FilesFlat([]string{filepath.Join(root, "tests", "vectors", "jobset")})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("%d JobSet vectors, want at least 20", len(files))
	}
	for _, f := range files {
		if _, err := LoadJobSet(f); err != nil {
			t.Error(err)
		}
	}
}

// TestCoreSchema: unquoted timestamps and yes/no stay strings, as serde_yaml
// reads them for the Rust tests; numbers and booleans are typed.
func TestCoreSchema(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("a: 2026-01-02T03:04:05Z\nb: yes\nc: 3\nd: true\ne: ~\n"), &n); err != nil {
		t.Fatal(err)
	}
	v, err := ToJSONValue(&n)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["a"] != "2026-01-02T03:04:05Z" || m["b"] != "yes" || m["c"] != 3 || m["d"] != true || m["e"] != nil {
		t.Errorf("got %#v", m)
	}
	if err := yaml.Unmarshal([]byte("a: 1\na: 2\n"), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := ToJSONValue(&n); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("a duplicate key: %v", err)
	}
}

// TestJobSetVectorsAreStrict: a misspelt field in a JobSet vector is an
// error; in a Job vector it is ignored, as the Rust tests ignore it.
func TestJobSetVectorsAreStrict(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "typo.yaml")
	body := "name: typo\nrequest:\n  now: 2026-01-02T03:04:05Z\n  jobSet: {metadata: {name: a}, spce: {}}\nexpected: {}\n"
	if err := os.WriteFile(js, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadJobSet(js); err == nil || !strings.Contains(err.Error(), "spce") {
		t.Errorf("LoadJobSet: %v, want an error naming spce", err)
	}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte("request:\n  job: {apiVersion: batch/v1, kind: Job, metadata: {name: a, generation: '2'}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "job" || v.Expected != nil || v.Request.GetJob().GetMetadata().GetGeneration() != 2 {
		t.Errorf("got name %q, expected %v, job %v", v.Name, v.Expected, v.Request.GetJob())
	}
}

// TestSetExpectedKeepsTheRest: saving a new expected block rewrites that
// block only; the rest of the file keeps every byte, comments included.
func TestSetExpectedKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.yaml")
	head := "# a comment that stays\nname: keep\ndescription: kept as written\nrequest:\n  now: '2026-01-02T03:04:05Z'\n  job: {metadata: {name: a}}\n"
	if err := os.WriteFile(path, []byte(head+"expected:\n  actions: []\nscope: syncJob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	resp := &pb.DecideJobResponse{RequeueAfter: nil, Actions: []*pb.Action{{Kind: &pb.Action_UpdateStatus{UpdateStatus: &pb.UpdateStatus{
		Status: &pb.JobStatus{Succeeded: 3, StartTime: timestamppb.New(v.Request.GetNow().AsTime())}}}}}}
	if err := v.SetExpected(resp); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), head+"expected:\n") || !strings.HasSuffix(string(b), "\nscope: syncJob\n") {
		t.Errorf("the rest of the file changed:\n%s", b)
	}
	again, err := LoadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(again.Expected, resp) {
		t.Errorf("read back %v, saved %v", again.Expected, resp)
	}
	// A new document round-trips too.
	fresh, err := NewJob(filepath.Join(dir, "fresh.yaml"), "fresh", "d", "controller", v.Request, resp)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Save(); err != nil {
		t.Fatal(err)
	}
	back, err := LoadJob(fresh.Path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scope != "controller" || back.Description != "d" || !proto.Equal(back.Request, v.Request) || !proto.Equal(back.Expected, resp) {
		t.Errorf("read back %+v", back)
	}
}
