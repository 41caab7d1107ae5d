package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// procUsage is one process's CPU time and peak resident memory.
type procUsage struct {
	CPUSeconds float64
	PeakRSS    int64 // bytes
}

// readProc reads utime+stime (/proc/<pid>/stat) and VmHWM (/proc/<pid>/status)
// of a live process.
func readProc(pid int) (procUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, err
	}
	// The command name may hold spaces: fields start after its ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state(0) ... utime(11) stime(12).
	if len(f) < 13 {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	// USER_HZ is 100 on Linux for every architecture Go supports here.
	u := procUsage{CPUSeconds: (ut + st) / 100}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return procUsage{}, fmt.Errorf("/proc/%d/status VmHWM: %v", pid, err)
			}
			u.PeakRSS = kb * 1024
		}
	}
	return u, nil
}

// histogram is a Prometheus histogram's cumulative buckets summed over every
// label set of one metric.
type histogram struct {
	les    []float64
	counts map[float64]float64
}

// parseHistogram reads metric's buckets from a /metrics text.
func parseHistogram(text, metric string) (*histogram, error) {
	h := &histogram{counts: map[float64]float64{}}
	prefix := metric + "_bucket{"
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.Index(line, `le="`)
		if i < 0 {
			continue
		}
		rest := line[i+4:]
		j := strings.IndexByte(rest, '"')
		if j < 0 {
			continue
		}
		le, err := strconv.ParseFloat(rest[:j], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad le %q", metric, rest[:j])
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad count in %q", metric, line)
		}
		if _, seen := h.counts[le]; !seen {
			h.les = append(h.les, le)
		}
		h.counts[le] += v
	}
	if len(h.les) == 0 {
		return nil, fmt.Errorf("metric %s not found", metric)
	}
	sort.Float64s(h.les)
	return h, nil
}

// quantile interpolates linearly inside the bucket that holds q, as
// Prometheus's histogram_quantile does.
func (h *histogram) quantile(q float64) float64 {
	total := h.counts[h.les[len(h.les)-1]]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, le := range h.les {
		c := h.counts[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return prevLE
			}
			if c == prevCount {
				return le
			}
			return prevLE + (le-prevLE)*(rank-prevCount)/(c-prevCount)
		}
		prevLE, prevCount = le, c
	}
	return prevLE
}

// count is the number of observations.
func (h *histogram) count() float64 { return h.counts[h.les[len(h.les)-1]] }

// auditEntry is the part of an audit event the benchmark reads.
type auditEntry struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// component names the client behind a user agent.
func component(ua string) string {
	switch {
	case strings.HasPrefix(ua, "kube-controller-manager"):
		return "kcm"
	case strings.HasPrefix(ua, "job-decider-shim"):
		return "shim"
	case strings.HasPrefix(ua, "kwok"):
		return "kwok"
	case strings.HasPrefix(ua, benchUserAgent):
		return "runner"
	}
	return "other"
}

// countRequests counts the API requests in an audit log by component, then
// "verb resource[/subresource]"; refused counts those answered with a code
// of 300 or more (a conflict, a throttle) by "verb resource code".
func countRequests(path string) (all, refused map[string]map[string]int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	all, refused = map[string]map[string]int{}, map[string]map[string]int{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e auditEntry
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			continue
		}
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		c := component(e.UserAgent)
		if all[c] == nil {
			all[c] = map[string]int{}
		}
		all[c][key]++
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 300 {
			if refused[c] == nil {
				refused[c] = map[string]int{}
			}
			refused[c][fmt.Sprintf("%s %d", key, e.ResponseStatus.Code)]++
		}
	}
	return all, refused, s.Err()
}

// isWrite reports whether a "verb resource" key is a write.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// cpuOf reads each named process's CPU seconds; a process that cannot be
// read (gone, or restarted by an outage) is left out.
func cpuOf(procs map[string]func() int) map[string]float64 {
	out := make(map[string]float64, len(procs))
	for name, pid := range procs {
		if u, err := readProc(pid()); err == nil {
			out[name] = u.CPUSeconds
		}
	}
	return out
}

// cpuSince is each process's CPU seconds between two readings; a process
// whose reading went down was restarted and counts from zero.
func cpuSince(before, after map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for name, a := range after {
		if b, ok := before[name]; ok && b <= a {
			out[name] = a - b
		} else {
			out[name] = a
		}
	}
	return out
}

// loadAverage is /proc/loadavg's 1-, 5- and 15-minute figures, or "".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
