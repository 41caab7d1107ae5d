"""Your own controller with job-decider, about a screen: watches the Jobs whose spec.managedBy
names it, asks the job-decider service what to do with each (the Job, its pods and the state the
previous plan returned), applies the plan with the official kubernetes package
(jobdecider.apply) and looks again after the plan's requeue_after, or at once on a watch event.

    python controller.py --kubeconfig ~/.kube/config --decider 127.0.0.1:50051 \\
        --controller-name example.com/my-controller

Each sync reads the Job (GET) and its pods (LIST) fresh from the API server rather than from a
watch cache: such reads are never older than this controller's own last writes, so it needs no
expectations, and a single worker never syncs one Job twice at once.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

import jobdecider
from jobdecider.apply import Applier, ApplyError, to_json

# kubernetes.watch and kubernetes.config carry no annotations: Any, here only.
untyped_watch: Any = watch
untyped_config: Any = config


class Queue:
    """Job keys, each due at a time; adding a key already due sooner keeps the sooner time."""

    def __init__(self) -> None:
        self.due: dict[str, float] = {}
        self.cond = threading.Condition()

    def add(self, key: str, after: float = 0.0) -> None:
        with self.cond:
            self.due[key] = min(self.due.get(key, float("inf")), time.monotonic() + after)
            self.cond.notify()

    def get(self) -> str:
        with self.cond:
            while True:
                key = min(self.due, key=self.due.__getitem__, default=None)
                wait = None if key is None else self.due[key] - time.monotonic()
                if key is not None and wait is not None and wait <= 0:
                    del self.due[key]
                    return key
                self.cond.wait(wait)


def watch_forever(list_fn: Callable[..., Any], on_event: Callable[[dict[str, Any]], None], **kw: Any) -> None:
    """List+watch: a watch without a resourceVersion starts with every object (as ADDED), and
    after an error (410 Gone included) it starts over that way."""
    while True:
        try:
            for event in untyped_watch.Watch().stream(list_fn, **kw):
                on_event(event["raw_object"])
        except Exception as err:  # any watch failure: log, start over
            logging.warning("watch %s: %s; restarting", getattr(list_fn, "__name__", "?"), err)
            time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", default="", help="kubeconfig file (in-cluster config when empty)")
    parser.add_argument("--decider", default="127.0.0.1:50051", help="address of the job-decider service")
    parser.add_argument("--controller-name", default="example.com/my-controller", help="spec.managedBy of its Jobs")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    name: str = args.controller_name

    if args.kubeconfig:
        api: client.ApiClient = untyped_config.new_client_from_config(config_file=args.kubeconfig)
    else:
        untyped_config.load_incluster_config()
        api = client.ApiClient()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)

    def events(job: client.V1Job, type_: str, reason: str, message: str) -> None:
        logging.info("event %s %s: %s", type_, reason, message)

    applier = Applier(core, batch, recorder=events)
    decider = jobdecider.Client(args.decider)
    states: dict[str, tuple[str, jobdecider.pb.ControllerState | None]] = {}  # key: (Job UID, last state)
    queue = Queue()

    def on_job(job: dict[str, Any]) -> None:
        meta = job.get("metadata") or {}
        if (job.get("spec") or {}).get("managedBy") == name:
            queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    def on_pod(pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "Job":
                queue.add(f"{meta.get('namespace')}/{ref.get('name')}")

    def sync(key: str) -> float | None:
        """One sync of one Job; returns when to look again (None: on the next event only)."""
        ns, job_name = key.split("/", 1)
        try:
            job = batch.read_namespaced_job(job_name, ns)
        except ApiException as err:
            if err.status == 404:
                states.pop(key, None)
                return None
            raise
        if job.spec is None or job.spec.managed_by != name or job.metadata is None:
            return None
        uid = job.metadata.uid or ""
        listed = core.list_namespaced_pod(ns, label_selector=f"batch.kubernetes.io/controller-uid={uid}")
        pods = [to_json(p) for p in listed.items]
        mine = [p for p in pods if all(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [] if r.get("controller"))]
        saved_uid, state = states.get(key, ("", None))

        def build(lean: bool) -> jobdecider.pb.DecideJobRequest:
            now, sent = datetime.now(timezone.utc), state if saved_uid == uid else None
            return jobdecider.decide_job_request(
                to_json(job), mine, now=now, state=sent, controller_name=name, lean=lean
            )

        try:
            request = build(lean=True)
        except jobdecider.NotLeanError:  # a pod with no lean form: send them Kubernetes-shaped
            request = build(lean=False)
        plan = decider.decide_job(request, timeout=10)
        error: ApplyError | None = None
        try:
            result = applier.apply(job, plan)
        except ApplyError as err:
            result, error = err.result, err
        if result.state_holds:
            states[key] = (uid, plan.state if plan.HasField("state") else None)
        after = plan.requeue_after.ToTimedelta().total_seconds() if plan.HasField("requeue_after") else None
        logging.info(
            "job %s: %d pods, %d of %d actions applied, requeue after %s, err %s",
            key, len(mine), result.applied, len(plan.actions), after, error,
        )
        return 1.0 if error is not None else after

    for list_fn, handler in ((batch.list_job_for_all_namespaces, on_job), (core.list_pod_for_all_namespaces, on_pod)):
        # Only Job pods: they carry the controller-uid label.
        kw = {"label_selector": "batch.kubernetes.io/controller-uid"} if handler is on_pod else {}
        threading.Thread(target=watch_forever, args=(list_fn, handler), kwargs=kw, daemon=True).start()
    logging.info("controller %s: watching Jobs, deciding with %s", name, args.decider)
    while True:
        key = queue.get()
        try:
            after = sync(key)
        except Exception as err:  # a failed sync is retried, not fatal
            logging.warning("job %s: %s", key, err)
            after = 1.0
        if after is not None:
            queue.add(key, after)


if __name__ == "__main__":
    main()
