package controller

// The shared vectors (tests/vectors/*.yaml) checked from the shim's side: the
// Rust tests prove the service gives each vector's expected plan; these prove
// that the shim builds each vector's request from client-go objects and can
// turn each planned pod creation into a pod.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"job-decider.dev/clients/go/apply"
	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/clients/go/request"
	"job-decider.dev/testkit/protodiff"
	"job-decider.dev/testkit/vectors"
)

// minVectors is fewer than the set holds, so the tests cannot pass by reading nothing.
const minVectors = 120

// vectorsDir is tests/vectors, from this package's directory (shim/internal/controller).
var vectorsDir = filepath.Join("..", "..", "..", "tests", "vectors")

// extendedVectorsDir holds the vectors of Jobs with an extended failure
// policy (tests/vectors-extended); minExtendedVectors is fewer than it holds.
var extendedVectorsDir = filepath.Join("..", "..", "..", "tests", "vectors-extended")

const minExtendedVectors = 24

func loadVectors(t *testing.T) []*vectors.Job {
	t.Helper()
	return loadVectorsIn(t, vectorsDir)
}

// loadVectorsIn reads every vector in one directory (not its subdirectories:
// tests/vectors/jobset holds JobSet vectors).
func loadVectorsIn(t *testing.T, dir string) []*vectors.Job {
	t.Helper()
	files, err := vectors.FilesFlat([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors in %s", dir)
	}
	var vs []*vectors.Job
	for _, path := range files {
		v, err := vectors.LoadJob(path)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		if v.Expected == nil {
			t.Errorf("%s: no expected response", filepath.Base(path))
			continue
		}
		vs = append(vs, v)
	}
	return vs
}

func TestVectorsAreFound(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) < minVectors {
		t.Fatalf("loaded %d vectors from %s, want at least %d", len(vs), vectorsDir, minVectors)
	}
	for _, v := range vs {
		file := filepath.Base(v.Path)
		if v.Name+".yaml" != file {
			t.Errorf("%s: named %q", file, v.Name)
		}
		if v.Request.GetJob() == nil {
			t.Errorf("%s: no request.job", file)
		}
	}
	t.Logf("%d vectors in %s", len(vs), vectorsDir)
}

// vectorObjects turns a vector's request.job and request.pods, as written,
// into client-go objects, refusing fields client-go does not know: such a
// field would be lost before the shim ever saw it.
func vectorObjects(v *vectors.Job) (*batchv1.Job, []*corev1.Pod, error) {
	data, err := v.JSON("request")
	if err != nil {
		return nil, nil, err
	}
	var request struct {
		Job  json.RawMessage   `json:"job"`
		Pods []json.RawMessage `json:"pods"`
	}
	if err := json.Unmarshal(data, &request); err != nil {
		return nil, nil, fmt.Errorf("request: %w", err)
	}
	job := &batchv1.Job{}
	if err := kubejson.FromProtoJSON(request.Job, (&jobdeciderv1.Job{}).ProtoReflect().Descriptor(), job); err != nil {
		return nil, nil, fmt.Errorf("request.job as a batchv1.Job: %w", err)
	}
	pods := make([]*corev1.Pod, len(request.Pods))
	for i, r := range request.Pods {
		pods[i] = &corev1.Pod{}
		if err := kubejson.FromProtoJSON(r, (&jobdeciderv1.Pod{}).ProtoReflect().Descriptor(), pods[i]); err != nil {
			return nil, nil, fmt.Errorf("request.pods[%d] as a corev1.Pod: %w", i, err)
		}
	}
	return job, pods, nil
}

// TestVectorSnapshotsMatchContract builds each vector's request the way the
// shim does, from client-go objects, and checks it is the vector's request
// with its pods in the lean encoding (converted here by the harness's route,
// from the contract's Pod); a vector with a pod that has no lean form must
// come out Kubernetes-shaped, exactly the vector's request. The full route is
// checked on every vector too, so both stay able to carry each decision.
func TestVectorSnapshotsMatchContract(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) < minVectors {
		t.Fatalf("loaded %d vectors, want at least %d", len(vs), minVectors)
	}
	checkVectorSnapshots(t, vs)
}

