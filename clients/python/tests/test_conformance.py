"""The language-neutral client conformance suite (conformance/clients/README.md) through the live
server: every line of cases.jsonl, called with Client and compared as the suite says."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from conftest import ROOT
from jobdecider import Client, DecideError, pb

CASES = ROOT / "conformance" / "clients" / "cases.jsonl"

#: Each method: its request and response types, and the Client method that calls it.
METHODS: dict[str, tuple[type[Message], type[Message], str]] = {
    "DecideJob": (pb.DecideJobRequest, pb.DecideJobResponse, "decide_job"),
    "DecideJobSet": (pb.DecideJobSetRequest, pb.DecideJobSetResponse, "decide_job_set"),
    "ValidateJob": (pb.ValidateJobRequest, pb.ValidateJobResponse, "validate_job"),
}


def _sorted_uncounted(response: Message) -> Message:
    """Each status write's uncounted UIDs sorted: the suite compares them as sets."""
    if isinstance(response, pb.DecideJobResponse):
        for action in response.actions:
            if action.HasField("update_status"):
                uncounted = action.update_status.status.uncounted_terminated_pods
                uncounted.succeeded[:] = sorted(uncounted.succeeded)
                uncounted.failed[:] = sorted(uncounted.failed)
    return response


def _run(client: Client, case: dict[str, Any]) -> str:
    """'' when the case's answer is the expected one, else what differs."""
    request_type, response_type, method = METHODS[case["method"]]
    request = json_format.ParseDict(case["request"], request_type())
    try:
        got = _sorted_uncounted(getattr(client, method)(request))
    except DecideError as err:
        if "error" not in case:
            return f"failed: {err}"
        error = {
            "code": err.code.name,
            "reason": err.error_info.reason if err.error_info is not None else "",
            "violations": [{"field": v.field, "reason": v.reason} for v in err.field_violations],
        }
        return "" if error == case["error"] else f"error differs: want {case['error']}, got {error}"
    if "error" in case:
        return f"succeeded, want {case['error']}"
    want = json_format.ParseDict(case["response"], response_type())
    return "" if got == want else f"answer differs:\n  want {want}\n  got {got}"


def test_every_conformance_case_passes(addr: str) -> None:
    failures = []
    methods: Counter[str] = Counter()
    with Client(addr) as client:
        for line in CASES.read_text().splitlines():
            case = json.loads(line)
            methods[case["method"]] += 1
            problem = _run(client, case)
            if problem:
                failures.append(f"{case['name']}: {problem}")
    assert not failures, "\n".join(failures)
    assert all(methods[m] > 0 for m in METHODS), methods
