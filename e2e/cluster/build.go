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
	stamp, err := sourceStamp(src)
	if err != nil {
		return Binaries{}, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "job-decider-e2e", "controlplane-"+stamp[:16])
	bins := Binaries{APIServer: filepath.Join(out, "kube-apiserver"), Etcd: filepath.Join(out, "etcd")}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Binaries{}, err
	}
	unlock, err := lockFile(filepath.Join(out, ".lock"))
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if exists(bins.APIServer) && exists(bins.Etcd) && exists(filepath.Join(out, ".done")) {
		return bins, nil
	}
	start := time.Now()
	logf("building kube-apiserver and etcd from Go modules into %s (first run only; several minutes on 2 cores)", out)
	cmd := exec.Command("go", "build", "-o", out+string(filepath.Separator), "k8s.io/kubernetes/cmd/kube-apiserver", "./etcd")
	cmd.Dir = src
	output, err := cmd.CombinedOutput()
	if err != nil {
		return Binaries{}, fmt.Errorf("building the control plane: %v\n%s", err, output)
	}
	if err := os.WriteFile(filepath.Join(out, ".done"), []byte(time.Since(start).String()+"\n"), 0o644); err != nil {
		return Binaries{}, err
	}
	logf("control plane built in %s", time.Since(start).Round(time.Second))
	return bins, nil
}

// sourceStamp hashes what decides the built binaries: the module files, the
// etcd entry point and the Go toolchain.
func sourceStamp(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")} {
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
