package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// cli is the job-decider binary run as a command-line tool.
type cli struct {
	t   *testing.T
	bin string
	env []string
}

// run runs the binary with args and returns stdout, stderr and the exit code.
func (c cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	// A proxy in the environment would carry job-decider's calls to loopback
	// (kube-rs, unlike Go, does not exempt loopback unless NO_PROXY says so).
	cmd.Env = append(append(os.Environ(), "HTTPS_PROXY=", "https_proxy="), c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("running %s %v: %v", c.bin, args, err)
	}
	return stdout.String(), stderr.String(), code
}

// ok runs the binary and fails the test unless it exits 0.
func (c cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("%s %v: exit %d\n%s", filepath.Base(c.bin), args, code, errOut)
	}
	return out
}

// fails runs the binary and requires exit code want and stderr naming each of wants.
func (c cli) fails(want int, args []string, wants ...string) {
	c.t.Helper()
	_, errOut, code := c.run(args...)
	c.t.Logf("%s %s → exit %d: %s", filepath.Base(c.bin), strings.Join(args, " "), code, strings.TrimSpace(errOut))
	if code != want {
		c.t.Fatalf("%s %v: exit %d, want %d\n%s", filepath.Base(c.bin), args, code, want, errOut)
	}
	for _, w := range wants {
		if !strings.Contains(errOut, w) {
			c.t.Fatalf("%s %v: stderr does not say %q:\n%s", filepath.Base(c.bin), args, w, errOut)
		}
	}
	if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; lines > 3 {
		c.t.Fatalf("%s %v: a %d-line error, want a short one:\n%s", filepath.Base(c.bin), args, lines, errOut)
	}
}

// plan is the part of a DecideJobResponse (proto3 JSON) these tests read.
type plan struct {
	Actions []struct {
		AdoptPods *struct {
			Pods []struct{ Name string } `json:"pods"`
		} `json:"adoptPods"`
		DeletePods *struct {
			Pods []struct{ Name string } `json:"pods"`
		} `json:"deletePods"`
		UpdateStatus *struct {
			Status struct {
				Conditions []struct {
					Type, Status, Reason, Message string
				} `json:"conditions"`
			} `json:"status"`
		} `json:"updateStatus"`
	} `json:"actions"`
}

func parsePlan(t *testing.T, text string) plan {
	t.Helper()
	var p plan
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("not a DecideJobResponse: %v\n%s", err, text)
	}
	return p
}

// failureTarget is the FailureTarget condition the plan's first status write sets, if any.
func (p plan) failureTarget() (reason, message string, ok bool) {
	for _, a := range p.Actions {
		if a.UpdateStatus == nil {
			continue
		}
		for _, c := range a.UpdateStatus.Status.Conditions {
			if c.Type == "FailureTarget" && c.Status == "True" {
				return c.Reason, c.Message, true
			}
		}
		return "", "", false
	}
	return "", "", false
}

func (p plan) named(pick func(int) []string) []string {
	var out []string
	for i := range p.Actions {
		out = append(out, pick(i)...)
	}
	slices.Sort(out)
	return out
}

func (p plan) adopted() []string {
	return p.named(func(i int) []string {
		var n []string
		if a := p.Actions[i].AdoptPods; a != nil {
			for _, pod := range a.Pods {
				n = append(n, pod.Name)
			}
		}
		return n
	})
}

func (p plan) deleted() []string {
	return p.named(func(i int) []string {
		var n []string
		if a := p.Actions[i].DeletePods; a != nil {
			for _, pod := range a.Pods {
				n = append(n, pod.Name)
			}
		}
		return n
	})
}

// writeKubeconfig writes a kubeconfig for the test cluster with the given
// user, its context's namespace set, plus a context "nowhere" whose server
// listens on nothing.
func writeKubeconfig(t *testing.T, path, namespace string, user *clientcmdapi.AuthInfo) {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: e.cluster.URL, CertificateAuthorityData: e.cluster.Config.CAData}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:" + strconv.Itoa(port), CertificateAuthorityData: e.cluster.Config.CAData}
	cfg.AuthInfos["user"] = user
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "user", Namespace: namespace}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "user"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// makePod creates a pod of the Job's template with the given name, labels and
// controller (none: an orphan), and returns it.
func makePod(t *testing.T, ctx context.Context, job *batchv1.Job, name string, labels map[string]string, controller *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace, Labels: labels},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	if controller != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*controller}
		pod.Finalizers = []string{trackingFinalizer}
	}
	created, err := e.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

