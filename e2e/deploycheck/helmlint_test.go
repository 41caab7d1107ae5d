package deploycheck

import (
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"job-decider.dev/e2e/harness"
)

// `helm lint --strict` on the chart, through Helm's own library, for the
// defaults and each layout: no finding at all, not even informational ones
// (a missing icon is the one Helm reports for any chart without it).
func TestHelmLint(t *testing.T) {
	chart := harness.DeployDir("helm", "job-decider")
	kube := &chartutil.KubeVersion{Version: "v1.32.0", Major: "1", Minor: "32"}
	for name, values := range map[string]map[string]any{
		"defaults":    nil,
		"service":     withMonitor("service", false),
		"service+tls": withMonitor("service", true),
		"sidecar":     withMonitor("sidecar", false),
		// shim.shards: the shim a StatefulSet, in each layout.
		"sidecar sharded": sharded(withMonitor("sidecar", false), 3),
		"service sharded": sharded(withMonitor("service", true), 3),
	} {
		t.Run(name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chart, values, "job-decider", kube)
			for _, m := range l.Messages {
				if m.Severity == support.InfoSev && m.Err != nil && m.Err.Error() == "icon is recommended" {
					continue
				}
				t.Errorf("helm lint: %s", m)
			}
		})
	}
}
