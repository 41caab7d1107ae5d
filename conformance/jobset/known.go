package main

// known-differences.md: fields where a vector's expected plan deliberately
// differs from what upstream does. An entry is a list item whose first two
// code spans are a vector name and a field path, both exact, then the reason:
//
//	- `some-vector` `actions[1].updateStatus.status.restarts`: why
//
// A vector counts as a known difference only when every differing field has
// an entry; an entry that excuses nothing in a full run is itself an error,
// so the list cannot outlive the differences it explains.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

type knownEntry struct {
	name, path, reason string
	line               int
}

type knownDiffs struct {
	file    string
	entries []knownEntry
	used    map[int]bool // by line
}

var knownLine = regexp.MustCompile("^\\s*[-*]\\s+`([^`]+)`\\s+`([^`]+)`\\s*:?\\s*(.*)$")

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

func loadKnown(path string) (*knownDiffs, error) {
	k := &knownDiffs{file: path, used: map[int]bool{}}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	inFence := false
	seen := map[string]int{}
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := knownLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.ContainsAny(m[1]+m[2], "*?") {
			return nil, fmt.Errorf("%s:%d: a known difference names one vector and one field exactly (no wildcards)", path, n)
		}
		if strings.TrimSpace(m[3]) == "" {
			return nil, fmt.Errorf("%s:%d: a known difference needs a reason", path, n)
		}
		key := m[1] + "\x00" + m[2]
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s:%d: duplicates the entry on line %d", path, n, prev)
		}
		seen[key] = n
		k.entries = append(k.entries, knownEntry{name: m[1], path: m[2], reason: strings.TrimSpace(m[3]), line: n})
	}
	return k, sc.Err()
}

// split separates the differences with an entry from those without, and
// marks the entries used.
func (k *knownDiffs) split(name string, diffs []fieldDiff) (excused []knownEntry, unexcused []fieldDiff) {
	for _, d := range diffs {
		found := false
		for _, e := range k.entries {
			if e.name == name && e.path == d.Path {
				excused = append(excused, e)
				k.used[e.line] = true
				found = true
				break
			}
		}
		if !found {
			unexcused = append(unexcused, d)
		}
	}
	return excused, unexcused
}

// stale lists the entries for vectors that ran but that excused nothing.
func (k *knownDiffs) stale(ran map[string]bool) []knownEntry {
	var out []knownEntry
	for _, e := range k.entries {
		if ran[e.name] && !k.used[e.line] {
			out = append(out, e)
		}
	}
	return out
}
