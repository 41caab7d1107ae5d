package main

// known-differences.md: fields where a vector's expected plan deliberately
// differs from what upstream does. The file syntax is testkit/knowndiff's;
// this harness reads it strictly: each entry names one vector and one field
// exactly (no wildcards), and an entry that excuses nothing in a run that
// included its vector is itself a failure, so the list cannot outlive the
// differences it explains.

import (
	"os"
	"path/filepath"
	"runtime"

	"job-decider.dev/testkit/knowndiff"
)

// knownOptions are this harness's rules: one vector, one field, exactly.
var knownOptions = knowndiff.Options{Exact: true}

// moduleDir is this module's source directory, for default paths when run
// from elsewhere (go test runs in it anyway).
func moduleDir() string {
	if _, self, _, ok := runtime.Caller(0); ok {
		return filepath.Dir(self)
	}
	return "."
}

func defaultKnownFile() string {
	if _, err := os.Stat("known-differences.md"); err == nil {
		return "known-differences.md"
	}
	return filepath.Join(moduleDir(), "known-differences.md")
}

func loadKnown(path string) (*knowndiff.List, error) {
	return knowndiff.Load(path, knownOptions)
}
