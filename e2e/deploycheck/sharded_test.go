package deploycheck

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// flagValue is the value of --name=value among args, and whether it is set.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// envFromField is the fieldRef path an env var is set from, or "".
func envFromField(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// The sharded installs (the overlay, the chart with shim.shards in both
// layouts): the shim is a StatefulSet, no Deployment, of exactly as many
// replicas as its --shards, started in parallel, governed by a headless
// Service of the install that selects its pods; POD_NAME (the home shard's
// ordinal) and POD_NAMESPACE (the Leases' namespace) from the downward API;
// leader election on (a Lease per shard) with the Lease role bound to its
// service account; a PodDisruptionBudget letting one replica go at a time;
// in the sidecar layout the decider beside it, with a slot for every worker
// of every shard the replica may hold.
func TestShardedLayout(t *testing.T) {
	for name, c := range map[string]struct {
		objs    []*unstructured.Unstructured
		sidecar bool
		shards  int
	}{
		"overlays/sharded":      {kustomize(t, "overlays/sharded"), true, 3},
		"helm sidecar shards=3": {helm(t, sharded(withMonitor("sidecar", false), 3)), true, 3},
		"helm service shards=3": {helm(t, sharded(withMonitor("service", false), 3)), false, 3},
		"helm sidecar shards=5": {helm(t, sharded(map[string]any{}, 5)), true, 5},
		"helm service+tls sh=2": {helm(t, sharded(withMonitor("service", true), 2)), false, 2},
	} {
		objs := c.objs
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			if d := deployments(t, objs)["job-decider-shim"]; d != nil {
				t.Errorf("the shim is still a Deployment")
			}
			sts := statefulSets(t, objs)["job-decider-shim"]
			if sts == nil {
				t.Fatalf("no StatefulSet job-decider-shim among %v", ids(objs))
			}
			ps := sts.Spec.Template.Spec
			var shim *corev1.Container
			for i := range ps.Containers {
				if ps.Containers[i].Name == "shim" {
					shim = &ps.Containers[i]
				}
			}
			if shim == nil {
				t.Fatalf("no shim container in %v", ps.Containers)
			}
			v, ok := flagValue(shim.Args, "shards")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n != c.shards {
				t.Errorf("shim --shards=%q (set: %v), want %d", v, ok, c.shards)
			}
			if r := sts.Spec.Replicas; r == nil || int(*r) != n {
				t.Errorf("replicas %s, want --shards = %d: a replica per shard", mustYAML(r), n)
			}
			if sts.Spec.PodManagementPolicy != "Parallel" {
				t.Errorf("podManagementPolicy %q, want Parallel", sts.Spec.PodManagementPolicy)
			}
			if v, _ := flagValue(shim.Args, "leader-elect"); v != "true" {
				t.Errorf("--leader-elect=%q: each shard's Lease needs leader election on", v)
			}
			if _, ok := flagValue(shim.Args, "home-shard"); ok {
				t.Errorf("--home-shard set: every replica would have the same; it comes from POD_NAME's ordinal")
			}
			if got := envFromField(*shim, "POD_NAME"); got != "metadata.name" {
				t.Errorf("POD_NAME from %q, want the downward API's metadata.name", got)
			}
			if got := envFromField(*shim, "POD_NAMESPACE"); got != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE from %q, want metadata.namespace", got)
			}
			podLabels := labels.Set(sts.Spec.Template.Labels)
			if sel := labels.SelectorFromSet(sts.Spec.Selector.MatchLabels); !sel.Matches(podLabels) {
				t.Errorf("selector %v does not match the pods' labels %v", sel, podLabels)
			}
			svc := byName(objs, "Service")[sts.Spec.ServiceName]
			if svc == nil {
				t.Errorf("serviceName %q: no such Service", sts.Spec.ServiceName)
			} else {
				s := convert[corev1.Service](t, svc)
				if s.Spec.ClusterIP != corev1.ClusterIPNone || len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
					t.Errorf("Service %s is not headless over the shim's pods: %+v", s.Name, s.Spec)
				}
			}
			pdbs := 0
			for _, o := range objs {
				if o.GetKind() != "PodDisruptionBudget" {
					continue
				}
				p := convert[policyv1.PodDisruptionBudget](t, o)
				if p.Spec.Selector == nil || !labels.SelectorFromSet(p.Spec.Selector.MatchLabels).Matches(podLabels) {
					continue
				}
				pdbs++
				if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.MinAvailable != nil {
					t.Errorf("PodDisruptionBudget %s: maxUnavailable %v minAvailable %v, want one replica down at a time", p.Name, p.Spec.MaxUnavailable, p.Spec.MinAvailable)
				}
			}
			if pdbs != 1 {
				t.Errorf("%d PodDisruptionBudgets cover the shim's pods, want 1", pdbs)
			}
			checkLeaseRole(t, objs, ps.ServiceAccountName, sts.Namespace)
			if !c.sidecar {
				if len(ps.InitContainers) != 0 {
					t.Errorf("service layout with init containers %v", ps.InitContainers)
				}
				if v, _ := flagValue(shim.Args, "decider-addr"); !strings.HasPrefix(v, "dns:///") {
					t.Errorf("service layout: --decider-addr=%q", v)
				}
				return
			}
			if len(ps.InitContainers) != 1 || ps.InitContainers[0].RestartPolicy == nil || *ps.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Fatalf("the decider is not a native sidecar of the shim's pod: %v", ps.InitContainers)
			}
			workers, _ := flagValue(shim.Args, "workers")
			w, _ := strconv.Atoi(workers)
			slots, _ := flagValue(ps.InitContainers[0].Args, "max-concurrent-requests")
			s, _ := strconv.Atoi(slots)
			if w == 0 || s < w*n {
				t.Errorf("decider slots %q under --workers=%s x %d shards: a replica holding every shard would be shed", slots, workers, n)
			}
		})
	}
}

