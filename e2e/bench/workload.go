package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Annotations the benchmark's pod templates carry; the KWOK stages
// (stages.yaml) read them.
const (
	// annoFail lists the attempts that fail, as ",<index>/<failures>/<ignored>=<exit code>,":
	// the pod's completion index and its failure-count and
	// ignored-failure-count annotations pick the attempt.
	annoFail = "bench.job-decider.dev/fail"
	// annoRunMillis and annoRunMaxMillis bound how long a pod runs
	// before it ends (KWOK picks uniformly in between).
	annoRunMillis    = "bench.job-decider.dev/run-ms"
	annoRunMaxMillis = "bench.job-decider.dev/run-max-ms"
	// nodeAnnotation marks the fake nodes KWOK plays.
	nodeAnnotation = "kwok.x-k8s.io/node"
	// maxPods bounds a workload: jobs × completions.
	maxPods = 200_000
)

// Workload is one checked-in workload file (workloads/*.yaml). Every Job of a
// workload has the same shape; which attempts fail, with which exit code, and
// each Job's run time come from Seed, so the (a) and (b) runs see the same
// pods fail the same way.
type Workload struct {
	// Name labels the workload in the report (W1 ...).
	Name string `json:"name"`
	// Description is one line for the report.
	Description string `json:"description"`
	// Seed makes the failures and run times reproducible.
	Seed uint64 `json:"seed"`
	// Jobs is how many Jobs are created.
	Jobs int `json:"jobs"`
	// Completions and Parallelism are each Job's.
	Completions int `json:"completions"`
	Parallelism int `json:"parallelism"`
	// Indexed selects completionMode Indexed.
	Indexed bool `json:"indexed"`
	// BackoffLimitPerIndex is set on Indexed Jobs when not nil.
	BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex,omitempty"`
	// BackoffLimit is spec.backoffLimit when not nil.
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// FailureRate is the share of attempts that fail (Indexed Jobs only:
	// an attempt is known by its index and failure counts).
	FailureRate float64 `json:"failureRate"`
	// ExitCodes are the failing attempts' exit codes, picked uniformly.
	ExitCodes []int32 `json:"exitCodes,omitempty"`
	// FailIndexExitCodes and IgnoreExitCodes make a podFailurePolicy
	// (FailIndex, Ignore; any other exit code counts) when either is set.
	FailIndexExitCodes []int32 `json:"failIndexExitCodes,omitempty"`
	IgnoreExitCodes    []int32 `json:"ignoreExitCodes,omitempty"`
	// RunMillisMin and RunMillisMax bound each Job's pod run time
	// (picked per Job from Seed); KWOK adds up to RunJitterMillis per pod.
	RunMillisMin    int `json:"runMillisMin"`
	RunMillisMax    int `json:"runMillisMax"`
	RunJitterMillis int `json:"runJitterMillis"`
	// Nodes is how many fake nodes the pods are spread over.
	Nodes int `json:"nodes"`
	// TimeoutSeconds bounds one run until every Job finished.
	TimeoutSeconds int `json:"timeoutSeconds"`
	// Namespaces spreads the Jobs round-robin over this many namespaces,
	// named from Seed (random hex suffixes: a shard is a range of the
	// namespace's FNV-1a hash, which sequential names fill unevenly);
	// 0 puts every Job in the one namespace "bench".
	Namespaces int `json:"namespaces,omitempty"`
}

// inputError is a bad workload file: the benchmark exits 2.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// LoadWorkload reads and checks a workload file. Unknown fields and
// impossible sizes are errors that name the field.
func LoadWorkload(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &inputError{fmt.Sprintf("workload %s: %v", path, err)}
	}
	var w Workload
	if err := yaml.UnmarshalStrict(data, &w); err != nil {
		return nil, &inputError{fmt.Sprintf("workload %s: %v", path, err)}
	}
	if err := w.check(); err != nil {
		return nil, &inputError{fmt.Sprintf("workload %s: %v", path, err)}
	}
	return &w, nil
}

