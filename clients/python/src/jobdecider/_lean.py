"""Pods in the lean encoding (LeanPod), straight from kubectl's JSON: what the shim sends.

Only what decisions read is kept: the labels the Job's selector names, Ready and the pod
condition types its pod failure policy names, and the fields only the extended failure policy
reads when the Job has such a policy (the same rules as clients/go/request). The messages are
built in place from the parsed JSON, without a JSON-to-protobuf pass, so that a Job of 60,000
pods is encoded in about a second (benchmarks/build_request.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from .v1 import job_decider_pb2, kubernetes_pb2

_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
_INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
_FAILURE_POLICY = "job-decider.dev/failure-policy"
_RULE_MATCH_COUNTS = "job-decider.dev/rule-match-counts"
_FAILED_NODES = "job-decider.dev/failed-nodes"

#: The most of a pod's or a container's termination message the server keeps (its
#: MAX_MESSAGE_BYTES); a longer one is sent cut as the server cuts it.
MAX_MESSAGE_BYTES = 4096

_PHASES = {
    "": kubernetes_pb2.LEAN_POD_PHASE_UNSPECIFIED,
    "Pending": kubernetes_pb2.LEAN_POD_PHASE_PENDING,
    "Running": kubernetes_pb2.LEAN_POD_PHASE_RUNNING,
    "Succeeded": kubernetes_pb2.LEAN_POD_PHASE_SUCCEEDED,
    "Failed": kubernetes_pb2.LEAN_POD_PHASE_FAILED,
    "Unknown": kubernetes_pb2.LEAN_POD_PHASE_UNKNOWN,
}
_CONDITION_STATUSES = {
    "": kubernetes_pb2.LEAN_CONDITION_STATUS_UNSPECIFIED,
    "True": kubernetes_pb2.LEAN_CONDITION_STATUS_TRUE,
    "False": kubernetes_pb2.LEAN_CONDITION_STATUS_FALSE,
    "Unknown": kubernetes_pb2.LEAN_CONDITION_STATUS_UNKNOWN,
}


class NotLeanError(ValueError):
    """A pod the lean encoding cannot carry (a phase or condition status the API does not define).

    Send such a request with Kubernetes-shaped pods instead (`lean=False`).
    """

    def __init__(self, field: str, value: object) -> None:
        super().__init__(f"{field}: {value!r} has no lean form (not a value the Kubernetes API defines)")
        #: The path of the value in the request, e.g. `pods[3].status.phase`.
        self.field = field


def bounded_message(text: str) -> str:
    """`text` as the server keeps it: unchanged when it fits in MAX_MESSAGE_BYTES, else cut on a
    UTF-8 boundary and ended by the server's mark saying how long it was."""
    raw = text.encode()
    if len(raw) <= MAX_MESSAGE_BYTES:
        return text
    mark = f"…[truncated from {len(raw)} bytes]"
    keep = MAX_MESSAGE_BYTES - len(mark.encode())
    while keep > 0 and (raw[keep] & 0xC0) == 0x80:  # a continuation byte: not a boundary
        keep -= 1
    return raw[:keep].decode() + mark


class _Reads:
    """What decisions read of the Job's pods (the Go client's Reads)."""

    def __init__(self, job: Mapping[str, Any], failure_policy: str) -> None:
        meta = job.get("metadata") or {}
        spec = job.get("spec") or {}
        self.details = bool(failure_policy) or _FAILURE_POLICY in (meta.get("annotations") or {})
        selector = spec.get("selector") or {}
        keys = set(selector.get("matchLabels") or {})
        keys.update(e.get("key", "") for e in selector.get("matchExpressions") or ())
        self.label_keys = sorted(keys)
        types = {"Ready"}
        for rule in (spec.get("podFailurePolicy") or {}).get("rules") or ():
            types.update(c.get("type", "") for c in rule.get("onPodConditions") or ())
        self.condition_types = frozenset(types)
        self.job_name = meta.get("name", "")
        self.job_uid = meta.get("uid", "")


