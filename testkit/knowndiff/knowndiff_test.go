package knowndiff

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"job-decider.dev/testkit/protodiff"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		text    string
		opts    Options
		want    []Entry
		wantErr error
		errLine int
	}{
		"entry with colon": {
			text: "- `v` `actions[0].status`: why\n",
			want: []Entry{{Name: "v", Path: "actions[0].status", Reason: "why", Line: 1}},
		},
		"star bullet, no colon, indented, reason trimmed": {
			text: "# title\n\n  * `v` `actions`   because  \n",
			want: []Entry{{Name: "v", Path: "actions", Reason: "because", Line: 3}},
		},
		"prose and other list items are not entries": {
			text: "Format: `name` `path`: reason\n- just a bullet\n- `one span only`: x\n",
		},
		"fenced example skipped, line numbers kept": {
			text: "```\n- `example` `path`: not an entry\n```\n- `v` `p`: real\n",
			want: []Entry{{Name: "v", Path: "p", Reason: "real", Line: 4}},
		},
		"unclosed fence hides the rest": {
			text: "```\n- `v` `p`: inside\n",
		},
		"missing reason": {
			text:    "- `v` `p`: fine\n- `w` `p`:\n",
			wantErr: ErrNoReason,
			errLine: 2,
		},
		"missing reason, no colon": {
			text:    "- `v` `p`   \n",
			wantErr: ErrNoReason,
			errLine: 1,
		},
		"missing reason inside a fence is an example": {
			text: "```\n- `v` `p`:\n```\n",
		},
		"wildcards allowed by default": {
			text: "- `random-*` `actions[*].status`: why\n- `shape:x` `a?b`: literal question mark\n",
			want: []Entry{
				{Name: "random-*", Path: "actions[*].status", Reason: "why", Line: 1},
				{Name: "shape:x", Path: "a?b", Reason: "literal question mark", Line: 2},
			},
		},
		"exact mode rejects a wildcard name": {
			text:    "- `random-*` `actions`: why\n",
			opts:    Options{Exact: true},
			wantErr: ErrWildcard,
			errLine: 1,
		},
		"exact mode rejects a wildcard path": {
			text:    "- `v` `actions`: ok\n- `v` `actions[?]`: why\n",
			opts:    Options{Exact: true},
			wantErr: ErrWildcard,
			errLine: 2,
		},
		"exact mode accepts literal entries": {
			text: "- `v` `actions[1].status`: why\n",
			opts: Options{Exact: true},
			want: []Entry{{Name: "v", Path: "actions[1].status", Reason: "why", Line: 1}},
		},
		"duplicate": {
			text:    "- `v` `p`: one\n\n- `v` `p`: two\n",
			wantErr: ErrDuplicate,
			errLine: 3,
		},
		"duplicate in exact mode": {
			text:    "- `v` `p`: one\n- `v` `p`: two\n",
			opts:    Options{Exact: true},
			wantErr: ErrDuplicate,
			errLine: 2,
		},
		"same name, other path is no duplicate": {
			text: "- `v` `p`: one\n- `v` `q`: two\n",
			want: []Entry{{Name: "v", Path: "p", Reason: "one", Line: 1}, {Name: "v", Path: "q", Reason: "two", Line: 2}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := Parse(strings.NewReader(tc.text), "known.md", tc.opts)
			if tc.wantErr != nil {
				var pe *ParseError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &pe) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				if pe.Line != tc.errLine || !strings.HasPrefix(err.Error(), "known.md:") {
					t.Errorf("error %q at line %d, want line %d", err, pe.Line, tc.errLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Entries(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDuplicateNamesTheFirstLine(t *testing.T) {
	_, err := Parse(strings.NewReader("- `v` `p`: one\n- `w` `p`: x\n- `v` `p`: two\n"), "k.md", Options{})
	if err == nil || !strings.Contains(err.Error(), "k.md:3:") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v, want a duplicate at k.md:3 naming line 1", err)
	}
}

func TestWildcard(t *testing.T) {
	cases := map[string]struct {
		pattern, s string
		want       bool
	}{
		"literal equal":                {"actions", "actions", true},
		"literal differs":              {"actions", "actions[0]", false},
		"star alone matches empty":     {"*", "", true},
		"star alone matches anything":  {"*", "x.y[1]", true},
		"prefix":                       {"random-*", "random-7-12", true},
		"prefix wrong":                 {"random-*", "lifecycle-7", false},
		"suffix":                       {"*.ready", "actions[1].updateStatus.status.ready", true},
		"index":                        {"actions[*].updateStatus.status.ready", "actions[12].updateStatus.status.ready", true},
		"index, other field":           {"actions[*].updateStatus.status.ready", "actions[1].updateStatus.status.active", false},
		"two stars":                    {"a*b*c", "axxbyyc", true},
		"two stars, order matters":     {"a*b*c", "acb", false},
		"prefix and suffix overlap":    {"ab*ba", "aba", false},
		"middle may not reuse suffix":  {"*x*x", "x", false},
		"middle then suffix":           {"*x*x", "xx", true},
		"question mark is literal":     {"a?c", "abc", false},
		"question mark matches itself": {"a?c", "a?c", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Wildcard(tc.pattern, tc.s); got != tc.want {
				t.Errorf("Wildcard(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
			}
		})
	}
}

const sample = "- `pod-failure-*` `actions[*].status.ready`: a\n" +
	"- `shape:finished-managed-elsewhere` `actions`: b\n" +
	"- `exact-vector` `actions[1].status.failed`: c\n"

func fields(paths ...string) []protodiff.Field {
	out := make([]protodiff.Field, len(paths))
	for i, p := range paths {
		out[i] = protodiff.Field{Path: p, Left: 1, Right: 2}
	}
	return out
}

func TestSplitAndExcuses(t *testing.T) {
	cases := map[string]struct {
		opts          Options
		text          string // sample when empty
		names         []string
		paths         []string
		wantExcused   []int // entry lines
		wantUnexcused []string
	}{
		"wildcard name and path": {
			names: []string{"pod-failure-ignore"}, paths: []string{"actions[3].status.ready"},
			wantExcused: []int{1},
		},
		"one field uncovered": {
			names: []string{"pod-failure-ignore"}, paths: []string{"actions[0].status.ready", "actions[0].status.active"},
			wantExcused: []int{1}, wantUnexcused: []string{"actions[0].status.active"},
		},
		"by shape, not by name": {
			names: []string{"random-1-2", "shape:finished-managed-elsewhere"}, paths: []string{"actions"},
			wantExcused: []int{2},
		},
		"shape not seen": {
			names: []string{"random-1-2"}, paths: []string{"actions"},
			wantUnexcused: []string{"actions"},
		},
		"another name": {
			names: []string{"other"}, paths: []string{"actions[1].status.failed"},
			wantUnexcused: []string{"actions[1].status.failed"},
		},
		"exact entry": {
			names: []string{"exact-vector"}, paths: []string{"actions[1].status.failed"},
			wantExcused: []int{3},
		},
		"exact mode matches literally": {
			opts:  Options{Exact: true},
			text:  "\n\n- `exact-vector` `actions[1].status.failed`: c\n",
			names: []string{"exact-vector", "pod-failure-x"}, paths: []string{"actions[1].status.failed", "actions[0].status.ready"},
			wantExcused: []int{3}, wantUnexcused: []string{"actions[0].status.ready"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			text := sample
			if tc.text != "" {
				text = tc.text
			}
			l, err := Parse(strings.NewReader(text), "known.md", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			excused, unexcused := l.Split(tc.names, fields(tc.paths...))
			var lines []int
			for _, e := range excused {
				lines = append(lines, e.Line)
			}
			var paths []string
			for _, d := range unexcused {
				paths = append(paths, d.Path)
			}
			if !reflect.DeepEqual(lines, tc.wantExcused) || !reflect.DeepEqual(paths, tc.wantUnexcused) {
				t.Errorf("excused lines %v, unexcused %v; want %v, %v", lines, paths, tc.wantExcused, tc.wantUnexcused)
			}
			if got, want := l.Excuses(tc.names, fields(tc.paths...)), len(tc.wantUnexcused) == 0; got != want {
				t.Errorf("Excuses = %v, want %v", got, want)
			}
		})
	}
}

func TestExcusesNeedsADifference(t *testing.T) {
	l, err := Parse(strings.NewReader(sample), "known.md", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Excuses([]string{"pod-failure-x"}, nil) {
		t.Error("no differences counted as excused")
	}
	var none *List
	if none.Excuses([]string{"x"}, fields("actions")) || len(none.Stale([]string{"x"})) != 0 {
		t.Error("a nil list excused something or has stale entries")
	}
	if (&List{}).Excuses([]string{"x"}, fields("actions")) {
		t.Error("an empty list excused something")
	}
}

func TestStale(t *testing.T) {
	text := "- `a` `p`: used\n- `a` `q`: unused\n- `b` `p`: vector did not run\n"
	cases := map[string]struct {
		opts  Options
		text  string
		use   [][2]string // name, path looked up
		ran   []string
		stale []int
	}{
		"exact: unused entry of a vector that ran": {
			opts: Options{Exact: true}, text: text,
			use: [][2]string{{"a", "p"}}, ran: []string{"a"}, stale: []int{2},
		},
		"exact: every vector ran": {
			opts: Options{Exact: true}, text: text,
			use: [][2]string{{"a", "p"}}, ran: []string{"a", "b"}, stale: []int{2, 3},
		},
		"exact: nothing ran": {
			opts: Options{Exact: true}, text: text,
			ran: nil, stale: nil,
		},
		"exact: all used": {
			opts: Options{Exact: true}, text: text,
			use: [][2]string{{"a", "p"}, {"a", "q"}, {"b", "p"}}, ran: []string{"a", "b"}, stale: nil,
		},
		"a miss uses nothing": {
			opts: Options{Exact: true}, text: text,
			use: [][2]string{{"a", "r"}, {"c", "p"}}, ran: []string{"a"}, stale: []int{1, 2},
		},
		"wildcards: a pattern is stale when a name it matches ran": {
			text: "- `random-*` `actions`: x\n- `shape:s` `actions`: y\n",
			use:  [][2]string{{"shape:s", "actions"}}, ran: []string{"random-1-1", "shape:s"}, stale: []int{1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := Parse(strings.NewReader(tc.text), "known.md", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range tc.use {
				l.Lookup([]string{u[0]}, u[1])
			}
			var lines []int
			for _, e := range l.Stale(tc.ran) {
				lines = append(lines, e.Line)
			}
			if !reflect.DeepEqual(lines, tc.stale) {
				t.Errorf("stale lines %v, want %v", lines, tc.stale)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known.md")
	if err := os.WriteFile(file, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Entries()); n != 3 {
		t.Errorf("loaded %d entries, want 3", n)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.md"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
	if err := os.WriteFile(file, []byte("- `v` `p`:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file, Options{}); err == nil || !strings.HasPrefix(err.Error(), file+":1:") {
		t.Errorf("error %v does not name %s:1", err, file)
	}
}
