package deploycheck

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"job-decider.dev/e2e/harness"
)

// kustomize renders one kustomization under deploy/.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.RenderKustomize(harness.DeployDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// helm renders the chart as release job-decider in namespace job-decider.
func helm(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.RenderChart(harness.DeployDir("helm", "job-decider"), "job-decider", "job-decider", values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// withMonitor is the chart's values for a layout, ServiceMonitors and the
// PrometheusRule on (the overlays ship them).
func withMonitor(layout string, tls bool) map[string]any {
	return map[string]any{
		"layout": layout,
		"tls":    map[string]any{"enabled": tls},
		"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
		},
	}
}

// sharded is the chart's values with shim.shards set.
func sharded(values map[string]any, shards int) map[string]any {
	values["shim"] = map[string]any{"shards": shards}
	return values
}

// pairs are the chart's renders and the kustomize overlay each must match.
var pairs = []pairValues{
	{"sidecar", "overlays/sidecar", "sidecar", false, 0},
	{"service", "overlays/service", "service", false, 0},
	{"tls", "overlays/tls", "service", true, 0},
	{"sharded", "overlays/sharded", "sidecar", false, 3},
}

// chartValues is the chart's values that render a pair's overlay.
func chartValues(p pairValues) map[string]any {
	v := withMonitor(p.layout, p.tls)
	if p.shards != 0 {
		v = sharded(v, p.shards)
	}
	return v
}

// pairValues is one pair: shards is shim.shards, 0 for the default.
type pairValues struct {
	name    string
	overlay string
	layout  string
	tls     bool
	shards  int
}

// allInstalls renders every install: the base, each overlay, the chart in each
// layout, sharded in each layout too.
func allInstalls(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	out := map[string][]*unstructured.Unstructured{"base": kustomize(t, "base")}
	for _, p := range pairs {
		out[p.overlay] = kustomize(t, p.overlay)
		out["helm "+p.name] = helm(t, chartValues(p))
	}
	out["helm defaults"] = helm(t, nil)
	out["helm sharded service"] = helm(t, sharded(withMonitor("service", false), 3))
	return out
}

func convert[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &v, true); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Namespace" { // helm install --create-namespace makes it
			continue
		}
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

func deployments(t *testing.T, objs []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			out[o.GetName()] = convert[appsv1.Deployment](t, o)
		}
	}
	return out
}

// statefulSets is the StatefulSets (the sharded shim's), by name.
func statefulSets(t *testing.T, objs []*unstructured.Unstructured) map[string]*appsv1.StatefulSet {
	t.Helper()
	out := map[string]*appsv1.StatefulSet{}
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" {
			out[o.GetName()] = convert[appsv1.StatefulSet](t, o)
		}
	}
	return out
}

// podSpecs is the pod template of every workload (Deployment, StatefulSet),
// by kind/name.
func podSpecs(t *testing.T, objs []*unstructured.Unstructured) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for name, d := range deployments(t, objs) {
		out["Deployment/"+name] = d.Spec.Template.Spec
	}
	for name, s := range statefulSets(t, objs) {
		out["StatefulSet/"+name] = s.Spec.Template.Spec
	}
	return out
}

// containerSummary is what must agree between the chart and an overlay for a
// container: image, args (as a set), env names, ports, probes, resources,
// mounts, security context, restart policy.
func containerSummary(c corev1.Container) string {
	args := append([]string(nil), c.Args...)
	sort.Strings(args)
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	sort.Strings(env)
	c.Args, c.Env = args, nil
	c.ImagePullPolicy = ""
	b, _ := sigsyaml.Marshal(struct {
		C   corev1.Container
		Env []string
	}{c, env})
	return string(b)
}

