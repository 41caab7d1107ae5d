"""Against a live server (JOB_DECIDER_ADDR): decisions, the raw stubs, errors and the quickstart.

The expected plans are not written here: they are what `job-decider decide` prints offline for
the same snapshot, so the tests check that the client and the service agree with the CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from conftest import EXAMPLE, NOW, ROOT, cli, cli_decide
from jobdecider import AsyncClient, Client, DecideError, decide_job_request, pb, pb_grpc, validate_job_request

FIXED_NOW = datetime.fromisoformat(NOW)
QUICKSTART = ROOT / "clients" / "python" / "examples" / "quickstart.py"


def _cli_plan(now: str = NOW) -> pb.DecideJobResponse:
    """The plan the CLI prints for the bundled example at `now`."""
    run = cli_decide(EXAMPLE / "job.json", EXAMPLE / "pods.json", now)
    assert run.returncode == 0, run.stderr
    return json_format.Parse(run.stdout, pb.DecideJobResponse())


def _conditions(plan: pb.DecideJobResponse) -> list[tuple[str, str, str]]:
    """(type, status, reason) of every condition every updateStatus writes, in order."""
    return [
        (c.type, c.status, c.reason)
        for a in plan.actions
        if a.WhichOneof("kind") == "update_status"
        for c in a.update_status.status.conditions
    ]


def test_decide_sync_matches_cli(addr: str, job: dict[str, Any], pods: dict[str, Any]) -> None:
    want = _cli_plan()
    with Client(addr) as client:
        got = client.decide_job(decide_job_request(job, pods, now=FIXED_NOW))
    assert got == want
    # What that plan is, as checked against the CLI: the exit code 42 FailJob rule deletes the
    # other pods first and marks the Job FailureTarget for the pod failure policy.
    assert got.actions[0].WhichOneof("kind") == "delete_pods"
    assert ("FailureTarget", "True", "PodFailurePolicy") in _conditions(got)


def test_decide_asyncio_matches_cli(addr: str, job: dict[str, Any], pods: dict[str, Any]) -> None:
    want = _cli_plan()
    request = decide_job_request(job, pods, now=FIXED_NOW)

    async def decide_twice() -> list[pb.DecideJobResponse]:
        async with AsyncClient(addr) as client:
            # Two calls in flight at once on one channel.
            return list(await asyncio.gather(client.decide_job(request), client.decide_job(request)))

    got = asyncio.run(decide_twice())
    assert got == [want, want]


def test_generated_stubs_sync_and_aio(addr: str, job: dict[str, Any], pods: dict[str, Any]) -> None:
    want = _cli_plan()
    request = decide_job_request(job, pods, now=FIXED_NOW)
    with grpc.insecure_channel(addr) as channel:
        assert pb_grpc.JobDeciderStub(channel).DecideJob(request, timeout=30) == want

    async def aio_call() -> pb.DecideJobResponse:
        async with grpc.aio.insecure_channel(addr) as channel:
            return await pb_grpc.JobDeciderStub(channel).DecideJob(request, timeout=30)

    assert asyncio.run(aio_call()) == want


def _cli_violation_fields(job: dict[str, Any], pods: dict[str, Any], tmp_path: Path) -> list[str]:
    """The field paths the CLI names when it refuses this snapshot (its `  FIELD: ...` lines)."""
    (tmp_path / "job.json").write_text(json.dumps(job))
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    run = cli_decide(tmp_path / "job.json", tmp_path / "pods.json", NOW)
    assert run.returncode != 0
    lines = [line.strip() for line in run.stderr.splitlines() if line.startswith("  ")]
    return [line.split(":", 1)[0] for line in lines]


def _check_bad_request(err: DecideError, want_fields: list[str]) -> None:
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in err.field_violations] == want_fields
    assert all(v.description and v.reason for v in err.field_violations)
    assert want_fields[0] in err.message
    assert err.error_info is not None
    assert err.error_info.domain == "jobdecider.dev"
    assert err.error_info.reason == "INVALID_SNAPSHOT"


def test_bad_request_job_without_uid_names_the_field(
    addr: str, job: dict[str, Any], pods: dict[str, Any]
) -> None:
    # The service takes a request as it is. (The CLI is no reference here: it takes a Job
    # file without a uid as the API server would create it, docs/cli.md, "Manifests as written".)
    del job["metadata"]["uid"]
    with Client(addr) as client, pytest.raises(DecideError) as caught:
        client.decide_job(decide_job_request(job, pods, now=FIXED_NOW))
    _check_bad_request(caught.value, ["job.metadata.uid"])


def test_bad_request_asyncio_pod_without_uid_names_the_pod(
    addr: str, job: dict[str, Any], pods: dict[str, Any], tmp_path: Path
) -> None:
    del pods["items"][1]["metadata"]["uid"]
    want_fields = _cli_violation_fields(job, pods, tmp_path)
    assert want_fields == ["pods[1].metadata.uid"]

    async def decide(lean: bool) -> None:
        async with AsyncClient(addr) as client:
            await client.decide_job(decide_job_request(job, pods, now=FIXED_NOW, lean=lean))

    with pytest.raises(DecideError) as caught:
        asyncio.run(decide(False))
    _check_bad_request(caught.value, want_fields)
    # The lean encoding (the default) names the pod in its own field.
    with pytest.raises(DecideError) as caught:
        asyncio.run(decide(True))
    _check_bad_request(caught.value, ["leanPods[1].uid"])


def test_validate_job_matches_cli(addr: str, job: dict[str, Any], tmp_path: Path) -> None:
    job["spec"]["parallelism"] = -1
    (tmp_path / "job.json").write_text(json.dumps(job))
    run = subprocess.run(
        [str(cli()), "validate", str(tmp_path / "job.json")], capture_output=True, text=True, check=False
    )
    want = [line.strip() for line in run.stderr.splitlines() if line.startswith("  ")]
    assert run.returncode != 0 and len(want) == 1
    with Client(addr) as client:
        got = client.validate_job(validate_job_request(job)).violations
        assert [v.description for v in got] == want
        assert [v.field for v in got] == [want[0].split(":", 1)[0]]
        del job["spec"]["parallelism"]
        assert list(client.validate_job(validate_job_request(job)).violations) == []


def test_unreachable_server_is_a_decide_error_without_details(job: dict[str, Any], pods: dict[str, Any]) -> None:
    # Port 1 on loopback: nothing listens there, so the transport fails before any server answers.
    with Client("127.0.0.1:1", timeout=5) as client, pytest.raises(DecideError) as caught:
        client.decide_job(decide_job_request(job, pods, now=FIXED_NOW))
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert caught.value.field_violations == []
    assert caught.value.error_info is None


def _without_times(action: pb.Action) -> pb.Action:
    """The action less the condition times, which follow `now` (the quickstart uses the clock)."""
    copy = pb.Action()
    copy.CopyFrom(action)
    if copy.WhichOneof("kind") == "update_status":
        for c in copy.update_status.status.conditions:
            c.ClearField("last_probe_time")
            c.ClearField("last_transition_time")
    return copy


def test_quickstart_on_bundled_example(addr: str) -> None:
    started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    run = subprocess.run(
        [sys.executable, str(QUICKSTART), str(EXAMPLE / "job.json"), str(EXAMPLE / "pods.json")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "JOB_DECIDER_ADDR": addr},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    printed = [json_format.Parse(line, pb.Action()) for line in run.stdout.splitlines()]
    # The quickstart decides at the current time: compare with the CLI deciding at about that time.
    want = _cli_plan(started)
    assert [_without_times(a) for a in printed] == [_without_times(a) for a in want.actions]
    assert len(printed) > 0
