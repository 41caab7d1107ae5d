//! The kubelet's side: pods starting, running, ending, restarting and stopping
//! as a kubelet writes them, and deletions with their grace period.

use super::*;
use job_decider_core::extended::{
    ATTEMPT_DEADLINE_CONDITION, READY_TIMEOUT_CONDITION, TERMINATING_TIMEOUT_CONDITION,
};
use job_decider_core::model::NodeAvoidanceMode;

impl<'s> World<'s> {
    /// A DELETE without a grace period of its own, as the Job controller, the eviction
    /// API (`kubectl drain`), the scheduler and `kubectl delete` send it: the pod's
    /// `terminationGracePeriodSeconds`, but at once for a pod on no node or already
    /// ended (the API server's `CheckGracefulDelete`, `pkg/registry/core/pod/strategy.go`).
    /// The kubelet then stops a pod on a node (see [`World::stopping`]).
    pub(super) fn delete_pod(&mut self, i: usize) {
        let now = self.now;
        let sp = &self.pods[i];
        if sp
            .pod
            .metadata
            .as_ref()
            .is_some_and(|m| m.deletion_timestamp.is_some())
        {
            return;
        }
        let on_node = scheduled(&sp.pod) && !terminal(&sp.pod);
        let grace = if on_node { self.grace_seconds } else { 0 };
        let (mut after, code) = self.stopping(grace);
        // Bound to a node but not running: the kubelet has no container to stop.
        if phase(&sp.pod) != "Running" {
            after = 0;
        }
        let sp = &mut self.pods[i];
        let m = meta(&mut sp.pod);
        m.deletion_timestamp = Some(whole(now.saturating_add(grace * SECOND)));
        m.deletion_grace_period_seconds = Some(grace);
        if on_node {
            sp.stop_at = Some(now.saturating_add(after));
            sp.stop_code = code;
        }
        self.touch(i);
    }

