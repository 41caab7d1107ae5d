package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// DeployDir is a directory under deploy/ in the repository.
func DeployDir(elem ...string) string {
	return filepath.Join(append([]string{repoRoot(), "deploy"}, elem...)...)
}

// RenderKustomize builds a kustomization with kustomize's own library, as
// `kubectl apply -k` would.
func RenderKustomize(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON, so numbers are int64 as in objects from the API.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// RenderChart renders a Helm chart with Helm's own library, as `helm
// template` does: the values are coalesced with the chart's defaults and
// checked against its values.schema.json (an error names what the schema
// refused). NOTES.txt and empty documents are left out.
func RenderChart(chartDir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", chartDir, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		manifests := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(manifests))
		for k := range manifests {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			doc := manifests[k]
			if strings.TrimSpace(doc) == "" {
				continue
			}
			data, err := sigsyaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: not YAML: %w\n%s", name, err, doc)
			}
			if string(data) == "null" || string(data) == "{}" {
				continue
			}
			o := &unstructured.Unstructured{}
			if err := o.UnmarshalJSON(data); err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", name, err, doc)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// CRDFiles downloads (through the Go module proxy, with `go mod download` in
// e2e/crds, whose go.mod and go.sum pin them) the modules that ship the CRDs
// the deploy manifests use, and returns the CRD files: ServiceMonitor and
// PrometheusRule from the Prometheus Operator, Certificate and Issuer from
// cert-manager.
func CRDFiles(ctx context.Context) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json",
		"github.com/cert-manager/cert-manager", "github.com/prometheus-operator/prometheus-operator")
	cmd.Dir = filepath.Join(repoRoot(), "e2e", "crds")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download in e2e/crds: %v\n%s%s", err, out, stderr.String())
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Dir, Error string }
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if m.Error != "" {
			return nil, fmt.Errorf("go mod download %s: %s", m.Path, m.Error)
		}
		dirs[m.Path] = m.Dir
	}
	cm, po := dirs["github.com/cert-manager/cert-manager"], dirs["github.com/prometheus-operator/prometheus-operator"]
	if cm == "" || po == "" {
		return nil, fmt.Errorf("go mod download gave no directory for a CRD module: %v", dirs)
	}
	return []string{
		filepath.Join(po, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(po, "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml"),
		filepath.Join(cm, "deploy", "crds", "cert-manager.io_certificates.yaml"),
		filepath.Join(cm, "deploy", "crds", "cert-manager.io_issuers.yaml"),
	}, nil
}

// ReadCRD reads one CustomResourceDefinition from a YAML file.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 64*1024).Decode(crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
	}
	return crd, nil
}

// IgnoreAlreadyExists is nil for an AlreadyExists error.
func IgnoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// StartDeciderWithArgs starts the job-decider server with exactly args (as a
// manifest gives them, addresses rewritten for the test) and waits until the
// Unix socket at socketPath accepts connections.
func StartDeciderWithArgs(dir, socketPath string, args []string) (*Decider, error) {
	bin, err := DeciderBinary()
	if err != nil {
		return nil, err
	}
	d := &Decider{Addr: "unix://" + socketPath}
	d.Process, err = StartProcess("job-decider", filepath.Join(dir, "job-decider.log"), bin, args...)
	if err != nil {
		return nil, err
	}
	if err := waitUnix(socketPath, d.Process, 30*time.Second); err != nil {
		d.Kill()
		return nil, fmt.Errorf("job-decider did not start: %v\n%s", err, d.Tail(30))
	}
	return d, nil
}

// WaitTCP waits until addr accepts connections while p runs.
func WaitTCP(addr string, p *Process, timeout time.Duration) error {
	return waitTCP(addr, p, timeout)
}
