"""Client and AsyncClient: the JobDecider service behind methods that raise DecideError."""

from __future__ import annotations

from types import TracebackType

import grpc
from grpc import aio

from jobdecider.v1 import job_decider_pb2 as pb
from jobdecider.v1 import job_decider_pb2_grpc as pb_grpc

from ._errors import DecideError

#: Seconds a call may take unless the caller says otherwise: a decision takes milliseconds,
#: so this only bounds a server that does not answer.
DEFAULT_TIMEOUT = 30.0


class Client:
    """A blocking client on one channel: `with Client("127.0.0.1:50051") as c: c.decide_job(req)`.

    The channel is plaintext unless `credentials` are given. Every method raises DecideError
    when the call fails.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.channel: grpc.Channel = (
            grpc.secure_channel(target, credentials)
            if credentials is not None
            else grpc.insecure_channel(target)
        )
        #: The generated stub, for what the methods below do not cover (metadata, call options).
        self.stub = pb_grpc.JobDeciderStub(self.channel)
        self.timeout = timeout

    def decide_job(self, request: pb.DecideJobRequest) -> pb.DecideJobResponse:
        """The plan for one sync of one Job."""
        try:
            return self.stub.DecideJob(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def validate_job(self, request: pb.ValidateJobRequest) -> pb.ValidateJobResponse:
        """The Job's violations of the API validation rules decisions rely on."""
        try:
            return self.stub.ValidateJob(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def decide_job_set(self, request: pb.DecideJobSetRequest) -> pb.DecideJobSetResponse:
        """The failure-policy plan for one reconcile of one JobSet."""
        try:
            return self.stub.DecideJobSet(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    def validate_job_set(self, request: pb.ValidateJobSetRequest) -> pb.ValidateJobSetResponse:
        """The JobSet failure policy's violations of JobSet's admission rules."""
        try:
            return self.stub.ValidateJobSet(request, timeout=self.timeout)
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

    Create it inside the running event loop. Every method raises DecideError when the call fails.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.channel: aio.Channel = (
            aio.secure_channel(target, credentials)
            if credentials is not None
            else aio.insecure_channel(target)
        )
        #: The generated stub; on a grpc.aio channel its calls are awaitable.
        self.stub = pb_grpc.JobDeciderStub(self.channel)
        self.timeout = timeout

    async def decide_job(self, request: pb.DecideJobRequest) -> pb.DecideJobResponse:
        """The plan for one sync of one Job."""
        try:
            return await self.stub.DecideJob(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def validate_job(self, request: pb.ValidateJobRequest) -> pb.ValidateJobResponse:
        """The Job's violations of the API validation rules decisions rely on."""
        try:
            return await self.stub.ValidateJob(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def decide_job_set(self, request: pb.DecideJobSetRequest) -> pb.DecideJobSetResponse:
        """The failure-policy plan for one reconcile of one JobSet."""
        try:
            return await self.stub.DecideJobSet(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise DecideError.from_rpc_error(err) from err

    async def validate_job_set(self, request: pb.ValidateJobSetRequest) -> pb.ValidateJobSetResponse:
        """The JobSet failure policy's violations of JobSet's admission rules."""
        try:
            return await self.stub.ValidateJobSet(request, timeout=self.timeout)
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