// The Helm chart renders the same objects as the kustomize overlay of the
// same layout: the same kinds and names, in each Deployment and StatefulSet
// the same containers (image, args, probes, resources, security context,
// mounts) and volumes, in each StatefulSet the same replicas, Service and
// pod management, the same alerting rules and the same dashboard. Labels
// may differ (Helm's own), nothing else that runs.
func TestHelmChartRendersTheOverlaysObjects(t *testing.T) {
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			k, h := kustomize(t, p.overlay), helm(t, chartValues(p))
			if a, b := strings.Join(ids(k), "\n"), strings.Join(ids(h), "\n"); a != b {
				t.Errorf("objects differ:\n%s:\n%s\nhelm:\n%s", p.overlay, a, b)
			}
			for _, kind := range []string{"PrometheusRule", "ConfigMap"} {
				ko, ho := byName(k, kind), byName(h, kind)
				for name, kobj := range ko {
					hobj, ok := ho[name]
					if !ok {
						continue // reported above
					}
					if a, b := mustYAML(kobj.Object["spec"]), mustYAML(hobj.Object["spec"]); a != b {
						t.Errorf("%s %s: spec differs:\n%s:\n%s\nhelm:\n%s", kind, name, p.overlay, a, b)
					}
					if a, b := mustYAML(kobj.Object["data"]), mustYAML(hobj.Object["data"]); a != b {
						t.Errorf("%s %s: data differs between %s and the chart", kind, name, p.overlay)
					}
					if a, b := kobj.GetLabels()["grafana_dashboard"], hobj.GetLabels()["grafana_dashboard"]; a != b {
						t.Errorf("%s %s: grafana_dashboard label %q, helm %q", kind, name, a, b)
					}
				}
			}
			hsts := statefulSets(t, h)
			for name, ksts := range statefulSets(t, k) {
				hsts, ok := hsts[name]
				if !ok {
					continue // reported above
				}
				type shape struct {
					Replicas            *int32
					ServiceName         string
					PodManagementPolicy appsv1.PodManagementPolicyType
				}
				a := shape{ksts.Spec.Replicas, ksts.Spec.ServiceName, ksts.Spec.PodManagementPolicy}
				b := shape{hsts.Spec.Replicas, hsts.Spec.ServiceName, hsts.Spec.PodManagementPolicy}
				if mustYAML(a) != mustYAML(b) {
					t.Errorf("StatefulSet %s differs:\n%s:\n%s\nhelm:\n%s", name, p.overlay, mustYAML(a), mustYAML(b))
				}
			}
			kd, hd := podSpecs(t, k), podSpecs(t, h)
			for name, ks := range kd {
				hs, ok := hd[name]
				if !ok {
					continue // reported above
				}
				for _, list := range []struct {
					what string
					k, h []corev1.Container
				}{{"containers", ks.Containers, hs.Containers}, {"initContainers", ks.InitContainers, hs.InitContainers}} {
					if len(list.k) != len(list.h) {
						t.Errorf("%s: %d %s in %s, %d in the chart", name, len(list.k), list.what, p.overlay, len(list.h))
						continue
					}
					for i := range list.k {
						if a, b := containerSummary(list.k[i]), containerSummary(list.h[i]); a != b {
							t.Errorf("%s: %s[%d] differs:\n%s:\n%s\nhelm:\n%s", name, list.what, i, p.overlay, a, b)
						}
					}
				}
				if a, b := mustYAML(ks.Volumes), mustYAML(hs.Volumes); a != b {
					t.Errorf("%s: volumes differ:\n%s:\n%s\nhelm:\n%s", name, p.overlay, a, b)
				}
				if a, b := mustYAML(ks.SecurityContext), mustYAML(hs.SecurityContext); a != b {
					t.Errorf("%s: pod securityContext differs:\n%s:\n%s\nhelm:\n%s", name, p.overlay, a, b)
				}
				if a, b := ks.ServiceAccountName, hs.ServiceAccountName; a != b {
					t.Errorf("%s: serviceAccountName %q, helm %q", name, a, b)
				}
			}
		})
	}
}

// byName is the objects of one kind, by name.
func byName(objs []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == kind {
			out[o.GetName()] = o
		}
	}
	return out
}

