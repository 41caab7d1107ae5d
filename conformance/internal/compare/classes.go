package compare

// Mismatch classes: a run's mismatches grouped by the shape of their
// difference, printed at the end with the first scenario of each, so that a
// CI log reads as a list of distinct problems rather than a wall of diffs.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"job-decider.dev/conformance/internal/canon"
)

// classTally groups mismatches by the shape of their difference.
type classTally struct {
	order   []string
	count   map[string]int
	example map[string]string
}

func (c *classTally) add(sig, example string) {
	if c.count == nil {
		c.count, c.example = map[string]int{}, map[string]string{}
	}
	if c.count[sig] == 0 {
		c.order = append(c.order, sig)
		c.example[sig] = example
	}
	c.count[sig]++
}

func (c *classTally) print() {
	if len(c.order) == 0 {
		return
	}
	sort.SliceStable(c.order, func(a, b int) bool { return c.count[c.order[a]] > c.count[c.order[b]] })
	fmt.Printf("mismatch classes (%d):\n", len(c.order))
	for _, sig := range c.order {
		fmt.Printf("  %5d  %s\n         first: %s\n", c.count[sig], sig, c.example[sig])
	}
}

var (
	quotedValue = regexp.MustCompile(`"[^"]*"`)
	listIndex   = regexp.MustCompile(`\[\d+\]`)
)

// mismatchClass is a difference's shape: the differing field paths with
// list indexes blanked, or an RPC error's message with values blanked.
func mismatchClass(diffs []canon.FieldDiff) string {
	if len(diffs) == 1 && diffs[0].Path == "(rpc)" {
		msg := fmt.Sprint(diffs[0].Right)
		msg = listIndex.ReplaceAllString(quotedValue.ReplaceAllString(msg, `"…"`), "[*]")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return "(rpc) " + msg
	}
	seen := map[string]bool{}
	var paths []string
	for _, d := range diffs {
		p := listIndex.ReplaceAllString(d.Path, "[*]")
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := strings.Join(paths, ", ")
	if len(out) > 300 {
		out = out[:300] + "…"
	}
	return out
}
