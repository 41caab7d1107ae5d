package tests

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/harness"
)

// buildDeploy renders deploy/base, as `kubectl kustomize` would.
func buildDeploy(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.RenderKustomize(harness.DeployDir("base"))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// installs are every way deploy/ installs job-decider: the base, each
// kustomize overlay, and the Helm chart in both layouts (with TLS through
// cert-manager in the service layout), each rendered by the tool's own
// library.
func installs(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	out := map[string][]*unstructured.Unstructured{}
	for _, o := range []string{"base", "overlays/sidecar", "overlays/service", "overlays/tls", "overlays/sharded"} {
		objs, err := harness.RenderKustomize(harness.DeployDir(o))
		if err != nil {
			t.Fatal(err)
		}
		out["kustomize "+o] = objs
	}
	chart := harness.DeployDir("helm", "job-decider")
	// ServiceMonitors and the PrometheusRule on, as the overlays ship them.
	monitoring := func() map[string]any {
		return map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
		}
	}
	for name, values := range map[string]map[string]any{
		"sidecar":     {"layout": "sidecar", "metrics": monitoring()},
		"service":     {"layout": "service", "metrics": monitoring()},
		"service+tls": {"layout": "service", "tls": map[string]any{"enabled": true}, "metrics": monitoring()},
		"sharded":     {"layout": "sidecar", "shim": map[string]any{"shards": 3}, "metrics": monitoring()},
	} {
		objs, err := harness.RenderChart(chart, "job-decider", "job-decider", values)
		if err != nil {
			t.Fatalf("helm template (%s): %v", name, err)
		}
		out["helm "+name] = objs
	}
	return out
}

// installCRDs creates the CRDs the manifests use (ServiceMonitor and
// PrometheusRule, cert-manager's Certificate and Issuer), from the modules
// e2e/crds pins, and waits until the API server serves them.
func installCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	files, err := harness.CRDFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := apiextensionsclient.NewForConfigOrDie(e.cluster.Config)
	for _, f := range files {
		crd, err := harness.ReadCRD(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); harness.IgnoreAlreadyExists(err) != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
		err = harness.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
}

// Every install of deploy/ (the base, the sidecar, service and tls overlays,
// the Helm chart in both layouts) renders and is accepted by the real API
// server, object by object (server-side apply, dry run), with the CRDs it
// uses installed: a manifest the API rejects fails here.
func TestDeployManifestsDryRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := installs(t)

	kinds := map[string]int{}
	for _, o := range all["kustomize base"] {
		kinds[o.GetKind()]++
	}
	for _, want := range []string{"Namespace", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
		"NetworkPolicy", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		if kinds[want] == 0 {
			t.Errorf("deploy/base has no %s", want)
		}
	}
	if kinds["Deployment"] != 2 {
		t.Errorf("%d Deployments, want 2 (service and shim)", kinds["Deployment"])
	}
	// Every overlay and the chart ship the alerts and the dashboard, so the
	// dry run below puts them before the API server too.
	for name, objs := range all {
		if name == "kustomize base" {
			continue
		}
		has := map[string]bool{}
		for _, o := range objs {
			has[o.GetKind()] = has[o.GetKind()] || o.GetKind() != "ConfigMap" || o.GetLabels()["grafana_dashboard"] == "1"
		}
		if !has["PrometheusRule"] || !has["ConfigMap"] {
			t.Errorf("%s: no PrometheusRule or no dashboard ConfigMap", name)
		}
	}

	installCRDs(t, ctx)
	// Dry-run objects in a namespace need the namespace to exist.
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "job-decider"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the namespace: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(e.cluster.Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(e.cluster.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		objs := all[name]
		if len(objs) == 0 {
			t.Errorf("%s renders nothing", name)
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: %s %s: %v", name, gvk, o.GetName(), err)
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
				if o.GetNamespace() == "" {
					t.Errorf("%s: %s %s has no namespace", name, gvk.Kind, o.GetName())
				}
			}
			data, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
				FieldManager: "e2e-deploy-test",
				DryRun:       []string{metav1.DryRunAll},
				Force:        ptr.To(true),
			})
			if err != nil {
				t.Errorf("%s: server-side dry run of %s %s/%s: %v", name, gvk.Kind, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
}

// The shim runs with nothing but the ServiceAccount and RBAC of deploy/: a
// verb it uses and the manifests do not grant fails the Job here.
func TestShimRunsWithDeployRBAC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "job-decider.dev/rbac-test"
	shim := startShimWithDeployRBAC(t, ctx, name, "rbac")
	// Without jobs/finalizers: update, the OwnerReferencesPermissionEnforcement
	// plugin (on in the e2e API server) refuses every pod the shim creates:
	// say so rather than only "waiting for 2 active pods".
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, line := range strings.Split(shim.Process().Tail(400), "\n") {
			if strings.Contains(line, "forbidden") {
				t.Logf("the shim was refused (first of its refusals): %s", line)
				return
			}
		}
	})

	ns := newNamespace(t)
	j := start(t, newJob(ns, "rbac", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
	}), time.Minute)
	pods := j.waitActive(2)
	// The pods' owner references block their owner's foreground deletion,
	// as upstream's: what needs jobs/finalizers under the admission plugin.
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s: controller reference %+v without blockOwnerDeletion", p.Name, ref)
		}
	}
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 2, 0)
	j.waitFinalizersGone()
	// Events were recorded too.
	err := harness.Poll(ctx, 100*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := e.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "SuccessfulCreate" && ev.Source.Component == "job-decider-shim" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no SuccessfulCreate event: %v", err)
	}
	if log := shim.Process().Tail(400); strings.Contains(log, "forbidden") {
		t.Errorf("the shim was refused something:\n%s", log)
	}
}

