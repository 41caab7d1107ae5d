"""The kubectl JSON helper, offline: what it keeps, what it drops and what it reports."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from google.protobuf import json_format

from jobdecider import NotLeanError, convert, decide_job_request, k8s, pb

NOW = datetime(2025, 6, 2, 10, 0, 0, tzinfo=timezone.utc)


def _remove(obj: Any, path: str) -> None:
    """Deletes one dropped path (e.g. `spec.containers[0].args`) from parsed JSON; fails if absent."""
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    del obj[parts[-1]]


def test_helper_keeps_what_protobuf_keeps(job: dict[str, Any], pods: dict[str, Any]) -> None:
    request = decide_job_request(job, pods, now=NOW, lean=False)
    # protobuf's own lenient parser is the reference for what the contract keeps.
    assert request.job == json_format.ParseDict(job, k8s.Job(), ignore_unknown_fields=True)
    want_pods = [json_format.ParseDict(p, k8s.Pod(), ignore_unknown_fields=True) for p in pods["items"]]
    assert list(request.pods) == want_pods
    assert len(request.pods) == len(pods["items"]) > 0
    assert request.now.ToDatetime(tzinfo=timezone.utc) == NOW


def test_helper_reports_every_dropped_field_and_only_those(job: dict[str, Any], pods: dict[str, Any]) -> None:
    dropped = convert(job, pods, now=NOW).dropped
    # The field the issue names: kubectl prints container args, the contract has no field for them.
    assert "job.spec.template.spec.containers[0].args" in dropped
    assert len(dropped) == len(set(dropped))
    # Removing exactly the reported paths (each must exist: _remove fails on a missing one) leaves
    # JSON that protobuf parses strictly, so the report is complete ...
    job_left, pods_left = copy.deepcopy(job), copy.deepcopy(pods["items"])
    for path in dropped:
        if path.startswith("job."):
            _remove(job_left, path.removeprefix("job."))
        else:
            index, _, rest = path.removeprefix("pods[").partition("].")
            _remove(pods_left[int(index)], rest)
    # ... and it names only fields the contract lacks: what is left parses strictly to exactly what
    # protobuf's lenient parser keeps from the whole input.
    assert json_format.ParseDict(job_left, k8s.Job()) == json_format.ParseDict(
        job, k8s.Job(), ignore_unknown_fields=True
    )
    for left, whole in zip(pods_left, pods["items"], strict=True):
        assert json_format.ParseDict(left, k8s.Pod()) == json_format.ParseDict(
            whole, k8s.Pod(), ignore_unknown_fields=True
        )


def test_helper_accepts_podlist_list_text_and_bytes(job: dict[str, Any], pods: dict[str, Any]) -> None:
    want = decide_job_request(job, pods, now=NOW)
    assert len(want.lean_pods) == len(pods["items"]) and not want.pods
    assert decide_job_request(job, pods["items"], now=NOW) == want
    assert decide_job_request(json.dumps(job), json.dumps(pods), now=NOW) == want
    assert decide_job_request(json.dumps(job).encode(), json.dumps(pods).encode(), now=NOW) == want


def test_helper_defaults_now_to_the_current_time(job: dict[str, Any], pods: dict[str, Any]) -> None:
    before = datetime.now(timezone.utc)
    request = decide_job_request(job, pods)
    after = datetime.now(timezone.utc)
    assert before <= request.now.ToDatetime(tzinfo=timezone.utc) <= after


def test_helper_rejects_what_it_cannot_convert(job: dict[str, Any], pods: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        decide_job_request(job, pods, now=datetime(2025, 6, 2, 10, 0, 0))
    with pytest.raises(ValueError, match="one Job"):
        decide_job_request({"kind": "List", "items": [job]}, pods, now=NOW)
    with pytest.raises(ValueError, match="not JSON"):
        decide_job_request("{", pods, now=NOW)
    # A known field of the wrong type is an error, never silently dropped.
    bad = copy.deepcopy(job)
    bad["spec"]["parallelism"] = "three"
    with pytest.raises(ValueError, match="job"):
        decide_job_request(bad, pods, now=NOW)


def test_request_builder_takes_the_controller_loop_fields(job: dict[str, Any], pods: dict[str, Any]) -> None:
    state = pb.ControllerState()
    state.backoff.failures_after_last_success = 2
    state.backoff.last_failure_time.FromDatetime(NOW)
    for lean in (True, False):
        request = decide_job_request(
            job, pods, now=NOW, state=state, explain=True, controller_name="example.com/mine", lean=lean
        )
        assert request.state == state
        assert request.explain
        assert request.controller_name == "example.com/mine"
        assert len(request.lean_pods if lean else request.pods) == len(pods["items"])


def test_lean_pods_keep_only_what_decisions_read(job: dict[str, Any], pods: dict[str, Any]) -> None:
    lean = decide_job_request(job, pods, now=NOW).lean_pods[0]
    pod = pods["items"][0]
    assert lean.name == pod["metadata"]["name"] and lean.uid == pod["metadata"]["uid"]
    # The Job's own controller reference is elided; the tracking finalizer is a flag.
    assert lean.controlled_by_job and not lean.owner_references and lean.tracking_finalizer
    # Labels: the selector's keys only; conditions: Ready and the policy's types only.
    assert set(lean.labels) == set(job["spec"]["selector"]["matchLabels"])
    policy_types = {c["type"] for r in job["spec"]["podFailurePolicy"]["rules"] for c in r.get("onPodConditions", [])}
    assert {c.type for c in lean.conditions} <= {"Ready"} | policy_types
    assert "Ready" in {c.type for c in lean.conditions}
    assert lean.scheduled and lean.creation_timestamp.ToJsonString() == pod["metadata"]["creationTimestamp"]


def test_lean_refuses_a_phase_the_api_does_not_define(job: dict[str, Any], pods: dict[str, Any]) -> None:
    pods["items"][1]["status"]["phase"] = "Exploded"
    with pytest.raises(NotLeanError, match=r"pods\[1\]\.status\.phase"):
        decide_job_request(job, pods, now=NOW)
    # The Kubernetes-shaped form carries it; the server judges it.
    assert decide_job_request(job, pods, now=NOW, lean=False).pods[1].status.phase == "Exploded"


def test_bad_value_errors_use_the_server_field_paths(job: dict[str, Any], pods: dict[str, Any]) -> None:
    # Issue 26: "Failed to parse backoffLimit field ..." named no path the server would.
    job["spec"]["backoffLimit"] = "six"
    with pytest.raises(ValueError, match=r'^job\.spec\.backoffLimit: Invalid value: "six": ') as caught:
        decide_job_request(job, pods, now=NOW)
    assert "Failed to parse" not in str(caught.value)
    del job["spec"]["backoffLimit"]
    job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [42, "x"]
    with pytest.raises(ValueError, match=r"^job\.spec\.podFailurePolicy\.rules\[0\]\.onExitCodes\.values\[1\]: "):
        decide_job_request(job, pods, now=NOW)
    job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [42]
    pods["items"][2]["status"]["containerStatuses"][0]["restartCount"] = "many"
    for lean in (True, False):
        with pytest.raises(ValueError, match=r"^pods\[2\]\.status\.containerStatuses\[0\]\.restartCount: Invalid"):
            decide_job_request(job, pods, now=NOW, lean=lean)
