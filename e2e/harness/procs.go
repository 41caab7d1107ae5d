// Package harness runs the pieces of an end-to-end test: the job-decider
// server and the shim as child processes, and helpers that play the kubelet's
// part by writing pod status.
package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"job-decider.dev/e2e/cluster"
	"job-decider.dev/e2e/proc"
)

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// DeciderBinary finds the job-decider server: $JOB_DECIDER_BIN, else the
// release build, else the debug build at the repository root.
func DeciderBinary() (string, error) {
	if bin := os.Getenv("JOB_DECIDER_BIN"); bin != "" {
		return bin, nil
	}
	for _, profile := range []string{"release", "debug"} {
		bin := filepath.Join(repoRoot(), "target", profile, "job-decider")
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	return "", fmt.Errorf("no job-decider binary: set JOB_DECIDER_BIN or run `cargo build --release` at %s", repoRoot())
}

var (
	shimOnce sync.Once
	shimPath string
	shimErr  error
)

// ShimBinary builds the shim once per test binary (Go's build cache makes
// later builds a link only) and returns its path.
func ShimBinary() (string, error) {
	shimOnce.Do(func() {
		if bin := os.Getenv("JOB_DECIDER_SHIM_BIN"); bin != "" {
			shimPath = bin
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		// One place, rebuilt by each test binary (a link, with Go's
		// build cache): no binary left behind per run.
		dir := filepath.Join(cache, "job-decider-e2e", "shim")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			shimErr = err
			return
		}
		shimPath = filepath.Join(dir, "job-decider-shim")
		// Built aside and renamed into place, which is safe even while
		// an older copy runs.
		tmp := fmt.Sprintf("%s.%d", shimPath, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/job-decider-shim")
		cmd.Dir = filepath.Join(repoRoot(), "shim")
		if out, err := cmd.CombinedOutput(); err != nil {
			shimErr = fmt.Errorf("building the shim: %v\n%s", err, out)
			return
		}
		shimErr = os.Rename(tmp, shimPath)
	})
	return shimPath, shimErr
}

// Process is a child process with its output in a log file.
type Process = proc.Process

// StartProcess starts bin with args, its output appended to logPath.
func StartProcess(name, logPath, bin string, args ...string) (*Process, error) {
	return proc.Start(name, logPath, bin, args...)
}

// Decider is a running job-decider server.
type Decider struct {
	*Process
	Addr        string
	MetricsAddr string
	bin, log    string
	args        []string
}

// StartDecider starts the job-decider server on loopback and waits until
// it accepts connections. Extra arguments go after serve's own.
func StartDecider(dir string, extra ...string) (*Decider, error) {
	bin, err := DeciderBinary()
	if err != nil {
		return nil, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	mport, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	d := &Decider{Addr: "127.0.0.1:" + strconv.Itoa(port), MetricsAddr: "127.0.0.1:" + strconv.Itoa(mport), bin: bin, log: filepath.Join(dir, "job-decider.log")}
	d.args = append([]string{"serve", "--addr", d.Addr, "--metrics-addr", d.MetricsAddr, "--log-level", "warn"}, extra...)
	if err := d.start(); err != nil {
		return nil, err
	}
	return d, nil
}

// Restart starts the server again on the same addresses, with the same
// arguments, once the previous process has ended (a service outage's end).
// Only a server from StartDecider can be restarted.
func (d *Decider) Restart() error {
	if d.bin == "" {
		return fmt.Errorf("job-decider: not started by StartDecider, cannot restart")
	}
	if d.Process != nil && !d.Exited() {
		return fmt.Errorf("job-decider is still running")
	}
	return d.start()
}

func (d *Decider) start() error {
	var err error
	d.Process, err = StartProcess("job-decider", d.log, d.bin, d.args...)
	if err != nil {
		return err
	}
	if err := waitTCP(d.Addr, d.Process, 30*time.Second); err != nil {
		d.Kill()
		return fmt.Errorf("job-decider did not start: %v\n%s", err, d.Tail(30))
	}
	return nil
}

func waitTCP(addr string, p *Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("exited: %v", p.Err())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after %s", addr, timeout)
}

// ShimOptions configure one shim process.
type ShimOptions struct {
	Kubeconfig     string
	DeciderAddr    string
	ControllerName string
	// LogPath receives the output of every start.
	LogPath string
	// Args are extra flags.
	Args []string
	// Identity is the leader-election identity; the shim picks a fresh
	// one at each start when empty. A restart with the identity of the
	// process it replaces takes the Lease over at once.
	Identity string
	// Env is added to the shim's environment (NAME=value), as a pod's
	// downward API would set it.
	Env []string
}

// Shim is a restartable shim process.
type Shim struct {
	opts     ShimOptions
	bin      string
	mu       sync.Mutex
	proc     *Process
	HTTPAddr string
	Starts   int
}

// NewShim prepares a shim; call Start to run it.
func NewShim(opts ShimOptions) (*Shim, error) {
	bin, err := ShimBinary()
	if err != nil {
		return nil, err
	}
	return &Shim{opts: opts, bin: bin}, nil
}

// Start runs the shim and waits until it reports ready.
func (s *Shim) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	s.HTTPAddr = "127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--kubeconfig=" + s.opts.Kubeconfig,
		"--decider-addr=" + s.opts.DeciderAddr,
		"--controller-name=" + s.opts.ControllerName,
		"--http-addr=" + s.HTTPAddr,
	}
	if s.opts.Identity != "" {
		args = append(args, "--leader-elect-identity="+s.opts.Identity)
	}
	args = append(args, s.opts.Args...)
	s.proc, err = proc.StartWithEnv("shim", s.opts.LogPath, s.bin, s.opts.Env, args...)
	if err != nil {
		return err
	}
	s.Starts++
	return waitTCP(s.HTTPAddr, s.proc, 30*time.Second)
}

// Process returns the current process.
func (s *Shim) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Kill kills the current process with SIGKILL.
func (s *Shim) Kill() {
	if p := s.Process(); p != nil {
		p.Kill()
	}
}

// Stop stops the current process gracefully.
func (s *Shim) Stop() {
	if p := s.Process(); p != nil {
		p.Stop(30 * time.Second)
	}
}

// RequireStarted is Start that fails the test.
func (s *Shim) RequireStarted(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("starting the shim: %v\n%s", err, s.Process().Tail(30))
	}
}

// SetIdentity sets the leader-election identity of the following starts.
func (s *Shim) SetIdentity(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Identity = id
}

// DropArg removes an extra flag for the following starts.
func (s *Shim) DropArg(arg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Args = slices.DeleteFunc(s.opts.Args, func(a string) bool { return a == arg })
}