class _Encoder:
    """Adds the lean form of each pod to a request; timestamps of equal text are parsed once."""

    def __init__(self, reads: _Reads) -> None:
        self.reads = reads
        self._times: dict[str, Timestamp] = {}

    def time(self, text: str) -> Timestamp:
        ts = self._times.get(text)
        if ts is None:
            ts = Timestamp()
            ts.FromJsonString(text)
            self._times[text] = ts
        return ts

    def owns(self, ref: Mapping[str, Any]) -> bool:
        """Whether a controller reference is the Job's own (elided as controlled_by_job)."""
        r = self.reads
        return (
            bool(r.job_uid)
            and ref.get("apiVersion") == "batch/v1"
            and ref.get("kind") == "Job"
            and ref.get("name") == r.job_name
            and ref.get("uid") == r.job_uid
        )

    def statuses(self, statuses: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        details = self.reads.details
        out = []
        for s in statuses:
            item: dict[str, Any] = {"name": s.get("name", ""), "restart_count": s.get("restartCount", 0)}
            state = s.get("state") or {}
            term = state.get("terminated")
            if term is not None:
                t: dict[str, Any] = {"exit_code": term.get("exitCode", 0)}
                finished = term.get("finishedAt")
                if finished:
                    t["finished_at"] = self.time(finished)
                if details:
                    t["reason"] = term.get("reason", "")
                    t["message"] = bounded_message(term.get("message", ""))
                item["terminated"] = t
            if details:
                waiting = state.get("waiting")
                if waiting is not None:
                    item["waiting_reason"] = waiting.get("reason", "")
            out.append(item)
        return out

    def add(self, request: job_decider_pb2.DecideJobRequest, pod: Mapping[str, Any], i: int) -> None:
        """Appends pod (the i-th) to request.lean_pods."""
        reads = self.reads
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        phase_text = status.get("phase") or ""
        phase = _PHASES.get(phase_text)
        if phase is None:
            raise NotLeanError(f"pods[{i}].status.phase", phase_text)
        kw: dict[str, Any] = {"name": meta.get("name", ""), "uid": meta.get("uid", ""), "phase": phase}
        annotations = meta.get("annotations")
        if annotations:
            for key, name in (
                (_COMPLETION_INDEX, "completion_index"),
                (_INDEX_FAILURE_COUNT, "index_failure_count"),
                (_INDEX_IGNORED_FAILURE_COUNT, "index_ignored_failure_count"),
            ):
                if key in annotations:
                    kw[name] = annotations[key]
            if reads.details:
                if _RULE_MATCH_COUNTS in annotations:
                    kw["rule_match_counts"] = annotations[_RULE_MATCH_COUNTS]
                if _FAILED_NODES in annotations:
                    kw["failed_nodes"] = annotations[_FAILED_NODES]
        refs = meta.get("ownerReferences")
        if refs:
            controller = next((j for j, r in enumerate(refs) if r.get("controller")), -1)
            elided = controller if controller >= 0 and self.owns(refs[controller]) else -1
            if elided >= 0:
                kw["controlled_by_job"] = True
            others = [_owner_reference(r) for j, r in enumerate(refs) if j != elided]
            if others:
                kw["owner_references"] = others
        finalizers = meta.get("finalizers")
        if finalizers and _TRACKING_FINALIZER in finalizers:
            kw["tracking_finalizer"] = True
        created = meta.get("creationTimestamp")
        if created:
            kw["creation_timestamp"] = self.time(created)
        deleted = meta.get("deletionTimestamp")
        if deleted:
            kw["deletion_timestamp"] = self.time(deleted)
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is not None:
            kw["deletion_grace_period_seconds"] = grace
        node = spec.get("nodeName") or ""
        if node:
            kw["scheduled"] = True
        init = spec.get("initContainers")
        if init:
            sidecars = [c.get("name", "") for c in init if c.get("restartPolicy") == "Always"]
            if sidecars:
                kw["sidecar_init_containers"] = sidecars
        conditions = status.get("conditions")
        if conditions:
            kept_conditions = []
            types, details = reads.condition_types, reads.details
            for j, c in enumerate(conditions):
                text = c.get("status")
                if text and text not in _CONDITION_STATUSES:
                    raise NotLeanError(f"pods[{i}].status.conditions[{j}].status", text)
                ctype = c.get("type", "")
                if details or ctype in types:
                    lc: dict[str, Any] = {"type": ctype, "status": _CONDITION_STATUSES[text or ""]}
                    changed = c.get("lastTransitionTime")
                    if changed:
                        lc["last_transition_time"] = self.time(changed)
                    if reads.details:
                        lc["reason"] = c.get("reason", "")
                    kept_conditions.append(lc)
            if kept_conditions:
                kw["conditions"] = kept_conditions
        containers = status.get("containerStatuses")
        if containers:
            kw["container_statuses"] = self.statuses(containers)
        init_statuses = status.get("initContainerStatuses")
        if init_statuses:
            kw["init_container_statuses"] = self.statuses(init_statuses)
        if reads.details:
            kw["reason"] = status.get("reason", "")
            kw["message"] = bounded_message(status.get("message", ""))
            kw["node_name"] = node
        added = request.lean_pods.add(**kw)
        labels = meta.get("labels")
        if labels:
            # Set one by one: a dict in add() goes through the runtime's slower generic update.
            kept = added.labels
            for key in reads.label_keys:
                if key in labels:
                    kept[key] = labels[key]


def _owner_reference(ref: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "api_version": ref.get("apiVersion", ""),
        "kind": ref.get("kind", ""),
        "name": ref.get("name", ""),
        "uid": ref.get("uid", ""),
    }
    if ref.get("controller") is not None:
        out["controller"] = ref["controller"]
    if ref.get("blockOwnerDeletion") is not None:
        out["block_owner_deletion"] = ref["blockOwnerDeletion"]
    return out


class BadPod(Exception):
    """The i-th pod holds a value of the wrong type (the caller finds which, see _kubectl)."""

    def __init__(self, index: int) -> None:
        super().__init__(f"pods[{index}]: a value of the wrong type")
        self.index = index


def add_lean_pods(
    request: job_decider_pb2.DecideJobRequest,
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    failure_policy: str = "",
) -> None:
    """Appends `pods` (kubectl's JSON, parsed) to request.lean_pods, trimmed to what `job`'s
    decisions read. A value of the wrong type is BadPod naming the pod."""
    encoder = _Encoder(_Reads(job, failure_policy))
    for i, pod in enumerate(pods):
        try:
            encoder.add(request, pod, i)
        except NotLeanError:
            raise
        except (TypeError, ValueError, AttributeError) as err:
            raise BadPod(i) from err

