#!/usr/bin/env python3
"""How long `job-decider serve` takes to exit on SIGTERM while idle clients
hold connections open: an idle HTTP/2 (gRPC) connection, a TCP connection
that never sends a byte, and a half-sent HTTP/1 request on /metrics.

    cargo build --release && python3 tools/shutdown-under-idle-clients.py [binary]

Prints the seconds from SIGTERM to exit for each case and all together,
against the shutdown grace (20 s). Loopback only.
"""
import signal
import socket
import subprocess
import sys
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/job-decider"
GRACE = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_open(port):
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"port {port} never opened")


def idle_http2(port, _metrics):
    s = socket.create_connection(("127.0.0.1", port))
    # The client preface and an empty SETTINGS frame: an HTTP/2 connection with no call.
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    return s


def silent_tcp(port, _metrics):
    return socket.create_connection(("127.0.0.1", port))


def half_sent_metrics(_port, metrics):
    s = socket.create_connection(("127.0.0.1", metrics))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    return s


def run(clients):
    port, metrics = free_port(), free_port()
    server = subprocess.Popen(
        [BINARY, "serve", f"--addr=127.0.0.1:{port}", f"--metrics-addr=127.0.0.1:{metrics}",
         f"--shutdown-grace={GRACE}s", "--log-level=warn"],
        stderr=subprocess.DEVNULL)
    try:
        wait_open(port)
        wait_open(metrics)
        held = [client(port, metrics) for client in clients]
        time.sleep(0.5)
        started = time.time()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=GRACE + 30)
        except subprocess.TimeoutExpired:
            return f"still running {GRACE + 30} s after SIGTERM"
        elapsed = time.time() - started
        for s in held:
            s.close()
        return f"{elapsed:6.2f} s"
    finally:
        if server.poll() is None:
            server.kill()


def main():
    cases = [("idle HTTP/2 connection", [idle_http2]),
             ("silent TCP connection", [silent_tcp]),
             ("half-sent /metrics request", [half_sent_metrics]),
             ("all three", [idle_http2, silent_tcp, half_sent_metrics])]
    print(f"binary {BINARY}, shutdown grace {GRACE}s")
    for name, clients in cases:
        print(f"{name:28} exit after SIGTERM: {run(clients)}")


if __name__ == "__main__":
    main()
