"""jobdecider.apply against a mocked CoreV1Api and BatchV1Api: the calls, their order, their
preconditions, and where a plan stops."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any
from unittest import mock

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from jobdecider import k8s, pb
from jobdecider.apply import (
    JOB_TRACKING_FINALIZER,
    REFUSED_INVALID_ACTION,
    REFUSED_UNKNOWN_ACTION,
    STRATEGIC_MERGE_PATCH,
    Applier,
    ApplyError,
    Hooks,
    PlanRefused,
    pod_from_template,
    to_json,
    to_kube,
)

JOB_UID = "job-uid-1"


def make_job(rv: str = "100") -> client.V1Job:
    return client.V1Job(
        api_version="batch/v1",
        kind="Job",
        metadata=client.V1ObjectMeta(name="own", namespace="ns", uid=JOB_UID, resource_version=rv),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "x"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox")]),
            )
        ),
    )


class Cluster:
    """A mocked CoreV1Api and BatchV1Api whose calls land, in order, on one `calls` list."""

    def __init__(self) -> None:
        self.parent = mock.Mock()
        self.core = mock.create_autospec(client.CoreV1Api, instance=True)
        self.batch = mock.create_autospec(client.BatchV1Api, instance=True)
        self.parent.attach_mock(self.core, "core")
        self.parent.attach_mock(self.batch, "batch")
        self.lock = threading.Lock()
        self.rv = 100
        self.core.create_namespaced_pod.side_effect = self.created
        self.core.patch_namespaced_pod.side_effect = lambda name, ns, body, **kw: client.V1Pod(
            metadata=client.V1ObjectMeta(name=name, namespace=ns)
        )
        self.batch.replace_namespaced_job_status.side_effect = self.status_written

    def created(self, ns: str, pod: client.V1Pod, **kw: Any) -> client.V1Pod:
        return pod

    def status_written(self, name: str, ns: str, body: client.V1Job, **kw: Any) -> client.V1Job:
        with self.lock:
            self.rv += 1
            out = client.V1Job.from_dict(to_json(body))
            assert out is not None and out.metadata is not None
            out.metadata.resource_version = str(self.rv)
            return out

    def applier(self, hooks: Hooks | None = None) -> Applier:
        return Applier(self.core, self.batch, hooks=hooks)

    def names(self) -> list[str]:
        return [c[0] for c in self.parent.mock_calls if c[0].count(".") == 1]


def create(n: int) -> pb.Action:
    return pb.Action(create_pods=pb.CreatePods(pods=[pb.PodCreation(name=f"own-{i}") for i in range(n)]))


def status(active: int) -> pb.Action:
    return pb.Action(update_status=pb.UpdateStatus(status=k8s.JobStatus(active=active)))


def conflict() -> ApiException:
    return ApiException(status=409, reason="Conflict")


def test_actions_run_in_order_with_their_preconditions() -> None:
    c = Cluster()
    plan = pb.DecideJobResponse(
        actions=[
            pb.Action(delete_pods=pb.DeletePods(pods=[pb.PodDeletion(name="old", uid="u-old", remove_finalizer_first=True)])),
            pb.Action(remove_finalizers=pb.RemoveFinalizers(pods=[pb.PodReference(name="done", uid="u-done")])),
            status(1),
            create(1),
            status(2),
        ]
    )
    result = c.applier().apply(make_job("100"), plan)
    assert result.complete and result.applied == 5 and result.state_holds
    assert c.names() == [
        "core.patch_namespaced_pod",  # the finalizer, before the delete
        "core.delete_namespaced_pod",
        "core.patch_namespaced_pod",
        "batch.replace_namespaced_job_status",
        "core.create_namespaced_pod",
        "batch.replace_namespaced_job_status",
    ]
    first_patch = c.core.patch_namespaced_pod.call_args_list[0]
    assert first_patch.args == (
        "old",
        "ns",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER], "uid": "u-old"}},
    )
    assert first_patch.kwargs == {"_content_type": STRATEGIC_MERGE_PATCH}
    delete = c.core.delete_namespaced_pod.call_args
    assert delete.args == ("old", "ns")
    assert delete.kwargs["body"].preconditions.uid == "u-old"
    assert c.core.patch_namespaced_pod.call_args_list[1].args[2]["metadata"]["uid"] == "u-done"
    # The first status write carries the decided-on resourceVersion, the second the returned one.
    writes = [call.args[2] for call in c.batch.replace_namespaced_job_status.call_args_list]
    assert [w.metadata.resource_version for w in writes] == ["100", "101"]
    assert [w.status.active for w in writes] == [1, 2]
    assert result.job.metadata is not None and result.job.metadata.resource_version == "102"
    # Pods come from the Job's template, overlaid with the creation.
    pod = c.core.create_namespaced_pod.call_args.args[1]
    assert pod.metadata.name == "own-0" and pod.metadata.labels == {"app": "x"}
    assert pod.spec.containers[0].image == "busybox"


def test_an_unknown_action_refuses_the_plan_before_any_write() -> None:
    c = Cluster()
    refused: list[str] = []
    hooks = Hooks(plan_refused=lambda job, reason, err: refused.append(reason))
    # An Action with no kind set is how a newer decider's kind arrives here.
    plan = pb.DecideJobResponse(actions=[create(1), status(1), pb.Action()])
    with pytest.raises(PlanRefused) as info:
        c.applier(hooks).apply(make_job(), plan)
    assert info.value.reason == REFUSED_UNKNOWN_ACTION and refused == [REFUSED_UNKNOWN_ACTION]
    assert "action 3 of 3" in str(info.value)
    assert c.parent.mock_calls == []
    assert not info.value.result.state_holds


def test_an_action_that_does_not_apply_refuses_the_plan_before_any_write() -> None:
    c = Cluster()
    failure = pb.PodFailure(pod=pb.PodReference(name="p", uid="u"))  # no condition type
    plan = pb.DecideJobResponse(actions=[create(1), pb.Action(fail_pods=pb.FailPods(pods=[failure]))])
    with pytest.raises(PlanRefused) as info:
        c.applier().apply(make_job(), plan)
    assert info.value.reason == REFUSED_INVALID_ACTION
    assert c.parent.mock_calls == []


def test_a_conflict_on_the_status_write_stops_the_plan_unretried() -> None:
    c = Cluster()
    c.batch.replace_namespaced_job_status.side_effect = conflict()
    plan = pb.DecideJobResponse(actions=[status(1), create(1)])
    with pytest.raises(ApplyError) as info:
        c.applier().apply(make_job(), plan)
    assert isinstance(info.value.__cause__, ApiException) and info.value.__cause__.status == 409
    assert info.value.action == "update_status"
    assert c.batch.replace_namespaced_job_status.call_count == 1
    c.core.create_namespaced_pod.assert_not_called()
    assert info.value.result.applied == 0 and not info.value.result.state_holds


def test_a_conflict_on_the_second_status_write_keeps_the_state_of_the_first() -> None:
    c = Cluster()
    c.batch.replace_namespaced_job_status.side_effect = [c.status_written("own", "ns", make_job()), conflict()]
    with pytest.raises(ApplyError) as info:
        c.applier().apply(make_job(), pb.DecideJobResponse(actions=[status(1), status(2), create(1)]))
    result = info.value.result
    assert result.applied == 1 and result.status_written and result.state_holds
    c.core.create_namespaced_pod.assert_not_called()


def test_creations_go_in_slow_start_batches_and_stop_after_a_failed_batch() -> None:
    c = Cluster()
    batches: list[int] = []
    done = 0

    def before_step(job: client.V1Job) -> None:
        nonlocal done
        batches.append(c.core.create_namespaced_pod.call_count - done)
        done = c.core.create_namespaced_pod.call_count

    not_made: list[int] = []

    def created(ns: str, pod: client.V1Pod, **kw: Any) -> client.V1Pod:
        if pod.metadata is not None and pod.metadata.name == "own-2":  # in the second batch
            raise ApiException(status=403, reason="Forbidden")
        return pod

    c.core.create_namespaced_pod.side_effect = created
    hooks = Hooks(before_step=before_step, creations_not_made=lambda job, n: not_made.append(n))
    with pytest.raises(ApplyError):
        c.applier(hooks).apply(make_job(), pb.DecideJobResponse(actions=[create(10), status(1)]))
    # Batches 1 and 2 were sent; the 7 pods of the batches of 4 and 8 never were.
    assert batches == [1] and c.core.create_namespaced_pod.call_count == 3
    assert sorted(not_made) == [1, 7]
    c.batch.replace_namespaced_job_status.assert_not_called()


def test_all_batches_of_a_creation() -> None:
    c = Cluster()
    sizes: list[int] = []
    hooks = Hooks(before_step=lambda job: sizes.append(c.core.create_namespaced_pod.call_count))
    c.applier(hooks).apply(make_job(), pb.DecideJobResponse(actions=[create(10)]))
    assert sizes == [1, 3, 7] and c.core.create_namespaced_pod.call_count == 10


def test_a_pod_already_gone_is_not_an_error() -> None:
    c = Cluster()
    c.core.delete_namespaced_pod.side_effect = ApiException(status=404, reason="NotFound")
    c.core.patch_namespaced_pod.side_effect = ApiException(status=404, reason="NotFound")
    plan = pb.DecideJobResponse(
        actions=[
            pb.Action(delete_pods=pb.DeletePods(pods=[pb.PodDeletion(name="a", uid="ua")])),
            pb.Action(remove_finalizers=pb.RemoveFinalizers(pods=[pb.PodReference(name="b", uid="ub")])),
            status(0),
        ]
    )
    assert c.applier().apply(make_job(), plan).complete


def test_a_failed_delete_stops_the_plan() -> None:
    c = Cluster()
    c.core.delete_namespaced_pod.side_effect = conflict()  # the UID precondition did not hold
    plan = pb.DecideJobResponse(
        actions=[pb.Action(delete_pods=pb.DeletePods(pods=[pb.PodDeletion(name="a", uid="ua")])), status(0)]
    )
    with pytest.raises(ApplyError) as info:
        c.applier().apply(make_job(), plan)
    assert info.value.action == "delete_pods" and info.value.result.applied == 0
    c.batch.replace_namespaced_job_status.assert_not_called()


def test_fail_pods_patches_the_status_then_deletes_with_the_uid() -> None:
    c = Cluster()
    c.core.patch_namespaced_pod_status.return_value = client.V1Pod()
    failure = pb.PodFailure(
        pod=pb.PodReference(name="p", uid="up"), condition_type="DisruptionTarget", reason="R", message="M"
    )
    c.applier().apply(make_job(), pb.DecideJobResponse(actions=[pb.Action(fail_pods=pb.FailPods(pods=[failure]))]))
    assert c.names() == ["core.patch_namespaced_pod_status", "core.delete_namespaced_pod"]
    patch = c.core.patch_namespaced_pod_status.call_args
    body = patch.args[2]
    assert patch.kwargs == {"_content_type": STRATEGIC_MERGE_PATCH}
    assert body["metadata"] == {"uid": "up"} and body["status"]["phase"] == "Failed"
    assert body["status"]["conditions"][0]["type"] == "DisruptionTarget"
    assert body["status"]["conditions"][0]["status"] == "True"
    assert c.core.delete_namespaced_pod.call_args.kwargs["body"].preconditions.uid == "up"


def test_fail_pods_force_delete_deletes_with_a_grace_period_of_zero() -> None:
    for force, grace in ((True, 0), (False, None)):
        c = Cluster()
        c.core.patch_namespaced_pod_status.return_value = client.V1Pod()
        failure = pb.PodFailure(
            pod=pb.PodReference(name="p", uid="up"),
            condition_type="job-decider.dev/TerminatingTimeout",
            reason="TerminatingTimeout",
            message="M",
            force_delete=force,
        )
        c.applier().apply(make_job(), pb.DecideJobResponse(actions=[pb.Action(fail_pods=pb.FailPods(pods=[failure]))]))
        options = c.core.delete_namespaced_pod.call_args.kwargs["body"]
        assert options.grace_period_seconds == grace and options.preconditions.uid == "up"


def test_adopt_reads_the_job_fresh_and_refuses_a_recreated_one() -> None:
    c = Cluster()
    other = make_job()
    assert other.metadata is not None
    other.metadata.uid = "another"
    c.batch.read_namespaced_job.return_value = other
    plan = pb.DecideJobResponse(actions=[pb.Action(adopt_pods=pb.AdoptPods(pods=[pb.PodReference(name="o", uid="uo")]))])
    with pytest.raises(ApplyError, match="recreated"):
        c.applier().apply(make_job(), plan)
    c.core.patch_namespaced_pod.assert_not_called()

    c = Cluster()
    c.batch.read_namespaced_job.return_value = make_job()
    c.applier().apply(make_job(), plan)
    meta = c.core.patch_namespaced_pod.call_args.args[2]["metadata"]
    assert meta["uid"] == "uo" and meta["finalizers"] == [JOB_TRACKING_FINALIZER]
    assert meta["ownerReferences"][0]["uid"] == JOB_UID and meta["ownerReferences"][0]["controller"] is True


def test_release_removes_owner_and_finalizer_and_ignores_a_pod_no_longer_ours() -> None:
    c = Cluster()
    c.core.patch_namespaced_pod.side_effect = ApiException(status=422, reason="Invalid")
    plan = pb.DecideJobResponse(
        actions=[pb.Action(release_pods=pb.ReleasePods(pods=[pb.PodReference(name="r", uid="ur")])), status(0)]
    )
    assert c.applier().apply(make_job(), plan).complete
    meta = c.core.patch_namespaced_pod.call_args.args[2]["metadata"]
    assert meta["ownerReferences"] == [{"$patch": "delete", "uid": JOB_UID}]
    assert meta["$deleteFromPrimitiveList/finalizers"] == [JOB_TRACKING_FINALIZER] and meta["uid"] == "ur"


def test_pod_from_template_overlays_the_creation() -> None:
    job = to_json(make_job())
    creation = pb.PodCreation(labels={"idx": "1"}, finalizers=[JOB_TRACKING_FINALIZER], hostname="h")
    creation.env.add(name="JOB_COMPLETION_INDEX", value="1")
    creation.avoid_nodes.nodes.extend(["n1", "n2"])
    creation.avoid_nodes.mode = "Required"
    pod = pod_from_template(job, creation)
    assert pod["metadata"]["generateName"] == "own-" and "name" not in pod["metadata"]
    assert pod["metadata"]["labels"] == {"app": "x", "idx": "1"}
    assert pod["metadata"]["finalizers"] == [JOB_TRACKING_FINALIZER]
    assert pod["spec"]["hostname"] == "h"
    assert pod["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "value": "1"}]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]},
                {"key": "metadata.name", "operator": "NotIn", "values": ["n2"]},
            ]
        }
    ]
    assert "env" not in job["spec"]["template"]["spec"]["containers"][0]  # the Job is not modified
    creation.avoid_nodes.mode = "Sometimes"
    with pytest.raises(ValueError, match="unknown mode"):
        pod_from_template(job, creation)


def test_to_kube_unquotes_64_bit_integers_only() -> None:
    meta = k8s.ObjectMeta(name="own", generation=5, labels={"generation": "7"})
    assert to_kube(meta) == {"name": "own", "generation": 5, "labels": {"generation": "7"}}


def test_importing_jobdecider_does_not_import_kubernetes() -> None:
    # gRPC-only users install without the [kubernetes] extra: only jobdecider.apply needs it.
    code = "import sys, jobdecider; assert 'kubernetes' not in sys.modules, 'kubernetes imported'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
