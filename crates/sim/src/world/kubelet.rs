//! The kubelet's side: pods starting, running, ending, restarting and stopping
//! as a kubelet writes them, and deletions with their grace period.

use super::*;
use job_decider_core::model::NodeAvoidanceMode;

impl<'s> World<'s> {
    /// A DELETE with the default grace period: at once for a pod that is not
    /// running on a node (or already ended), else the kubelet stops it.
    pub(super) fn delete_pod(&mut self, i: usize) {
        let now = self.now;
        let stop = self.stop_time();
        let sp = &mut self.pods[i];
        if sp
            .pod
            .metadata
            .as_ref()
            .is_some_and(|m| m.deletion_timestamp.is_some())
        {
            return;
        }
        let grace = if !scheduled(&sp.pod) || terminal(&sp.pod) {
            0
        } else {
            GRACE_SECONDS
        };
        let m = meta(&mut sp.pod);
        m.deletion_timestamp = Some(whole(now.saturating_add(grace * SECOND)));
        m.deletion_grace_period_seconds = Some(grace);
        if grace > 0 {
            sp.stop_at = Some(now.saturating_add(stop));
        }
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
        let st = status(&mut sp.pod);
        st.phase = "Running".to_string();
        st.container_statuses = names
            .iter()
            .map(|name| pb::ContainerStatus {
                name: name.clone(),
                ready: true,
                state: Some(pb::ContainerState {
                    running: Some(pb::ContainerStateRunning {
                        started_at: Some(whole(now)),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        set_ready(st, true, now);
        self.push(EventKind::PodStarted, Some(i), format!("running on {node}"));
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

    /// The controller fails a pod stuck in Pending (FailPods): phase Failed with its
    /// condition, then a delete (at once: no container runs).
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
            sp.why = format!(
                "stuck in Pending ({}); failed by the controller",
                failure.reason
            );
        }
        let why = self.pods[i].why.clone();
        self.tell_failure(i, EventKind::PodFailedByController, &why);
        self.delete_pod(i);
        self.collect();
    }

    /// The node a pod is on when the script models nodes (its `spec.nodeName`);
    /// `None` without modelled nodes, or while it is unscheduled.
    pub(super) fn placed_on<'p>(&self, pod: &'p pb::Pod) -> Option<&'p str> {
        let node = pod.spec.as_ref().map(|s| s.node_name.as_str());
        node.filter(|n| !n.is_empty() && self.script.nodes.is_some())
    }

    /// The scheduler's choice for a new pod: the allowed node running the fewest
    /// pods, in the script's order; `None` when every node is excluded.
    pub(super) fn place(&self, avoid: Option<&pb::AvoidNodes>) -> Option<String> {
        let nodes = &self.script.nodes.as_ref()?.0;
        let avoided = |n: &String| avoid.is_some_and(|a| a.nodes.contains(n));
        let required = avoid.is_some_and(|a| a.mode != NodeAvoidanceMode::Preferred.as_str());
        let load = |n: &String| {
            self.pods
                .iter()
                .filter(|p| !p.gone && !terminal(&p.pod) && self.placed_on(&p.pod) == Some(n))
                .count()
        };
        nodes
            .iter()
            .filter(|n| !(required && avoided(n)))
            .min_by_key(|n| (avoided(n), load(n)))
            .cloned()
    }

    /// Every container ends: `container` with `code`, the others with 0.
    pub(super) fn finish_pod(&mut self, i: usize, container: &str, code: i32, reason: &str) {
        if self.on_failure && code != 0 {
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

    /// restartPolicy OnFailure: the container exited non-zero; the kubelet restarts it in
    /// place after its crash-loop back-off (10s, doubling, at most 5m). The pod stays Running.
    pub(super) fn crash(&mut self, i: usize, container: &str, code: i32, reason: &str) {
        let now = self.now;
        let sp = &mut self.pods[i];
        let delay = (10 * SECOND)
            .saturating_mul(1 << sp.restarts.clamp(0, 5))
            .min(300 * SECOND);
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
        sp.started = None;
        sp.restart_at = Some(now.saturating_add(delay));
        let st = status(&mut sp.pod);
        for cs in st
            .container_statuses
            .iter_mut()
            .filter(|c| c.name == container)
        {
            cs.ready = false;
            cs.state = Some(pb::ContainerState {
                waiting: Some(pb::ContainerStateWaiting {
                    reason: "CrashLoopBackOff".to_string(),
                    message: format!("back-off {} restarting failed container", human(delay)),
                }),
                ..Default::default()
            });
        }
        set_ready(st, false, now);
        let detail = format!(
            "{why}; the kubelet restarts it in {} (CrashLoopBackOff)",
            human(delay)
        );
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
        let st = status(&mut sp.pod);
        for cs in st.container_statuses.iter_mut() {
            if cs.state.as_ref().is_some_and(|s| s.waiting.is_some()) {
                cs.restart_count = restarts;
                cs.ready = true;
                cs.state = Some(pb::ContainerState {
                    running: Some(pb::ContainerStateRunning {
                        started_at: Some(whole(now)),
                    }),
                    ..Default::default()
                });
            }
        }
        set_ready(st, true, now);
        self.push(
            EventKind::ContainerRestarted,
            Some(i),
            format!("restart {restarts}: attempt {attempt}"),
        );
    }

    /// The kubelet stops a deleted pod: SIGTERM, exit 143, phase Failed.
    pub(super) fn stop_pod(&mut self, i: usize) {
        let was_evicted = self.pods[i]
            .pod
            .status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.r#type == "DisruptionTarget"));
        let now = self.now;
        {
            let sp = &mut self.pods[i];
            let st = status(&mut sp.pod);
            for cs in &mut st.container_statuses {
                let started = running_since(cs);
                cs.ready = false;
                cs.state = Some(pb::ContainerState {
                    terminated: Some(pb::ContainerStateTerminated {
                        exit_code: 143,
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
            sp.exit_code = Some(143);
            sp.stop_at = None;
            sp.outcome = "failed".to_string();
            sp.evicted = was_evicted;
            sp.why = if was_evicted {
                "evicted; the kubelet stopped it (exit 143)".to_string()
            } else {
                "deleted; the kubelet stopped it (exit 143)".to_string()
            };
        }
        self.tell_failure(
            i,
            EventKind::PodStopped,
            "stopped by the kubelet, exit 143, phase Failed",
        );
        self.collect();
    }
}

fn set_ready(st: &mut pb::PodStatus, ready: bool, now: i64) {
    let value = if ready { "True" } else { "False" };
    if let Some(c) = st.conditions.iter_mut().find(|c| c.r#type == "Ready") {
        if c.status != value {
            c.status = value.to_string();
            c.last_transition_time = Some(whole(now));
        }
        return;
    }
    st.conditions.push(pb::PodCondition {
        r#type: "Ready".to_string(),
        status: value.to_string(),
        last_transition_time: Some(whole(now)),
        ..Default::default()
    });
}
