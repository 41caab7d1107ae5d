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

// TestScenariosReachSuspendAndInPlaceRestartShapes checks the generator makes the
// shapes the KEP-5440 and KEP-5307/5532 vectors pin down, so random runs test them
// too: suspended Jobs with and without startTime, suspended again after a resume,
// and restartPolicy Never pods whose containers restarted in place (Running between
// restarts, or Failed in the end), some with AllContainersRestarting.
func TestScenariosReachSuspendAndInPlaceRestartShapes(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 3000; i++ {
		req, err := Request(777, i, -1)
		if err != nil {
			t.Fatal(err)
		}
		j := req.Job
		if j.Spec.GetSuspend() {
			if j.Status.GetStartTime() != nil {
				seen["suspended with startTime"]++
			} else {
				seen["suspended without startTime"]++
			}
			for _, c := range j.Status.GetConditions() {
				if c.Type == "Suspended" && c.Status == "False" {
					seen["suspended again after a resume"]++
				}
			}
		}
		if j.Spec.Template.Spec.RestartPolicy != "Never" {
			continue
		}
		for _, p := range req.Pods {
			for _, cs := range p.Status.GetContainerStatuses() {
				if cs.RestartCount == 0 {
					continue
				}
				switch {
				case p.Status.Phase == "Running" && cs.State.GetWaiting() != nil:
					seen["Never pod waiting between in-place restarts"]++
				case p.Status.Phase == "Failed":
					seen["Never pod failed after in-place restarts"]++
				}
			}
			for _, c := range p.Status.GetConditions() {
				if c.Type == "AllContainersRestarting" {
					seen["AllContainersRestarting"]++
				}
			}
		}
	}
	for _, shape := range []string{"suspended with startTime", "suspended without startTime", "suspended again after a resume",
		"Never pod waiting between in-place restarts", "Never pod failed after in-place restarts", "AllContainersRestarting"} {
		if seen[shape] == 0 {
			t.Errorf("no scenario of 3000 has the shape %q (seen: %v)", shape, seen)
		}
	}
}