// TestExtendedVectorSnapshotsMatchContract is the same for the vectors of
// Jobs with an extended failure policy: the shim's lean pods carry what the
// document reads, as the harness's route gives them. A vector whose document
// is in the request's field rather than on the Job is left out: the shim
// reads the annotation only. The terminatingTimeout vectors' nodes come
// through request.Nodes from a node cache holding what each vector says.
func TestExtendedVectorSnapshotsMatchContract(t *testing.T) {
	vs := loadVectorsIn(t, extendedVectorsDir)
	if len(vs) < minExtendedVectors {
		t.Fatalf("loaded %d vectors, want at least %d", len(vs), minExtendedVectors)
	}
	if checkVectorSnapshots(t, vs) == 0 {
		t.Errorf("no extended vector carries nodes")
	}
}

// checkVectorSnapshots returns how many nodes and missing nodes the requests carried.
func checkVectorSnapshots(t *testing.T, vs []*vectors.Job) (withNodes int) {
	t.Helper()
	pods, leanPods, fullOnly, fieldOnly := 0, 0, 0, 0
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			want := proto.Clone(v.Request).(*jobdeciderv1.DecideJobRequest)
			if want.GetFailurePolicy() != "" {
				fieldOnly++
				return
			}
			job, kubePods, err := vectorObjects(v)
			if err != nil {
				t.Fatal(err)
			}
			pods += len(kubePods)
			snap := snapshot{
				Job:                      job,
				Pods:                     kubePods,
				Now:                      want.GetNow().AsTime(),
				State:                    want.GetState(),
				Controller:               want.GetControllerName(),
				PodChangesPending:        want.GetExpectations().GetPodChangesPending(),
				FinalizerRemovalsPending: want.GetExpectations().GetFinalizerRemovalsPending(),
				Nodes:                    vectorNodes(want),
			}
			withNodes += len(want.GetNodes()) + len(want.GetMissingNodes())
			got, notLean := snap.request()
			if want.Expectations == nil {
				// The shim always sends expectations; an absent message
				// reads as an empty one.
				want.Expectations = &jobdeciderv1.Expectations{}
			}
			full := request.BuildFull(job, kubePods)
			if !proto.Equal(full.GetJob(), want.GetJob()) || !equalPods(full.GetPods(), want.GetPods()) {
				t.Errorf("the Kubernetes-shaped request differs from the vector's:\n%s",
					protoDiff(t, &jobdeciderv1.DecideJobRequest{Job: full.Job, Pods: full.Pods}, &jobdeciderv1.DecideJobRequest{Job: want.Job, Pods: want.Pods}))
			}
			wantLean, err := request.Lean(want)
			if (err == nil) != (notLean == nil) {
				t.Fatalf("the shim's lean encoding failed with %v, the harness's with %v", notLean, err)
			}
			if err == nil {
				leanPods += len(got.GetLeanPods())
				want = wantLean
			} else {
				fullOnly++
			}
			if !proto.Equal(got, want) {
				t.Errorf("the shim's request differs from the vector's:\n%s", protoDiff(t, got, want))
			}
		})
	}
	if leanPods == 0 {
		t.Fatalf("no vector's pods went lean")
	}
	t.Logf("%d vectors, %d pods converted, %d of them lean; %d vectors have a pod with no lean form; %d left out (document in the request's field); %d nodes and missing nodes looked up",
		len(vs), pods, leanPods, fullOnly, fieldOnly, withNodes)
	return withNodes
}

// vectorNodes is a node cache holding what the vector's request says of the
// nodes: its nodes as client-go Nodes, its missing nodes as known to be gone,
// and any other node as one the cache cannot tell about (left out, as the
// shim leaves a node out whose GET fails). request.Nodes then decides which
// of them the request carries, so a vector naming a node the shim would not
// send, or in another order, differs from the shim's request.
func vectorNodes(req *jobdeciderv1.DecideJobRequest) request.NodeLookup {
	nodes := map[string]*corev1.Node{}
	for _, n := range req.GetNodes() {
		node := &corev1.Node{}
		node.Name = n.GetName()
		for _, t := range n.GetTaints() {
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: t.GetKey(), Effect: corev1.TaintEffect(t.GetEffect())})
		}
		for _, c := range n.GetConditions() {
			node.Status.Conditions = append(node.Status.Conditions,
				corev1.NodeCondition{Type: corev1.NodeConditionType(c.GetType()), Status: corev1.ConditionStatus(c.GetStatus())})
		}
		nodes[n.GetName()] = node
	}
	return func(name string) (*corev1.Node, bool, error) {
		if n, ok := nodes[name]; ok {
			return n, true, nil
		}
		if slices.Contains(req.GetMissingNodes(), name) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("node %s: the vector does not say", name)
	}
}