// startShimWithDeployRBAC applies the ServiceAccount and RBAC objects of
// deploy/ and starts a shim (controller name, Lease lease) that talks to the
// API server with nothing but a token of that ServiceAccount. Tests that run
// it in parallel apply the same objects; server-side apply makes that safe.
func startShimWithDeployRBAC(t *testing.T, ctx context.Context, name, lease string) *harness.Shim {
	t.Helper()
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "job-decider"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the namespace: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(e.cluster.Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(e.cluster.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, o := range buildDeploy(t) {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		data, _ := o.MarshalJSON()
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "e2e-rbac-test", Force: ptr.To(true)}); err != nil {
			t.Fatalf("applying %s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
	tok, err := e.client.CoreV1().ServiceAccounts("job-decider").CreateToken(ctx, "job-decider-shim",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	kubeconfig := filepath.Join(e.dir, lease+"-shim.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: e.cluster.URL, CertificateAuthorityData: e.cluster.Config.CAData}
	cfg.AuthInfos["shim"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "shim"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     kubeconfig,
		DeciderAddr:    e.decider.Addr,
		ControllerName: name,
		LogPath:        filepath.Join(e.dir, lease+"-shim.log"),
		Args:           append(fastShimArgs(lease), "--leader-elect-namespace=job-decider"),
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	t.Cleanup(shim.Stop)
	return shim
}

// The sidecar layout run as far as a cluster without a kubelet allows, from
// the manifest itself: the decider and the shim started with exactly the
// args of deploy/overlays/sidecar's containers (the emptyDir's mount point
// rewritten to a temporary directory, the ports to free loopback ones, the
// controller name to this test's), sharing the socket. The decider serves
// its health and metrics ports, the socket is 0660, and a Job completes.
func TestSidecarManifestRunsAJob(t *testing.T) {
	t.Parallel()
	var d appsv1.Deployment
	pod := &d.Spec.Template.Spec
	if !renderedObject(t, "Deployment", "job-decider-shim", &d, "overlays", "sidecar") || len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("the sidecar overlay has no shim Deployment with the decider beside it")
	}
	const mount = "/run/job-decider"
	dir := t.TempDir()
	ports := map[string]string{}
	for _, p := range []string{"0.0.0.0:8081", "0.0.0.0:9090"} {
		port, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[p] = "127.0.0.1:" + strconv.Itoa(port)
	}
	rewrite := func(a string) string {
		a = strings.ReplaceAll(a, mount, dir)
		for from, to := range ports {
			a = strings.ReplaceAll(a, from, to)
		}
		return a
	}
	var deciderArgs []string
	for _, a := range pod.InitContainers[0].Args {
		deciderArgs = append(deciderArgs, rewrite(a))
	}
	socket := filepath.Join(dir, "decider.sock")
	if !slices.Contains(deciderArgs, "--addr=unix://"+socket) {
		t.Fatalf("the decider's args %v do not serve %s", pod.InitContainers[0].Args, mount+"/decider.sock")
	}
	logDir := filepath.Join(e.dir, "sidecar-manifest")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	decider, err := harness.StartDeciderWithArgs(logDir, socket, deciderArgs)
	if err != nil {
		t.Fatal(err)
	}
	defer decider.Stop(10 * time.Second)
	for _, addr := range ports {
		if err := harness.WaitTCP(addr, decider.Process, 10*time.Second); err != nil {
			t.Errorf("the decider's port %s (probes, metrics): %v", addr, err)
		}
	}
	if info, err := os.Stat(socket); err != nil || info.Mode().Perm() != 0o660 {
		t.Errorf("socket: %v, %v; want mode 0660", info, err)
	}
	resp, err := http.Get("http://" + ports["0.0.0.0:9090"] + "/metrics")
	if err != nil {
		t.Errorf("metrics: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("metrics: %s", resp.Status)
		}
	}

	// The shim's own args, but those the harness sets for the test.
	const name = "job-decider.dev/sidecar-manifest-test"
	var shimArgs []string
	deciderAddr := ""
	for _, a := range pod.Containers[0].Args {
		a = rewrite(a)
		switch {
		case strings.HasPrefix(a, "--decider-addr="):
			deciderAddr = strings.TrimPrefix(a, "--decider-addr=")
		case strings.HasPrefix(a, "--controller-name="), strings.HasPrefix(a, "--http-addr="):
		default:
			shimArgs = append(shimArgs, a)
		}
	}
	if deciderAddr != decider.Addr {
		t.Fatalf("the shim dials %q, the decider serves %q", deciderAddr, decider.Addr)
	}
	shim, err := harness.NewShim(harness.ShimOptions{
		Kubeconfig:     e.cluster.Kubeconfig,
		DeciderAddr:    deciderAddr,
		ControllerName: name,
		LogPath:        filepath.Join(logDir, "shim.log"),
		Args:           append(shimArgs, "--leader-elect-namespace=default", "--leader-elect-name=shim-sidecar-manifest", "--pod-event-batch-period=50ms"),
	})
	if err != nil {
		t.Fatal(err)
	}
	shim.RequireStarted(t)
	defer shim.Stop()

	ns := newNamespace(t)
	j := start(t, newJob(ns, "sidecar-manifest", func(job *batchv1.Job) {
		job.Spec.ManagedBy = ptr.To(name)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.Completions = ptr.To[int32](2)
	}), time.Minute)
	pods := j.waitActive(2)
	j.finish(pods, harness.Succeeded())
	j.waitCondition(batchv1.JobComplete)
	j.expectCounts(0, 2, 0)
}
