"""Writes tests/vectors-extended/*.yaml: requests with an extended failure policy and
the response job-decider gives (recorded with the CLI, then read by hand).

Run from anywhere after `cargo build --bin job-decider` (needs PyYAML). Every
response is job-decider's own (upstream has no such policy): read each one
against docs/failure-policy.md before committing it; tests/it/vectors.rs then
holds the service to it.
"""
import copy, json, os, subprocess, sys, tempfile
import yaml  # PyYAML

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = f"{ROOT}/target/debug/job-decider"
OUT = f"{ROOT}/tests/vectors-extended"
UID = "job-uid"
NOW = "2025-01-01T00:10:00Z"
LABELS = {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "job",
          "controller-uid": UID, "job-name": "job"}
HEAD = "apiVersion: job-decider.dev/v1alpha1\nkind: FailurePolicy\n"

def job(doc=None, indexed=False, completions=2, parallelism=2, backoff=6, per_index=None, pfp=None, active=None,
        replacement=None):
    j = {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "job", "namespace": "default", "uid": UID, "resourceVersion": "100",
                      "generation": "1", "creationTimestamp": "2025-01-01T00:00:00Z", "labels": dict(LABELS)},
         "spec": {"parallelism": parallelism, "completions": completions, "backoffLimit": backoff,
                  "completionMode": "Indexed" if indexed else "NonIndexed", "suspend": False,
                  "manualSelector": False,
                  "podReplacementPolicy": replacement or ("Failed" if pfp else "TerminatingOrFailed"),
                  "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
                  "template": {"metadata": {"labels": dict(LABELS)},
                               "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}},
         "status": {"startTime": "2025-01-01T00:00:00Z", "active": active if active is not None else 0,
                    "uncountedTerminatedPods": {}}}
    if per_index is not None:
        j["spec"]["backoffLimitPerIndex"] = per_index
        j["spec"]["backoffLimit"] = 2147483647
    if pfp:
        j["spec"]["podFailurePolicy"] = pfp
    if doc is not None:
        j["metadata"]["annotations"] = {"job-decider.dev/failure-policy": HEAD + doc}
    return j

def pod(name, phase, index=None, created="2025-01-01T00:00:00Z", node="node-a", annotations=None,
        conditions=None, containers=None, reason=None, message=None, finalizer=True, deleted=None):
    ann = dict(annotations or {})
    labels = dict(LABELS)
    if index is not None:
        ann["batch.kubernetes.io/job-completion-index"] = str(index)
        labels["batch.kubernetes.io/job-completion-index"] = str(index)
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "default", "uid": name + "-uid",
                      "creationTimestamp": created, "labels": labels, "annotations": ann,
                      "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": UID,
                                           "controller": True, "blockOwnerDeletion": True}],
                      "finalizers": ["batch.kubernetes.io/job-tracking"] if finalizer else []},
         "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x"}]},
         "status": {"phase": phase, "conditions": conditions or [], "containerStatuses": containers or []}}
    if deleted:
        # The API server's deletionTimestamp: the moment the deletion was asked for plus the grace period.
        p["metadata"]["deletionTimestamp"] = deleted
        p["metadata"]["deletionGracePeriodSeconds"] = "30"
    if reason: p["status"]["reason"] = reason
    if message: p["status"]["message"] = message
    if not ann: del p["metadata"]["annotations"]
    return p

def running():
    return [{"name": "main", "ready": True, "state": {"running": {"startedAt": "2025-01-01T00:00:05Z"}}}]

def exited(code, finished="2025-01-01T00:09:59Z", reason="Error", message=None):
    t = {"exitCode": code, "reason": reason, "startedAt": "2025-01-01T00:00:05Z", "finishedAt": finished}
    if message: t["message"] = message
    return [{"name": "main", "state": {"terminated": t}}]

def waiting(reason):
    return [{"name": "main", "state": {"waiting": {"reason": reason, "message": "Back-off pulling image"}}}]

def sched(at="2025-01-01T00:00:02Z"):
    return {"type": "PodScheduled", "status": "True", "lastTransitionTime": at}

def node(name, ready=None, taints=()):
    """A node as DecideJobRequest.nodes carries it (proto3 JSON of jobdecider.v1.Node)."""
    n = {"name": name}
    if taints:
        n["taints"] = [{"key": k, "effect": e} for k, e in taints]
    if ready:
        n["conditions"] = [{"type": "Ready", "status": ready}]
    return n

