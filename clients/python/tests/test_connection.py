"""The connection behaviour every client shares (clients/README.md's table), against a scripted
in-process server: retries, deadlines, message size, options, and TLS from a Secret's directory."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from datetime import timedelta
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from conftest import EXAMPLE, cli
from fake_server import ScriptedDecider
from jobdecider import SERVICE_CONFIG_WITH_THROTTLING, AsyncClient, Client, DecideError, credentials_from_dir, decide_job_request, pb, pb_grpc
from jobdecider import _client as connection
from jobdecider.rpc import error_details_pb2, status_pb2

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE

# The service config of the behaviour table (BEHAVIOUR-26), verbatim.
TABLE_SERVICE_CONFIG = json.loads(
    '{"loadBalancingConfig":[{"round_robin":{}}], "methodConfig":[{"name":[{"service":"jobdecider.v1.JobDecider"}],'
    ' "retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"2s","backoffMultiplier":2,'
    '"retryableStatusCodes":["UNAVAILABLE"]}}]}'
)


def test_retries_are_not_throttled_unless_asked() -> None:
    # Throttling would stop retrying a burst at one slot after five failures (issue 26).
    options = dict(connection.DEFAULT_OPTIONS)
    assert "retryThrottling" not in json.loads(str(options["grpc.service_config"]))
    assert SERVICE_CONFIG_WITH_THROTTLING["retryThrottling"] == {"maxTokens": 10, "tokenRatio": 0.1}


def test_constants_are_the_behaviour_table() -> None:
    options = dict(connection.DEFAULT_OPTIONS)
    assert json.loads(str(options["grpc.service_config"])) == TABLE_SERVICE_CONFIG
    assert options["grpc.enable_retries"] == 1
    assert options["grpc.keepalive_time_ms"] == 30_000
    assert options["grpc.keepalive_timeout_ms"] == 10_000
    assert options["grpc.keepalive_permit_without_calls"] == 0
    assert options["grpc.max_receive_message_length"] == 64 * 1024 * 1024
    assert options["grpc.max_send_message_length"] == -1
    assert connection.DEFAULT_TIMEOUT == 10.0


def test_overload_unavailable_is_retried_until_it_succeeds() -> None:
    with ScriptedDecider([UNAVAILABLE] * 3) as server, Client(server.addr) as client:
        client.decide_job(pb.DecideJobRequest())
        assert server.attempts == 4
    # The same answers through a bare channel (no service config): the first one is the caller's.
    with ScriptedDecider([UNAVAILABLE]) as server, grpc.insecure_channel(server.addr) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            pb_grpc.JobDeciderStub(channel).DecideJob(pb.DecideJobRequest(), timeout=5)
        assert caught.value.code() == UNAVAILABLE
        assert server.attempts == 1


def test_overload_retry_asyncio() -> None:
    async def decide(addr: str) -> None:
        async with AsyncClient(addr) as client:
            await client.decide_job(pb.DecideJobRequest())

    with ScriptedDecider([UNAVAILABLE] * 2) as server:
        asyncio.run(decide(server.addr))
        assert server.attempts == 3


def test_retry_stops_after_four_attempts_within_the_deadline() -> None:
    with ScriptedDecider([UNAVAILABLE] * 10) as server, Client(server.addr) as client:
        started = time.monotonic()
        with pytest.raises(DecideError) as caught:
            client.decide_job(pb.DecideJobRequest())
        assert caught.value.code == UNAVAILABLE
        assert server.attempts == 4
        # Three backoffs of at most 0.1, 0.2 and 0.4 s (full jitter).
        assert time.monotonic() - started < 3
        # Every attempt carries the one deadline (grpc-timeout rounds up a little), none a fresh one.
        times = [t for t in server.remaining if t is not None]
        assert len(times) == 4 and all(t <= 10.2 for t in times)


def test_retry_throttling_stops_retries_after_five_failures() -> None:
    # Opt-in: tokens start at 10 and each failed attempt takes one; retries go on only while
    # more than 5 are left. (grpc-core keeps the tokens per server name: this port is new.)
    throttled = [("grpc.service_config", json.dumps(SERVICE_CONFIG_WITH_THROTTLING))]
    with ScriptedDecider([UNAVAILABLE] * 8) as server, Client(server.addr, options=throttled) as client:
        for _ in range(4):
            with pytest.raises(DecideError):
                client.decide_job(pb.DecideJobRequest())
        # 4 attempts for the first call (tokens 10 -> 6), then one each (5, 4, 3): no retries.
        assert server.attempts == 4 + 1 + 1 + 1


def test_overloaded_error_carries_the_retry_delay() -> None:
    # What the server sends with OVERLOADED (issue 26): RetryInfo beside ErrorInfo.
    status = status_pb2.Status(code=UNAVAILABLE.value[0], message="overloaded")
    status.details.add().Pack(
        error_details_pb2.ErrorInfo(reason="OVERLOADED", domain="jobdecider.dev")
    )
    retry = error_details_pb2.RetryInfo()
    retry.retry_delay.FromMilliseconds(120)
    status.details.add().Pack(retry)
    with ScriptedDecider([UNAVAILABLE] * 4) as server, Client(server.addr) as client:
        server.details = status
        with pytest.raises(DecideError) as caught:
            client.decide_job(pb.DecideJobRequest())
    assert caught.value.retry_delay == timedelta(milliseconds=120)
    assert caught.value.error_info is not None and caught.value.error_info.reason == "OVERLOADED"


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INTERNAL]
)
def test_only_unavailable_is_retried(code: grpc.StatusCode) -> None:
    with ScriptedDecider([code]) as server, Client(server.addr) as client:
        with pytest.raises(DecideError) as caught:
            client.decide_job(pb.DecideJobRequest())
        assert caught.value.code == code
        assert server.attempts == 1


def test_default_deadline_is_ten_seconds_and_a_call_may_override_it() -> None:
    with ScriptedDecider() as server:
        with Client(server.addr) as client:
            client.decide_job(pb.DecideJobRequest())
            client.decide_job(pb.DecideJobRequest(), timeout=2.5)
            client.decide_job(pb.DecideJobRequest(), timeout=None)
        with Client(server.addr, timeout=None) as client:
            client.decide_job(pb.DecideJobRequest())
        default, override, per_call_none, client_none = server.remaining
    # grpc-timeout carries the deadline rounded up a little.
    assert default is not None and 9 < default <= 10.2
    assert override is not None and 2 < override <= 2.6
    # No grpc-timeout: the server sees no deadline (grpc reports None or an "infinite" one).
    assert all(t is None or t > 1e9 for t in (per_call_none, client_none))


def test_receives_a_response_over_grpc_default_4_mib() -> None:
    big = pb.DecideJobRequest(controller_name=str(5 * 1024 * 1024))
    with ScriptedDecider() as server, Client(server.addr) as client:
        assert len(client.decide_job(big).explanation.summary) == 5 * 1024 * 1024


def test_channel_options_pass_through_and_win() -> None:
    big = pb.DecideJobRequest(controller_name="1000")
    with ScriptedDecider() as server, Client(server.addr, options=[("grpc.max_receive_message_length", 100)]) as client:
        with pytest.raises(DecideError) as caught:
            client.decide_job(big)
        assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    with ScriptedDecider([UNAVAILABLE]) as server, Client(server.addr, options=[("grpc.enable_retries", 0)]) as client:
        with pytest.raises(DecideError):
            client.decide_job(pb.DecideJobRequest())
        assert server.attempts == 1
    assert [k for k, _ in connection.channel_options([("grpc.enable_retries", 0)])].count("grpc.enable_retries") == 1


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    """A CA, a server certificate for localhost and a client certificate, in cert-manager's layout.

    The client's directory is tmp_path/client (ca.crt, tls.crt, tls.key); the server's files are
    in tmp_path/server.
    """
    client, server = tmp_path / "client", tmp_path / "server"
    client.mkdir()
    server.mkdir()
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=tmp_path)
    for name, ext in [("server", "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")]:
        (tmp_path / f"{name}.ext").write_text(ext + "\n")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", f"{name}/tls.key", "-out", f"{name}.csr", cwd=tmp_path)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}/tls.crt", cwd=tmp_path)
    (client / "ca.crt").write_bytes((tmp_path / "ca.crt").read_bytes())
    return tmp_path


@pytest.fixture
def tls_server(pki: Path) -> Iterator[int]:
    """job-decider serving mutual TLS on a free loopback port; yields the port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    server = pki / "server"
    proc = subprocess.Popen(
        [str(cli()), "serve", "--addr", f"127.0.0.1:{port}", "--metrics-addr", "127.0.0.1:0", "--log-level", "warn",
         "--tls-cert", str(server / "tls.crt"), "--tls-key", str(server / "tls.key"),
         "--tls-client-ca", str(pki / "ca.crt")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None, "the TLS server exited"
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def _request() -> pb.DecideJobRequest:
    return decide_job_request((EXAMPLE / "job.json").read_text(), (EXAMPLE / "pods.json").read_text())


def test_tls_from_a_cert_manager_directory(pki: Path, tls_server: int) -> None:
    with Client(f"localhost:{tls_server}", tls_dir=pki / "client") as client:
        assert len(client.decide_job(_request()).actions) > 0

    async def decide() -> int:
        async with AsyncClient(f"localhost:{tls_server}", tls_dir=pki / "client") as client:
            return len((await client.decide_job(_request())).actions)

    assert asyncio.run(decide()) > 0
    # 127.0.0.1 is not the certificate's name; server_name says which name to check.
    with Client(f"127.0.0.1:{tls_server}", tls_dir=pki / "client", server_name="localhost") as client:
        assert len(client.decide_job(_request()).actions) > 0


def test_tls_server_refuses_a_client_without_certificate(pki: Path, tls_server: int) -> None:
    ca_only = pki / "ca-only"
    ca_only.mkdir()
    (ca_only / "ca.crt").write_bytes((pki / "ca.crt").read_bytes())
    with Client(f"localhost:{tls_server}", tls_dir=ca_only, timeout=5) as client:
        with pytest.raises(DecideError) as caught:
            client.decide_job(_request())
    assert caught.value.code == UNAVAILABLE


def test_tls_directory_errors(tmp_path: Path, pki: Path) -> None:
    with pytest.raises(ValueError, match="ca.crt"):
        credentials_from_dir(tmp_path / "nothing")
    half = tmp_path / "half"
    half.mkdir()
    (half / "ca.crt").write_bytes((pki / "ca.crt").read_bytes())
    (half / "tls.crt").write_bytes((pki / "client" / "tls.crt").read_bytes())
    with pytest.raises(ValueError, match="go together"):
        credentials_from_dir(half)
    args: dict[str, Any] = {"credentials": credentials_from_dir(pki / "client"), "tls_dir": pki / "client"}
    with pytest.raises(ValueError, match="not both"):
        Client("localhost:1", **args)
