package main

import (
	"path/filepath"
	"testing"

	"job-decider.dev/conformance/internal/canon"
	"job-decider.dev/conformance/internal/upstream"
	"job-decider.dev/testkit/vectors"
)

// vectorsDir holds the language-neutral vectors, relative to this module.
const vectorsDir = "../tests/vectors"

// TestVectorsMatchUpstream runs upstream on every vector's request and checks
// the result is the vector's expected, so vectors and upstream cannot drift.
func TestVectorsMatchUpstream(t *testing.T) {
	files, err := vectors.Files([]string{vectorsDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors under %s", vectorsDir)
	}
	names := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			v, err := vectors.LoadJob(f)
			if err != nil {
				t.Fatal(err)
			}
			if prev, dup := names[v.Name]; dup {
				t.Errorf("vector name %q is used by %s and %s", v.Name, prev, f)
			}
			names[v.Name] = f
			if err := verifyVector(f); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRunIsDeterministic runs each vector several times: upstream's parallel
// goroutines must not leak into the canonical form.
func TestRunIsDeterministic(t *testing.T) {
	files, err := vectors.Files([]string{vectorsDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			again, _, err := upstream.CanonicalWith(v.Request, upstream.OptsFor(v.Scope))
			if err != nil {
				t.Fatal(err)
			}
			if d := canon.DiffResponses(first, again); len(d) > 0 {
				t.Fatalf("%s: run %d differs:\n%s", v.Name, i, canon.FormatDiff(d, "first", "again"))
			}
		}
	}
}