func equalPods(a, b []*jobdeciderv1.Pod) bool {
	return slices.EqualFunc(a, b, func(x, y *jobdeciderv1.Pod) bool { return proto.Equal(x, y) })
}

// TestVectorPlansApply turns every pod creation in every expected plan into a
// pod from the vector's Job, as the shim does before creating it, and checks
// the pod field by field against one built independently, in JSON, from the
// template and the entry.
func TestVectorPlansApply(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) < minVectors {
		t.Fatalf("loaded %d vectors, want at least %d", len(vs), minVectors)
	}
	applyVectorPlans(t, vs)
}

// TestExtendedVectorPlansApply is the same for the extended vectors: pods
// that avoid nodes, and pods the plan fails (each failure's status patch).
func TestExtendedVectorPlansApply(t *testing.T) {
	vs := loadVectorsIn(t, extendedVectorsDir)
	if len(vs) < minExtendedVectors {
		t.Fatalf("loaded %d vectors, want at least %d", len(vs), minExtendedVectors)
	}
	avoiding, failures := applyVectorPlans(t, vs)
	if avoiding == 0 || failures == 0 {
		t.Errorf("%d pods avoiding nodes, %d pod failures planned: the extended vectors should have both", avoiding, failures)
	}
}

// applyVectorPlans builds every planned pod and every planned pod failure;
// it returns how many pods avoided nodes and how many failures there were.
func applyVectorPlans(t *testing.T, vs []*vectors.Job) (avoiding, failures int) {
	t.Helper()
	withCreations, creations := 0, 0
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			plan := v.Expected
			var entries []*jobdeciderv1.PodCreation
			for _, a := range plan.GetActions() {
				if a.GetKind() == nil {
					t.Errorf("an action of no kind known to the shim: %v", a)
				}
				entries = append(entries, a.GetCreatePods().GetPods()...)
				for _, f := range a.GetFailPods().GetPods() {
					failures++
					checkPlannedFailure(t, f)
				}
			}
			for _, pc := range entries {
				if len(pc.GetAvoidNodes().GetNodes()) > 0 {
					avoiding++
				}
			}
			if len(entries) == 0 {
				return
			}
			withCreations++
			job, _, err := vectorObjects(v)
			if err != nil {
				t.Fatal(err)
			}
			// As recorded, then with what no recorded template has: an
			// annotation, a finalizer, an extra label and an init
			// container, which the pods must keep too.
			for _, job := range []*batchv1.Job{job, withTemplateExtras(job)} {
				before := mustJSON(t, job)
				for i, pc := range entries {
					creations++
					pod, err := apply.PodFromTemplate(job, pc)
					if err != nil {
						t.Errorf("creation %d: %v", i, err)
						continue
					}
					checkPlannedPod(t, fmt.Sprintf("creation %d", i), job, pc, pod)
				}
				if after := mustJSON(t, job); !bytes.Equal(before, after) {
					t.Errorf("building the pods changed the Job")
				}
			}
		})
	}
	if withCreations == 0 {
		t.Fatal("no vector plans a pod creation")
	}
	t.Logf("%d vectors, %d of them create pods, %d pods built (%d avoiding nodes); %d pod failures", len(vs), withCreations, creations, avoiding, failures)
	return avoiding, failures
}

// checkPlannedFailure checks the status patch the shim sends for one planned
// failure: the pod's uid, phase Failed, and the plan's condition, True.
func checkPlannedFailure(t *testing.T, f *jobdeciderv1.PodFailure) {
	t.Helper()
	patch, err := apply.PodFailurePatch(f, metav1.Now())
	if err != nil {
		t.Errorf("failing %s: %v", f.GetPod().GetName(), err)
		return
	}
	var body struct {
		Metadata struct{ UID string }
		Status   corev1.PodStatus
	}
	if err := json.Unmarshal(patch, &body); err != nil {
		t.Fatal(err)
	}
	c := body.Status.Conditions
	if body.Metadata.UID != f.GetPod().GetUid() || body.Status.Phase != corev1.PodFailed || len(c) != 1 ||
		string(c[0].Type) != f.GetConditionType() || c[0].Status != corev1.ConditionTrue || c[0].Reason != f.GetReason() || c[0].Message != f.GetMessage() {
		t.Errorf("failing %s: patch %s for %v", f.GetPod().GetName(), patch, f)
	}
}

