"""A server at one slot (run by test.sh under WITH_SERVER_ARGS="--max-concurrent-requests 1").

30 calls at once from threads on one Client all succeed: the retry policy of the service config
retries UNAVAILABLE (OVERLOADED). The same load on a bare channel, without that service config,
gets UNAVAILABLE for some, which is what makes the first half mean something.

It runs in a pytest of its own (test.sh), under a server of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from jobdecider import Client, DecideError, decide_job_request, pb_grpc
from test_live import FIXED_NOW

pytestmark = pytest.mark.one_slot

CALLS = 30


def _at_once(call: Callable[[], object]) -> list[grpc.StatusCode]:
    """Runs `call` CALLS times at once; the status code of each (OK or the error's)."""
    start = threading.Barrier(CALLS)

    def one() -> grpc.StatusCode:
        start.wait()
        try:
            call()
        except DecideError as err:
            return err.code
        except grpc.RpcError as err:
            code: grpc.StatusCode = err.code()
            return code
        return grpc.StatusCode.OK

    with ThreadPoolExecutor(CALLS) as pool:
        return list(pool.map(lambda _: one(), range(CALLS)))


def test_overload_one_slot_thirty_concurrent_calls_all_succeed(
    addr: str, job: dict[str, Any], pods: dict[str, Any]
) -> None:
    request = decide_job_request(job, pods, now=FIXED_NOW)
    # Without the service config: the server at one slot refuses some of the calls.
    with grpc.insecure_channel(addr) as channel:
        stub = pb_grpc.JobDeciderStub(channel)
        bare = _at_once(lambda: stub.DecideJob(request, timeout=10))
    assert grpc.StatusCode.UNAVAILABLE in bare, bare
    assert set(bare) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, bare
    # The Client's own service config: the retries carry every call through.
    with Client(addr) as client:
        got = _at_once(lambda: client.decide_job(request))
    assert got == [grpc.StatusCode.OK] * CALLS, got
