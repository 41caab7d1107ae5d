"""Client and AsyncClient: the JobDecider service behind methods that raise DecideError.

Both open their channel with the connection behaviour every job-decider client shares (the
table in clients/README.md): the values are the constants below and nowhere else.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grpc import aio

from .v1 import job_decider_pb2 as pb
from .v1 import job_decider_pb2_grpc as pb_grpc
from ._errors import DecideError

# --- The connection behaviour (clients/README.md, "One connection behaviour") -------------------
#: Seconds a call may take unless the caller says otherwise: shorter than the server's own 30 s
#: request timeout, so the server's DECISION_TIMEOUT can surface. The deadline travels as
#: grpc-timeout and covers every retry attempt.
DEFAULT_TIMEOUT = 10.0
#: The service every retry policy names.
SERVICE_NAME = "jobdecider.v1.JobDecider"
#: Attempts in all (the first and up to three retries), on UNAVAILABLE only.
RETRY_MAX_ATTEMPTS = 4
#: The first backoff; each next one doubles up to the maximum. grpc-core waits a random time
#: in [0, backoff] (full jitter) and honours the server's grpc-retry-pushback-ms trailer.
RETRY_INITIAL_BACKOFF = 0.1
RETRY_BACKOFF_MULTIPLIER = 2
RETRY_MAX_BACKOFF = 2.0
RETRY_STATUS_CODES = ("UNAVAILABLE",)
#: Retry throttling, opt-in (SERVICE_CONFIG_WITH_THROTTLING): retries stop while the channel's
#: tokens are at or below half of max. Off by default: at these values grpc-core stops retrying
#: after five failed attempts, so a burst against a server that sheds load with OVERLOADED (and
#: says when to come back) would fail calls the retry policy alone carries.
RETRY_THROTTLING_MAX_TOKENS = 10
RETRY_THROTTLING_TOKEN_RATIO = 0.1
#: Balance over every address a dns:/// name resolves to (a headless Service), as the shim does.
LOAD_BALANCING_POLICY = "round_robin"
#: HTTP/2 keepalive: a ping every 30 s while calls are open, the connection failed after 10 s
#: without an answer (the server pings on the same schedule).
KEEPALIVE_TIME = 30.0
KEEPALIVE_TIMEOUT = 10.0
KEEPALIVE_PERMIT_WITHOUT_CALLS = False
#: The largest response accepted (a plan for a large Job); requests are not limited here (the
#: server's --max-request-bytes answers RESOURCE_EXHAUSTED).
MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024

#: The gRPC service config: round_robin and the retry policy.
SERVICE_CONFIG: dict[str, Any] = {
    "loadBalancingConfig": [{LOAD_BALANCING_POLICY: {}}],
    "methodConfig": [
        {
            "name": [{"service": SERVICE_NAME}],
            "retryPolicy": {
                "maxAttempts": RETRY_MAX_ATTEMPTS,
                "initialBackoff": f"{RETRY_INITIAL_BACKOFF:g}s",
                "maxBackoff": f"{RETRY_MAX_BACKOFF:g}s",
                "backoffMultiplier": RETRY_BACKOFF_MULTIPLIER,
                "retryableStatusCodes": list(RETRY_STATUS_CODES),
            },
        }
    ],
}

#: SERVICE_CONFIG with gRPC's retry throttling, for callers who prefer fewer retries under
#: sustained overload: `options=[("grpc.service_config", json.dumps(SERVICE_CONFIG_WITH_THROTTLING))]`.
SERVICE_CONFIG_WITH_THROTTLING: dict[str, Any] = {
    **SERVICE_CONFIG,
    "retryThrottling": {
        "maxTokens": RETRY_THROTTLING_MAX_TOKENS,
        "tokenRatio": RETRY_THROTTLING_TOKEN_RATIO,
    },
}

#: The channel options both clients start from; options the caller passes replace these by key.
DEFAULT_OPTIONS: tuple[tuple[str, str | int], ...] = (
    ("grpc.service_config", json.dumps(SERVICE_CONFIG, separators=(",", ":"))),
    ("grpc.enable_retries", 1),
    ("grpc.keepalive_time_ms", int(KEEPALIVE_TIME * 1000)),
    ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT * 1000)),
    ("grpc.keepalive_permit_without_calls", int(KEEPALIVE_PERMIT_WITHOUT_CALLS)),
    ("grpc.max_receive_message_length", MAX_RECEIVE_MESSAGE_BYTES),
    ("grpc.max_send_message_length", -1),
)
# ---------------------------------------------------------------------------------------------

#: A gRPC channel option, as grpc.insecure_channel(options=...) takes it.
ChannelOption = tuple[str, Any]


class _Default(enum.Enum):
    """The marker of a per-call timeout left to the client's own."""

    TIMEOUT = enum.auto()


#: A call's deadline: seconds, None for no deadline, or the client's default when left out.
Timeout = float | None | _Default


def _deadline(timeout: Timeout, default: float | None) -> float | None:
    """A call's deadline: its own, or the client's when the call left it out."""
    return default if isinstance(timeout, _Default) else timeout


def channel_options(options: Sequence[ChannelOption] = ()) -> list[ChannelOption]:
    """The defaults above with `options` applied: a key the caller gives replaces the default's."""
    given = {key for key, _ in options}
    return [(k, v) for k, v in DEFAULT_OPTIONS if k not in given] + list(options)