// withTemplateExtras is the Job with more in its pod template.
func withTemplateExtras(job *batchv1.Job) *batchv1.Job {
	job = job.DeepCopy()
	tmpl := &job.Spec.Template
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["example.com/tier"] = "batch"
	tmpl.Annotations = map[string]string{"example.com/from-template": "kept"}
	tmpl.Finalizers = []string{"example.com/keep"}
	if len(tmpl.Spec.Containers) > 0 {
		init := *tmpl.Spec.Containers[0].DeepCopy()
		init.Name = "init"
		init.Env = []corev1.EnvVar{{Name: "FROM_TEMPLATE", Value: "1"}}
		tmpl.Spec.InitContainers = append(tmpl.Spec.InitContainers, init)
	}
	return job
}

// checkPlannedPod compares the shim's pod with one built in JSON: the
// template's metadata (labels, annotations, finalizers, as upstream's
// GetPodFromTemplate copies) and spec, overlaid with the plan's entry.
func checkPlannedPod(t *testing.T, what string, job *batchv1.Job, pc *jobdeciderv1.PodCreation, pod *corev1.Pod) {
	t.Helper()
	tmpl := jsonValue(t, mustJSON(t, job.Spec.Template)).(map[string]any)
	tmplMeta, _ := tmpl["metadata"].(map[string]any)
	spec, _ := tmpl["spec"].(map[string]any)

	meta := map[string]any{"namespace": job.Namespace}
	switch {
	case pc.GetName() != "":
		meta["name"] = pc.GetName()
	case pc.GetGenerateName() != "":
		meta["generateName"] = pc.GetGenerateName()
	default:
		meta["generateName"] = job.Name + "-"
	}
	if m := overlay(tmplMeta["labels"], pc.GetLabels()); m != nil {
		meta["labels"] = m
	}
	if m := overlay(tmplMeta["annotations"], pc.GetAnnotations()); m != nil {
		meta["annotations"] = m
	}
	finalizers, _ := tmplMeta["finalizers"].([]any)
	for _, f := range pc.GetFinalizers() {
		if !slices.Contains(finalizers, any(f)) {
			finalizers = append(finalizers, f)
		}
	}
	if len(finalizers) > 0 {
		meta["finalizers"] = finalizers
	}
	if ref := pc.GetOwnerReference(); ref != nil {
		meta["ownerReferences"] = []any{jsonValue(t, mustProtoJSON(t, ref))}
		if ref.GetUid() != string(job.UID) || ref.GetName() != job.Name || ref.GetKind() != "Job" || !ref.GetController() {
			t.Errorf("%s: the owner reference is not the Job's controller reference: %v", what, ref)
		}
	}
	if h := pc.GetHostname(); h != "" {
		spec["hostname"] = h
	}
	env := make([]any, len(pc.GetEnv()))
	for i, e := range pc.GetEnv() {
		env[i] = jsonValue(t, mustProtoJSON(t, e))
	}
	for _, key := range []string{"initContainers", "containers"} {
		containers, _ := spec[key].([]any)
		for _, c := range containers {
			c := c.(map[string]any)
			have, _ := c["env"].([]any)
			for _, e := range env {
				name := e.(map[string]any)["name"]
				if !slices.ContainsFunc(have, func(h any) bool { return h.(map[string]any)["name"] == name }) {
					have = append(have, e)
				}
			}
			if len(have) > 0 {
				c["env"] = have
			}
		}
	}
	if an := pc.GetAvoidNodes(); len(an.GetNodes()) > 0 {
		avoidNodesJSON(t, what, spec, an)
	}
	want := map[string]any{"metadata": meta, "spec": spec, "status": map[string]any{}}
	got := jsonValue(t, mustJSON(t, pod))
	if diffs := protodiff.Values("", got, want); len(diffs) > 0 {
		t.Errorf("%s: the pod differs from the template overlaid with the entry:\n%s", what, protodiff.Format(diffs, "  ", "pod", "want"))
	}
	// The variables and the owner reference came through kubejson.ToKube; back
	// through the shim's own conversion, they are the entry's.
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, e := range c.Env {
			i := slices.IndexFunc(pc.GetEnv(), func(pe *jobdeciderv1.EnvVar) bool { return pe.GetName() == e.Name })
			if i < 0 || slices.ContainsFunc(templateEnv(job, c.Name), func(te corev1.EnvVar) bool { return te.Name == e.Name }) {
				continue
			}
			back := &jobdeciderv1.EnvVar{}
			if err := kubejson.FromKube(e, back); err != nil {
				t.Errorf("%s: env %s back to the contract: %v", what, e.Name, err)
			} else if !proto.Equal(back, pc.GetEnv()[i]) {
				t.Errorf("%s: container %s env %s: %v, planned %v", what, c.Name, e.Name, back, pc.GetEnv()[i])
			}
		}
	}
	if ref := pc.GetOwnerReference(); ref != nil && len(pod.OwnerReferences) > 0 {
		back := &jobdeciderv1.OwnerReference{}
		last := pod.OwnerReferences[len(pod.OwnerReferences)-1]
		if err := kubejson.FromKube(last, back); err != nil {
			t.Errorf("%s: owner reference back to the contract: %v", what, err)
		} else if !proto.Equal(back, ref) {
			t.Errorf("%s: owner reference %v, planned %v", what, back, ref)
		}
	}
}

