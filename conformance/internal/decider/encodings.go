package decider

// Both pod encodings through the real server: every request the harness
// sends with Kubernetes-shaped pods goes again with its pods in the lean
// encoding (clients/go/request, trimmed as the shim sends them), and the two
// answers must be the same. With the full answer checked against upstream,
// the lean one then matches upstream too, or differs from it exactly as a
// listed known difference allows. A request whose pods have no lean form
// (a phase or condition status the Kubernetes API does not define) is sent
// full only, and counted.

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/status"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
	"job-decider.dev/conformance/internal/canon"
)

// leanPrefix marks a difference between the two encodings' answers.
const leanPrefix = "(lean encoding) "

// CheckLean sends req with lean pods and lists where the answer differs from
// the full request's (full, fullErr: the raw response and the call's error).
// notLean is why req has no lean form; nothing is sent then.
func (d *Conn) CheckLean(req *pb.DecideJobRequest, full *pb.DecideJobResponse, fullErr error) (diffs []canon.FieldDiff, notLean string) {
	lean, err := request.Lean(req)
	if err != nil {
		return nil, err.Error()
	}
	resp, _, leanErr := d.Decide(lean)
	switch {
	case fullErr != nil && leanErr != nil:
		// Both refused: the same code (the messages name the fields as each
		// encoding spells them).
		if fc, lc := status.Code(fullErr), status.Code(leanErr); fc != lc {
			diffs = []canon.FieldDiff{{Path: leanPrefix + "(rpc code)", Left: fc.String(), Right: lc.String()}}
		}
	case fullErr != nil:
		diffs = []canon.FieldDiff{{Path: leanPrefix + "(rpc)", Left: "error: " + fullErr.Error(), Right: "a plan"}}
	case leanErr != nil:
		diffs = []canon.FieldDiff{{Path: leanPrefix + "(rpc)", Left: "a plan", Right: "error: " + leanErr.Error()}}
	default:
		job := req.GetJob()
		diffs = canon.DiffResponses(canon.Canonicalize(full, job), canon.Canonicalize(resp, job))
		for i := range diffs {
			diffs[i].Path = leanPrefix + diffs[i].Path
		}
	}
	return diffs, ""
}

// EncodingTally counts how requests went through the two encodings.
type EncodingTally struct {
	both     int            // sent full and lean
	fullOnly int            // no lean form: sent full only
	reasons  map[string]int // why, by the offending field
	examples []string       // the first few requests sent full only
}

// Add counts one request; notLean is CheckLean's.
func (e *EncodingTally) Add(name, notLean string) {
	if notLean == "" {
		e.both++
		return
	}
	e.fullOnly++
	if e.reasons == nil {
		e.reasons = map[string]int{}
	}
	e.reasons[notLeanField(notLean)]++
	if len(e.examples) < 3 {
		e.examples = append(e.examples, name)
	}
}

// Merge adds another tally's counts.
func (e *EncodingTally) Merge(o *EncodingTally) {
	e.both += o.both
	e.fullOnly += o.fullOnly
	for k, v := range o.reasons {
		if e.reasons == nil {
			e.reasons = map[string]int{}
		}
		e.reasons[k] += v
	}
	for _, x := range o.examples {
		if len(e.examples) < 3 {
			e.examples = append(e.examples, x)
		}
	}
}

// notLeanField is the field part of a NotLeanError's text, e.g. "status.phase".
func notLeanField(msg string) string {
	f := strings.Fields(msg)
	if len(f) == 0 {
		return msg
	}
	field := f[0]
	if i := strings.Index(field, "]."); strings.HasPrefix(field, "pods[") && i >= 0 {
		field = field[i+2:]
	}
	return field
}

// String is the one line the commands print.
func (e *EncodingTally) String() string {
	s := fmt.Sprintf("encodings: %d requests sent both full and lean (answers compared), %d full only (no lean form)", e.both, e.fullOnly)
	if e.fullOnly > 0 {
		var keys []string
		for k := range e.reasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, e.reasons[k]))
		}
		s += fmt.Sprintf(": %s; e.g. %s", strings.Join(parts, ", "), strings.Join(e.examples, ", "))
	}
	return s
}