func (w *Workload) check() error {
	between := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("field %q: must be between %d and %d, got %d", field, lo, hi, v)
		}
		return nil
	}
	if w.Name == "" || strings.ContainsAny(w.Name, " /") {
		return fmt.Errorf("field %q: a short name without spaces or slashes is required", "name")
	}
	for _, c := range []error{
		between("jobs", w.Jobs, 1, 100_000),
		between("completions", w.Completions, 1, 100_000),
		between("parallelism", w.Parallelism, 1, w.Completions),
		between("nodes", w.Nodes, 1, 1_000),
		between("runMillisMin", w.RunMillisMin, 0, 3_600_000),
		between("runMillisMax", w.RunMillisMax, w.RunMillisMin, 3_600_000),
		between("runJitterMillis", w.RunJitterMillis, 0, 3_600_000),
		between("timeoutSeconds", w.TimeoutSeconds, 1, 24*3600),
		between("namespaces", w.Namespaces, 0, 1_000),
	} {
		if c != nil {
			return c
		}
	}
	if w.Jobs*w.Completions > maxPods {
		return fmt.Errorf("fields \"jobs\" × \"completions\": at most %d pods, got %d", maxPods, w.Jobs*w.Completions)
	}
	if w.FailureRate < 0 || w.FailureRate > 0.5 {
		return fmt.Errorf("field %q: must be between 0 and 0.5, got %g", "failureRate", w.FailureRate)
	}
	if w.FailureRate > 0 && !w.Indexed {
		return fmt.Errorf("field %q: failures need \"indexed\": true (an attempt is known by its index)", "failureRate")
	}
	if w.FailureRate > 0 && len(w.ExitCodes) == 0 {
		return fmt.Errorf("field %q: required when failureRate > 0", "exitCodes")
	}
	for _, c := range w.ExitCodes {
		if c < 1 || c > 255 {
			return fmt.Errorf("field %q: exit codes are 1..255, got %d", "exitCodes", c)
		}
	}
	if w.BackoffLimitPerIndex != nil && !w.Indexed {
		return fmt.Errorf("field %q: only for indexed Jobs", "backoffLimitPerIndex")
	}
	if w.FailureRate > 0 && w.BackoffLimitPerIndex == nil {
		return fmt.Errorf("field %q: required when failureRate > 0 (the failure count is per index)", "backoffLimitPerIndex")
	}
	if w.BackoffLimitPerIndex != nil && (*w.BackoffLimitPerIndex < 0 || *w.BackoffLimitPerIndex > 10) {
		return fmt.Errorf("field %q: must be between 0 and 10, got %d", "backoffLimitPerIndex", *w.BackoffLimitPerIndex)
	}
	if (len(w.FailIndexExitCodes) > 0) && w.BackoffLimitPerIndex == nil {
		return fmt.Errorf("field %q: FailIndex needs backoffLimitPerIndex", "failIndexExitCodes")
	}
	return nil
}

// smaller returns a copy with at most jobs Jobs and completions pods each
// (for the smoke run); parallelism is kept within completions.
func (w *Workload) smaller(jobs, completions int) *Workload {
	s := *w
	s.Jobs = min(s.Jobs, jobs)
	s.Completions = min(s.Completions, completions)
	s.Parallelism = min(s.Parallelism, s.Completions)
	return &s
}

// jobSpec is one generated Job's varying part.
type jobSpec struct {
	name    string
	ns      string
	node    string
	runMS   int
	failing string // annoFail's value
	// attempts is how many pods the schedule expects (for the report).
	attempts int
	// want is the end state the schedule implies (the fault run checks
	// every Job against it).
	want expectation
}

// expectation is a Job's end state as its schedule implies it: what a
// controller that loses and duplicates nothing must report.
type expectation struct {
	succeeded, failed       int32
	completedIdx, failedIdx string
	failedJob               bool
}