// avoidNodesJSON adds the plan's node exclusion to a pod spec in JSON form,
// as the contract describes it: one "metadata.name NotIn [node]" field
// requirement per node, in every required term (one term if none), or in
// one preferred term of weight 100.
func avoidNodesJSON(t *testing.T, what string, spec map[string]any, an *jobdeciderv1.AvoidNodes) {
	t.Helper()
	var reqs []any
	for _, n := range an.GetNodes() {
		reqs = append(reqs, map[string]any{"key": "metadata.name", "operator": "NotIn", "values": []any{n}})
	}
	aff, _ := spec["affinity"].(map[string]any)
	if aff == nil {
		aff = map[string]any{}
		spec["affinity"] = aff
	}
	na, _ := aff["nodeAffinity"].(map[string]any)
	if na == nil {
		na = map[string]any{}
		aff["nodeAffinity"] = na
	}
	switch an.GetMode() {
	case "Required":
		sel, _ := na["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
			na["requiredDuringSchedulingIgnoredDuringExecution"] = sel
		}
		terms, _ := sel["nodeSelectorTerms"].([]any)
		if len(terms) == 0 {
			terms = []any{map[string]any{}}
		}
		for _, term := range terms {
			term := term.(map[string]any)
			have, _ := term["matchFields"].([]any)
			term["matchFields"] = append(slices.Clone(have), reqs...)
		}
		sel["nodeSelectorTerms"] = terms
	case "Preferred":
		prefs, _ := na["preferredDuringSchedulingIgnoredDuringExecution"].([]any)
		na["preferredDuringSchedulingIgnoredDuringExecution"] = append(prefs, map[string]any{
			"weight": float64(100), "preference": map[string]any{"matchFields": reqs},
		})
	default:
		t.Errorf("%s: avoid_nodes mode %q", what, an.GetMode())
	}
}

// templateEnv is the environment the template gives one container.
func templateEnv(job *batchv1.Job, container string) []corev1.EnvVar {
	for _, c := range slices.Concat(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers) {
		if c.Name == container {
			return c.Env
		}
	}
	return nil
}

// overlay merges a plan's entries over a template's map, in JSON form.
func overlay(base any, add map[string]string) map[string]any {
	m, _ := base.(map[string]any)
	if len(m) == 0 && len(add) == 0 {
		return nil
	}
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustProtoJSON(t *testing.T, m proto.Message) []byte {
	t.Helper()
	data, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func jsonValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// protoDiff names the fields where two messages differ, by their JSON paths.
func protoDiff(t *testing.T, got, want proto.Message) string {
	t.Helper()
	diffs, err := protodiff.Messages(got, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) == 0 {
		return "(the same JSON; a difference in presence or unknown fields)"
	}
	return protodiff.Format(diffs, "  ", "shim", "vector")
}
