"""Plans applied with the official `kubernetes` package, as the shim applies them with client-go.

Needs the optional extra: `pip install 'job-decider[kubernetes]'`.

    from kubernetes import client, config
    from jobdecider.apply import Applier, ApplyError
    api = config.new_client_from_config()
    applier = Applier(client.CoreV1Api(api), client.BatchV1Api(api))
    try:
        result = applier.apply(job, plan)  # job: the V1Job the plan was decided on, as read
    except ApplyError as err:
        result = err.result                # what was applied before the failing action
    if result.state_holds:
        state = plan.state                 # else send the state you sent before

A plan (a DecideJobResponse) is checked whole before its first write; an action of a kind this
module does not know refuses the plan (PlanRefused, nothing written). Then its actions run in
order and the first that fails stops it (ApplyError, the Kubernetes ApiException its cause):

- create_pods: pods built from the Job's template overlaid with each PodCreation, created in
  slow-start batches of 1, 2, 4, ..., stopping after a batch in which a creation failed;
- delete_pods: each delete carries the pod's UID as a precondition (V1DeleteOptions with
  V1Preconditions), the tracking finalizer removed first when remove_finalizer_first is set; a
  pod already gone is not an error;
- remove_finalizers: a strategic merge patch per pod (`$deleteFromPrimitiveList/finalizers` and
  the pod's `uid`, so the API server refuses it for another pod of the same name), sent with
  Content-Type application/strategic-merge-patch+json: the package would pick JSON Patch for a
  PATCH otherwise;
- update_status: a replace of the status subresource carrying the resourceVersion of the Job
  the plan was decided on; a second status write in the same plan carries the resourceVersion
  the first returned, so a Job changed since the decision answers 409 Conflict;
- record_event, adopt_pods (after a fresh read of the Job), release_pods, fail_pods (a status
  patch to phase Failed with the plan's condition, then a delete guarded by UID).

A 409 Conflict, like any other error, stops the plan and is not retried: decide again from a
fresh read. These are the steps, patches and names of the Go package
job-decider.dev/clients/go/apply.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from .v1 import job_decider_pb2 as pb
from .v1 import kubernetes_pb2

#: The finalizer through which Jobs track their pods.
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

# Action names, as the contract spells the Action kinds; hooks receive them.
ACTION_CREATE_PODS = "create_pods"
ACTION_DELETE_PODS = "delete_pods"
ACTION_REMOVE_FINALIZERS = "remove_finalizers"
ACTION_UPDATE_STATUS = "update_status"
ACTION_RECORD_EVENT = "record_event"
ACTION_ADOPT_PODS = "adopt_pods"
ACTION_RELEASE_PODS = "release_pods"
ACTION_FAIL_PODS = "fail_pods"
#: An action of a kind this module does not know.
ACTION_UNKNOWN = "unknown"
_KNOWN = frozenset(
    {
        ACTION_CREATE_PODS,
        ACTION_DELETE_PODS,
        ACTION_REMOVE_FINALIZERS,
        ACTION_UPDATE_STATUS,
        ACTION_RECORD_EVENT,
        ACTION_ADOPT_PODS,
        ACTION_RELEASE_PODS,
        ACTION_FAIL_PODS,
    }
)

#: Reasons a plan is refused whole (PlanRefused.reason): a kind from a newer decider, or an
#: action this module knows but cannot apply (a pod that does not build).
REFUSED_UNKNOWN_ACTION = "unknown_action"
REFUSED_INVALID_ACTION = "invalid_action"

# Event reasons recorded on the Job for its pod writes, as upstream's pod control records them.
REASON_SUCCESSFUL_CREATE = "SuccessfulCreate"
REASON_FAILED_CREATE = "FailedCreate"
REASON_SUCCESSFUL_DELETE = "SuccessfulDelete"
REASON_FAILED_DELETE = "FailedDelete"
REASON_UNSUPPORTED_PLAN = "UnsupportedPlan"

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

#: The most pod writes of one action in flight at once.
POD_WRITE_CONCURRENCY = 50

_AVOID_REQUIRED, _AVOID_PREFERRED = "Required", "Preferred"
# The weight of the preferred avoidance term: the most a preference can weigh.
_PREFERRED_AVOID_WEIGHT = 100

_T = TypeVar("_T")
JobHook = Callable[[k8s_client.V1Job], None]


@dataclass
class Hooks:
    """Optional calls for what a controller keeps besides the API objects (expectations,
    metrics). Each gets the Job the plan was decided on; pod writes run on threads, so hooks
    must be thread-safe. The names are the Go package's."""

    before_step: Callable[[k8s_client.V1Job], None] | None = None
    expect_creations: Callable[[k8s_client.V1Job, int], None] | None = None
    creations_not_made: Callable[[k8s_client.V1Job, int], None] | None = None
    expect_deletions: Callable[[k8s_client.V1Job, list[str]], None] | None = None
    deletion_not_made: Callable[[k8s_client.V1Job, str], None] | None = None
    expect_finalizer_removals: Callable[[k8s_client.V1Job, list[str]], None] | None = None
    finalizer_removal_not_made: Callable[[k8s_client.V1Job, str], None] | None = None
    pod_written: Callable[[k8s_client.V1Job, k8s_client.V1Pod], None] | None = None
    status_written: Callable[[k8s_client.V1Job, k8s_client.V1Job], None] | None = None
    action_failed: Callable[[k8s_client.V1Job, str, BaseException], None] | None = None
    plan_refused: Callable[[k8s_client.V1Job, str, BaseException], None] | None = None


