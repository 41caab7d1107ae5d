package controller

// The shim's side of one sync of a large Job, measured: list the Job's pods
// from the informer cache, build the DecideJob request, marshal it. "json"
// is the route the shim took before clients/go/request (every object
// through encoding/json and protojson, pods Kubernetes-shaped); "lean" is
// today's; "json" also lists the pods as the shim did before (by index, then
// by selector, with a set of the pods seen). Both marshal with gRPC's proto
// codec, as the call does. Run with
//
//	cd shim && go test -run '^$' -bench BenchmarkShimSync -benchtime 5x ./internal/controller
//
// Besides ns/op (wall time), it reports each stage's wall time, the process's
// CPU time an op (the collector's included) and the request's size.

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/clients/go/request"
)

const (
	benchJobName = "train"
	benchJobUID  = "0b5c8a5e-8e6b-4f53-9d6c-2f2f1f6e7a11"
	benchNS      = "ml-training"
)

var benchNow = time.Unix(1_700_000_600, 0).UTC()

// benchJob is an Indexed Job of n pods with the generated selector.
func benchJob(n int) *batchv1.Job {
	labels := map[string]string{
		"batch.kubernetes.io/controller-uid": benchJobUID, "batch.kubernetes.io/job-name": benchJobName,
		"controller-uid": benchJobUID, "job-name": benchJobName,
	}
	container := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.example.com/ml/" + name + ":v1"}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: benchJobName, Namespace: benchNS, UID: benchJobUID, ResourceVersion: "123456000",
			Generation: 1, Labels: labels, CreationTimestamp: metav1.NewTime(benchNow.Add(-700 * time.Second)),
		},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(n)), Completions: ptr.To(int32(n)), BackoffLimit: ptr.To(int32(6)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Suspend: ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed), ManualSelector: ptr.To(false),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": benchJobUID}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{container("trainer"), container("log-shipper")}},
			},
		},
		Status: batchv1.JobStatus{
			Active: int32(n), Ready: ptr.To(int32(n)), Terminating: ptr.To(int32(0)),
			StartTime:               ptr.To(metav1.NewTime(benchNow.Add(-690 * time.Second))),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		},
	}
}

// benchPod is pod i of benchJob, Running on a node, as an informer holds it
// (the API server's object less managedFields, which the shim drops).
func benchPod(i int) *corev1.Pod {
	job := benchJob(1)
	index := fmt.Sprint(i)
	labels := map[string]string{"batch.kubernetes.io/job-completion-index": index}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	at := func(ago int) metav1.Time { return metav1.NewTime(benchNow.Add(-time.Duration(ago) * time.Second)) }
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/ml/" + name + ":v1", Command: []string{"/bin/" + name, "--index=$(JOB_COMPLETION_INDEX)"},
			Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1", FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
			VolumeMounts:           []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy: corev1.PullIfNotPresent,
		}
	}
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: name, Ready: true, Started: ptr.To(true), RestartCount: 0,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(595)}},
			Image:       "registry.example.com/ml/" + name + ":v1",
			ImageID:     "registry.example.com/ml/" + name + "@sha256:4b7f1c2e9a8d6f5e3c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d",
			ContainerID: fmt.Sprintf("containerd://%064x", i),
		}
	}
	condition := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at(590)}
	}
	podIP := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d-x7k2p", benchJobName, i), GenerateName: fmt.Sprintf("%s-%d-", benchJobName, i),
			Namespace: benchNS, UID: types.UID(fmt.Sprintf("6f1c2b7e-3d4a-4c3b-9a1e-%012d", i)),
			ResourceVersion: fmt.Sprint(123_456_789 + i), CreationTimestamp: at(600), Labels: labels,
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": index},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: benchJobName, UID: benchJobUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			Finalizers: []string{JobTrackingFinalizer},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("trainer"), container("log-shipper")},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(3607)), Path: "token"}}},
			}}}},
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(30)),
			DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default", NodeName: fmt.Sprintf("gke-pool-1-node-%04d", i%1000),
			Hostname: fmt.Sprintf("%s-%d", benchJobName, i), Subdomain: benchJobName,
			SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
			},
			Priority: ptr.To(int32(0)), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				condition("PodReadyToStartContainers"), condition(corev1.PodInitialized), condition(corev1.PodReady),
				condition(corev1.ContainersReady), condition(corev1.PodScheduled),
			},
			HostIP: "192.168.1.7", HostIPs: []corev1.HostIP{{IP: "192.168.1.7"}}, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
			StartTime: ptr.To(at(598)), QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{status("trainer"), status("log-shipper")},
		},
	}
}

