package jobdecider_test

import (
	"os"
	"regexp"
	"testing"

	"job-decider.dev/clients/go/jobdecider"
)

// The newest CHANGELOG entry is the version the code says it is.
func TestVersionIsTheChangelogsNewest(t *testing.T) {
	text, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile(`(?m)^## v(\S+)`).FindSubmatch(text)
	if first == nil {
		t.Fatal("CHANGELOG.md has no `## vX.Y.Z` entry")
	}
	if got := string(first[1]); got != jobdecider.Version {
		t.Errorf("CHANGELOG.md's newest entry is v%s, jobdecider.Version is %s", got, jobdecider.Version)
	}
}
