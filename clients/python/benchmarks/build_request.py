"""How long decide_job_request takes for a large Job: 60,000 pods as kubectl prints them.

    clients/python/.venv/bin/python clients/python/benchmarks/build_request.py [--pods N] [--full]

The pods are copies of the bundled example's (examples/kep-3329-failjob-exit-code-42), each with
its own name, uid, times and completion index, already parsed (as a Kubernetes client or
json.loads hands them over); the time of json.loads on the same pods as text is printed too.
It prints the best of three runs of the lean builder (the default) and, with --full, of the
Kubernetes-shaped one (lean=False): the wall time and the CPU time of the process (the latter is
what to compare on a machine other work shares).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jobdecider import decide_job_request

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "kep-3329-failjob-exit-code-42"
NOW = datetime(2025, 6, 2, 10, 0, 0, tzinfo=timezone.utc)


def pods(n: int) -> list[dict[str, Any]]:
    """n pods made from the example's, distinct where a real Job's pods are."""
    base = json.loads((EXAMPLE / "pods.json").read_text())["items"]
    out = []
    for i in range(n):
        pod = copy.deepcopy(base[i % len(base)])
        meta = pod["metadata"]
        meta["name"] = f"{meta['name']}-{i}"
        meta["uid"] = f"6f1c2b7e-3d4a-4c3b-9a1e-{i:012d}"
        meta["creationTimestamp"] = f"2025-06-02T0{i % 10}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        meta.setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(i)
        out.append(pod)
    return out


def best_of_three(run: Callable[[], object]) -> str:
    """`WALL s wall, CPU s CPU`: the best of three runs of each."""
    wall, cpu = [], []
    for _ in range(3):
        started, started_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return f"{min(wall):5.2f} s wall, {min(cpu):5.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=60_000)
    parser.add_argument("--full", action="store_true", help="also time the Kubernetes-shaped builder")
    args = parser.parse_args()
    job = json.loads((EXAMPLE / "job.json").read_text())
    items = pods(args.pods)
    text = json.dumps({"kind": "PodList", "items": items})
    request = decide_job_request(job, items, now=NOW)
    print(f"{args.pods} pods, {len(text) / 1e6:.0f} MB as kubectl JSON, {request.ByteSize() / 1e6:.1f} MB lean request")
    print(f"decide_job_request (lean):        {best_of_three(lambda: decide_job_request(job, items, now=NOW))}")
    print(f"  then SerializeToString:         {best_of_three(request.SerializeToString)}")
    print(f"json.loads of the pods' text:     {best_of_three(lambda: json.loads(text))}")
    if args.full:
        full = best_of_three(lambda: decide_job_request(job, items, now=NOW, lean=False))
        print(f"decide_job_request (lean=False):  {full}")


if __name__ == "__main__":
    main()
