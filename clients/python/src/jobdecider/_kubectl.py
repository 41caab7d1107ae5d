"""DecideJobRequest from the JSON that `kubectl get ... -o json` prints."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, cast

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from ._lean import BadPod, NotLeanError, add_lean_pods
from .v1 import job_decider_pb2, kubernetes_pb2

# Messages whose JSON form is not an object of their fields (a timestamp is an RFC 3339 string):
# the parser reads them whole, so their contents are never pruned.
_OPAQUE = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.FieldMask",
        "google.protobuf.Any",
    }
)

#: JSON text (str or bytes) or the object `json.loads` makes of it.
KubectlJson = str | bytes | Mapping[str, Any] | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Conversion:
    """A request built from kubectl's JSON, and what of that JSON the contract has no field for."""

    #: The request, ready for `Client.decide_job`.
    request: job_decider_pb2.DecideJobRequest
    #: Paths of the dropped fields, e.g. `job.spec.template.spec.containers[0].image` or
    #: `pods[1].metadata.managedFields`, in the order met.
    dropped: list[str] = field(default_factory=list)


def decide_job_request(
    job: KubectlJson,
    pods: KubectlJson,
    *,
    now: datetime | None = None,
    state: job_decider_pb2.ControllerState | None = None,
    explain: bool = False,
    controller_name: str = "",
    failure_policy: str = "",
    lean: bool = True,
) -> job_decider_pb2.DecideJobRequest:
    """Builds a DecideJobRequest from a Job and its pods as kubectl prints them.

    `job` is `kubectl get job NAME -o json`; `pods` is `kubectl get pods -l
    batch.kubernetes.io/controller-uid=UID -o json` (a PodList), a list of pods, or one pod;
    each may be JSON text or already parsed. `now` (timezone-aware) is the decision time; it
    defaults to the current time. `state` is the previous response's `state` for this Job
    (None after a restart), `explain` asks for the explanation, `controller_name` is the
    controller decided for (empty: kubernetes.io/job-controller) and `failure_policy` an
    extended failure policy document kept off the Job.

    The pods go in the lean encoding (`lean_pods`, what the shim sends; only what decisions
    read, trimmed to the Job's selector labels and policy conditions); a pod with no lean form
    raises NotLeanError. `lean=False` sends them Kubernetes-shaped (`pods`), as `convert` does.
    """
    if not lean:
        return convert(
            job,
            pods,
            now=now,
            state=state,
            explain=explain,
            controller_name=controller_name,
            failure_policy=failure_policy,
        ).request
    job_obj = _job_object(job)
    pod_objs = _pod_items(_loads(pods, "pods"))
    request = job_decider_pb2.DecideJobRequest()
    _parse(job_obj, request.job, "job", [])
    try:
        add_lean_pods(request, job_obj, pod_objs, failure_policy)
    except BadPod as bad:
        # Which field: the Kubernetes-shaped parser names it (and raises); else the pod itself.
        _parse(pod_objs[bad.index], kubernetes_pb2.Pod(), f"pods[{bad.index}]", [])
        raise ValueError(str(bad)) from bad
    _finish(request, now, state, explain, controller_name, failure_policy)
    return request


def convert(
    job: KubectlJson,
    pods: KubectlJson,
    *,
    now: datetime | None = None,
    state: job_decider_pb2.ControllerState | None = None,
    explain: bool = False,
    controller_name: str = "",
    failure_policy: str = "",
) -> Conversion:
    """`decide_job_request` with Kubernetes-shaped pods, also reporting the field paths it dropped."""
    job_obj = _job_object(job)
    pod_objs = _pod_items(_loads(pods, "pods"))
    dropped: list[str] = []
    request = job_decider_pb2.DecideJobRequest()
    _parse(job_obj, request.job, "job", dropped)
    for i, pod in enumerate(pod_objs):
        _parse(pod, request.pods.add(), f"pods[{i}]", dropped)
    _finish(request, now, state, explain, controller_name, failure_policy)
    return Conversion(request=request, dropped=dropped)


def _finish(
    request: job_decider_pb2.DecideJobRequest,
    now: datetime | None,
    state: job_decider_pb2.ControllerState | None,
    explain: bool,
    controller_name: str,
    failure_policy: str,
) -> None:
    """Sets the request's fields besides the Job and its pods."""
    when = datetime.now(timezone.utc) if now is None else now
    if when.tzinfo is None:
        raise ValueError("now: a timezone-aware datetime is needed, e.g. datetime.now(timezone.utc)")
    request.now.FromDatetime(when)
    if state is not None:
        request.state.CopyFrom(state)
    request.explain = explain
    request.controller_name = controller_name
    request.failure_policy = failure_policy


def validate_job_request(job: KubectlJson) -> job_decider_pb2.ValidateJobRequest:
    """Builds a ValidateJobRequest from `kubectl get job NAME -o json`, leaving out unknown fields."""
    job_obj = _job_object(job)
    request = job_decider_pb2.ValidateJobRequest()
    _parse(job_obj, request.job, "job", [])
    return request


def _job_object(job: KubectlJson) -> Mapping[str, Any]:
    """The one Job object kubectl printed."""
    job_obj = _loads(job, "job")
    if not isinstance(job_obj, Mapping) or "items" in job_obj:
        raise ValueError("job: expected one Job object (kubectl get job NAME -o json), not a list")
    return job_obj