def credentials_from_dir(
    tls_dir: str | Path,
) -> grpc.ChannelCredentials:
    """TLS credentials from a directory laid out as a cert-manager Secret.

    `ca.crt` is the CA to trust (required); `tls.crt` and `tls.key`, when both are present,
    are the client certificate and key for mutual TLS. A mounted Secret is such a directory.
    """
    path = Path(tls_dir)
    ca = path / "ca.crt"
    if not ca.is_file():
        raise ValueError(f"{ca}: missing; a TLS directory needs ca.crt (the CA to trust)")
    cert, key = path / "tls.crt", path / "tls.key"
    if cert.is_file() != key.is_file():
        raise ValueError(f"{path}: tls.crt and tls.key go together (a client certificate and its key)")
    if cert.is_file():
        return grpc.ssl_channel_credentials(ca.read_bytes(), key.read_bytes(), cert.read_bytes())
    return grpc.ssl_channel_credentials(ca.read_bytes())


def _channel_setup(
    credentials: grpc.ChannelCredentials | None,
    tls_dir: str | Path | None,
    server_name: str | None,
    options: Sequence[ChannelOption],
) -> tuple[grpc.ChannelCredentials | None, list[ChannelOption]]:
    """The credentials (from the TLS directory when given) and the channel options."""
    if credentials is not None and tls_dir is not None:
        raise ValueError("give credentials or tls_dir, not both")
    if tls_dir is not None:
        credentials = credentials_from_dir(tls_dir)
    extra: list[ChannelOption] = []
    if server_name is not None:
        if credentials is None:
            raise ValueError("server_name is the TLS server name: give credentials or tls_dir too")
        extra.append(("grpc.ssl_target_name_override", server_name))
    return credentials, channel_options([*extra, *options])


class Client:
    """A blocking client on one channel: `with Client("127.0.0.1:50051") as c: c.decide_job(req)`.

    `target` is `host:port`, `dns:///host:port` (round_robin over every address), or a Unix
    socket, `unix:///abs/path.sock` or `unix:relative.sock`. The channel is plaintext unless
    `credentials` or `tls_dir` (a cert-manager Secret's directory, see credentials_from_dir) are
    given; `server_name` overrides the TLS name checked (the target's host otherwise).
    `options` are gRPC channel options, applied over the defaults above. `timeout` is each
    call's deadline in seconds (None: none) unless a call gives its own. Every method raises
    DecideError when the call fails.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        tls_dir: str | Path | None = None,
        server_name: str | None = None,
        options: Sequence[ChannelOption] = (),
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        creds, opts = _channel_setup(credentials, tls_dir, server_name, options)
        self.channel: grpc.Channel = (
            grpc.secure_channel(target, creds, options=opts)
            if creds is not None
            else grpc.insecure_channel(target, options=opts)
        )
        #: The generated stub, for what the methods below do not cover (metadata, call options).
        self.stub = pb_grpc.JobDeciderStub(self.channel)
        self.timeout = timeout

    def _deadline(self, timeout: Timeout) -> float | None:
        return _deadline(timeout, self.timeout)

    def decide_job(
        self, request: pb.DecideJobRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.DecideJobResponse:
        """The plan for one sync of one Job."""
        try:
            return self.stub.DecideJob(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def validate_job(
        self, request: pb.ValidateJobRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.ValidateJobResponse:
        """The Job's violations of the API validation rules decisions rely on."""
        try:
            return self.stub.ValidateJob(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def decide_job_set(
        self, request: pb.DecideJobSetRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.DecideJobSetResponse:
        """The failure-policy plan for one reconcile of one JobSet."""
        try:
            return self.stub.DecideJobSet(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def validate_job_set(
        self, request: pb.ValidateJobSetRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.ValidateJobSetResponse:
        """The JobSet failure policy's violations of JobSet's admission rules."""
        try:
            return self.stub.ValidateJobSet(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def close(self) -> None:
        """Closes the channel."""
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient:
    """The asyncio client (grpc.aio): `async with AsyncClient(addr) as c: await c.decide_job(req)`.

    Create it inside the running event loop. It takes the arguments of Client and behaves
    alike. Every method raises DecideError when the call fails.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        tls_dir: str | Path | None = None,
        server_name: str | None = None,
        options: Sequence[ChannelOption] = (),
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        creds, opts = _channel_setup(credentials, tls_dir, server_name, options)
        self.channel: aio.Channel = (
            aio.secure_channel(target, creds, options=opts)
            if creds is not None
            else aio.insecure_channel(target, options=opts)
        )
        #: The generated stub; on a grpc.aio channel its calls are awaitable.
        self.stub = pb_grpc.JobDeciderStub(self.channel)
        self.timeout = timeout

    def _deadline(self, timeout: Timeout) -> float | None:
        return _deadline(timeout, self.timeout)

    async def decide_job(
        self, request: pb.DecideJobRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.DecideJobResponse:
        """The plan for one sync of one Job."""
        try:
            return await self.stub.DecideJob(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def validate_job(
        self, request: pb.ValidateJobRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.ValidateJobResponse:
        """The Job's violations of the API validation rules decisions rely on."""
        try:
            return await self.stub.ValidateJob(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def decide_job_set(
        self, request: pb.DecideJobSetRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.DecideJobSetResponse:
        """The failure-policy plan for one reconcile of one JobSet."""
        try:
            return await self.stub.DecideJobSet(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def validate_job_set(
        self, request: pb.ValidateJobSetRequest, *, timeout: Timeout = _Default.TIMEOUT
    ) -> pb.ValidateJobSetResponse:
        """The JobSet failure policy's violations of JobSet's admission rules."""
        try:
            return await self.stub.ValidateJobSet(request, timeout=self._deadline(timeout))
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def close(self) -> None:
        """Closes the channel."""
        await self.channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
