package protodiff

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestValuesNamesEachDifferingPath(t *testing.T) {
	l := map[string]any{"a": map[string]any{"b": 1.0, "c": []any{1.0, 2.0}}, "gone": "x"}
	r := map[string]any{"a": map[string]any{"b": 2.0, "c": []any{1.0}}, "new": true}
	got := Values("", l, r)
	want := []string{"a.b", "a.c[1]", "gone", "new"}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want paths %v", got, want)
	}
	for i, f := range got {
		if f.Path != want[i] {
			t.Errorf("diff %d at %q, want %q", i, f.Path, want[i])
		}
	}
	if got[1].Right != nil || got[2].Right != nil || got[3].Left != nil {
		t.Errorf("absent sides must be nil: %+v", got)
	}
	if d := Values("x", l, l); len(d) != 0 {
		t.Errorf("a value differs from itself: %+v", d)
	}
	if d := Values("x", map[string]any{}, []any{}); len(d) != 1 || d[0].Path != "x" {
		t.Errorf("a map against a list differs as a whole: %+v", d)
	}
}

func TestMessagesAndFormat(t *testing.T) {
	a, _ := structpb.NewStruct(map[string]any{"status": map[string]any{"ready": 1}})
	b, _ := structpb.NewStruct(map[string]any{"status": map[string]any{"ready": 2}})
	d, err := Messages(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].Path != "status.ready" {
		t.Fatalf("got %+v", d)
	}
	out := Format(d, "  ", "upstream", "ours")
	for _, s := range []string{"  status.ready\n", "upstream: 1\n", "ours:     2\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("format %q lacks %q", out, s)
		}
	}
	if FormatValue(nil) != "(absent)" || !strings.HasSuffix(FormatValue(strings.Repeat("x", 500)), "...") {
		t.Error("FormatValue: absent or long values")
	}
}