def _loads(value: KubectlJson, name: str) -> Any:
    """Parses JSON text; passes parsed objects through."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f"{name}: not JSON: {err}") from err
    return value


def _pod_items(value: Any) -> list[Mapping[str, Any]]:
    """The pods of a PodList (or kubectl's `List`), a list of pods, or a single pod."""
    if isinstance(value, Mapping):
        if "items" in value:
            items = value["items"]
        elif value.get("kind") == "Pod":
            items = [value]
        else:
            raise ValueError("pods: expected a PodList (kubectl get pods -o json), a list or a Pod")
    else:
        items = value
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise ValueError("pods: expected a list of pods")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"pods[{i}]: expected a Pod object")
    return list(items)


def _parse(obj: Mapping[str, Any], message: Message, path: str, dropped: list[str]) -> None:
    """Parses `obj` into `message` after removing (and recording) the fields it has no place for.

    The pruned JSON is parsed strictly, so anything left that does not fit is an error rather
    than a silent loss.
    """
    # types-protobuf types DESCRIPTOR as the upb or the pure-Python class; both behave alike.
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    pruned = _prune(obj, descriptor, path, dropped)
    try:
        json_format.ParseDict(pruned, message)
    except json_format.ParseError as err:
        # protobuf names the fields but not the list positions; find the value ourselves, so
        # the error reads as the server's field violations do (job.spec.backoffLimit).
        found = _locate(pruned, descriptor, path)
        if found is None:
            raise ValueError(f"{path}: {err}") from err
        raise ValueError(found) from err


def _locate(value: Any, descriptor: Descriptor, path: str) -> str | None:
    """`PATH: Invalid value: VALUE: REASON` for the first value of `value` protobuf refuses."""
    if not isinstance(value, Mapping) or descriptor.full_name in _OPAQUE:
        return _refused(value, descriptor, path)
    fields = {f.json_name: f for f in descriptor.fields}
    fields.update({f.name: f for f in descriptor.fields})
    for key, item in value.items():
        fd = fields.get(key)
        if fd is None or item is None:
            continue
        here = f"{path}.{key}"
        sub = fd.message_type
        if sub is not None and sub.GetOptions().map_entry and isinstance(item, Mapping):
            value_fd = sub.fields_by_name["value"]
            for k, v in item.items():
                found = (
                    _locate(v, value_fd.message_type, f"{here}[{k}]")
                    if value_fd.message_type is not None
                    else _refused({key: {k: v}}, descriptor, f"{here}[{k}]", shown=v)
                )
                if found:
                    return found
        elif fd.is_repeated and isinstance(item, list):
            for j, v in enumerate(item):
                found = (
                    _locate(v, sub, f"{here}[{j}]")
                    if sub is not None
                    else _refused({key: [v]}, descriptor, f"{here}[{j}]", shown=v)
                )
                if found:
                    return found
        elif sub is not None:
            found = _locate(item, sub, here)
            if found:
                return found
        else:
            found = _refused({key: item}, descriptor, here, shown=item)
            if found:
                return found
    return None


def _refused(value: Any, descriptor: Descriptor, path: str, shown: Any = None) -> str | None:
    """The error for `value` (JSON of a `descriptor` message) when protobuf refuses it, else None."""
    try:
        json_format.ParseDict(value, message_factory.GetMessageClass(descriptor)())
    except json_format.ParseError as err:
        # The innermost of protobuf's "Failed to parse X field: ..." is the reason.
        reason = str(err).rsplit(" field: ", 1)[-1].rstrip(".")
        return f"{path}: Invalid value: {json.dumps(value if shown is None else shown)}: {reason}"
    return None


def _prune(value: Any, descriptor: Descriptor, path: str, dropped: list[str]) -> Any:
    """A copy of `value` (the JSON of a `descriptor` message) without unknown fields."""
    if not isinstance(value, Mapping) or descriptor.full_name in _OPAQUE:
        return value  # Wrong types are left for the parser to report.
    fields = {f.json_name: f for f in descriptor.fields}
    fields.update({f.name: f for f in descriptor.fields})
    kept: dict[str, Any] = {}
    for key, item in value.items():
        fd = fields.get(key)
        here = f"{path}.{key}"
        if fd is None:
            dropped.append(here)
            continue
        sub = fd.message_type
        if sub is None or item is None:
            kept[key] = item
        elif sub.GetOptions().map_entry:
            value_type = sub.fields_by_name["value"].message_type
            if value_type is not None and isinstance(item, Mapping):
                kept[key] = {k: _prune(v, value_type, f"{here}[{k}]", dropped) for k, v in item.items()}
            else:
                kept[key] = item
        elif fd.is_repeated and isinstance(item, list):
            kept[key] = [_prune(v, sub, f"{here}[{i}]", dropped) for i, v in enumerate(item)]
        else:
            kept[key] = _prune(item, sub, here, dropped)
    return kept


__all__ = [
    "Conversion",
    "KubectlJson",
    "NotLeanError",
    "convert",
    "decide_job_request",
    "validate_job_request",
]