#: Records an event on the Job: (job, type, reason, message).
Recorder = Callable[[k8s_client.V1Job, str, str, str], None]


@dataclass
class Result:
    """What `Applier.apply` did."""

    #: The Job as the last successful status write returned it, else the Job given to apply.
    job: k8s_client.V1Job
    #: The number of actions applied in full, in order.
    applied: int = 0
    #: Every action was applied.
    complete: bool = False
    #: An update_status action succeeded.
    status_written: bool = False

    @property
    def state_holds(self) -> bool:
        """Whether the plan's state is to be sent with the next request for this Job: it
        describes the Job as of the plan's first status write, so it holds once that write
        succeeded (or the whole plan applied); otherwise send the state you sent before."""
        return self.complete or self.status_written


class ApplyError(Exception):
    """An action failed; the actions before it were applied (`result`). The cause (`__cause__`)
    is the Kubernetes ApiException (status 409 for a conflict) or an ExceptionGroup of them."""

    def __init__(self, message: str, result: Result, action: str) -> None:
        super().__init__(message)
        self.result = result
        self.action = action


class PlanRefused(ApplyError):
    """The plan was refused whole, nothing written: `reason` is REFUSED_UNKNOWN_ACTION (the
    decider is newer than this module) or REFUSED_INVALID_ACTION."""

    def __init__(self, message: str, result: Result, action: str, reason: str) -> None:
        super().__init__(message, result, action)
        self.reason = reason


class _Invalid(ValueError):
    """An action that cannot be applied; `unknown` when its kind is not known here."""

    def __init__(self, message: str, unknown: bool = False) -> None:
        super().__init__(message)
        self.unknown = unknown


def to_kube(msg: Message) -> dict[str, Any]:
    """A contract message as the Kubernetes API's JSON object: the contract names every field as
    the API does, so this is proto3 JSON with its quoted 64-bit integers unquoted."""
    out = json_format.MessageToDict(msg)
    _unquote_int64(out, msg.DESCRIPTOR)
    return out


_INT64 = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED64,
    }
)