// Every overlay and the chart (by default too) ship the dashboard as a
// ConfigMap Grafana's sidecar loads, holding deploy/grafana/job-decider.json
// byte for byte, and the alerts as a PrometheusRule; the chart's rules find
// the targets of its own Services when it is installed under another name.
func TestAlertsAndDashboardShipWithEveryInstall(t *testing.T) {
	want, err := os.ReadFile(harness.DeployDir("grafana", "job-decider.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, objs := range allInstalls(t) {
		if name == "base" {
			continue // the base has no monitoring: the overlays add it
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			dashboards := 0
			for _, o := range objs {
				if o.GetKind() != "ConfigMap" || o.GetLabels()["grafana_dashboard"] != "1" {
					continue
				}
				dashboards++
				got, _, _ := unstructured.NestedString(o.Object, "data", "job-decider.json")
				if got != string(want) {
					t.Errorf("ConfigMap %s: data[job-decider.json] (%d bytes) is not deploy/grafana/job-decider.json (%d bytes)", o.GetName(), len(got), len(want))
				}
			}
			if dashboards != 1 {
				t.Errorf("%d dashboard ConfigMaps labelled grafana_dashboard: \"1\", want 1", dashboards)
			}
			rules := byName(objs, "PrometheusRule")
			if name == "helm defaults" {
				if len(rules) != 0 {
					t.Errorf("the chart's defaults render a PrometheusRule: it needs the Prometheus Operator's CRDs, off by default like the ServiceMonitor")
				}
				return
			}
			if len(rules) != 1 {
				t.Fatalf("%d PrometheusRules, want 1", len(rules))
			}
			for _, r := range rules {
				groups, _, _ := unstructured.NestedSlice(r.Object, "spec", "groups")
				alerts := 0
				for _, g := range groups {
					rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
					alerts += len(rs)
				}
				if alerts == 0 {
					t.Errorf("PrometheusRule %s has no rules", r.GetName())
				}
			}
		})
	}
	values := withMonitor("service", false)
	values["name"] = "jd"
	objs := helm(t, values)
	rule := byName(objs, "PrometheusRule")["jd"]
	if rule == nil {
		t.Fatalf("name=jd: no PrometheusRule jd among %v", ids(objs))
	}
	text := mustYAML(rule.Object["spec"])
	if !strings.Contains(text, "jd-metrics") || !strings.Contains(text, "jd-shim-metrics") || strings.Contains(text, "job-decider-metrics") || strings.Contains(text, "job-decider-shim-metrics") {
		t.Errorf("name=jd: the rules do not select the jobs jd-metrics and jd-shim-metrics:\n%s", text)
	}
	for _, svc := range []string{"jd-metrics", "jd-shim-metrics"} {
		if byName(objs, "Service")[svc] == nil {
			t.Errorf("name=jd: no Service %s, the job the rules select", svc)
		}
	}
}

func mustYAML(v any) string {
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// The values schema refuses what the chart cannot render sensibly, with an
// error naming the value.
func TestHelmValuesSchemaRefusesBadValues(t *testing.T) {
	chart := harness.DeployDir("helm", "job-decider")
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown layout", map[string]any{"layout": "daemonset"}, "layout"},
		{"tls in the sidecar layout", map[string]any{"layout": "sidecar", "tls": map[string]any{"enabled": true}}, "enabled"},
		{"tls without cert-manager or Secrets", map[string]any{"layout": "service", "tls": map[string]any{"enabled": true, "certManager": map[string]any{"enabled": false}}}, "SecretName"},
		{"latest tag", map[string]any{"images": map[string]any{"decider": map[string]any{"tag": "latest"}}}, "tag"},
		{"unknown value", map[string]any{"decider": map[string]any{"maxConcurrentRequest": 4}}, "maxConcurrentRequest"},
		{"budget not a quantity", map[string]any{"decider": map[string]any{"maxRequestBytesInFlight": "lots"}}, "maxRequestBytesInFlight"},
		{"no workers", map[string]any{"shim": map[string]any{"workers": 0}}, "workers"},
		{"no shards", map[string]any{"shim": map[string]any{"shards": 0}}, "shards"},
		{"shards not a number", map[string]any{"shim": map[string]any{"shards": "3"}}, "shards"},
		{"shards without leader election", map[string]any{"shim": map[string]any{"shards": 3, "leaderElect": false}}, "leaderElect"},
		{"misspelt rule toggle", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enable": true}}}, "enable"},
		{"dashboard namespace not a name", map[string]any{"metrics": map[string]any{"grafanaDashboard": map[string]any{"namespace": "Monitoring"}}}, "namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.RenderChart(chart, "job-decider", "job-decider", c.values)
			if err == nil {
				t.Fatalf("values %v rendered", c.values)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error does not name %q: %v", c.want, err)
			}
		})
	}
	// And the values it documents render.
	if _, err := harness.RenderChart(chart, "x", "y", map[string]any{"layout": "service", "tls": map[string]any{"enabled": true, "certManager": map[string]any{"enabled": false}, "deciderSecretName": "a", "shimSecretName": "b"}}); err != nil {
		t.Errorf("TLS with own Secrets: %v", err)
	}
}

var sizeFlag = regexp.MustCompile(`^--(max-request-bytes-in-flight|max-message-size)=(\d+)(KiB|MiB|GiB)$`)

// parseSize reads the server's byte flags as the manifests write them.
func parseSize(s string) (int64, error) {
	m := regexp.MustCompile(`^(\d+)(KiB|MiB|GiB)$`).FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q: want N followed by KiB, MiB or GiB", s)
	}
	var n int64
	fmt.Sscan(m[1], &n)
	return n << map[string]int{"KiB": 10, "MiB": 20, "GiB": 30}[m[2]], nil
}

