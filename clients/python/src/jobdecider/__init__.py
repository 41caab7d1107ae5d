"""Python client for job-decider: the Kubernetes Job controller's decisions as a gRPC service.

    from jobdecider import Client, decide_job_request
    with Client("127.0.0.1:50051") as client:
        plan = client.decide_job(decide_job_request(job_json, pods_json))

`pb` and `pb_grpc` are the generated modules (jobdecider.v1.job_decider_pb2 and _pb2_grpc);
`k8s` holds the contract's Kubernetes messages (jobdecider.v1.kubernetes_pb2). Everything in
jobdecider/v1 is written by `buf generate` (buf.gen.yaml) and nothing else is there; this
package's other modules are written by hand.
"""

from jobdecider.v1 import job_decider_pb2 as pb
from jobdecider.v1 import job_decider_pb2_grpc as pb_grpc
from jobdecider.v1 import kubernetes_pb2 as k8s

from ._client import (
    DEFAULT_OPTIONS,
    DEFAULT_TIMEOUT,
    SERVICE_CONFIG,
    SERVICE_CONFIG_WITH_THROTTLING,
    AsyncClient,
    ChannelOption,
    Client,
    Timeout,
    channel_options,
    credentials_from_dir,
)
from ._errors import DecideError, ErrorInfo, FieldViolation
from ._kubectl import Conversion, KubectlJson, convert, decide_job_request, validate_job_request
from ._lean import MAX_MESSAGE_BYTES, NotLeanError

__all__ = [
    "DEFAULT_OPTIONS",
    "DEFAULT_TIMEOUT",
    "SERVICE_CONFIG",
    "SERVICE_CONFIG_WITH_THROTTLING",
    "ChannelOption",
    "Timeout",
    "channel_options",
    "credentials_from_dir",
    "AsyncClient",
    "Client",
    "Conversion",
    "DecideError",
    "ErrorInfo",
    "FieldViolation",
    "MAX_MESSAGE_BYTES",
    "NotLeanError",
    "KubectlJson",
    "convert",
    "decide_job_request",
    "k8s",
    "pb",
    "pb_grpc",
    "validate_job_request",
]
