package main

// Field-by-field comparison of two canonical responses, on their proto3 JSON
// form, so that paths read like the vector files: actions[1].updateStatus.status.ready.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// fieldDiff is one differing field: Left is upstream's value, Right the other side's.
type fieldDiff struct {
	Path        string
	Left, Right any // nil when absent
}

func toGeneric(r *pb.DecideJobResponse) any { return toGenericMsg(r) }

// toGenericMsg is a message's proto3 JSON form as maps and slices.
func toGenericMsg(m proto.Message) any {
	b, err := protojson.Marshal(m)
	if err != nil {
		panic(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(err)
	}
	return v
}

func diffResponses(left, right *pb.DecideJobResponse) []fieldDiff {
	var out []fieldDiff
	diffValues("", toGeneric(left), toGeneric(right), &out)
	return out
}

func diffValues(path string, l, r any, out *[]fieldDiff) {
	switch lv := l.(type) {
	case map[string]any:
		rv, ok := r.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range lv {
			keys[k] = true
		}
		for k := range rv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
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
		n := max(len(lv), len(rv))
		for i := 0; i < n; i++ {
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
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func formatValue(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// formatDiff prints one line per differing field.
func formatDiff(d []fieldDiff, left, right string) string {
	var b strings.Builder
	w := max(len(left), len(right)) + 1
	for _, f := range d {
		fmt.Fprintf(&b, "  %s\n      %-*s %s\n      %-*s %s\n", f.Path, w, left+":", formatValue(f.Left), w, right+":", formatValue(f.Right))
	}
	return b.String()
}
