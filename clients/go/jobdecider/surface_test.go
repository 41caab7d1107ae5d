package jobdecider_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 26, defect 7: the public module ships only what users need; the
// harnesses' packages (protodiff, knowndiff, vectors) live in testkit.
func TestTheModuleHoldsOnlyPublicPackages(t *testing.T) {
	public := []string{"apply", "examples/quickstart", "jobdecider", "jobdecider/v1", "kubejson", "request"}
	module := ".." // clients/go
	var got []string
	err := filepath.WalkDir(module, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(module, path)
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own is not in this one
			}
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				got = append(got, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 4 {
		t.Fatalf("found only %v: the walk is wrong", got)
	}
	for _, pkg := range got {
		if !slices.Contains(public, pkg) {
			t.Errorf("package %s is in the public module; harness-only code goes to testkit", pkg)
		}
	}
}
