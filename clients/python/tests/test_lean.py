"""The lean request (leanPods, what decide_job_request sends by default) decides as the
Kubernetes-shaped one (lean=False) does, on every bundled example and variations of them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from jobdecider import Client, decide_job_request, pb
from test_live import FIXED_NOW

EXAMPLES = sorted(p.parent for p in ROOT.glob("examples/*/job.json") if (p.parent / "pods.json").exists())


def _load(example: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return json.loads((example / "job.json").read_text()), json.loads((example / "pods.json").read_text())


def _as_is(job: dict[str, Any], pods: dict[str, Any]) -> None:
    pass


def _terminating_and_foreign(job: dict[str, Any], pods: dict[str, Any]) -> None:
    """A pod being deleted, one with a second (non-controller) owner, an orphan and a sidecar."""
    items = pods["items"]
    items[0]["metadata"]["deletionTimestamp"] = "2025-06-02T09:59:00Z"
    items[0]["metadata"]["deletionGracePeriodSeconds"] = 30
    other = copy.deepcopy(items[-1])
    other["metadata"].update(name="foreign", uid="f0000000-0000-0000-0000-000000000001")
    other["metadata"]["ownerReferences"].insert(
        0, {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "c-1", "controller": False}
    )
    orphan = copy.deepcopy(items[-1])
    orphan["metadata"].update(name="orphan", uid="f0000000-0000-0000-0000-000000000002")
    del orphan["metadata"]["ownerReferences"]
    items[-1]["spec"]["initContainers"] = [{"name": "proxy", "image": "p", "restartPolicy": "Always"}]
    items.extend([other, orphan])


def _disrupted_and_long_message(job: dict[str, Any], pods: dict[str, Any]) -> None:
    """A failed pod with a DisruptionTarget condition (the Ignore rule) and a long message."""
    pod = pods["items"][-1]
    pod["status"]["phase"] = "Failed"
    pod["status"]["message"] = "é" * 5000
    pod["status"].setdefault("conditions", []).append(
        {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "2025-06-02T09:59:30Z", "reason": "x"}
    )


VARIANTS: list[Callable[[dict[str, Any], dict[str, Any]], None]] = [_as_is, _terminating_and_foreign, _disrupted_and_long_message]


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.__name__.strip("_") for v in VARIANTS])
def test_lean_request_decides_as_the_full_one(
    addr: str, example: Path, variant: Callable[[dict[str, Any], dict[str, Any]], None]
) -> None:
    job, pods = _load(example)
    variant(job, pods)
    state = pb.ControllerState()
    state.backoff.failures_after_last_success = 1
    state.backoff.last_failure_time.FromJsonString("2025-06-02T09:55:00Z")
    with Client(addr) as client:
        for explain in (False, True):
            kw: dict[str, Any] = {"now": FIXED_NOW, "explain": explain, "state": state}
            lean = decide_job_request(job, pods, **kw)
            full = decide_job_request(job, pods, lean=False, **kw)
            assert len(lean.lean_pods) == len(pods["items"]) and not lean.pods
            assert len(full.pods) == len(pods["items"]) and not full.lean_pods
            got, want = client.decide_job(lean), client.decide_job(full)
            assert got == want
            assert got.actions or got.HasField("requeue_after") or got.HasField("state")
            if explain:
                assert got.explanation.summary


def test_bundled_examples_are_found() -> None:
    assert {p.name for p in EXAMPLES} >= {"kep-3329-failjob-exit-code-42", "indexed-job-mid-run"}