// benchController is a controller whose pod cache holds n pods of benchJob,
// indexed as the shim's informer indexes them.
func benchController(tb testing.TB, n int) *Controller {
	tb.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex:  cache.MetaNamespaceIndexFunc,
		podControllerUIDIndex: indexByControllerUID,
	})
	for i := range n {
		if err := indexer.Add(benchPod(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return &Controller{podLister: corelisters.NewPodLister(indexer), podIndexer: indexer}
}

// jsonRouteRequest is how the shim built its request before
// clients/go/request: each object through encoding/json and protojson.
func jsonRouteRequest(s *snapshot) (*jobdeciderv1.DecideJobRequest, error) {
	from := protojson.UnmarshalOptions{DiscardUnknown: true}
	convert := func(obj any, msg proto.Message) error {
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return from.Unmarshal(data, msg)
	}
	req := &jobdeciderv1.DecideJobRequest{
		Job: &jobdeciderv1.Job{}, Pods: make([]*jobdeciderv1.Pod, len(s.Pods)), Now: timestamppb.New(s.Now),
		State: s.State, ControllerName: s.Controller,
		Expectations: &jobdeciderv1.Expectations{PodChangesPending: s.PodChangesPending, FinalizerRemovalsPending: s.FinalizerRemovalsPending},
	}
	if err := convert(s.Job, req.Job); err != nil {
		return nil, err
	}
	for i, pod := range s.Pods {
		req.Pods[i] = &jobdeciderv1.Pod{}
		if err := convert(pod, req.Pods[i]); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// listBefore is how the shim listed a Job's pods before it took one pass:
// the owned pods by index, then the namespace's pods by selector, with a set
// of the pods seen between the two.
func listBefore(c *Controller, job *batchv1.Job) ([]*corev1.Pod, error) {
	seen := map[types.UID]bool{}
	var pods []*corev1.Pod
	owned, err := c.podIndexer.ByIndex(podControllerUIDIndex, string(job.UID))
	if err != nil {
		return nil, err
	}
	for _, obj := range owned {
		pod := obj.(*corev1.Pod)
		if pod.Namespace == job.Namespace && !seen[pod.UID] {
			seen[pod.UID] = true
			pods = append(pods, pod)
		}
	}
	selector, err := jobSelector(job)
	if err != nil {
		return pods, nil
	}
	matching, err := c.podLister.Pods(job.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	for _, pod := range matching {
		if ref := controllerOf(pod); ref != nil && ref.UID != job.UID {
			continue
		}
		if !seen[pod.UID] {
			seen[pod.UID] = true
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// routes are the shim before and after: how it lists a Job's pods and builds
// the request; both marshal with gRPC's proto codec, as the call does.
var routes = []struct {
	name  string
	list  func(*Controller, *batchv1.Job) ([]*corev1.Pod, error)
	build func(*snapshot) (*jobdeciderv1.DecideJobRequest, error)
}{
	{"json", listBefore, jsonRouteRequest},
	{"lean", (*Controller).podsForJob, func(s *snapshot) (*jobdeciderv1.DecideJobRequest, error) { return s.request() }},
}

// benchSync is one sync's shim side: list, build, marshal as gRPC would; the stages' times and the bytes.
func benchSync(tb testing.TB, c *Controller, job *batchv1.Job,
	listPods func(*Controller, *batchv1.Job) ([]*corev1.Pod, error),
	build func(*snapshot) (*jobdeciderv1.DecideJobRequest, error),
) (list, conv, marshal time.Duration, pods, size int) {
	codec := encoding.GetCodecV2(grpcproto.Name)
	t0 := time.Now()
	listed, err := listPods(c, job)
	if err != nil {
		tb.Fatal(err)
	}
	t1 := time.Now()
	req, err := build(&snapshot{Job: job, Pods: listed, Now: benchNow, Controller: DefaultControllerName})
	if err != nil {
		tb.Fatal(err)
	}
	t2 := time.Now()
	data, err := codec.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	t3 := time.Now()
	size = data.Len()
	data.Free()
	return t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), len(listed), size
}

// BenchmarkShimSync is the shim's side of one sync of a Job of 10,000 and
// 100,000 pods, both routes; the stages are reported as ms/list, ms/build
// and ms/marshal, the request size as MB/request.
func BenchmarkShimSync(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		c := benchController(b, n)
		job := benchJob(n)
		for _, r := range routes {
			b.Run(fmt.Sprintf("pods=%d/%s", n, r.name), func(b *testing.B) {
				var list, conv, marshal time.Duration
				size := 0
				runtime.GC() // the previous route's garbage is not this one's to collect
				cpu0 := cpuTime(b)
				b.ResetTimer()
				for b.Loop() {
					l, cv, m, pods, s := benchSync(b, c, job, r.list, r.build)
					if pods != n {
						b.Fatalf("listed %d pods, want %d", pods, n)
					}
					list, conv, marshal, size = list+l, conv+cv, marshal+m, s
				}
				b.StopTimer()
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
				// Process CPU time, the collector's included: on a shared
				// machine wall time also counts other processes' turns.
				b.ReportMetric(ms(cpuTime(b)-cpu0), "cpu-ms/op")
				b.ReportMetric(ms(list), "ms/list")
				b.ReportMetric(ms(conv), "ms/build")
				b.ReportMetric(ms(marshal), "ms/marshal")
				b.ReportMetric(float64(size)/1e6, "MB/request")
			})
		}
	}
}

// cpuTime is the process's user and system time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBenchRoutesAgree keeps the benchmark honest: on its own pods, the lean
// route's request is the JSON route's with the pods made lean, and smaller.
func TestBenchRoutesAgree(t *testing.T) {
	const n = 50
	c := benchController(t, n)
	job := benchJob(n)
	pods, err := c.podsForJob(job)
	if err != nil || len(pods) != n {
		t.Fatalf("listed %d pods (%v), want %d", len(pods), err, n)
	}
	s := &snapshot{Job: job, Pods: pods, Now: benchNow, Controller: DefaultControllerName}
	viaJSON, err := jsonRouteRequest(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := request.Lean(viaJSON)
	if err != nil {
		t.Fatal(err)
	}
	got, notLean := s.request()
	if notLean != nil {
		t.Fatal(notLean)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the lean route differs from the JSON route made lean:\n%s", protoDiff(t, got, want))
	}
	if lean, full := proto.Size(got), proto.Size(viaJSON); lean*2 > full {
		t.Errorf("lean request %d bytes, full %d: want under half", lean, full)
	}
}

// TestOnePassListingIsTheTwoPassOne: the one-pass podsForJob lists the
// pods the earlier two-pass listing did (owned first, then matching
// orphans), on a cache with every kind of neighbour.
func TestOnePassListingIsTheTwoPassOne(t *testing.T) {
	c := benchController(t, 20)
	add := func(name string, edit func(*corev1.Pod)) {
		p := benchPod(1000 + len(name))
		p.Name, p.UID = name, types.UID("uid-"+name)
		edit(p)
		if err := c.podIndexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	add("orphan", func(p *corev1.Pod) { p.OwnerReferences = nil })
	add("orphan-unmatched", func(p *corev1.Pod) { p.OwnerReferences, p.Labels = nil, nil })
	add("foreign", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "rs-uid" })
	add("owned-unlabelled", func(p *corev1.Pod) { p.Labels = nil })
	add("elsewhere", func(p *corev1.Pod) { p.Namespace = "other" })
	job := benchJob(20)
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	got, err := c.podsForJob(job)
	if err != nil {
		t.Fatal(err)
	}
	want, err := listBefore(c, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 22 || got[len(got)-1].Name != "orphan" {
		t.Errorf("listed %d pods ending %q; want the 21 owned, then the orphan", len(got), got[len(got)-1].Name)
	}
	gotNames, wantNames := names(got), names(want)
	slices.Sort(gotNames)
	slices.Sort(wantNames)
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("one pass %v\ntwo passes %v", gotNames, wantNames)
	}
}

// sharedNamespace is a pod cache of jobs Jobs of perJob pods each, all in one
// namespace, plus orphans pods no controller owns; Job 0 is benchJob's. It
// returns benchJob(perJob) and the cache's indexer.
func sharedNamespace(tb testing.TB, jobs, perJob, orphans int) (*batchv1.Job, cache.Indexer) {
	tb.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex:  cache.MetaNamespaceIndexFunc,
		podControllerUIDIndex: indexByControllerUID,
	})
	template := benchPod(0)
	for j := range jobs {
		uid := types.UID(benchJobUID)
		if j > 0 {
			uid = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", j))
		}
		for i := range perJob {
			p := template.DeepCopy()
			p.Name, p.UID = fmt.Sprintf("job-%d-pod-%d", j, i), types.UID(fmt.Sprintf("%s-%d", uid, i))
			p.Labels = map[string]string{"batch.kubernetes.io/controller-uid": string(uid), "batch.kubernetes.io/job-name": fmt.Sprint("job-", j)}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: fmt.Sprint("job-", j), UID: uid, Controller: ptr.To(true)}}
			if err := indexer.Add(p); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for i := range orphans {
		p := template.DeepCopy()
		p.Name, p.UID, p.OwnerReferences = fmt.Sprintf("orphan-%d", i), types.UID(fmt.Sprintf("orphan-uid-%d", i)), nil
		p.Labels = map[string]string{"app": "unrelated"}
		if err := indexer.Add(p); err != nil {
			tb.Fatal(err)
		}
	}
	return benchJob(perJob), indexer
}

// countingIndexer counts the cached objects index reads hand back: what a
// listing walks.
type countingIndexer struct {
	cache.Indexer
	read int
}

func (c *countingIndexer) ByIndex(name, value string) ([]any, error) {
	objs, err := c.Indexer.ByIndex(name, value)
	c.read += len(objs)
	return objs, err
}

// A Job's sync lists its own pods and its namespace's orphans, not every pod
// of the namespace: with 100 Jobs of 10 pods and 5 orphans in one namespace,
// it reads 15 cached pods, not 1,005.
func TestRegressionPodsForJobReadsOnlyItsPodsAndOrphans(t *testing.T) {
	job, indexer := sharedNamespace(t, 100, 10, 5)
	counting := &countingIndexer{Indexer: indexer}
	c := &Controller{podLister: corelisters.NewPodLister(indexer), podIndexer: counting}
	pods, err := c.podsForJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 10 {
		t.Errorf("listed %d pods, want the Job's 10 (the orphans do not match its selector)", len(pods))
	}
	if counting.read != 15 {
		t.Errorf("read %d cached pods, want 15 (its 10 and the namespace's 5 orphans)", counting.read)
	}
}

// listNamespaceScan is how podsForJob listed before it read the owner and
// orphan index keys: one pass over every cached pod of the namespace.
func listNamespaceScan(c *Controller, job *batchv1.Job) ([]*corev1.Pod, error) {
	inNamespace, err := c.podIndexer.ByIndex(cache.NamespaceIndex, job.Namespace)
	if err != nil {
		return nil, err
	}
	selector, selectorErr := jobSelector(job)
	owned := make([]*corev1.Pod, 0, len(inNamespace))
	var orphans []*corev1.Pod
	for _, obj := range inNamespace {
		pod := obj.(*corev1.Pod)
		ref := controllerOf(pod)
		switch {
		case ref != nil:
			if ref.UID == job.UID {
				owned = append(owned, pod)
			}
		case selectorErr == nil && selector.Matches(labels.Set(pod.Labels)):
			orphans = append(orphans, pod)
		}
	}
	return append(owned, orphans...), nil
}

// BenchmarkPodsForJobSharedNamespace lists one Job's 100 pods in a namespace
// of 100,000 (1,000 Jobs of 100 pods, plus 1,000 unrelated orphans): the
// cost issue 23 hole 5 is about, by the namespace scan ("scan", before) and
// by the owner and orphan index keys ("index", today).
//
//	cd shim && go test -run '^$' -bench BenchmarkPodsForJobSharedNamespace -benchmem -benchtime 50x ./internal/controller
func BenchmarkPodsForJobSharedNamespace(b *testing.B) {
	job, indexer := sharedNamespace(b, 1000, 100, 1000)
	c := &Controller{podLister: corelisters.NewPodLister(indexer), podIndexer: indexer}
	for _, r := range []struct {
		name string
		list func(*Controller, *batchv1.Job) ([]*corev1.Pod, error)
	}{{"scan", listNamespaceScan}, {"index", (*Controller).podsForJob}} {
		b.Run(r.name, func(b *testing.B) {
			runtime.GC()
			cpu0 := cpuTime(b)
			for b.Loop() {
				pods, err := r.list(c, job)
				if err != nil || len(pods) != 100 {
					b.Fatalf("listed %d pods (%v), want 100", len(pods), err)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