    pub(super) fn start_pod(&mut self, i: usize) {
        match self.pods[i].plan.ending.clone() {
            PlannedEnding::Exits => {}
            PlannedEnding::Stuck(reason) => return self.stick(i, &reason),
            PlannedEnding::Rejected(reason) => return self.reject(i, &reason),
        }
        let now = self.now;
        let names = self.container_names.clone();
        // Without modelled nodes, every pod runs on a node of its own.
        let node = self
            .placed_on(&self.pods[i].pod)
            .map_or_else(|| format!("node-{}", self.pods[i].ordinal), str::to_string);
        let sp = &mut self.pods[i];
        sp.start_at = None;
        sp.started = Some(now);
        sp.outcome = "running".to_string();
        sp.pod.spec.get_or_insert_with(Default::default).node_name = node.clone();
        let ready = !sp.plan.never_ready;
        let st = status(&mut sp.pod);
        st.phase = "Running".to_string();
        // The kubelet's status.startTime: when it accepted the pod (kept across restarts).
        st.start_time.get_or_insert(whole(now));
        st.container_statuses = names
            .iter()
            .map(|name| pb::ContainerStatus {
                name: name.clone(),
                ready,
                state: Some(pb::ContainerState {
                    running: Some(pb::ContainerStateRunning {
                        started_at: Some(whole(now)),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        set_ready(st, ready, now);
        let not_ready = if ready { "" } else { ", never Ready" };
        self.push(
            EventKind::PodStarted,
            Some(i),
            format!("running on {node}{not_ready}"),
        );
    }

    /// The attempt cannot start: its containers wait with `reason` until the pod is
    /// failed or deleted (the kubelet keeps retrying the image pull).
    pub(super) fn stick(&mut self, i: usize, reason: &str) {
        let now = self.now;
        let names = self.container_names.clone();
        let sp = &mut self.pods[i];
        sp.start_at = None;
        // Containers wait on a node: without modelled nodes, the pod's own one.
        if !scheduled(&sp.pod) {
            let node = format!("node-{}", sp.ordinal);
            sp.pod.spec.get_or_insert_with(Default::default).node_name = node;
            status(&mut sp.pod).conditions.push(pb::PodCondition {
                r#type: "PodScheduled".to_string(),
                status: "True".to_string(),
                last_transition_time: Some(whole(now)),
                ..Default::default()
            });
        }
        let st = status(&mut sp.pod);
        // The kubelet accepted the pod; its containers are what cannot start.
        st.start_time.get_or_insert(whole(now));
        st.container_statuses = names
            .iter()
            .map(|name| pb::ContainerStatus {
                name: name.clone(),
                state: Some(pb::ContainerState {
                    waiting: Some(pb::ContainerStateWaiting {
                        reason: reason.to_string(),
                        message: format!("container {name} cannot start: {reason}"),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        set_ready(st, false, now);
        self.push(
            EventKind::PodWaiting,
            Some(i),
            format!("its containers cannot start: {reason}"),
        );
    }

    /// The kubelet rejects the pod as it would start: phase Failed with `reason`, no
    /// container ran (as for `UnexpectedAdmissionError`).
    pub(super) fn reject(&mut self, i: usize, reason: &str) {
        let now = self.now;
        let sp = &mut self.pods[i];
        sp.start_at = None;
        let message = sp.plan.message.clone();
        let st = status(&mut sp.pod);
        st.phase = "Failed".to_string();
        st.reason = reason.to_string();
        st.message = message;
        set_ready(st, false, now);
        sp.ended = Some(now);
        sp.outcome = "failed".to_string();
        sp.why = format!("rejected by the kubelet: {reason}");
        let why = self.pods[i].why.clone();
        self.tell_failure(i, EventKind::PodFailed, &why);
        self.collect();
    }

    /// The controller fails a pod past a timeout of the extended policy (FailPods:
    /// stuck in Pending, not Ready in time, past its attempt deadline): phase Failed
    /// with its condition, then a delete (at once: the phase is terminal).
    pub(super) fn fail_stuck_pod(&mut self, i: usize, failure: &pb::PodFailure) {
        let now = self.now;
        {
            let sp = &mut self.pods[i];
            let st = status(&mut sp.pod);
            st.phase = "Failed".to_string();
            st.conditions.push(pb::PodCondition {
                r#type: failure.condition_type.clone(),
                status: "True".to_string(),
                reason: failure.reason.clone(),
                message: failure.message.clone(),
                last_transition_time: Some(whole(now)),
                ..Default::default()
            });
            sp.start_at = None;
            sp.ended = Some(now);
            sp.outcome = "failed".to_string();
            sp.why = match failure.condition_type.as_str() {
                READY_TIMEOUT_CONDITION => format!(
                    "not Ready within readyTimeout ({}); failed by the controller",
                    failure.reason
                ),
                ATTEMPT_DEADLINE_CONDITION => {
                    "ran past its attemptDeadline; failed by the controller".to_string()
                }
                TERMINATING_TIMEOUT_CONDITION => format!(
                    "stuck terminating ({}); failed by the controller",
                    failure.reason
                ),
                _ => format!(
                    "stuck in Pending ({}); failed by the controller",
                    failure.reason
                ),
            };
        }
        let why = self.pods[i].why.clone();
        self.tell_failure(i, EventKind::PodFailedByController, &why);
        self.delete_pod(i);
        if failure.force_delete {
            let m = meta(&mut self.pods[i].pod);
            m.deletion_timestamp = Some(whole(now));
            m.deletion_grace_period_seconds = Some(0);
            self.touch(i);
        }
        self.collect();
    }

    /// Whether the pod is bound to a node that stopped answering (`nodeLost`).
    pub(super) fn on_lost_node(&self, pod: &pb::Pod) -> bool {
        !self.lost.is_empty()
            && pod
                .spec
                .as_ref()
                .is_some_and(|s| self.lost.contains_key(&s.node_name))
    }

    /// What the request says of the lost nodes that pods being deleted are on,
    /// as a node informer would show them: Ready Unknown, tainted unreachable.
    /// Only the pods each lost node held are looked at: a sync's cost stays
    /// that of its events, not of every pod.
    pub(super) fn lost_node_reports(&self) -> Vec<pb::Node> {
        let stuck = |i: &usize| {
            let sp = &self.pods[*i];
            !sp.gone
                && !terminal(&sp.pod)
                && sp
                    .pod
                    .metadata
                    .as_ref()
                    .is_some_and(|m| m.deletion_timestamp.is_some())
        };
        self.lost
            .iter()
            .filter(|(_, pods)| pods.iter().any(stuck))
            .map(|(name, _)| pb::Node {
                name: name.to_string(),
                taints: ["NoSchedule", "NoExecute"]
                    .into_iter()
                    .map(|effect| pb::Taint {
                        key: "node.kubernetes.io/unreachable".to_string(),
                        effect: effect.to_string(),
                    })
                    .collect(),
                conditions: vec![pb::NodeCondition {
                    r#type: "Ready".to_string(),
                    status: "Unknown".to_string(),
                }],
            })
            .collect()
    }

    /// The node a pod is on when the script models nodes (its `spec.nodeName`);
    /// `None` without modelled nodes, or while it is unscheduled.
    pub(super) fn placed_on<'p>(&self, pod: &'p pb::Pod) -> Option<&'p str> {
        let node = pod.spec.as_ref().map(|s| s.node_name.as_str());
        node.filter(|n| !n.is_empty() && self.script.nodes.is_some())
    }

    /// The scheduler's choice for a new pod: the allowed node running the fewest
    /// pods, in the script's order, never a cordoned one (a drain's); `None` when
    /// every node is excluded.
    pub(super) fn place(&self, avoid: Option<&pb::AvoidNodes>) -> Option<String> {
        let nodes = &self.script.nodes.as_ref()?.0;
        let avoided = |n: &String| avoid.is_some_and(|a| a.nodes.contains(n));
        let required = avoid.is_some_and(|a| a.mode != NodeAvoidanceMode::Preferred.as_str());
        // One look at the pods for every node's load, not one per node.
        let mut loads: HashMap<&str, usize> = HashMap::new();
        for p in self.pods.iter().filter(|p| !p.gone && !terminal(&p.pod)) {
            if let Some(n) = self.placed_on(&p.pod) {
                *loads.entry(n).or_default() += 1;
            }
        }
        let load = |n: &String| loads.get(n.as_str()).copied().unwrap_or(0);
        nodes
            .iter()
            .filter(|n| !self.cordoned.contains(*n))
            .filter(|n| !(required && avoided(n)))
            .min_by_key(|n| (avoided(n), load(n)))
            .cloned()
    }

    /// Whether the kubelet restarts `container` in place after it exits with `code`.
    ///
    /// As v1.37.2's kubelet decides it (`kubelet/container/helpers.go`
    /// `ShouldContainerBeRestarted` with the `ContainerRestartRules` gate on, its
    /// default, calling `api/v1/pod/util.go` `ContainerShouldRestart`): a container
    /// with a policy of its own takes the action of its first rule whose exit codes
    /// match (`In` or `NotIn`), else its own policy (`Always`, `OnFailure` on a
    /// non-zero code, `Never`); without one, the pod's (`OnFailure` restarts a
    /// non-zero exit). `RestartAllContainers` (on by default since v1.36) is played
    /// as a restart of the exiting container alone: the simulated others run on.
    pub(super) fn restarts_in_place(&self, container: &str, code: i32) -> bool {
        let own = self
            .container_restarts
            .iter()
            .find(|c| c.container == container && !c.policy.is_empty());
        let Some(own) = own else {
            return self.on_failure && code != 0;
        };
        let matched = own.rules.iter().find(|r| {
            let listed = r.values.contains(&code);
            match r.operator.as_str() {
                "In" => listed,
                "NotIn" => !listed,
                _ => false,
            }
        });
        if matched.is_some_and(|r| matches!(r.action.as_str(), "Restart" | "RestartAllContainers"))
        {
            return true;
        }
        match own.policy.as_str() {
            "Always" => true,
            "OnFailure" => code != 0,
            "Never" => false,
            _ => self.on_failure && code != 0,
        }
    }

    /// Every container ends: `container` with `code`, the others with 0.
    pub(super) fn finish_pod(&mut self, i: usize, container: &str, code: i32, reason: &str) {
        if self.restarts_in_place(container, code) {
            self.crash(i, container, code, reason);
            return;
        }
        let now = self.now;
        let sp = &mut self.pods[i];
        let st = status(&mut sp.pod);
        for cs in &mut st.container_statuses {
            let started = running_since(cs);
            let (c, r, message) = if cs.name == container {
                (code, reason.to_string(), sp.plan.message.clone())
            } else {
                (0, "Completed".to_string(), String::new())
            };
            cs.ready = false;
            cs.state = Some(pb::ContainerState {
                terminated: Some(pb::ContainerStateTerminated {
                    exit_code: c,
                    reason: r,
                    message,
                    started_at: started,
                    finished_at: Some(whole(now)),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let failed = st.container_statuses.iter().any(|c| {
            c.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_some_and(|t| t.exit_code != 0)
        });
        st.phase = if failed { "Failed" } else { "Succeeded" }.to_string();
        set_ready(st, false, now);
        sp.ended = Some(now);
        sp.exit_code = Some(code);
        sp.stop_at = None;
        if failed {
            sp.outcome = "failed".to_string();
            sp.why = if reason == "Error" {
                format!("container {container} exited {code}")
            } else {
                format!("container {container} exited {code} ({reason})")
            };
            let why = self.pods[i].why.clone();
            self.tell_failure(i, EventKind::PodFailed, &why);
        } else {
            sp.outcome = "succeeded".to_string();
            sp.why = String::new();
            self.push(
                EventKind::PodSucceeded,
                Some(i),
                "all containers exited 0".to_string(),
            );
        }
        self.collect();
    }

    /// The container exited and the kubelet restarts it in place
    /// ([`World::restarts_in_place`]: restartPolicy OnFailure and a non-zero exit, or
    /// the container's own policy and rules), the pod staying Running, after its
    /// crash-loop back-off.
    ///
    /// As v1.37.2's kubelet does it (`kuberuntime_manager.go` `doBackOff` with
    /// client-go `flowcontrol.Backoff`, set up in `kubelet.go` `newCrashLoopBackOff`):
    /// `IsInBackOffSince` finds no entry at the first exit, so the first restart is at
    /// once; each restart then calls `Next`, which starts the entry at 10s and doubles it
    /// up to the 5m cap, so the second exit waits 10s, the third 20s, and so on. The
    /// kubelet's `HasExpiredFunc` drops an entry whose last update is more than 600s
    /// before the exit: a container that ran over 10 minutes since its last restart
    /// starts over (at once, then 10s).
    pub(super) fn crash(&mut self, i: usize, container: &str, code: i32, reason: &str) {
        let now = self.now;
        let sp = &mut self.pods[i];
        let had_entry = sp.back_off.is_some();
        let live = sp
            .back_off
            .filter(|b| now.saturating_sub(b.updated) <= CRASH_BACK_OFF_EXPIRY);
        let (delay, next) = match live {
            None => (0, CRASH_BACK_OFF_INITIAL),
            Some(b) => (b.wait, b.wait.saturating_mul(2).min(CRASH_BACK_OFF_MAX)),
        };
        // `Next` runs as the kubelet restarts the container: that is the entry's update.
        sp.back_off = Some(CrashBackOff {
            wait: next,
            updated: now.saturating_add(delay),
        });
        let why = if reason == "Error" {
            format!("container {container} exited {code}")
        } else {
            format!("container {container} exited {code} ({reason})")
        };
        sp.history.push(Run {
            attempt: sp.attempt,
            started: sp.started.unwrap_or(now),
            ended: now,
            exit_code: code,
            why: format!("{why}; restarted in place"),
        });
        let started = sp.started.map(whole);
        sp.started = None;
        sp.restart_at = Some(now.saturating_add(delay));
        let st = status(&mut sp.pod);
        for cs in st
            .container_statuses
            .iter_mut()
            .filter(|c| c.name == container)
        {
            cs.ready = false;
            cs.state = Some(if delay > 0 {
                pb::ContainerState {
                    waiting: Some(pb::ContainerStateWaiting {
                        reason: "CrashLoopBackOff".to_string(),
                        message: format!("back-off {} restarting failed container", human(delay)),
                    }),
                    ..Default::default()
                }
            } else {
                pb::ContainerState {
                    terminated: Some(pb::ContainerStateTerminated {
                        exit_code: code,
                        reason: reason.to_string(),
                        started_at: started,
                        finished_at: Some(whole(now)),
                        ..Default::default()
                    }),
                    ..Default::default()
                }
            });
        }
        set_ready(st, false, now);
        let detail = if delay > 0 {
            format!(
                "{why}; the kubelet restarts it in {} (CrashLoopBackOff)",
                human(delay)
            )
        } else if had_entry {
            format!(
                "{why}; the kubelet restarts it at once (it ran over 10m: its back-off starts over)"
            )
        } else {
            format!("{why}; the kubelet restarts it at once (the first crash has no back-off)")
        };
        self.push(EventKind::ContainerFailed, Some(i), detail);
    }

    /// The kubelet starts a crashed container again: a new attempt in the same pod.
    pub(super) fn restart_container(&mut self, i: usize) {
        let now = self.now;
        let index = self.pods[i].index;
        let attempt = self.next_attempt(index);
        let plan = self.plan_for(index, attempt, self.placed_on(&self.pods[i].pod));
        let sp = &mut self.pods[i];
        sp.restart_at = None;
        sp.restarts += 1;
        sp.attempt = attempt;
        sp.started = Some(now);
        let restarts = sp.restarts;
        sp.plan = plan;
        let ready = !sp.plan.never_ready;
        let st = status(&mut sp.pod);
        for cs in st.container_statuses.iter_mut() {
            // The crashed container: waiting out its back-off, or just exited.
            if cs
                .state
                .as_ref()
                .is_some_and(|s| s.waiting.is_some() || s.terminated.is_some())
            {
                cs.restart_count = restarts;
                cs.ready = ready;
                cs.state = Some(pb::ContainerState {
                    running: Some(pb::ContainerStateRunning {
                        started_at: Some(whole(now)),
                    }),
                    ..Default::default()
                });
            }
        }
        set_ready(st, ready, now);
        self.push(
            EventKind::ContainerRestarted,
            Some(i),
            format!("restart {restarts}: attempt {attempt}"),
        );
    }

    /// The kubelet stops a deleted pod: its containers exit on SIGTERM (143), or are
    /// killed with SIGKILL (137) at the end of the grace period; phase Failed. The
    /// runtime reports a killed container's reason as for any non-zero exit (`Error`).
    pub(super) fn stop_pod(&mut self, i: usize) {
        if phase(&self.pods[i].pod) != "Running" {
            return self.stop_unstarted_pod(i);
        }
        let was_evicted = self.pods[i]
            .pod
            .status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.r#type == "DisruptionTarget"));
        let now = self.now;
        let code = self.pods[i].stop_code;
        let grace = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .and_then(|m| m.deletion_grace_period_seconds)
            .unwrap_or(self.grace_seconds)
            .max(MIN_KILL_GRACE_SECONDS);
        let how = if code == SIGKILL_EXIT {
            format!("killed it (SIGKILL) at the end of its {grace}s grace period")
        } else {
            "stopped it".to_string()
        };
        {
            let sp = &mut self.pods[i];
            let st = status(&mut sp.pod);
            for cs in &mut st.container_statuses {
                let started = running_since(cs);
                cs.ready = false;
                cs.state = Some(pb::ContainerState {
                    terminated: Some(pb::ContainerStateTerminated {
                        exit_code: code,
                        reason: "Error".to_string(),
                        started_at: started,
                        finished_at: Some(whole(now)),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            st.phase = "Failed".to_string();
            set_ready(st, false, now);
            meta(&mut sp.pod).deletion_grace_period_seconds = Some(0);
            sp.restart_at = None;
            sp.ended = Some(now);
            sp.exit_code = Some(code);
            sp.stop_at = None;
            sp.outcome = "failed".to_string();
            sp.evicted = was_evicted;
            sp.why = if was_evicted {
                format!("evicted; the kubelet {how} (exit {code})")
            } else {
                format!("deleted; the kubelet {how} (exit {code})")
            };
        }
        let what = if code == SIGKILL_EXIT {
            format!(
                "killed by the kubelet (SIGKILL) at the end of its {grace}s grace period, exit {code}, phase Failed"
            )
        } else {
            format!("stopped by the kubelet, exit {code}, phase Failed")
        };
        self.tell_stop(i, &what, &format!("the kubelet {how} (exit {code})"));
        self.collect();
    }

    /// Whether pod `i`, now ending, was deleted by the controller, never counted, after
    /// it took the tracking finalizer off (a failing Job counts its deleted pods first): suspension, scale-down and a met success policy do that
    /// (upstream `deleteJobPods`; `canRemoveFinalizer` once SuccessCriteriaMet), so the
    /// pod is never counted (`trackJobStatusAndRemoveFinalizers` skips pods without it).
    fn uncounted_deletion(&self, i: usize) -> bool {
        let sp = &self.pods[i];
        sp.deleted_by_controller
            && !sp.evicted
            && !sp.counted
            && !sp
                .pod
                .metadata
                .as_ref()
                .is_some_and(|m| m.finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER))
    }

    /// Tells the end of a deleted pod: a failure matched against the policy, or, for a
    /// pod the controller deleted without counting it, an attempt ended as `deleted`
    /// (never "failed", never a rule's "counted"). `how` says what the kubelet did.
    fn tell_stop(&mut self, i: usize, what: &str, how: &str) {
        if !self.uncounted_deletion(i) {
            return self.tell_failure(i, EventKind::PodStopped, what);
        }
        let sp = &mut self.pods[i];
        sp.outcome = "deleted".to_string();
        sp.why = format!("deleted by the controller; {how}");
        self.push(
            EventKind::PodStopped,
            Some(i),
            format!(
                "{what}; not a failure: the controller took its tracking finalizer off before deleting it, so it is never counted"
            ),
        );
    }
}

impl World<'_> {
    /// The kubelet ends a deleted pod bound to its node whose containers never ran
    /// (a start delay, an image that cannot be pulled): nothing to signal, so the pod
    /// turns Failed at once, its containers left waiting as they were (the kubelet's
    /// status for a terminal pod keeps a never-started container's waiting state).
    fn stop_unstarted_pod(&mut self, i: usize) {
        let now = self.now;
        let sp = &mut self.pods[i];
        let was_evicted = sp
            .pod
            .status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.r#type == "DisruptionTarget"));
        let st = status(&mut sp.pod);
        st.phase = "Failed".to_string();
        set_ready(st, false, now);
        meta(&mut sp.pod).deletion_grace_period_seconds = Some(0);
        sp.start_at = None;
        sp.ended = Some(now);
        sp.stop_at = None;
        sp.outcome = "failed".to_string();
        sp.evicted = was_evicted;
        sp.why = if was_evicted {
            "evicted before it started; the kubelet failed it".to_string()
        } else {
            "deleted before it started; the kubelet failed it".to_string()
        };
        self.tell_stop(
            i,
            "no container ran: failed by the kubelet at once, phase Failed",
            "no container ran, the kubelet failed it",
        );
        self.collect();
    }
}

fn set_ready(st: &mut pb::PodStatus, ready: bool, now: i64) {
    let value = if ready { "True" } else { "False" };
    // The kubelet's reason while a running pod's containers are not ready.
    let reason = if !ready && st.phase == "Running" {
        "ContainersNotReady"
    } else {
        ""
    };
    if let Some(c) = st.conditions.iter_mut().find(|c| c.r#type == "Ready") {
        if c.status != value {
            c.status = value.to_string();
            c.reason = reason.to_string();
            c.last_transition_time = Some(whole(now));
        }
        return;
    }
    st.conditions.push(pb::PodCondition {
        r#type: "Ready".to_string(),
        status: value.to_string(),
        reason: reason.to_string(),
        last_transition_time: Some(whole(now)),
        ..Default::default()
    });
}
