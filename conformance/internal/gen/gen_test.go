package gen

import (
	"testing"

	"job-decider.dev/conformance/internal/upstream"
)

// TestRandomScenariosRun checks the generator makes valid snapshots that
// upstream runs without error and whose created pods the contract can express.
func TestRandomScenariosRun(t *testing.T) {
	for i := 0; i < 300; i++ {
		req, err := Request(12345, i, -1)
		if err != nil {
			t.Fatal(err)
		}
		_, run, err := upstream.Canonical(req)
		if err != nil {
			t.Fatalf("%s: %v", ScenarioName(12345, i), err)
		}
		if run.SyncErr != nil {
			t.Fatalf("%s: syncJob: %v", ScenarioName(12345, i), run.SyncErr)
		}
	}
}
