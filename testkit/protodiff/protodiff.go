// Package protodiff compares contract messages field by field on their proto3
// JSON form, so that each difference is named by the path the vector files
// use (actions[1].updateStatus.status.ready). The conformance harnesses and
// the shim's tests share it.
package protodiff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Field is one differing field; a nil side is absent.
type Field struct {
	Path        string
	Left, Right any
}

// Generic is a message's proto3 JSON form as maps, slices and scalars.
func Generic(m proto.Message) (any, error) {
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

// Messages lists the fields where two messages differ, in path order.
func Messages(left, right proto.Message) ([]Field, error) {
	l, err := Generic(left)
	if err != nil {
		return nil, err
	}
	r, err := Generic(right)
	if err != nil {
		return nil, err
	}
	return Values("", l, r), nil
}

// Values lists the fields where two generic values differ, below path.
// Maps are compared key by key and lists index by index; anything else (and
// a map or list against another kind) as a whole.
func Values(path string, l, r any) []Field {
	var out []Field
	values(path, l, r, &out)
	return out
}

func values(path string, l, r any, out *[]Field) {
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
			if _, both := lv[k]; !both {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			values(p, lv[k], rv[k], out)
		}
		return
	case []any:
		rv, ok := r.([]any)
		if !ok {
			break
		}
		for i := range max(len(lv), len(rv)) {
			var a, b any
			if i < len(lv) {
				a = lv[i]
			}
			if i < len(rv) {
				b = rv[i]
			}
			values(fmt.Sprintf("%s[%d]", path, i), a, b, out)
		}
		return
	}
	if !jsonEqual(l, r) {
		*out = append(*out, Field{Path: path, Left: l, Right: r})
	}
}

func jsonEqual(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

// FormatValue renders one side compactly: its JSON, cut at 400 bytes, or "(absent)".
func FormatValue(v any) string {
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

// Format prints a block per field: its path, then each side under its name.
func Format(fields []Field, indent, leftName, rightName string) string {
	var b strings.Builder
	w := max(len(leftName), len(rightName)) + 1
	for _, f := range fields {
		fmt.Fprintf(&b, "%s%s\n%s    %-*s %s\n%s    %-*s %s\n",
			indent, f.Path,
			indent, w, leftName+":", FormatValue(f.Left),
			indent, w, rightName+":", FormatValue(f.Right))
	}
	return b.String()
}
