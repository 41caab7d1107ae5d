"""An in-process JobDecider whose answers a test scripts: status codes per attempt, big replies."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent import futures
from typing import Any

import grpc

from jobdecider import pb
from jobdecider.rpc import status_pb2


_USED_PORTS: set[int] = set()


class ScriptedDecider:
    """Answers DecideJob with the scripted status codes in turn, then OK; records every attempt.

    A request whose controller_name is a number of bytes is answered with a response about that
    large (an explanation summary of that many characters).
    """

    def __init__(self, codes: Iterable[grpc.StatusCode] = ()) -> None:
        self.codes = list(codes)
        #: The google.rpc.Status sent with every error, when set.
        self.details: status_pb2.Status | None = None
        #: The deadline each attempt arrived with (context.time_remaining(); None: no deadline).
        self.remaining: list[float | None] = []
        self._lock = threading.Lock()
        handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(self._decide)
        while True:
            self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            self._server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler("jobdecider.v1.JobDecider", {"DecideJob": handler}),)
            )
            port = self._server.add_insecure_port("127.0.0.1:0")
            # grpc-core keeps retry throttling tokens per server name for the whole process: a
            # port an earlier test's server had would start with that server's spent tokens.
            if port not in _USED_PORTS:
                break
        _USED_PORTS.add(port)
        self.addr = f"127.0.0.1:{port}"

    @property
    def attempts(self) -> int:
        """How many attempts arrived."""
        return len(self.remaining)

    def _decide(self, raw: bytes, context: Any) -> bytes:
        with self._lock:
            self.remaining.append(context.time_remaining())
            code = self.codes.pop(0) if self.codes else grpc.StatusCode.OK
        if code != grpc.StatusCode.OK:
            if self.details is not None:
                context.set_trailing_metadata((("grpc-status-details-bin", self.details.SerializeToString()),))
            context.abort(code, f"scripted {code.name}")
        request = pb.DecideJobRequest.FromString(raw)
        response = pb.DecideJobResponse()
        if request.controller_name.isdigit():
            response.explanation.summary = "x" * int(request.controller_name)
        return response.SerializeToString()

    def __enter__(self) -> ScriptedDecider:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(None)
