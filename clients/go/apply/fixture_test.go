package apply

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	jobdeciderv1 "job-decider.dev/clients/go/jobdecider/v1"
)

const pendingTimeoutCondition = "job-decider.dev/PendingTimeout"

func testJob() *batchv1.Job {
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "pi", Namespace: "ns", UID: "job-uid", ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		},
		Spec: batchv1.JobSpec{
			ManagedBy:   ptr.To("example.com/test"),
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](4),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"batch.kubernetes.io/controller-uid": "job-uid", "app": "pi"},
					Annotations: map[string]string{"note": "template"},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
					Containers: []corev1.Container{
						{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", Value: "mine"}}},
						{Name: "side", Image: "busybox"},
					},
				},
			},
		},
	}
}

func testPod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "3",
			Labels:          map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"},
			Finalizers:      []string{JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(testJob(), batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// pendingPod is a pod stuck pulling its image.
func pendingPod(name string) *corev1.Pod {
	pod := testPod(name, corev1.PodPending)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
	}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	return pod
}

func failPodsPlan(pods ...string) *jobdeciderv1.DecideJobResponse {
	var failures []*jobdeciderv1.PodFailure
	for _, name := range pods {
		failures = append(failures, &jobdeciderv1.PodFailure{
			Pod:           &jobdeciderv1.PodReference{Name: name, Uid: "uid-" + name},
			ConditionType: pendingTimeoutCondition,
			Reason:        "ImagePullBackOff",
			Message:       "Pod was Pending with ImagePullBackOff for 300s (limit 300s)",
		})
	}
	return &jobdeciderv1.DecideJobResponse{Actions: []*jobdeciderv1.Action{
		{Kind: &jobdeciderv1.Action_FailPods{FailPods: &jobdeciderv1.FailPods{Pods: failures}}},
		{Kind: &jobdeciderv1.Action_RecordEvent{RecordEvent: &jobdeciderv1.RecordEvent{Type: "Normal", Reason: "After", Message: "next step"}}},
	}}
}

// hookCalls records every hook call as a line "name args".
type hookCalls struct {
	mu    sync.Mutex
	calls []string
}

func (h *hookCalls) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, s)
}

// with returns the recorded calls whose line starts with prefix, sorted.
func (h *hookCalls) with(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

type fixture struct {
	t       *testing.T
	kube    *fake.Clientset
	events  *record.FakeRecorder
	hooks   *hookCalls
	applier *Applier
	plans   []*jobdeciderv1.DecideJobResponse
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, kube: fake.NewClientset(objs...), events: record.NewFakeRecorder(100), hooks: &hookCalls{}}
	h := f.hooks
	f.applier = New(f.kube, Options{Recorder: f.events, Hooks: Hooks{
		BeforeStep:              func(*batchv1.Job) { h.add("step") },
		ExpectCreations:         func(_ *batchv1.Job, n int) { h.add("expectCreations " + strconv.Itoa(n)) },
		CreationsNotMade:        func(_ *batchv1.Job, n int) { h.add("creationsNotMade " + strconv.Itoa(n)) },
		ExpectDeletions:         func(_ *batchv1.Job, uids []string) { h.add("expectDeletions " + strings.Join(uids, ",")) },
		DeletionNotMade:         func(_ *batchv1.Job, uid string) { h.add("deletionNotMade " + uid) },
		ExpectFinalizerRemovals: func(_ *batchv1.Job, uids []string) { h.add("expectFinalizerRemovals " + strings.Join(uids, ",")) },
		FinalizerRemovalNotMade: func(_ *batchv1.Job, uid string) { h.add("finalizerRemovalNotMade " + uid) },
		PodWritten:              func(_ *batchv1.Job, p *corev1.Pod) { h.add("podWritten " + p.Name) },
		StatusWritten:           func(_, w *batchv1.Job) { h.add("statusWritten " + w.ResourceVersion) },
		ActionFailed:            func(_ *batchv1.Job, a string, _ error) { h.add("actionFailed " + a) },
		PlanRefused:             func(_ *batchv1.Job, r string, _ error) { h.add("planRefused " + r) },
	}})
	return f
}

// apply applies the next plan to the Job as the fake API server holds it.
func (f *fixture) apply() (Result, error) {
	f.t.Helper()
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	plan := &jobdeciderv1.DecideJobResponse{}
	if len(f.plans) > 0 {
		plan, f.plans = f.plans[0], f.plans[1:]
	}
	return f.applier.Apply(context.Background(), job, plan)
}

func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// writes lists the writes to the API, in order, as "verb resource" or
// "verb resource/subresource".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		w := a.GetVerb() + " " + a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			w += "/" + s
		}
		out = append(out, w)
	}
	return out
}

// podWrites lists the patches and deletes of pods, in order, as "verb" or
// "verb/subresource".
func (f *fixture) podWrites() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "pods" || (a.GetVerb() != "patch" && a.GetVerb() != "delete") {
			continue
		}
		w := a.GetVerb()
		if s := a.GetSubresource(); s != "" {
			w += "/" + s
		}
		out = append(out, w)
	}
	return out
}