def _unquote_int64(obj: dict[str, Any], descriptor: Any) -> None:
    """Turns the proto3 JSON strings of 64-bit integer fields back into numbers, in place,
    field by field from the descriptor (a label whose value looks numeric stays a string)."""
    for f in descriptor.fields:
        if f.json_name not in obj:
            continue
        value = obj[f.json_name]
        if f.type in _INT64:
            obj[f.json_name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif f.message_type is not None and f.message_type.full_name.startswith("jobdecider."):
            if f.message_type.GetOptions().map_entry:
                continue  # the contract's maps are string to string
            for item in value if isinstance(value, list) else [value]:
                _unquote_int64(item, f.message_type)


def _as(model: type[_T], obj: dict[str, Any]) -> _T:
    """A Kubernetes model from its JSON object."""
    built = getattr(model, "from_dict")(obj)
    if built is None:
        raise ValueError(f"not a {model.__name__}: {obj!r}")
    if not isinstance(built, model):
        raise TypeError(f"{model.__name__}.from_dict returned {type(built).__name__}")
    return built


@functools.cache
def _serializer() -> k8s_client.ApiClient:
    # Only its sanitize_for_serialization is used: it opens no connection.
    return k8s_client.ApiClient()


def to_json(obj: Any) -> dict[str, Any]:
    """A Kubernetes model as its JSON object (what `kubectl get -o json` prints)."""
    serializer: Any = _serializer()  # the package leaves this method unannotated
    out: dict[str, Any] = serializer.sanitize_for_serialization(obj)
    return out


def pod_from_template(job: dict[str, Any], creation: pb.PodCreation) -> dict[str, Any]:
    """The pod one PodCreation asks for, as a JSON object: the Job's pod template (labels,
    annotations, finalizers and spec) overlaid with the entry's name or generateName (else
    "<job>-"), labels, annotations, finalizers, hostname, environment (added to each container
    lacking a variable of that name), node avoidance and owner reference. `job` is the Job's
    JSON object; it is not modified. ValueError when the entry does not apply."""
    meta = job.get("metadata") or {}
    tmpl = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    tmeta = tmpl.get("metadata") or {}
    pod_meta: dict[str, Any] = {"namespace": meta.get("namespace")}
    if creation.name:
        pod_meta["name"] = creation.name
    else:
        pod_meta["generateName"] = creation.generate_name or f"{meta.get('name', '')}-"
    labels = dict(tmeta.get("labels") or {})
    labels.update(creation.labels)
    annotations = dict(tmeta.get("annotations") or {})
    annotations.update(creation.annotations)
    finalizers = list(tmeta.get("finalizers") or [])
    finalizers += [f for f in creation.finalizers if f not in finalizers]
    for key, value in (("labels", labels), ("annotations", annotations), ("finalizers", finalizers)):
        if value:
            pod_meta[key] = value
    spec: dict[str, Any] = tmpl.get("spec") or {}
    if creation.hostname:
        spec["hostname"] = creation.hostname
    env = [to_kube(e) for e in creation.env]
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or []:
            have = {e.get("name") for e in container.get("env") or []}
            container["env"] = (container.get("env") or []) + [e for e in env if e["name"] not in have]
    _avoid_nodes(spec, creation.avoid_nodes)
    if creation.HasField("owner_reference"):
        pod_meta["ownerReferences"] = [to_kube(creation.owner_reference)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def _avoid_nodes(spec: dict[str, Any], avoid: pb.AvoidNodes) -> None:
    """Adds the plan's node exclusion: one `metadata.name NotIn [node]` requirement per node,
    ANDed within a term; every required term gets it, as terms are ORed."""
    if not avoid.nodes:
        return
    if avoid.mode not in (_AVOID_REQUIRED, _AVOID_PREFERRED):
        raise ValueError(f"avoid_nodes: unknown mode {avoid.mode!r} (want 'Required' or 'Preferred')")

    def fields() -> list[dict[str, Any]]:
        # A fresh list per term; In and NotIn take one value each, so a requirement per node.
        return [{"key": "metadata.name", "operator": "NotIn", "values": [n]} for n in avoid.nodes]

    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    if avoid.mode == _AVOID_PREFERRED:
        node_affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": _PREFERRED_AVOID_WEIGHT, "preference": {"matchFields": fields()}}
        )
        return
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({})
    for term in terms:
        term["matchFields"] = (term.get("matchFields") or []) + fields()


def pod_failure_patch(failure: pb.PodFailure, now: datetime) -> dict[str, Any]:
    """The strategic merge patch of a pod's status that fail_pods sends: phase Failed and the
    plan's condition, True, transitioned at `now`; the uid guards the pod's identity."""
    if not failure.condition_type:
        raise ValueError(f"{ACTION_FAIL_PODS}: pod {failure.pod.name} has no condition type")
    condition = {
        "type": failure.condition_type,
        "status": "True",
        "reason": failure.reason,
        "message": failure.message,
        "lastTransitionTime": now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return {"metadata": {"uid": failure.pod.uid}, "status": {"phase": "Failed", "conditions": [condition]}}


def _status(job: dict[str, Any], status: kubernetes_pb2.JobStatus) -> k8s_client.V1Job:
    """The Job with its status replaced by the plan's, metadata (resourceVersion) kept."""
    body = dict(job)
    body["status"] = to_kube(status)
    return _as(k8s_client.V1Job, body)


def _status_code(err: BaseException) -> int | None:
    return err.status if isinstance(err, ApiException) else None


class Applier:
    """Applies plans through one CoreV1Api and BatchV1Api. It holds no per-Job state, so one
    Applier serves any number of Jobs and threads."""

    def __init__(
        self,
        core: k8s_client.CoreV1Api,
        batch: k8s_client.BatchV1Api,
        *,
        recorder: Recorder | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.core, self.batch, self.recorder = core, batch, recorder
        self.hooks = hooks or Hooks()

    def apply(self, job: k8s_client.V1Job, plan: pb.DecideJobResponse) -> Result:
        """Applies `plan` to `job`, the Job it was decided on, as read (its resourceVersion
        guards the status write). Raises PlanRefused, nothing written, when an action cannot be
        applied; else ApplyError at the first action that fails."""
        return _Run(self, job).apply(plan.actions)


class _Run:
    """One plan being applied to one Job."""

    def __init__(self, applier: Applier, job: k8s_client.V1Job) -> None:
        self.a, self.hooks = applier, applier.hooks
        self.decided = job
        # The Job's JSON until a status write; then what the API server returned, so a second
        # write in the same plan carries the current resourceVersion.
        self.job = to_json(job)
        self.job_model = job
        self.status_written = False
        self.namespace: str = (self.job.get("metadata") or {}).get("namespace", "")

    def result(self, applied: int, complete: bool) -> Result:
        return Result(self.job_model, applied, complete, self.status_written)

    def event(self, type_: str, reason: str, message: str) -> None:
        if self.a.recorder is not None:
            self.a.recorder(self.decided, type_, reason, message)

    def apply(self, actions: Sequence[pb.Action]) -> Result:
        for i, action in enumerate(actions):
            try:
                self.validate(action)
            except _Invalid as err:
                reason = REFUSED_UNKNOWN_ACTION if err.unknown else REFUSED_INVALID_ACTION
                if err.unknown and self.hooks.action_failed:
                    self.hooks.action_failed(self.decided, ACTION_UNKNOWN, err)
                if self.hooks.plan_refused:
                    self.hooks.plan_refused(self.decided, reason, err)
                self.event("Warning", REASON_UNSUPPORTED_PLAN, f"Plan refused, nothing applied: {err}")
                name = action.WhichOneof("kind") or ACTION_UNKNOWN
                raise PlanRefused(
                    f"action {i + 1} of {len(actions)}: {err}", self.result(0, False), name, reason
                ) from err
        for i, action in enumerate(actions):
            if i > 0 and self.hooks.before_step:
                self.hooks.before_step(self.decided)
            name = action.WhichOneof("kind") or ACTION_UNKNOWN
            try:
                getattr(self, name)(getattr(action, name))
            except Exception as err:
                if self.hooks.action_failed:
                    self.hooks.action_failed(self.decided, name, err)
                raise ApplyError(
                    f"action {i + 1} of {len(actions)} ({name}): {err}", self.result(i, False), name
                ) from err
        return self.result(len(actions), True)

    def validate(self, action: pb.Action) -> None:
        """Checks, writing nothing, that the action is known and applies: a plan refused
        part-way would leave its prefix written, and each retry would write it again."""
        kind = action.WhichOneof("kind")
        try:
            if kind == ACTION_CREATE_PODS:
                for creation in action.create_pods.pods:
                    pod_from_template(self.job, creation)
            elif kind == ACTION_UPDATE_STATUS:
                _status(self.job, action.update_status.status)
            elif kind == ACTION_FAIL_PODS:
                for failure in action.fail_pods.pods:
                    pod_failure_patch(failure, datetime.now(timezone.utc))
        except (ValueError, TypeError) as err:
            raise _Invalid(f"{kind}: {err}") from err
        if kind not in _KNOWN:
            # A newer decider's kind arrives with no kind set here.
            raise _Invalid(f"unknown action {kind}: this applier is older than the decider", unknown=True)

    def for_each(self, items: Sequence[_T], fn: Callable[[_T], None]) -> None:
        """Runs fn on every item, a bounded number at once; raises what failed."""
        if not items:
            return
        errors: list[Exception] = []
        with ThreadPoolExecutor(max_workers=min(POD_WRITE_CONCURRENCY, len(items))) as pool:
            for future in [pool.submit(fn, item) for item in items]:
                err = future.exception()
                if isinstance(err, Exception):
                    errors.append(err)
                elif err is not None:
                    raise err
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup(f"{len(errors)} of {len(items)} pod writes failed", errors)

    def wrote_pod(self, pod: k8s_client.V1Pod) -> None:
        if self.hooks.pod_written:
            self.hooks.pod_written(self.decided, pod)

    def create_pods(self, action: pb.CreatePods) -> None:
        """Slow-start batches of 1, 2, 4, ..., stopping after a batch in which one failed."""
        pods = [_as(k8s_client.V1Pod, pod_from_template(self.job, c)) for c in action.pods]
        if self.hooks.expect_creations:
            self.hooks.expect_creations(self.decided, len(pods))
        created, batch = 0, 1

        def create(pod: k8s_client.V1Pod) -> None:
            try:
                got = self.a.core.create_namespaced_pod(self.namespace, pod)
            except Exception as err:
                # No watch will show this pod.
                if self.hooks.creations_not_made:
                    self.hooks.creations_not_made(self.decided, 1)
                self.event("Warning", REASON_FAILED_CREATE, f"Error creating: {err}")
                raise
            self.wrote_pod(got)
            self.event("Normal", REASON_SUCCESSFUL_CREATE, f"Created pod: {got.metadata.name if got.metadata else ''}")

        while created < len(pods):
            if created > 0 and self.hooks.before_step:
                self.hooks.before_step(self.decided)
            n = min(batch, len(pods) - created)
            try:
                self.for_each(pods[created : created + n], create)
            except BaseException:
                # Nor will it show the pods never attempted.
                if self.hooks.creations_not_made and len(pods) > created + n:
                    self.hooks.creations_not_made(self.decided, len(pods) - created - n)
                raise
            created += n
            batch *= 2

    def delete_guarded(self, name: str, uid: str, grace_period_seconds: int | None = None) -> None:
        """Deletes one pod with its UID as a precondition: a pod re-created under the same name
        is never deleted in its place. A grace period of 0 is a force delete."""
        options = k8s_client.V1DeleteOptions(
            preconditions=k8s_client.V1Preconditions(uid=uid), grace_period_seconds=grace_period_seconds
        )
        self.a.core.delete_namespaced_pod(name, self.namespace, body=options)

    def patch_pod(self, name: str, patch: dict[str, Any], status: bool = False) -> None:
        """A strategic merge patch of one pod (or its status), the write reported."""
        send = self.a.core.patch_namespaced_pod_status if status else self.a.core.patch_namespaced_pod
        got = send(name, self.namespace, patch, _content_type=STRATEGIC_MERGE_PATCH)
        self.wrote_pod(got)

    def remove_finalizer(self, name: str, uid: str) -> None:
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER], "uid": uid}}
        self.patch_pod(name, patch)

    def delete_pods(self, action: pb.DeletePods) -> None:
        if self.hooks.expect_deletions:
            self.hooks.expect_deletions(self.decided, [p.uid for p in action.pods])

        def delete(p: pb.PodDeletion) -> None:
            try:
                if p.remove_finalizer_first:
                    self.remove_finalizer(p.name, p.uid)
                self.delete_guarded(p.name, p.uid)
            except Exception as err:
                # No watch will show this deletion.
                if self.hooks.deletion_not_made:
                    self.hooks.deletion_not_made(self.decided, p.uid)
                if _status_code(err) == 404:
                    return
                self.event("Warning", REASON_FAILED_DELETE, f"Error deleting: {err}")
                raise
            self.event("Normal", REASON_SUCCESSFUL_DELETE, f"Deleted pod: {p.name}")

        self.for_each(action.pods, delete)

    def remove_finalizers(self, action: pb.RemoveFinalizers) -> None:
        if self.hooks.expect_finalizer_removals:
            self.hooks.expect_finalizer_removals(self.decided, [p.uid for p in action.pods])

        def remove(p: pb.PodReference) -> None:
            try:
                self.remove_finalizer(p.name, p.uid)
            except Exception as err:
                if self.hooks.finalizer_removal_not_made:
                    self.hooks.finalizer_removal_not_made(self.decided, p.uid)
                if _status_code(err) != 404:
                    raise

        self.for_each(action.pods, remove)

    def update_status(self, action: pb.UpdateStatus) -> None:
        """Replaces the Job's status, guarded by the resourceVersion it carries."""
        meta = self.job.get("metadata") or {}
        updated = self.a.batch.replace_namespaced_job_status(
            meta.get("name", ""), self.namespace, _status(self.job, action.status)
        )
        self.job, self.job_model, self.status_written = to_json(updated), updated, True
        if self.hooks.status_written:
            self.hooks.status_written(self.decided, updated)

    def record_event(self, action: pb.RecordEvent) -> None:
        self.event(action.type, action.reason, action.message)

    def adopt_pods(self, action: pb.AdoptPods) -> None:
        """Makes the Job the controller of orphan pods, after a fresh read confirms that the Job
        still exists (same UID) and is not being deleted."""
        meta = self.job.get("metadata") or {}
        fresh = to_json(self.a.batch.read_namespaced_job(meta.get("name", ""), self.namespace))
        fresh_meta = fresh.get("metadata") or {}
        key = f"{self.namespace}/{meta.get('name')}"
        if fresh_meta.get("uid") != meta.get("uid"):
            raise RuntimeError(f"job {key} was recreated (uid {fresh_meta.get('uid')}, had {meta.get('uid')}); not adopting")
        if fresh_meta.get("deletionTimestamp"):
            raise RuntimeError(f"job {key} is being deleted; not adopting")
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }

        def adopt(p: pb.PodReference) -> None:
            patch = {"metadata": {"ownerReferences": [owner], "finalizers": [JOB_TRACKING_FINALIZER], "uid": p.uid}}
            self.patch_pod(p.name, patch)

        self.for_each(action.pods, adopt)

    def release_pods(self, action: pb.ReleasePods) -> None:
        """Removes the Job's owner reference and the tracking finalizer in one patch; a pod gone
        (404) or no longer ours to release (422) is not an error."""
        job_uid = (self.job.get("metadata") or {}).get("uid")

        def release(p: pb.PodReference) -> None:
            patch = {
                "metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": job_uid}],
                    "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
                    "uid": p.uid,
                }
            }
            try:
                self.patch_pod(p.name, patch)
            except ApiException as err:
                if err.status not in (404, 422):
                    raise

        self.for_each(action.pods, release)

    def fail_pods(self, action: pb.FailPods) -> None:
        """As upstream's pod garbage collector fails pods: a status patch to Failed with the
        plan's condition, then a delete, both guarded by the pod's UID."""
        if self.hooks.expect_deletions:
            self.hooks.expect_deletions(self.decided, [f.pod.uid for f in action.pods])

        def fail(f: pb.PodFailure) -> None:
            try:
                self.patch_pod(f.pod.name, pod_failure_patch(f, datetime.now(timezone.utc)), status=True)
                # terminatingTimeout's forceDelete: no kubelet will finish the pod.
                self.delete_guarded(f.pod.name, f.pod.uid, 0 if f.force_delete else None)
            except Exception as err:
                if self.hooks.deletion_not_made:
                    self.hooks.deletion_not_made(self.decided, f.pod.uid)
                if _status_code(err) == 404:
                    return
                self.event("Warning", REASON_FAILED_DELETE, f"Error failing pod {f.pod.name}: {err}")
                raise
            self.event("Normal", REASON_SUCCESSFUL_DELETE, f"Failed and deleted pod: {f.pod.name} ({f.reason})")

        self.for_each(action.pods, fail)