// checkLeaseRole requires a Role in ns granting get, create and update on
// leases, bound to the service account sa (one Lease per shard, by name, so
// no resourceNames).
func checkLeaseRole(t *testing.T, objs []*unstructured.Unstructured, sa, ns string) {
	t.Helper()
	granting := map[string]bool{}
	for _, o := range byName(objs, "Role") {
		r := convert[rbacv1.Role](t, o)
		for _, rule := range r.Rules {
			verbs := strings.Join(rule.Verbs, ",")
			if r.Namespace == ns && contains(rule.Resources, "leases") && contains(rule.APIGroups, "coordination.k8s.io") &&
				len(rule.ResourceNames) == 0 && strings.Contains(verbs, "get") && strings.Contains(verbs, "create") && strings.Contains(verbs, "update") {
				granting[r.Name] = true
			}
		}
	}
	for _, o := range byName(objs, "RoleBinding") {
		b := convert[rbacv1.RoleBinding](t, o)
		if b.Namespace != ns || b.RoleRef.Kind != "Role" || !granting[b.RoleRef.Name] {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == ns {
				return
			}
		}
	}
	t.Errorf("no Role in %s granting leases get/create/update is bound to the service account %s", ns, sa)
}

// Without shim.shards (and in the overlays but the sharded one) the shim is
// today's: a Deployment, run without --shards or POD_NAME.
func TestUnshardedInstallsAreUnchanged(t *testing.T) {
	for name, objs := range allInstalls(t) {
		if strings.Contains(name, "sharded") {
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			if len(statefulSets(t, objs)) != 0 {
				t.Errorf("a StatefulSet in an unsharded install")
			}
			d := deployments(t, objs)["job-decider-shim"]
			if d == nil {
				t.Fatalf("no shim Deployment among %v", ids(objs))
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if _, ok := flagValue(c.Args, "shards"); ok {
					t.Errorf("%s: --shards set", c.Name)
				}
				if envFromField(c, "POD_NAME") != "" {
					t.Errorf("%s: POD_NAME set", c.Name)
				}
			}
		})
	}
}