// Every install keeps the rules deploy/README.md states: images tagged with a
// version from a real registry name (no :latest, no placeholder of GitHub's);
// every container non-root, read-only, no privilege escalation, all
// capabilities dropped, with a memory limit; the decider's limit at least
// 3 x its request-bytes budget + 10 MiB (the memory arithmetic) with the
// message size within the budget; the shim's role with jobs/finalizers; a
// scraper admitted to 9090 wherever a NetworkPolicy covers the decider.
func TestEveryInstallKeepsTheRules(t *testing.T) {
	for name, objs := range allInstalls(t) {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			finalizers := false
			for _, o := range objs {
				switch o.GetKind() {
				case "ClusterRole":
					for _, r := range convert[rbacv1.ClusterRole](t, o).Rules {
						for _, res := range r.Resources {
							if res == "jobs/finalizers" && strings.Contains(strings.Join(r.Verbs, ","), "update") {
								finalizers = true
							}
						}
					}
				case "Deployment":
					checkPod(t, o.GetName(), convert[appsv1.Deployment](t, o).Spec.Template.Spec)
				case "StatefulSet":
					checkPod(t, o.GetName(), convert[appsv1.StatefulSet](t, o).Spec.Template.Spec)
				}
			}
			if !finalizers {
				t.Errorf("the shim's ClusterRole lacks jobs/finalizers: update")
			}
		})
	}
}

