package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	kubectlOnce sync.Once
	kubectlPath string
	kubectlErr  error
)

// KubectlBinary returns a kubectl: $KUBECTL, else one built once per test
// binary from the k8s.io/kubectl module this module pins (../kubectl; Go's
// build cache makes later builds a link only).
func KubectlBinary() (string, error) {
	kubectlOnce.Do(func() {
		if bin := os.Getenv("KUBECTL"); bin != "" {
			kubectlPath = bin
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "job-decider-e2e", "kubectl")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			kubectlErr = err
			return
		}
		kubectlPath = filepath.Join(dir, "kubectl")
		// Built aside and renamed into place, as the shim is.
		tmp := fmt.Sprintf("%s.%d", kubectlPath, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "./kubectl")
		cmd.Dir = filepath.Join(repoRoot(), "e2e")
		if out, err := cmd.CombinedOutput(); err != nil {
			kubectlErr = fmt.Errorf("building kubectl: %v\n%s", err, out)
			return
		}
		kubectlErr = os.Rename(tmp, kubectlPath)
	})
	return kubectlPath, kubectlErr
}
