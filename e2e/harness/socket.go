package harness

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"job-decider.dev/e2e/cluster"
)

// StartDeciderOnSocket starts the job-decider server with its gRPC API on
// the Unix socket at path (as the sidecar layout runs it; metrics stay on a
// loopback port) and waits until the socket accepts connections. Addr is
// the socket as a gRPC target, unix:///path, which the shim dials as is.
// Extra arguments go after serve's own.
func StartDeciderOnSocket(dir, path string, extra ...string) (*Decider, error) {
	bin, err := DeciderBinary()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	mport, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	d := &Decider{Addr: "unix://" + abs, MetricsAddr: "127.0.0.1:" + strconv.Itoa(mport)}
	args := append([]string{"serve", "--addr", d.Addr, "--metrics-addr", d.MetricsAddr, "--log-level", "warn"}, extra...)
	d.Process, err = StartProcess("job-decider", filepath.Join(dir, "job-decider.log"), bin, args...)
	if err != nil {
		return nil, err
	}
	if err := waitUnix(abs, d.Process, 30*time.Second); err != nil {
		d.Kill()
		return nil, fmt.Errorf("job-decider did not start: %v\n%s", err, d.Tail(30))
	}
	return d, nil
}

func waitUnix(path string, p *Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("exited: %v", p.Err())
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after %s", path, timeout)
}