// checkPod holds one workload's pod template (a Deployment's or a
// StatefulSet's) to the rules.
func checkPod(t *testing.T, name string, ps corev1.PodSpec) {
	t.Helper()
	if sc := ps.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("%s: pod securityContext not restricted: %+v", name, sc)
	}
	all := append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...)
	for _, c := range all {
		where := name + "/" + c.Name
		img := c.Image
		if strings.HasSuffix(img, ":latest") || !regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]+(:\d+)?/[a-z0-9./-]+:v\d+\.\d+\.\d+$`).MatchString(img) {
			t.Errorf("%s: image %q is not registry/name:vX.Y.Z", where, img)
		}
		if strings.Contains(img, "ghcr.io/example") {
			t.Errorf("%s: image %q is the old placeholder", where, img)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: container securityContext not restricted: %+v", where, sc)
		}
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			t.Errorf("%s: no memory limit", where)
			continue
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			t.Errorf("%s: no memory request", where)
		}
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			t.Errorf("%s: probes missing", where)
		}
		if len(c.Args) == 0 || c.Args[0] != "serve" {
			continue
		}
		// The decider: the memory arithmetic.
		var budget, message int64
		for _, a := range c.Args {
			if m := sizeFlag.FindStringSubmatch(a); m != nil {
				n, err := parseSize(m[2] + m[3])
				if err != nil {
					t.Fatal(err)
				}
				if m[1] == "max-request-bytes-in-flight" {
					budget = n
				} else {
					message = n
				}
			}
		}
		if budget == 0 || message == 0 {
			t.Errorf("%s: --max-request-bytes-in-flight and --max-message-size must be set (the limit is sized from them): %v", where, c.Args)
			continue
		}
		if message > budget {
			t.Errorf("%s: --max-message-size %d over the budget %d", where, message, budget)
		}
		need := resource.NewQuantity(3*budget+10<<20, resource.BinarySI)
		if limit.Cmp(*need) < 0 {
			t.Errorf("%s: memory limit %s under 3 x budget + 10 MiB = %s", where, limit.String(), need.String())
		}
		// One 100,000-pod call sent Kubernetes-shaped (77.2 MB, charged
		// 110 MiB with its pods' models) twice must fit the budget.
		if budget < 2*110<<20 {
			t.Errorf("%s: budget %d holds fewer than two 100,000-pod calls", where, budget)
		}
	}
}

// The sidecar layout, as the overlay and the chart render it: the decider is
// a native sidecar of the shim's pod, on a Unix socket in an emptyDir both
// mount, with the pod's fsGroup so the 0660 socket admits both, its probes on
// the plaintext health port; the shim dials the socket; nothing of the
// shared service is left. The sharded layout's StatefulSet has the same pod.
func TestSidecarLayout(t *testing.T) {
	for name, c := range map[string]struct {
		objs     []*unstructured.Unstructured
		workload string
	}{
		"overlays/sidecar":     {kustomize(t, "overlays/sidecar"), "Deployment/job-decider-shim"},
		"helm sidecar":         {helm(t, withMonitor("sidecar", false)), "Deployment/job-decider-shim"},
		"helm defaults":        {helm(t, nil), "Deployment/job-decider-shim"},
		"overlays/sharded":     {kustomize(t, "overlays/sharded"), "StatefulSet/job-decider-shim"},
		"helm sidecar sharded": {helm(t, sharded(withMonitor("sidecar", false), 3)), "StatefulSet/job-decider-shim"},
	} {
		objs := c.objs
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			pods := podSpecs(t, objs)
			if _, ok := pods[c.workload]; len(pods) != 1 || !ok {
				t.Fatalf("want one workload, %s; got %v", c.workload, ids(objs))
			}
			for _, o := range objs {
				if o.GetKind() == "HorizontalPodAutoscaler" || (o.GetKind() == "PodDisruptionBudget" && o.GetName() == "job-decider") ||
					(o.GetKind() == "Service" && (o.GetName() == "job-decider" || o.GetName() == "job-decider-headless")) {
					t.Errorf("%s %s belongs to the service layout", o.GetKind(), o.GetName())
				}
			}
			ps := pods[c.workload]
			if ps.SecurityContext == nil || ps.SecurityContext.FSGroup == nil {
				t.Errorf("no pod fsGroup: the socket (0660) would admit only the decider's UID")
			}
			if len(ps.InitContainers) != 1 {
				t.Fatalf("want the decider as the one init container, got %d", len(ps.InitContainers))
			}
			dec, shim := ps.InitContainers[0], ps.Containers[0]
			if dec.RestartPolicy == nil || *dec.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Errorf("the decider is not a native sidecar (restartPolicy Always)")
			}
			const sock = "unix:///run/job-decider/decider.sock"
			if !contains(dec.Args, "--addr="+sock) || !contains(dec.Args, "--health-addr=0.0.0.0:8081") || !contains(dec.Args, "--metrics-addr=0.0.0.0:9090") {
				t.Errorf("decider args %v", dec.Args)
			}
			if !contains(shim.Args, "--decider-addr="+sock) {
				t.Errorf("shim args %v do not dial the socket", shim.Args)
			}
			for _, p := range []*corev1.Probe{dec.StartupProbe, dec.LivenessProbe, dec.ReadinessProbe} {
				if p == nil || p.GRPC == nil || p.GRPC.Port != 8081 {
					t.Errorf("decider probe not gRPC on 8081: %+v", p)
				}
			}
			vol := ""
			for _, v := range ps.Volumes {
				if v.EmptyDir != nil {
					vol = v.Name
				}
			}
			for _, c := range []corev1.Container{dec, shim} {
				ok := false
				for _, m := range c.VolumeMounts {
					ok = ok || (m.Name == vol && m.MountPath == "/run/job-decider")
				}
				if vol == "" || !ok {
					t.Errorf("%s does not mount the emptyDir at /run/job-decider", c.Name)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Where a NetworkPolicy covers a pod that serves metrics, it admits the
// scraper to them, and each overlay has a ServiceMonitor whose endpoint ports
// a Service of the same install names.
func TestScrapingIsAdmitted(t *testing.T) {
	for name, objs := range allInstalls(t) {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			ports := map[string]bool{}
			monitors := 0
			for _, o := range objs {
				switch o.GetKind() {
				case "NetworkPolicy":
					found := false
					spec, _, _ := unstructured.NestedSlice(o.Object, "spec", "ingress")
					for _, rule := range spec {
						ps, _, _ := unstructured.NestedSlice(rule.(map[string]any), "ports")
						for _, p := range ps {
							if fmt.Sprint(p.(map[string]any)["port"]) == "9090" {
								found = true
							}
						}
					}
					if !found {
						t.Errorf("NetworkPolicy %s admits nobody to 9090", o.GetName())
					}
				case "Service":
					ps, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
					for _, p := range ps {
						ports[fmt.Sprint(p.(map[string]any)["name"])] = true
					}
				case "ServiceMonitor":
					monitors++
				}
			}
			for _, o := range objs {
				if o.GetKind() != "ServiceMonitor" {
					continue
				}
				eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
				for _, ep := range eps {
					if p := fmt.Sprint(ep.(map[string]any)["port"]); !ports[p] {
						t.Errorf("ServiceMonitor %s scrapes port %q that no Service names", o.GetName(), p)
					}
				}
			}
			if strings.HasPrefix(name, "overlays/") && monitors == 0 {
				t.Errorf("no ServiceMonitor")
			}
		})
	}
}

// The README's one-command installs name directories that exist.
func TestOneCommandInstallsExist(t *testing.T) {
	b, err := os.ReadFile(harness.DeployDir("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`kubectl apply -k (deploy/[\w/.-]+)`).FindAllStringSubmatch(string(b), -1) {
		dir := strings.TrimPrefix(m[1], "deploy/")
		if _, err := harness.RenderKustomize(harness.DeployDir(dir)); err != nil {
			t.Errorf("deploy/README.md: %s: %v", m[0], err)
		}
	}
}
