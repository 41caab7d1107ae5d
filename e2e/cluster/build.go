package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Binaries are the control-plane executables a cluster runs.
type Binaries struct {
	APIServer string
	Etcd      string
}

// controlPlaneDir is the module that pins kube-apiserver and etcd; it sits
// beside this package in the source tree.
func controlPlaneDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the cluster package's source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "controlplane")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("control-plane module not found: %w", err)
	}
	return filepath.Clean(dir), nil
}

// EnsureBinaries returns kube-apiserver and etcd executables, building them
// from Go modules the first time. Prebuilt binaries can be named with
// TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD (envtest's variables).
//
// Built binaries live under the user cache directory, keyed by a hash of the
// control-plane module's files and the Go version, so later runs reuse them
// without even linking. A file lock keeps concurrent test binaries from
// building twice.
func EnsureBinaries(logf func(format string, args ...any)) (Binaries, error) {
	if a, e := os.Getenv("TEST_ASSET_KUBE_APISERVER"), os.Getenv("TEST_ASSET_ETCD"); a != "" && e != "" {
		return Binaries{APIServer: a, Etcd: e}, nil
	}
	src, err := controlPlaneDir()
	if err != nil {
		return Binaries{}, err
	}
	out, err := cachedBuild(logf, src, "controlplane", []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")},
		"", "kube-apiserver and etcd", "k8s.io/kubernetes/cmd/kube-apiserver", "./etcd")
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{APIServer: filepath.Join(out, "kube-apiserver"), Etcd: filepath.Join(out, "etcd")}, nil
}

// EnsureControllerManager returns a kube-controller-manager executable built
// from the control-plane module (the same pinned k8s.io/kubernetes as the API
// server), or $TEST_ASSET_KUBE_CONTROLLER_MANAGER. It is a separate build step
// from EnsureBinaries, cached beside it, so that tests that need no controller
// manager never build one.
func EnsureControllerManager(logf func(format string, args ...any)) (string, error) {
	if bin := os.Getenv("TEST_ASSET_KUBE_CONTROLLER_MANAGER"); bin != "" {
		return bin, nil
	}
	src, err := controlPlaneDir()
	if err != nil {
		return "", err
	}
	out, err := cachedBuild(logf, src, "controlplane", []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")},
		"kcm", "kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager")
	if err != nil {
		return "", err
	}
	return filepath.Join(out, "kube-controller-manager"), nil
}

// FindControllerManager returns a kube-controller-manager executable that
// needs no build: $TEST_ASSET_KUBE_CONTROLLER_MANAGER, or an earlier
// EnsureControllerManager's. Tests outside the benchmark use it to skip
// rather than start a half-hour build.
func FindControllerManager() (string, bool) {
	if bin := os.Getenv("TEST_ASSET_KUBE_CONTROLLER_MANAGER"); bin != "" {
		return bin, exists(bin)
	}
	src, err := controlPlaneDir()
	if err != nil {
		return "", false
	}
	out, err := cacheDir(src, "controlplane", []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")})
	if err != nil || !isBuilt(out, "kcm", "k8s.io/kubernetes/cmd/kube-controller-manager") {
		return "", false
	}
	return filepath.Join(out, "kube-controller-manager"), true
}

// EnsureKWOK returns a kwok executable built from its own pinned module
// (controlplane/kwok: KWOK requires other k8s.io versions than the control
// plane), or $TEST_ASSET_KWOK.
func EnsureKWOK(logf func(format string, args ...any)) (string, error) {
	if bin := os.Getenv("TEST_ASSET_KWOK"); bin != "" {
		return bin, nil
	}
	cp, err := controlPlaneDir()
	if err != nil {
		return "", err
	}
	out, err := cachedBuild(logf, filepath.Join(cp, "kwok"), "kwok", []string{"go.mod", "go.sum"},
		"", "kwok", "sigs.k8s.io/kwok/cmd/kwok")
	if err != nil {
		return "", err
	}
	return filepath.Join(out, "kwok"), nil
}

// cachedBuild builds pkgs of the module in src into
// <cache>/job-decider-e2e/<prefix>-<stamp>, unless an earlier build with the
// same stamp (the stamp files and the Go version) finished there. step names
// the build's marker so that several build steps can share one directory.
func cachedBuild(logf func(format string, args ...any), src, prefix string, stampFiles []string, step, what string, pkgs ...string) (string, error) {
	out, err := cacheDir(src, prefix, stampFiles)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(out, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isBuilt(out, step, pkgs...) {
		return out, nil
	}
	start := time.Now()
	logf("building %s from Go modules into %s (first run only; several minutes on 2 cores)", what, out)
	cmd := exec.Command("go", append([]string{"build", "-o", out + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = src
	output, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", what, err, output)
	}
	if err := os.WriteFile(filepath.Join(out, buildMarker(step)), []byte(time.Since(start).String()+"\n"), 0o644); err != nil {
		return "", err
	}
	logf("%s built in %s", what, time.Since(start).Round(time.Second))
	return out, nil
}

// cacheDir is where a build of src's module with these stamp files lives.
func cacheDir(src, prefix string, stampFiles []string) (string, error) {
	stamp, err := sourceStamp(src, stampFiles)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "job-decider-e2e", prefix+"-"+stamp[:16]), nil
}

// buildMarker names the file a finished build step leaves.
func buildMarker(step string) string {
	if step == "" {
		return ".done"
	}
	return ".done-" + step
}

// isBuilt reports whether step finished in out with every package's binary.
func isBuilt(out, step string, pkgs ...string) bool {
	built := exists(filepath.Join(out, buildMarker(step)))
	for _, pkg := range pkgs {
		built = built && exists(filepath.Join(out, filepath.Base(pkg)))
	}
	return built
}

// sourceStamp hashes what decides the built binaries: the module files (for
// the control plane also the etcd entry point) and the Go toolchain.
func sourceStamp(dir string, files []string) (string, error) {
	h := sha256.New()
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", name)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h.Write(goVersion)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
