package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// runFile is where one run is saved: <dir>/<workload>-<controller>-<limits>.json.
func runFile(dir string, w *Workload, controller string, lim Limits) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.json", w.Name, controller, lim.Name))
}

// saveRun writes one finished run, so that a full benchmark (hours) can be
// taken over several sittings and its report rebuilt from the saved runs.
func saveRun(dir string, w *Workload, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := runFile(dir, w, r.Controller, r.Limits)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadRun is the saved run of this workload, controller and limits, or nil
// when there is none or it measured a different workload or limits.
func loadRun(dir string, w *Workload, controller string, lim Limits) (*Result, error) {
	data, err := os.ReadFile(runFile(dir, w, controller, lim))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", runFile(dir, w, controller, lim), err)
	}
	if r.WorkloadSum != w.sum() || r.Limits != lim || r.Controller != controller {
		return nil, nil
	}
	return &r, nil
}
