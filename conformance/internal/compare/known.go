package compare

// known-differences.md: mismatches that do not fail a run, each with its
// reason. The file syntax and the matching are testkit/knowndiff's; what
// is this harness's own is that names and paths are patterns (`*` wildcards,
// so one entry covers every generated scenario of a kind) and that a
// scenario is matched by its name and by the shapes of its request
// (`shape:<what>`, see shapes in check.go).

import (
	"os"
	"path/filepath"
	"runtime"

	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/testkit/knowndiff"
)

// knownOptions are this harness's rules: patterns allowed.
var knownOptions = knowndiff.Options{Exact: false}

// DefaultKnownFile is known-differences.md in the working directory, or at
// the root of this module (two levels above this file).
func DefaultKnownFile() string {
	if _, err := os.Stat("known-differences.md"); err == nil {
		return "known-differences.md"
	}
	if _, self, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(self), "..", "..", "known-differences.md")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// LoadKnown reads the file; no file (path "") is an empty list.
func LoadKnown(path string) (*knowndiff.List, error) {
	if path == "" {
		return &knowndiff.List{}, nil
	}
	return knowndiff.Load(path, knownOptions)
}

// excuses reports whether entries cover every differing field of the
// scenario name, matched by its name or one of its request's shapes.
func excuses(known *knowndiff.List, name string, diffs []canon.FieldDiff, shapes ...string) bool {
	return known.Excuses(append([]string{name}, shapes...), diffs)
}