// The CLI reads a live Job and the pods its controller would consider through
// kubeconfig and decides as from files: a FailJob rule on exit code 42 gives
// FailureTarget. The Job is upstream's own (no managedBy) and no controller
// manager runs, so only the test writes to it: the state read is the state made.
func TestDecideFromCluster(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	job, err := e.client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "failjob", Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, 42),
			}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the job: %v", err)
	}
	own := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	other := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "someone-else", UID: types.UID("00000000-0000-0000-0000-0000000000aa"), Controller: ptr.To(true)}
	jobLabels := job.Spec.Template.Labels
	failed := makePod(t, ctx, job, "failjob-a", jobLabels, own)
	running := makePod(t, ctx, job, "failjob-b", jobLabels, own)
	makePod(t, ctx, job, "orphan", jobLabels, nil)                                // matches the selector: adopted
	makePod(t, ctx, job, "foreign", jobLabels, other)                             // matches, but another owner's
	makePod(t, ctx, job, "unrelated", map[string]string{"app": "something"}, nil) // matches nothing
	if err := harness.SetPodStatus(ctx, e.client, ns, failed.Name, harness.Failed(42)); err != nil {
		t.Fatal(err)
	}
	if err := harness.SetPodStatus(ctx, e.client, ns, running.Name, harness.Running(true)); err != nil {
		t.Fatal(err)
	}

	bin, err := harness.DeciderBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	admin := &clientcmdapi.AuthInfo{ClientCertificateData: e.cluster.Config.CertData, ClientKeyData: e.cluster.Config.KeyData}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, "default", admin)
	jd := cli{t: t, bin: bin}

	// decide: the plan adopts the orphan, fails the Job by the policy, and
	// deletes the running pods; the foreign and unrelated pods are not the Job's.
	p := parsePlan(t, jd.ok("decide", "--from-cluster", "--kubeconfig", kubeconfig, "-n", ns, "failjob", "-o", "json"))
	reason, message, ok := p.failureTarget()
	if !ok || reason != "PodFailurePolicy" || !strings.Contains(message, "exit code 42") || !strings.Contains(message, failed.Name) {
		t.Fatalf("FailureTarget: ok=%v reason=%q message=%q; want PodFailurePolicy on exit code 42 of %s", ok, reason, message, failed.Name)
	}
	if got := p.adopted(); !slices.Equal(got, []string{"orphan"}) {
		t.Fatalf("adopted %v, want [orphan]", got)
	}
	if got := p.deleted(); !slices.Equal(got, []string{"failjob-b", "orphan"}) {
		t.Fatalf("deleted %v, want [failjob-b orphan]", got)
	}

	// The same plan as from the files kubectl would print, at the same time.
	const now = "2030-01-02T03:04:05Z"
	jobFile, podsFile := writeAsKubectl(t, ctx, dir, ns, "failjob", []string{"failjob-a", "failjob-b", "orphan"})
	fromFiles := jd.ok("decide", "--job", jobFile, "--pods", podsFile, "--now", now, "-o", "json")
	if live := jd.ok("decide", "--from-cluster", "--kubeconfig", kubeconfig, "-n", ns, "failjob", "--now", now, "-o", "json"); live != fromFiles {
		t.Fatalf("from the cluster:\n%s\nfrom files:\n%s", live, fromFiles)
	}

	// simulate: the live Job's future, from now. The failure already there fails
	// it at the first sync; the running pod and the orphan are deleted, none created.
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("defaults: {runTime: 1h}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var sim struct {
		Attempts []struct {
			Pod    string `json:"pod"`
			Ending string `json:"ending"`
		} `json:"attempts"`
		Summary struct {
			Result      string `json:"result"`
			Reason      string `json:"reason"`
			PodsCreated int    `json:"podsCreated"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(jd.ok("simulate", "--from-cluster", "--kubeconfig", kubeconfig, "-n", ns, "--script", script, "-o", "json", "failjob")), &sim); err != nil {
		t.Fatal(err)
	}
	var played []string
	for _, a := range sim.Attempts {
		played = append(played, a.Pod+"="+a.Ending)
	}
	slices.Sort(played)
	if sim.Summary.Result != "Failed" || sim.Summary.Reason != "PodFailurePolicy" || sim.Summary.PodsCreated != 0 ||
		!slices.Equal(played, []string{"failjob-a=failedTheJobOrIndex", "failjob-b=deleted", "orphan=deleted"}) {
		t.Fatalf("simulate --from-cluster: %+v, attempts %v", sim.Summary, played)
	}

	// request: exactly the Job's pods and the orphan, the namespace from the context.
	writeKubeconfig(t, kubeconfig, ns, admin)
	var req struct {
		Job struct {
			Metadata struct{ Name, Namespace string }
		} `json:"job"`
		Pods []struct{ Metadata struct{ Name string } } `json:"pods"`
	}
	if err := json.Unmarshal([]byte(jd.ok("request", "--from-cluster", "--kubeconfig", kubeconfig, "failjob")), &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pod := range req.Pods {
		names = append(names, pod.Metadata.Name)
	}
	slices.Sort(names)
	if req.Job.Metadata.Namespace != ns || !slices.Equal(names, []string{"failjob-a", "failjob-b", "orphan"}) {
		t.Fatalf("request for job %s/%s with pods %v, want %s/failjob with [failjob-a failjob-b orphan]", req.Job.Metadata.Namespace, req.Job.Metadata.Name, names, ns)
	}

	// validate
	if out := jd.ok("validate", "--from-cluster", "--kubeconfig", kubeconfig, "failjob"); !strings.Contains(out, "job "+ns+"/failjob: valid") {
		t.Fatalf("validate: %q", out)
	}

	// The kubectl plugin: a link named kubectl-job_decider reads from the
	// cluster without --from-cluster, with KUBECONFIG as kubectl's plugins get it.
	plugin := filepath.Join(dir, "bin", "kubectl-job_decider")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, plugin); err != nil {
		t.Fatal(err)
	}
	kp := cli{t: t, bin: plugin, env: []string{"KUBECONFIG=" + kubeconfig}}
	if reason, _, ok := parsePlan(t, kp.ok("decide", "-n", ns, "failjob", "-o", "json")).failureTarget(); !ok || reason != "PodFailurePolicy" {
		t.Fatalf("plugin decide: FailureTarget ok=%v reason=%q", ok, reason)
	}
	if out := kp.ok("decide", "failjob"); !strings.Contains(out, "FailureTarget") {
		t.Fatalf("plugin decide -o text does not name FailureTarget:\n%s", out)
	}
	if out := kp.ok("validate", "failjob"); !strings.Contains(out, "valid") {
		t.Fatalf("plugin validate: %q", out)
	}
	// And through kubectl itself, which finds the plugin on PATH.
	kubectl, err := harness.KubectlBinary()
	if err != nil {
		t.Fatal(err)
	}
	k := cli{t: t, bin: kubectl, env: []string{"KUBECONFIG=" + kubeconfig, "PATH=" + filepath.Dir(plugin) + string(os.PathListSeparator) + os.Getenv("PATH")}}
	if reason, _, ok := parsePlan(t, k.ok("job-decider", "decide", "-n", ns, "failjob", "-o", "json")).failureTarget(); !ok || reason != "PodFailurePolicy" {
		t.Fatalf("kubectl job-decider decide: FailureTarget ok=%v reason=%q", ok, reason)
	}
	if out := k.ok("plugin", "list"); !strings.Contains(out, "kubectl-job_decider") {
		t.Fatalf("kubectl plugin list does not list the plugin:\n%s", out)
	}
	// kubectl hands --context to the plugin, and the plugin's exit code back.
	k.fails(1, []string{"job-decider", "decide", "--context", "nowhere", "failjob"}, "cannot reach https://127.0.0.1:")

	// Errors: short, and exit 2 for what the user named, 1 for the cluster.
	jd.fails(2, []string{"decide", "--from-cluster", "--kubeconfig", kubeconfig, "-n", ns, "no-such-job"},
		`job "no-such-job" not found in namespace "`+ns+`"`)
	jd.fails(2, []string{"validate", "--from-cluster", "--kubeconfig", kubeconfig, "no-such-job"}, "not found")
	jd.fails(2, []string{"decide", "--from-cluster", "--kubeconfig", kubeconfig, "--context", "no-such-context", "failjob"}, "--context no-such-context: no such context in the kubeconfig")
	jd.fails(2, []string{"decide", "--from-cluster", "--kubeconfig", filepath.Join(dir, "missing"), "failjob"}, "--kubeconfig "+filepath.Join(dir, "missing")+": No such file or directory")
	jd.fails(1, []string{"decide", "--from-cluster", "--kubeconfig", kubeconfig, "--context", "nowhere", "failjob"}, "cannot reach https://127.0.0.1:")

	// Unauthenticated: a token the API server does not know.
	bogus := filepath.Join(dir, "bogus.kubeconfig")
	writeKubeconfig(t, bogus, ns, &clientcmdapi.AuthInfo{Token: "not-a-token"})
	jd.fails(1, []string{"decide", "--from-cluster", "--kubeconfig", bogus, "failjob"}, "401 Unauthorized")

	// Forbidden: a service account no role grants anything.
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "nobody",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	nobody := filepath.Join(dir, "nobody.kubeconfig")
	writeKubeconfig(t, nobody, ns, &clientcmdapi.AuthInfo{Token: tok.Status.Token})
	jd.fails(1, []string{"decide", "--from-cluster", "--kubeconfig", nobody, "failjob"}, `jobs.batch "failjob" is forbidden`, `cannot get resource "jobs"`)
}

// writeAsKubectl writes the Job and the named pods as `kubectl get -o json`
// prints them, and returns the two files.
func writeAsKubectl(t *testing.T, ctx context.Context, dir, ns, name string, pods []string) (string, string) {
	t.Helper()
	job, err := e.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.APIVersion, job.Kind = "batch/v1", "Job"
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, n := range pods {
		pod, err := e.client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.APIVersion, pod.Kind = "v1", "Pod"
		list.Items = append(list.Items, *pod)
	}
	write := func(file string, v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("job.json", job), write("pods.json", list)
}