def kube_node(n):
    """The same node as `kubectl get node -o json` prints it, for the CLI's --nodes."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n["name"]},
            "spec": {"taints": n.get("taints", [])}, "status": {"conditions": n.get("conditions", [])}}

def cli_pod(p):
    """A pod as the CLI reads it: int64 fields as numbers, as kubectl prints them."""
    p = copy.deepcopy(p)
    if "deletionGracePeriodSeconds" in p["metadata"]:
        p["metadata"]["deletionGracePeriodSeconds"] = int(p["metadata"]["deletionGracePeriodSeconds"])
    return p

VECTORS = []
def vector(name, description, j, pods, now=NOW, request_doc=None, nodes=None, missing=None):
    # nodes and missing are what a caller sends: the nodes of the pods being deleted and not
    # terminal, sorted by name as the Go package's request.Nodes sends them.
    VECTORS.append((name, description, j, pods, now, request_doc, nodes or [], missing or []))

# 1 pendingTimeout
pt = "pendingTimeout:\n  seconds: 300\n"
vector("pending-timeout-fails-a-stuck-pod",
  "A pod waiting in ImagePullBackOff since it was scheduled 9m58s ago, past pendingTimeout 300s: the plan "
  "fails it (FailPods, condition job-decider.dev/PendingTimeout, reason ImagePullBackOff) right after "
  "adoption, and the other, running pod is untouched.",
  job(pt, active=2), [pod("stuck", "Pending", conditions=[sched()], containers=waiting("ImagePullBackOff")),
                      pod("runs", "Running", containers=running())])
vector("pending-timeout-requeues-at-the-deadline",
  "The same stuck pod, 2 minutes after it was scheduled: nothing to fail yet; the plan asks to decide "
  "again when the 300s run out (3 minutes).",
  job(pt, active=1, completions=1, parallelism=1),
  [pod("stuck", "Pending", conditions=[sched("2025-01-01T00:08:00Z")], containers=waiting("ErrImagePull"))])
vector("pending-timeout-unschedulable-only-when-listed",
  "An unschedulable pod (PodScheduled=False, Unschedulable) created 10 minutes ago: with reasons "
  "[Unschedulable] it is failed, timed from its creation.",
  job("pendingTimeout:\n  seconds: 300\n  reasons: [Unschedulable]\n", active=1, completions=1, parallelism=1),
  [pod("unplaced", "Pending", node="", conditions=[{"type": "PodScheduled", "status": "False",
       "reason": "Unschedulable", "lastTransitionTime": "2025-01-01T00:00:01Z"}])])
vector("pending-timeout-failed-pod-takes-its-action",
  "A pod this controller failed for its pending timeout (phase Failed, condition "
  "job-decider.dev/PendingTimeout=True), with pendingTimeout.action FailJob: the Job gets "
  "FailureTarget with reason PodFailurePolicy_PendingTimeout.",
  job("pendingTimeout:\n  seconds: 300\n  action: FailJob\n", active=1, completions=1, parallelism=1),
  [pod("stuck", "Failed", conditions=[sched(), {"type": "job-decider.dev/PendingTimeout", "status": "True",
       "reason": "ImagePullBackOff", "message": "stuck", "lastTransitionTime": "2025-01-01T00:09:00Z"}],
       containers=waiting("ImagePullBackOff"))])
# 9 attemptDeadline, 10 readyTimeout
def ready(status, at, reason=None):
    c = {"type": "Ready", "status": status, "lastTransitionTime": at}
    if reason: c["reason"] = reason
    return c

def started(p, at="2025-01-01T00:00:03Z"):
    p["status"]["startTime"] = at
    return p

vector("attempt-deadline-fails-a-long-running-pod",
  "A Ready pod that started 9m57s ago, past attemptDeadline 300s: the plan fails it (FailPods, condition "
  "job-decider.dev/AttemptDeadlineExceeded, reason DeadlineExceeded); the pod that started 2 minutes ago "
  "is untouched and the plan asks to decide again when its deadline comes (3 minutes).",
  job("attemptDeadline:\n  seconds: 300\n", active=2),
  [started(pod("hung", "Running", conditions=[ready("True", "2025-01-01T00:00:06Z")], containers=running())),
   started(pod("young", "Running", conditions=[ready("True", "2025-01-01T00:08:05Z")], containers=running()),
           "2025-01-01T00:08:00Z")])
vector("attempt-deadline-failed-pod-takes-its-action",
  "A pod this controller failed for its attempt deadline (phase Failed, condition "
  "job-decider.dev/AttemptDeadlineExceeded=True), with attemptDeadline.action FailIndex and "
  "backoffLimitPerIndex: its index fails (its finish time the condition's), the other index, started 2 "
  "minutes ago, keeps running until its own deadline.",
  job("attemptDeadline:\n  seconds: 300\n  action: FailIndex\n", indexed=True, per_index=3, active=1),
  [started(pod("hung", "Failed", index=0, conditions=[ready("False", "2025-01-01T00:09:00Z"),
       {"type": "job-decider.dev/AttemptDeadlineExceeded", "status": "True", "reason": "DeadlineExceeded",
        "message": "ran too long", "lastTransitionTime": "2025-01-01T00:09:00Z"}], containers=running())),
   started(pod("other", "Running", index=1, conditions=[ready("True", "2025-01-01T00:08:06Z")],
               containers=running()), "2025-01-01T00:08:00Z")])
vector("ready-timeout-fails-a-pod-not-ready-at-its-deadline",
  "A pod Ready=False (ContainersNotReady) since 5s after its start 9m57s ago, past readyTimeout 300s: "
  "the plan fails it with condition job-decider.dev/ReadyTimeout and reason ContainersNotReady.",
  job("readyTimeout:\n  seconds: 300\n", active=1, completions=1, parallelism=1),
  [started(pod("slow", "Running", conditions=[ready("False", "2025-01-01T00:00:08Z", "ContainersNotReady")],
               containers=running()))])
vector("ready-timeout-spares-a-pod-ready-at-its-deadline",
  "A pod that was Ready at its readyTimeout deadline and went unready later (Ready=False since 00:09:00, "
  "after the deadline 00:05:03): readyTimeout never fails it; nothing to do.",
  job("readyTimeout:\n  seconds: 300\n", active=1, completions=1, parallelism=1),
  [started(pod("flaky", "Running", conditions=[ready("False", "2025-01-01T00:09:00Z", "ContainersNotReady")],
               containers=running()))])
# 2 backoff
vector("backoff-settings-replace-upstreams-schedule",
  "Two failures after the last success, the latest 5s ago, with backoff base 30s and factor 3: the "
  "replacement waits 30·3 = 90s less the 5s passed, so the plan requeues in 85s (upstream would wait 20s).",
  job("backoff:\n  baseSeconds: 30\n  factor: 3\n", completions=1, parallelism=1),
  [pod("f1", "Failed", containers=exited(1, "2025-01-01T00:09:00Z")),
   pod("f2", "Failed", containers=exited(1, "2025-01-01T00:09:55Z"))])
vector("backoff-jitter-is-deterministic",
  "One failure 1s ago with base 20s and jitterPercent 50: the delay is 20s plus FNV-1a-64(\"job-uid/1\") % 51 "
  "percent of it, the same for every decision of this snapshot.",
  job("backoff:\n  baseSeconds: 20\n  jitterPercent: 50\n", completions=1, parallelism=1),
  [pod("f1", "Failed", containers=exited(1, "2025-01-01T00:09:59Z"))])
# 4 Ignore without backoff growth
ignore_pfp = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
vector("ignored-failure-immediate-replaces-at-once",
  "A drained pod (DisruptionTarget) that spec.podFailurePolicy ignores, 1s ago, with "
  "afterIgnoredFailure Immediate: the replacement is created at once (upstream waits 10s).",
  job("backoff:\n  afterIgnoredFailure: Immediate\n", completions=1, parallelism=1, pfp=ignore_pfp),
  [pod("drained", "Failed", conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
       "lastTransitionTime": "2025-01-01T00:09:50Z"}], containers=exited(143, "2025-01-01T00:09:59Z"))])
# 3 named rule, 5 reasons & messages, 6 ranges & signals
vector("named-rule-gives-its-reason",
  "Exit code 42 matches the document's rule named bad_input (FailJob): FailureTarget, then Failed, "
  "with reason PodFailurePolicy_bad_input (KEP-4443) and upstream's message naming the rule.",
  job("rules:\n- name: bad_input\n  action: FailJob\n  onExitCodes: {operator: In, values: [42]}\n", completions=1, parallelism=1),
  [pod("f1", "Failed", containers=exited(42))])
vector("named-rule-from-the-request-field",
  "The same Job without the annotation, its document sent in DecideJobRequest.failurePolicy: the same plan.",
  job(None, completions=1, parallelism=1), [pod("f1", "Failed", containers=exited(42))],
  request_doc=HEAD + "rules:\n- name: bad_input\n  action: FailJob\n  onExitCodes: {operator: In, values: [42]}\n")
# 9 failureMessage: Detailed
vector("failure-message-detailed-names-pod-rule-and-limit",
  "failureMessage Detailed: the FailJob of the rule named bad_input keeps its reason "
  "(PodFailurePolicy_bad_input) and upstream's message, followed by the pod, its node, the container "
  "with its exit code and termination reason, and the rule; a FailJob rule reaches no limit, so none "
  "is said. Failed and the event repeat the message.",
  job("failureMessage: Detailed\nrules:\n- name: bad_input\n  action: FailJob\n  onExitCodes: {operator: In, values: [42]}\n", completions=1, parallelism=1),
  [pod("f1", "Failed", containers=exited(42))])
vector("pod-reason-ignored",
  "A pod the kubelet rejected (status.reason UnexpectedAdmissionError, no container statuses) matches "
  "onPodReasons with Ignore: not counted (failed stays 0) and replaced.",
  job("rules:\n- action: Ignore\n  onPodReasons: [UnexpectedAdmissionError]\n", completions=1, parallelism=1),
  [pod("rejected", "Failed", reason="UnexpectedAdmissionError", message="Allocate failed")])
vector("container-reason-and-message-both-hold",
  "A rule with onContainerReasons [OOMKilled] AND onMessage /CUDA/: the OOMKilled pod whose message says "
  "CUDA fails the Job; the rule needs both.",
  job("rules:\n- name: gpu_oom\n  action: FailJob\n  onContainerReasons: {values: [OOMKilled]}\n  onMessage: {pattern: 'CUDA error'}\n", completions=2, parallelism=2),
  [pod("oom", "Failed", containers=exited(137, reason="OOMKilled", message="RuntimeError: CUDA error: out of memory")),
   pod("plain-oom", "Failed", containers=exited(137, "2025-01-01T00:09:58Z", reason="OOMKilled"))])
vector("exit-ranges-and-signals",
  "Exit 143 matches signals [SIGTERM] (Count); exit 3 matches ranges [1-127] (FailJob): the Job fails on "
  "the pod with exit 3, reason PodFailurePolicy_program_error.",
  job("rules:\n- name: killed\n  action: Count\n  onExitCodes: {operator: In, signals: [SIGTERM, SIGKILL]}\n"
      "- name: program_error\n  action: FailJob\n  onExitCodes: {operator: In, ranges: ['1-127']}\n", completions=2, parallelism=2),
  [pod("term", "Failed", containers=exited(143, "2025-01-01T00:09:50Z")), pod("bug", "Failed", containers=exited(3))])
# 7 retry limits
oom_limit = "rules:\n- name: oom\n  action: Count\n  onContainerReasons: {values: [OOMKilled]}\n  maxRetries: 2\n  whenRetriesExhausted: FailJob\n"
vector("retry-limit-first-match-is-counted-and-carried",
  "Index 1's first OOM kill under maxRetries 2: counted; its replacement carries "
  "job-decider.dev/rule-match-counts: oom=1.",
  job(oom_limit, indexed=True, completions=2, parallelism=2, active=1),
  [pod("job-0-a", "Running", index=0, containers=running()),
   pod("job-1-a", "Failed", index=1, containers=exited(137, "2025-01-01T00:09:00Z", reason="OOMKilled"))])
vector("retry-limit-used-up-fails-the-job",
  "Index 1's pod carries oom=2 (two earlier OOM kills, their pods gone) and is OOM-killed again: the third "
  "match passes maxRetries 2, so whenRetriesExhausted (FailJob) applies, reason PodFailurePolicy_oom.",
  job(oom_limit, indexed=True, completions=2, parallelism=2, active=1),
  [pod("job-0-a", "Running", index=0, containers=running()),
   pod("job-1-c", "Failed", index=1, annotations={"job-decider.dev/rule-match-counts": "oom=2",
       "batch.kubernetes.io/job-index-failure-count": "2"}, containers=exited(137, reason="OOMKilled"))])
# 8 node avoidance
vector("node-avoidance-required",
  "Index 1 failed on node-b: its replacement gets avoidNodes [node-b] (Required) and the "
  "job-decider.dev/failed-nodes annotation; index 0's running pod is untouched.",
  job("nodeAvoidance:\n  mode: Required\n", indexed=True, completions=2, parallelism=2, active=1),
  [pod("job-0-a", "Running", index=0, containers=running()),
   pod("job-1-a", "Failed", index=1, node="node-b", containers=exited(1, "2025-01-01T00:09:00Z"))])
vector("node-avoidance-keeps-the-latest-max-nodes",
  "A NonIndexed Job with maxNodes 2 (Preferred): the failed pod carries failed-nodes node-a,node-b and failed "
  "on node-c; the replacement avoids the last two, node-b and node-c.",
  job("nodeAvoidance:\n  mode: Preferred\n  maxNodes: 2\n", completions=1, parallelism=1),
  [pod("f3", "Failed", node="node-c", annotations={"job-decider.dev/failed-nodes": "node-a,node-b"},
       containers=exited(1, "2025-01-01T00:09:00Z"))])

# 12 terminatingTimeout
UNREACHABLE = "node.kubernetes.io/unreachable"
def gone_dark(p):
    """A pod whose kubelet stopped reporting: still Running, its Ready condition as last reported."""
    p["status"]["conditions"] = [ready("True", "2025-01-01T00:00:06Z")]
    return p

tt = "terminatingTimeout:\n  seconds: 300\n"
vector("terminating-timeout-fails-a-pod-stuck-past-its-grace-period",
  "A pod deleted with its grace period over 10 minutes ago (deletionTimestamp 00:00:00) and still Running, "
  "under podReplacementPolicy Failed and terminatingTimeout 300s (onNodes Any): the plan fails it (FailPods, "
  "condition job-decider.dev/TerminatingTimeout, reason TerminatingTimeout, its node named, no force delete); "
  "no replacement yet, as the pod is not Failed.",
  job(tt, completions=1, parallelism=1, replacement="Failed"),
  [gone_dark(pod("stuck", "Running", containers=running(), deleted="2025-01-01T00:00:00Z"))])
vector("terminating-timeout-requeues-at-the-deadline",
  "The same stuck pod, its grace period over 2 minutes ago (00:08:00): nothing to fail yet; the plan asks to "
  "decide again when the 300s run out (3 minutes).",
  job(tt, completions=1, parallelism=1, replacement="Failed"),
  [gone_dark(pod("stuck", "Running", containers=running(), deleted="2025-01-01T00:08:00Z"))])
ttu = "terminatingTimeout:\n  seconds: 300\n  onNodes: Unhealthy\n"
vector("terminating-timeout-unhealthy-spares-a-pod-on-a-ready-node",
  "onNodes Unhealthy: a pod terminating for 10 minutes past its grace period on node-a, which the request "
  "reports Ready=True with no NoExecute taint (only the registration taint not-ready:NoSchedule, which does "
  "not count): the node is healthy, so the pod is not stuck; nothing is failed and there is no requeue.",
  job(ttu, completions=1, parallelism=1, replacement="Failed"),
  [gone_dark(pod("slow", "Running", containers=running(), deleted="2025-01-01T00:00:00Z"))],
  nodes=[node("node-a", "True", [("node.kubernetes.io/not-ready", "NoSchedule")])])
vector("terminating-timeout-unhealthy-fails-a-pod-on-an-unreachable-node",
  "onNodes Unhealthy, three pods terminating 10 minutes past their grace period: on node-a (Ready=True) the "
  "pod is spared; on node-b (Ready=Unknown, taints unreachable NoSchedule and NoExecute) and on node-c (in "
  "missingNodes: deleted) the pods are failed, each message saying why its node is unhealthy (the Ready "
  "condition is Unknown; the node no longer exists).",
  job(ttu, completions=3, parallelism=3, replacement="Failed"),
  [gone_dark(pod("fine", "Running", node="node-a", containers=running(), deleted="2025-01-01T00:00:00Z")),
   gone_dark(pod("lost", "Running", node="node-b", containers=running(), deleted="2025-01-01T00:00:00Z")),
   gone_dark(pod("gone", "Running", node="node-c", containers=running(), deleted="2025-01-01T00:00:00Z"))],
  nodes=[node("node-a", "True"),
         node("node-b", "Unknown", [(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")])],
  missing=["node-c"])
vector("terminating-timeout-force-delete",
  "onNodes Unhealthy with forceDelete true: the pod on node-a, Ready=False with the not-ready NoExecute "
  "taint, 10 minutes past its grace period, is failed with PodFailure.forceDelete true (the shim then "
  "deletes it with a grace period of 0).",
  job(ttu + "  forceDelete: true\n", completions=1, parallelism=1, replacement="Failed"),
  [gone_dark(pod("stuck", "Running", containers=running(), deleted="2025-01-01T00:00:00Z"))],
  nodes=[node("node-a", "False", [("node.kubernetes.io/not-ready", "NoExecute")])])
vector("terminating-timeout-failed-pod-takes-its-action",
  "The pod this controller failed for its terminating timeout at 00:05:00 (phase Failed, condition "
  "job-decider.dev/TerminatingTimeout=True, still being deleted as its kubelet is gone), with action Count "
  "and podReplacementPolicy Failed: it is counted as failed (its finalizer removed) and replaced at once, the "
  "backoff counting from the condition's lastTransitionTime (10s, long past).",
  job(tt + "  action: Count\n", completions=1, parallelism=1, replacement="Failed"),
  [pod("stuck", "Failed", containers=running(), deleted="2025-01-01T00:00:00Z",
       conditions=[ready("True", "2025-01-01T00:00:06Z"),
                   {"type": "job-decider.dev/TerminatingTimeout", "status": "True", "reason": "TerminatingTimeout",
                    "message": "Pod was still terminating on node node-a 5m after its grace period ended, "
                               "reaching the terminating timeout of 5m",
                    "lastTransitionTime": "2025-01-01T00:05:00Z"}])])

vector("terminating-timeout-failed-pod-fails-its-index",
  "Index 0's pod, failed for its terminating timeout (phase Failed, condition "
  "job-decider.dev/TerminatingTimeout=True at 00:05:00, still being deleted), with action FailIndex and "
  "backoffLimitPerIndex 1: index 0 fails at once (failedIndexes 0, no replacement), whatever the limit; "
  "index 1 keeps running.",
  job(tt + "  action: FailIndex\n", indexed=True, per_index=1, active=1, replacement="Failed"),
  [pod("job-0-a", "Failed", index=0, containers=running(), deleted="2025-01-01T00:00:00Z",
       conditions=[ready("True", "2025-01-01T00:00:06Z"),
                   {"type": "job-decider.dev/TerminatingTimeout", "status": "True", "reason": "TerminatingTimeout",
                    "message": "Pod was still terminating on node node-a 5m after its grace period ended, "
                               "reaching the terminating timeout of 5m",
                    "lastTransitionTime": "2025-01-01T00:05:00Z"}]),
   gone_dark(pod("job-1-a", "Running", index=1, containers=running()))])

def main():
    os.makedirs(OUT, exist_ok=True)
    # Names given on the command line: only those vectors are recorded (the rest stay as committed).
    only = set(sys.argv[1:])
    for name, description, j, pods, now, request_doc, nodes, missing in VECTORS:
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as d:
            jp, pp = f"{d}/job.json", f"{d}/pods.json"
            # The CLI reads integers only as numbers; the vector keeps the request as written.
            cli_job = copy.deepcopy(j)
            cli_job["metadata"]["generation"] = int(cli_job["metadata"]["generation"])
            json.dump(cli_job, open(jp, "w")); json.dump([cli_pod(p) for p in pods], open(pp, "w"))
            args = [BIN, "decide", "--job", jp, "--pods", pp, "--now", now, "-o", "json"]
            if nodes:
                np_ = f"{d}/nodes.json"
                json.dump([kube_node(n) for n in nodes], open(np_, "w")); args += ["--nodes", np_]
            if missing:
                args += ["--missing-nodes", ",".join(missing)]
            if request_doc:
                fp = f"{d}/doc.yaml"; open(fp, "w").write(request_doc); args += ["--failure-policy", fp]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{name}: {r.stderr}")
            expected = json.loads(r.stdout)
            # The canonical form the vector runners compare: uncounted UIDs sorted.
            for a in expected.get("actions", []):
                u = a.get("updateStatus", {}).get("status", {}).get("uncountedTerminatedPods")
                for k in ("succeeded", "failed"):
                    if u and k in u:
                        u[k].sort()
        request = {"now": now, "job": j, "pods": pods}
        if request_doc:
            request["failurePolicy"] = request_doc
        if nodes:
            request["nodes"] = nodes
        if missing:
            request["missingNodes"] = missing
        doc = {"name": name, "description": description, "request": request, "expected": expected}
        with open(f"{OUT}/{name}.yaml", "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False, width=100, allow_unicode=True)
    print(len(only) if only else len(VECTORS), "vectors")
main()
