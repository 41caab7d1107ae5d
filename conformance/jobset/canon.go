package main

// The canonical form both plans are compared in, and the field-by-field diff.
//
//   - The explanation is dropped: it is for people and upstream has none.
//   - Within a deleteJobs action, Jobs are sorted by name: upstream deletes
//     them in parallel (workqueue.ParallelizeUntil), so its order means nothing.
//   - jobsToCreate is sorted by name, for the same reason.
//   - Action order is kept: deletes, then the status write, then the events in
//     the order they were queued, which is the order upstream issues them.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

func canonicalise(r *pb.DecideJobSetResponse) {
	r.Explanation = nil
	for _, a := range r.GetActions() {
		if d := a.GetDeleteJobs(); d != nil {
			sort.SliceStable(d.Jobs, func(i, j int) bool { return d.Jobs[i].GetName() < d.Jobs[j].GetName() })
		}
	}
	sort.SliceStable(r.JobsToCreate, func(i, j int) bool { return r.JobsToCreate[i].GetName() < r.JobsToCreate[j].GetName() })
}

// canonicalCopy returns a canonical copy, leaving the original alone.
func canonicalCopy(r *pb.DecideJobSetResponse) *pb.DecideJobSetResponse {
	c := proto.Clone(r).(*pb.DecideJobSetResponse)
	canonicalise(c)
	return c
}

// fieldDiff is one differing field: Left is upstream's value, Right the vector's.
type fieldDiff struct {
	Path        string
	Left, Right any // nil when absent
}

// generic is a message's proto3 JSON form as maps and slices, so that paths
// read like the vector files: actions[1].updateStatus.status.restarts.
func generic(m proto.Message) (any, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func diffResponses(upstream, expected *pb.DecideJobSetResponse) ([]fieldDiff, error) {
	l, err := generic(upstream)
	if err != nil {
		return nil, err
	}
	r, err := generic(expected)
	if err != nil {
		return nil, err
	}
	var out []fieldDiff
	diffValues("", l, r, &out)
	return out, nil
}

func diffValues(path string, l, r any, out *[]fieldDiff) {
	switch lv := l.(type) {
	case map[string]any:
		rv, ok := r.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(lv)+len(rv))
		for k := range lv {
			keys = append(keys, k)
		}
		for k := range rv {
			if _, dup := lv[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValues(p, lv[k], rv[k], out)
		}
		return
	case []any:
		rv, ok := r.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(lv), len(rv)); i++ {
			var a, b any
			if i < len(lv) {
				a = lv[i]
			}
			if i < len(rv) {
				b = rv[i]
			}
			diffValues(fmt.Sprintf("%s[%d]", path, i), a, b, out)
		}
		return
	}
	if !jsonEqual(l, r) {
		*out = append(*out, fieldDiff{Path: path, Left: l, Right: r})
	}
}

func jsonEqual(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

func formatValue(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(b)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// formatDiffs prints one block per differing field, upstream's value first.
func formatDiffs(ds []fieldDiff, indent string) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s%s\n%s    upstream: %s\n%s    expected: %s\n", indent, d.Path, indent, formatValue(d.Left), indent, formatValue(d.Right))
	}
	return b.String()
}