// plan draws every Job's run time and failing attempts from the seed.
func (w *Workload) plan() []jobSpec {
	rng := rand.New(rand.NewPCG(w.Seed, 0x6a6f622d64656369))
	ignore := func(c int32) bool { return slices.Contains(w.IgnoreExitCodes, c) }
	failIndex := func(c int32) bool { return slices.Contains(w.FailIndexExitCodes, c) }
	specs := make([]jobSpec, w.Jobs)
	nss := w.namespaceNames()
	for j := range specs {
		s := jobSpec{
			name:  fmt.Sprintf("%s-%05d", strings.ToLower(w.Name), j),
			ns:    nss[j%len(nss)],
			node:  fmt.Sprintf("kwok-node-%d", j%w.Nodes),
			runMS: w.RunMillisMin + rng.IntN(w.RunMillisMax-w.RunMillisMin+1),
		}
		var b strings.Builder
		b.WriteString(",")
		var completed, failedIdx []int
		for i := range w.Completions {
			failures, ignored := 0, 0
			indexFailed := false
			for attempt := 0; attempt < 20; attempt++ {
				s.attempts++
				if w.FailureRate == 0 || rng.Float64() >= w.FailureRate {
					break
				}
				code := w.ExitCodes[rng.IntN(len(w.ExitCodes))]
				fmt.Fprintf(&b, "%d/%d/%d=%d,", i, failures, ignored, code)
				if failIndex(code) {
					s.want.failed++
					indexFailed = true
					break
				}
				if ignore(code) {
					ignored++
					continue
				}
				failures++
				s.want.failed++
				if w.BackoffLimitPerIndex != nil && failures > int(*w.BackoffLimitPerIndex) {
					indexFailed = true
					break
				}
			}
			if indexFailed {
				failedIdx = append(failedIdx, i)
			} else {
				completed = append(completed, i)
			}
		}
		s.failing = b.String()
		s.want.succeeded = int32(len(completed))
		s.want.failedJob = len(failedIdx) > 0
		if w.Indexed {
			s.want.completedIdx = indexList(completed)
			s.want.failedIdx = indexList(failedIdx)
		}
		specs[j] = s
	}
	return specs
}

// namespaceNames are the workload's namespaces: "bench", or Namespaces names
// with seeded random suffixes (their own random stream, so that the Jobs'
// draws are the same with or without namespaces).
func (w *Workload) namespaceNames() []string {
	if w.Namespaces == 0 {
		return []string{namespace}
	}
	rng := rand.New(rand.NewPCG(w.Seed, 0x6e616d6573706163))
	seen := map[string]bool{}
	var out []string
	for len(out) < w.Namespaces {
		n := fmt.Sprintf("%s-%08x", strings.ToLower(w.Name), rng.Uint32())
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// scope is the namespace the runner lists and watches: the one namespace,
// or all of them when the workload spreads over several.
func (w *Workload) scope() string {
	if w.Namespaces == 0 {
		return namespace
	}
	return metav1.NamespaceAll
}

// indexList writes sorted indexes as the Job status does: runs of three or
// more as "first-last", the rest comma-separated ("0,1,3-5").
func indexList(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(idx[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(idx[i]), strconv.Itoa(idx[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// job builds one Job; managedBy is empty for kube-controller-manager's.
func (w *Workload) job(ns string, s jobSpec, managedBy string) *batchv1.Job {
	annotations := map[string]string{
		annoRunMillis:    strconv.Itoa(s.runMS),
		annoRunMaxMillis: strconv.Itoa(s.runMS + w.RunJitterMillis),
	}
	if s.failing != "," {
		annotations[annoFail] = s.failing
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To(int32(w.Completions)),
			Parallelism:  ptr.To(int32(w.Parallelism)),
			BackoffLimit: w.BackoffLimit,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					// No scheduler runs: each Job's pods go to one fake node.
					NodeName:   s.node,
					Containers: []corev1.Container{{Name: "main", Image: "bench.invalid/none"}},
				},
			},
		},
	}
	if managedBy != "" {
		job.Spec.ManagedBy = ptr.To(managedBy)
	}
	if w.Indexed {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.BackoffLimitPerIndex = w.BackoffLimitPerIndex
	}
	if len(w.FailIndexExitCodes) > 0 || len(w.IgnoreExitCodes) > 0 {
		pfp := &batchv1.PodFailurePolicy{}
		if len(w.FailIndexExitCodes) > 0 {
			pfp.Rules = append(pfp.Rules, batchv1.PodFailurePolicyRule{
				Action:      batchv1.PodFailurePolicyActionFailIndex,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: w.FailIndexExitCodes},
			})
		}
		if len(w.IgnoreExitCodes) > 0 {
			pfp.Rules = append(pfp.Rules, batchv1.PodFailurePolicyRule{
				Action:      batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: w.IgnoreExitCodes},
			})
		}
		job.Spec.PodFailurePolicy = pfp
	}
	return job
}

// sum fingerprints the workload (every field, the name included), so that a
// saved run is reused only for the workload it measured.
func (w *Workload) sum() string {
	data, err := json.Marshal(w)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:6])
}
