"""The kubectl JSON helper, offline: what it keeps, what it drops and what it reports."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from google.protobuf import json_format

from jobdecider import convert, decide_job_request, k8s

NOW = datetime(2025, 6, 2, 10, 0, 0, tzinfo=timezone.utc)


def _remove(obj: Any, path: str) -> None:
    """Deletes one dropped path (e.g. `spec.containers[0].args`) from parsed JSON; fails if absent."""
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    del obj[parts[-1]]


def test_helper_keeps_what_protobuf_keeps(job: dict[str, Any], pods: dict[str, Any]) -> None:
    request = decide_job_request(job, pods, now=NOW)
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
