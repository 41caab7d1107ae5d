"""Over a Unix socket, the sidecar layout (run by test.sh under WITH_SERVER_SOCKET=1).

grpc-core sends a unix: target's socket path, percent-encoded, as :authority; the server must
take it (issue 26). The readiness check is grpc.health.v1.Health/Check from grpc-core, as a
sidecar's probe would make it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import grpc
import pytest

from conftest import NOW
from jobdecider import AsyncClient, Client, decide_job_request, pb, pb_grpc
from test_live import FIXED_NOW, _cli_plan

pytestmark = pytest.mark.unix_socket

# grpc.health.v1: HealthCheckRequest{service: ""} is empty on the wire; the answer
# HealthCheckResponse{status: SERVING} is field 1 (varint) = 1.
_HEALTH_CHECK = "/grpc.health.v1.Health/Check"
_SERVING = b"\x08\x01"


@pytest.fixture
def socket_addr(addr: str) -> str:
    """The server's unix:///abs/path target (tools/with-server.sh with WITH_SERVER_SOCKET=1)."""
    if not addr.startswith("unix://"):
        pytest.fail(f"JOB_DECIDER_ADDR={addr}: run with WITH_SERVER_SOCKET=1 tools/with-server.sh")
    return addr


def test_unix_socket_absolute_target_sync_and_asyncio(socket_addr: str, job: dict[str, Any], pods: dict[str, Any]) -> None:
    want = _cli_plan(NOW)
    request = decide_job_request(job, pods, now=FIXED_NOW)
    with Client(socket_addr) as client:
        assert client.decide_job(request) == want

    async def decide() -> pb.DecideJobResponse:
        async with AsyncClient(socket_addr) as client:
            return await client.decide_job(request)

    assert asyncio.run(decide()) == want


def test_unix_socket_relative_target(
    socket_addr: str, job: dict[str, Any], pods: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(socket_addr.removeprefix("unix://"))
    monkeypatch.chdir(path.parent)
    with Client(f"unix:{path.name}") as client:
        assert client.decide_job(decide_job_request(job, pods, now=FIXED_NOW)) == _cli_plan(NOW)


def test_unix_socket_bare_grpc_channel(socket_addr: str, job: dict[str, Any], pods: dict[str, Any]) -> None:
    # No option of ours: grpc-core's own authority for a unix: target.
    with grpc.insecure_channel(socket_addr) as channel:
        got = pb_grpc.JobDeciderStub(channel).DecideJob(decide_job_request(job, pods, now=FIXED_NOW), timeout=10)
    assert got == _cli_plan(NOW)


def test_unix_socket_health_check_serving(socket_addr: str) -> None:
    with grpc.insecure_channel(socket_addr) as channel:
        check: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(_HEALTH_CHECK)
        assert check(b"", timeout=10) == _SERVING
    assert os.path.exists(socket_addr.removeprefix("unix://"))
