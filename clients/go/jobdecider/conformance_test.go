package jobdecider_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"job-decider.dev/clients/go/jobdecider"
	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// conformanceCase is one line of conformance/clients/cases.jsonl (its README says what
// each key holds and how a client compares).
type conformanceCase struct {
	Name     string          `json:"name"`
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Error    *caseError      `json:"error"`
}

// caseError is an expected failure: code, ErrorInfo reason, each violation's field and reason.
type caseError struct {
	Code       string          `json:"code"`
	Reason     string          `json:"reason"`
	Violations []caseViolation `json:"violations"`
}

type caseViolation struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// TestConformanceSuite runs every case of the language-neutral suite through the live
// server with NewClient.
func TestConformanceSuite(t *testing.T) {
	client, err := jobdecider.NewClient(liveServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	file, err := os.Open(filepath.Join("..", "..", "..", "conformance", "clients", "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	lines := bufio.NewScanner(file)
	lines.Buffer(nil, 64<<20)
	methods := map[string]int{}
	for lines.Scan() {
		var c conformanceCase
		if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		methods[c.Method]++
		if msg := runCase(client, c); msg != "" {
			t.Errorf("%s: %s", c.Name, msg)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"DecideJob", "DecideJobSet", "ValidateJob"} {
		if methods[m] == 0 {
			t.Errorf("no %s case in the suite: %v", m, methods)
		}
	}
}

// runCase calls the case's method; "" when the answer is the expected one.
func runCase(client *jobdecider.Client, c conformanceCase) string {
	ctx := context.Background()
	var req, want proto.Message
	switch c.Method {
	case "DecideJob":
		req, want = &pb.DecideJobRequest{}, &pb.DecideJobResponse{}
	case "DecideJobSet":
		req, want = &pb.DecideJobSetRequest{}, &pb.DecideJobSetResponse{}
	case "ValidateJob":
		req, want = &pb.ValidateJobRequest{}, &pb.ValidateJobResponse{}
	default:
		return "unknown method " + c.Method
	}
	if err := protojson.Unmarshal(c.Request, req); err != nil {
		return "request: " + err.Error()
	}
	var got proto.Message
	var err error
	switch r := req.(type) {
	case *pb.DecideJobRequest:
		var resp *pb.DecideJobResponse
		resp, err = client.DecideJob(ctx, r)
		sortUncounted(resp)
		got = resp
	case *pb.DecideJobSetRequest:
		got, err = client.DecideJobSet(ctx, r)
	case *pb.ValidateJobRequest:
		got, err = client.ValidateJob(ctx, r)
	}
	if c.Error != nil {
		return compareError(err, c.Error)
	}
	if err != nil {
		return "failed: " + err.Error()
	}
	if err := protojson.Unmarshal(c.Response, want); err != nil {
		return "response: " + err.Error()
	}
	if !proto.Equal(got, want) {
		return "answer differs:\n  want " + protojson.Format(want) + "\n  got  " + protojson.Format(got)
	}
	return ""
}

// sortUncounted sorts each status write's uncounted UIDs: the suite compares them as sets.
func sortUncounted(resp *pb.DecideJobResponse) {
	for _, action := range resp.GetActions() {
		if u := action.GetUpdateStatus().GetStatus().GetUncountedTerminatedPods(); u != nil {
			slices.Sort(u.Succeeded)
			slices.Sort(u.Failed)
		}
	}
}

func compareError(err error, want *caseError) string {
	if err == nil {
		return "succeeded, want " + want.Code
	}
	st, _ := status.FromError(err)
	var got caseError
	// gRPC's code names as the suite writes them: INVALID_ARGUMENT, UNAVAILABLE, ...
	got.Code = codeName(st.Code().String())
	if info := jobdecider.ErrorInfo(err); info != nil {
		got.Reason = info.GetReason()
	}
	for _, v := range jobdecider.FieldViolations(err) {
		got.Violations = append(got.Violations, caseViolation{Field: v.GetField(), Reason: v.GetReason()})
	}
	if got.Code != want.Code || got.Reason != want.Reason || !slices.Equal(got.Violations, want.Violations) {
		return "error differs: want " + jsonOf(want) + ", got " + jsonOf(got) + " (" + err.Error() + ")"
	}
	return ""
}

// codeName turns grpc-go's CamelCase code name into gRPC's own (InvalidArgument → INVALID_ARGUMENT).
func codeName(camel string) string {
	var out []rune
	for i, r := range camel {
		if i > 0 && r >= 'A' && r <= 'Z' {
			out = append(out, '_')
		}
		if r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		out = append(out, r)
	}
	return string(out)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
