package main

// known-differences.md: mismatches that do not fail a run, each with its reason.
//
// An entry is a list item whose first two code spans are a scenario-name
// pattern and a field-path pattern, followed by the reason:
//
//	- `pod-failure-policy-*` `actions[*].updateStatus.status.ready`: reason, upstream issue #NNNN
//
// `*` matches any run of characters (and nothing else is special). A
// mismatch is excused when every differing field is matched by an entry
// whose name pattern matches the scenario: its name, or one of the shapes
// the harness sees in its request (`shape:<what>`, see shapes in check.go),
// so that a difference of one kind of snapshot is listed once for every
// generated scenario of that kind.

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

type knownDiffs struct{ entries []knownEntry }

var knownLine = regexp.MustCompile("^\\s*[-*]\\s+`([^`]+)`\\s+`([^`]+)`\\s*:?\\s*(.*)$")

// defaultKnownFile is known-differences.md next to this module's sources.
func defaultKnownFile() string {
	if _, err := os.Stat("known-differences.md"); err == nil {
		return "known-differences.md"
	}
	if _, self, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(self), "known-differences.md")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func loadKnown(path string) (*knownDiffs, error) {
	k := &knownDiffs{}
	if path == "" {
		return k, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	inFence := false
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
		if strings.TrimSpace(m[3]) == "" {
			return nil, fmt.Errorf("%s:%d: a known difference needs a reason", path, n)
		}
		k.entries = append(k.entries, knownEntry{name: m[1], path: m[2], reason: m[3], line: n})
	}
	return k, sc.Err()
}

func (k *knownDiffs) excuses(name string, diffs []fieldDiff, shapes ...string) bool {
	if k == nil || len(k.entries) == 0 {
		return false
	}
	names := append([]string{name}, shapes...)
	matchesName := func(pattern string) bool {
		for _, n := range names {
			if wildcard(pattern, n) {
				return true
			}
		}
		return false
	}
	for _, d := range diffs {
		ok := false
		for _, e := range k.entries {
			if matchesName(e.name) && wildcard(e.path, d.Path) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// wildcard matches s against a pattern where only '*' is special.
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i := 1; i < len(parts)-1; i++ {
		j := strings.Index(s, parts[i])
		if j < 0 {
			return false
		}
		s = s[j+len(parts[i]):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
