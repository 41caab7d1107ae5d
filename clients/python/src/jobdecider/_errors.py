"""DecideError: a failed call, with the google.rpc details the server attaches."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from dataclasses import dataclass, field
from typing import Any

import grpc

from .rpc.error_details_pb2 import BadRequest
from .rpc.error_details_pb2 import ErrorInfo as ErrorInfoPb
from .rpc.error_details_pb2 import RetryInfo
from .rpc.status_pb2 import Status

# The trailer in which gRPC carries a serialized google.rpc.Status with the error's details.
_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    """One bad field of a request (google.rpc.BadRequest.FieldViolation)."""

    #: Path of the field in the request, e.g. `job.metadata.uid`.
    field: str
    #: What is wrong with it.
    description: str
    #: Stable machine-readable reason, when the server gives one.
    reason: str = ""


@dataclass(frozen=True)
class ErrorInfo:
    """Why the call failed, in stable machine-readable terms (google.rpc.ErrorInfo)."""

    #: e.g. `INVALID_SNAPSHOT`, `INVALID_JOB`, `OVERLOADED`.
    reason: str
    #: The service that answered: `jobdecider.dev`.
    domain: str
    #: Further facts, e.g. `violations` and `violationsOmitted` when the details list only some.
    metadata: dict[str, str] = field(default_factory=dict)


class DecideError(Exception):
    """A call to job-decider that failed: its gRPC status and the details the server attached.

    Bad input comes back as INVALID_ARGUMENT with `field_violations` naming each bad field;
    every error the server itself answers carries an `error_info`. Errors of the transport
    (server unreachable, deadline passed in flight) have neither.
    """

    #: The gRPC status code, e.g. grpc.StatusCode.INVALID_ARGUMENT.
    code: grpc.StatusCode
    #: The status message.
    message: str
    #: The request's bad fields (google.rpc.BadRequest), in the server's order.
    field_violations: list[FieldViolation]
    #: The google.rpc.ErrorInfo, when the server sent one.
    error_info: ErrorInfo | None
    #: How long the server asks the caller to wait before trying again (google.rpc.RetryInfo,
    #: sent with OVERLOADED), when it asks. The client's retries already waited as told; this is
    #: for a caller that requeues after the last attempt failed.
    retry_delay: timedelta | None
    #: The whole google.rpc.Status from the trailer, for details not decoded here.
    status: Status | None

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        field_violations: Iterable[FieldViolation] = (),
        error_info: ErrorInfo | None = None,
        retry_delay: timedelta | None = None,
        status: Status | None = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.field_violations = list(field_violations)
        self.error_info = error_info
        self.retry_delay = retry_delay
        self.status = status

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> DecideError:
        """Decodes a grpc (sync) or grpc.aio error, with its grpc-status-details-bin trailer."""
        # Both grpc.Call (sync errors) and grpc.aio.AioRpcError have these methods; RpcError
        # itself declares none of them.
        call: Any = err
        code: grpc.StatusCode = call.code()
        message: str = call.details() or ""
        status = _status_from_trailers(call.trailing_metadata())
        violations: list[FieldViolation] = []
        info: ErrorInfo | None = None
        delay: timedelta | None = None
        if status is not None:
            for detail in status.details:
                bad_request = BadRequest()
                error_info = ErrorInfoPb()
                retry_info = RetryInfo()
                if detail.Unpack(retry_info) and delay is None:
                    delay = retry_info.retry_delay.ToTimedelta()
                elif detail.Unpack(bad_request):
                    violations.extend(
                        FieldViolation(v.field, v.description, v.reason) for v in bad_request.field_violations
                    )
                elif detail.Unpack(error_info) and info is None:
                    info = ErrorInfo(error_info.reason, error_info.domain, dict(error_info.metadata))
        return cls(code, message, field_violations=violations, error_info=info, retry_delay=delay, status=status)


def _status_from_trailers(trailers: Any) -> Status | None:
    """The google.rpc.Status in the trailers, or None when there is none."""
    for key, value in trailers or ():
        if key == _DETAILS_KEY and isinstance(value, bytes):
            return Status.FromString(value)
    return None
