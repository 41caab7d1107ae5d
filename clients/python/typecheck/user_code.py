"""What a user's controller writes against the installed package: test.sh type-checks this file
with mypy --strict from outside the repository's mypy configuration, against the built wheel."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import grpc

from jobdecider import DEFAULT_TIMEOUT, Client, DecideError, NotLeanError, decide_job_request, pb
from jobdecider.rpc import error_details_pb2, status_pb2


def retry_delay(status: status_pb2.Status) -> timedelta | None:
    """The server's google.rpc.RetryInfo, typed through jobdecider.rpc."""
    info = error_details_pb2.RetryInfo()
    for detail in status.details:
        if detail.Unpack(info):
            return info.retry_delay.ToTimedelta()
    return None


def sync(client: Client, job: dict[str, Any], pods: list[dict[str, Any]], state: pb.ControllerState | None) -> tuple[pb.ControllerState | None, float | None]:
    """One sync: the new state to keep and the seconds to requeue after."""
    try:
        request = decide_job_request(job, pods, now=datetime.now(timezone.utc), state=state, controller_name="example.com/mine")
    except NotLeanError:
        request = decide_job_request(job, pods, state=state, lean=False)
    try:
        plan = client.decide_job(request, timeout=DEFAULT_TIMEOUT / 2)
    except DecideError as err:
        if err.code == grpc.StatusCode.UNAVAILABLE and err.status is not None:
            delay = retry_delay(err.status)
            return state, delay.total_seconds() if delay else 1.0
        raise
    bad: list[error_details_pb2.BadRequest.FieldViolation] = []
    print(len(plan.actions), len(bad))
    return (plan.state if plan.HasField("state") else state), (
        plan.requeue_after.ToTimedelta().total_seconds() if plan.HasField("requeue_after") else None
    )
