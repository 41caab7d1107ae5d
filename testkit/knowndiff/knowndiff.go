// Package knowndiff reads a known-differences file: the mismatches a
// conformance harness does not fail on, each with its reason. Both harnesses
// (the Job one and the JobSet one) share it, so the file syntax is one thing.
//
// An entry is a Markdown list item whose first two code spans are a name
// pattern and a field-path pattern, followed by the reason:
//
//   - `some-vector-*` `actions[*].updateStatus.status.ready`: why we differ
//
// Lines inside ``` fences are examples, not entries. Names are a scenario's
// or vector's name, or whatever else a caller matches against (the Job harness
// also passes shapes, `shape:<what>`). With wildcards, `*` matches any run
// of characters and nothing else is special; in exact mode both spans are
// literal and an entry holding `*` or `?` is rejected, so that a strict list
// cannot excuse more than it names.
package knowndiff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"job-decider.dev/testkit/protodiff"
)

// Entry is one known difference, with the line it is on for messages.
type Entry struct {
	Name, Path, Reason string
	Line               int
}

// Options are the caller's choices about how strict a list is.
type Options struct {
	// Exact makes names and paths literal and rejects entries with wildcards.
	Exact bool
}

// The kinds of bad entry; a *ParseError wraps one of them.
var (
	ErrNoReason  = errors.New("a known difference needs a reason")
	ErrWildcard  = errors.New("this list takes exact names and field paths, no wildcards (* or ?)")
	ErrDuplicate = errors.New("duplicate known difference")
)

// ParseError is a bad entry, at its file and line.
type ParseError struct {
	File string
	Line int
	// Err is ErrNoReason, ErrWildcard or ErrDuplicate.
	Err error
	// Previous is the line of the first copy, for ErrDuplicate.
	Previous int
}

// Error reads "file:line: problem", as compilers do, so editors can jump to it.
func (e *ParseError) Error() string {
	msg := e.Err.Error()
	if e.Previous > 0 {
		msg = fmt.Sprintf("%s: duplicates the entry on line %d", msg, e.Previous)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, msg)
}

// Unwrap lets errors.Is tell the kinds apart.
func (e *ParseError) Unwrap() error { return e.Err }

// List is a parsed file. The zero value is an empty wildcard list; a nil
// *List excuses nothing. Its methods are safe for concurrent use, since the
// harnesses check scenarios from several workers against one list.
type List struct {
	opts    Options
	entries []Entry
	mu      sync.Mutex
	used    []bool // by index into entries
}

// entryLine is a list item (- or *) opening with two code spans; the colon
// before the reason is optional.
var entryLine = regexp.MustCompile("^\\s*[-*]\\s+`([^`]+)`\\s+`([^`]+)`\\s*:?\\s*(.*)$")

// Load reads the file at path.
func Load(path string, opts Options) (*List, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path, opts)
}

// Parse reads a known-differences file from r; file names it in errors.
func Parse(r io.Reader, file string, opts Options) (*List, error) {
	l := &List{opts: opts}
	sc := bufio.NewScanner(r)
	// Reasons are prose on one line and can be long.
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	seen := map[[2]string]int{}
	n, inFence := 0, false
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
		m := entryLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, path, reason := m[1], m[2], strings.TrimSpace(m[3])
		if opts.Exact && strings.ContainsAny(name+path, "*?") {
			return nil, &ParseError{File: file, Line: n, Err: ErrWildcard}
		}
		if reason == "" {
			return nil, &ParseError{File: file, Line: n, Err: ErrNoReason}
		}
		key := [2]string{name, path}
		if prev, dup := seen[key]; dup {
			return nil, &ParseError{File: file, Line: n, Err: ErrDuplicate, Previous: prev}
		}
		seen[key] = n
		l.entries = append(l.entries, Entry{Name: name, Path: path, Reason: reason, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	l.used = make([]bool, len(l.entries))
	return l, nil
}

// Entries returns the entries in file order.
func (l *List) Entries() []Entry {
	if l == nil {
		return nil
	}
	return append([]Entry(nil), l.entries...)
}

// match reports whether pattern matches s under the list's rules.
func (l *List) match(pattern, s string) bool {
	if l.opts.Exact {
		return pattern == s
	}
	return Wildcard(pattern, s)
}

// matchesAny reports whether pattern matches one of names.
func (l *List) matchesAny(pattern string, names []string) bool {
	for _, n := range names {
		if l.match(pattern, n) {
			return true
		}
	}
	return false
}

// Lookup finds the first entry whose name pattern matches one of names and
// whose path pattern matches path, and marks it used.
func (l *List) Lookup(names []string, path string) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	for i, e := range l.entries {
		if l.matchesAny(e.Name, names) && l.match(e.Path, path) {
			l.mu.Lock()
			if l.used == nil {
				l.used = make([]bool, len(l.entries))
			}
			l.used[i] = true
			l.mu.Unlock()
			return e, true
		}
	}
	return Entry{}, false
}

// Split separates the differences an entry covers from the others, giving
// the covering entry of each covered one; entries it uses count as used.
func (l *List) Split(names []string, diffs []protodiff.Field) (excused []Entry, unexcused []protodiff.Field) {
	for _, d := range diffs {
		if e, ok := l.Lookup(names, d.Path); ok {
			excused = append(excused, e)
		} else {
			unexcused = append(unexcused, d)
		}
	}
	return excused, unexcused
}

// Excuses reports whether there are differences and entries cover them all.
func (l *List) Excuses(names []string, diffs []protodiff.Field) bool {
	if len(diffs) == 0 {
		return false
	}
	_, unexcused := l.Split(names, diffs)
	return len(unexcused) == 0
}

// Stale lists, in file order, the entries whose name pattern matches one of
// ran but that have excused nothing so far: after a full run they explain a
// difference that no longer exists. Entries for names that did not run are
// left out, so that running a subset does not call the rest stale.
func (l *List) Stale(ran []string) []Entry {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	for i, e := range l.entries {
		if (l.used == nil || !l.used[i]) && l.matchesAny(e.Name, ran) {
			out = append(out, e)
		}
	}
	return out
}

// Wildcard matches s against pattern, where `*` matches any run of
// characters (also none) and every other character only itself.
func Wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	// The middle parts, in order and without overlap, in what lies between.
	s = s[len(first) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}
