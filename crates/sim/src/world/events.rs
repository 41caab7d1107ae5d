//! The world's loop: the next thing that happens, playing until the Job is
//! finished and quiet or a bound is reached, and what each happening does.

use super::*;

impl<'s> World<'s> {
    /// Plays until the Job is finished and quiet, the horizon, idleness or the sync bound.
    pub(super) fn run(&mut self, decider: &mut dyn Decider) -> Result<String, SimError> {
        let mut requeues: BTreeSet<i64> = BTreeSet::new();
        let stopped = self.run_until_stopped(decider, &mut requeues);
        // What an unfinished Job still waited for: the summary says it.
        self.due = requeues.first().copied();
        if stopped.as_deref().is_ok_and(|s| s == "finished") {
            self.warn_events_after_the_finish();
        }
        stopped
    }

    /// The scripted events the run never reached because the Job had finished: each
    /// a warning on its `at` (those after the horizon were warned of before the run).
    fn warn_events_after_the_finish(&mut self) {
        let finished = self.finished_at.unwrap_or(self.now);
        let horizon = self.script.horizon();
        for (k, e) in self
            .script
            .events
            .iter()
            .enumerate()
            .skip(self.next_scripted)
        {
            if e.at.nanos() > horizon.nanos() {
                continue;
            }
            self.warnings.push(crate::script::ScriptError::at(
                format!("events[{k}].at"),
                format!(
                    "{} is after the Job finished at {}; this event never plays",
                    e.at,
                    human(finished.saturating_sub(self.start))
                ),
            ));
        }
    }

    fn run_until_stopped(
        &mut self,
        decider: &mut dyn Decider,
        requeues: &mut BTreeSet<i64>,
    ) -> Result<String, SimError> {
        let max_syncs = self.script.max_syncs.unwrap_or(DEFAULT_MAX_SYNCS);
        let mut next_sync: Option<i64> = Some(self.now);
        let mut same_instant = 0u32;
        let mut last_sync_at = i64::MIN;
        loop {
            if let Some(stopped) = self.stop_at_bound() {
                return Ok(stopped);
            }
            let sync_at = match (next_sync, requeues.first().copied()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let happening = self.next_happening();
            let world_first = match (&happening, sync_at) {
                (Some((t, _)), Some(s)) => *t <= s,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if world_first {
                let Some((t, h)) = happening else { break };
                if t > self.horizon_end() {
                    self.now = self.horizon_end();
                    return Ok("horizon".to_string());
                }
                self.now = t;
                let job_change = self.happen(h);
                let due = if job_change {
                    t
                } else {
                    t.saturating_add(POD_EVENT_BATCH)
                };
                next_sync = Some(next_sync.map_or(due, |s| s.min(due)));
                continue;
            }
            let Some(at) = sync_at else {
                return Ok("idle".to_string());
            };
            if at > self.horizon_end() {
                self.now = self.horizon_end();
                return Ok("horizon".to_string());
            }
            if self.syncs >= max_syncs {
                return Ok("syncLimit".to_string());
            }
            let carried = self.refresh_carried() as u64;
            if self.pod_syncs.saturating_add(carried) > self.limits.pod_syncs {
                let most = self.limits.pod_syncs;
                self.stop_reason = format!(
                    "the syncs would carry more than {most} pods in all, the simulator's bound"
                );
                return Ok("workLimit".to_string());
            }
            self.pod_syncs += carried;
            self.now = at;
            while requeues.first().is_some_and(|&r| r <= at) {
                requeues.pop_first();
            }
            next_sync = None;
            if at == last_sync_at {
                same_instant += 1;
                if same_instant >= SAME_INSTANT_SYNCS {
                    // Not the script's maxSyncs: the decider acted every time without
                    // the clock moving, and would again.
                    self.stop_reason = format!(
                        "{SAME_INSTANT_SYNCS} syncs in a row at one instant, each acting: the decisions never settle (a decision loop)"
                    );
                    return Ok("decisionLoop".to_string());
                }
            } else {
                same_instant = 0;
            }
            last_sync_at = at;
            let response = self.sync(decider)?;
            let acted = !response.actions.is_empty();
            if let Some(d) = &response.requeue_after {
                let wait = d
                    .seconds
                    .saturating_mul(SECOND)
                    .saturating_add(i64::from(d.nanos))
                    .max(0);
                // A requeue already pending for the same instant is one wake-up, not news.
                let news = requeues.insert(self.now.saturating_add(wait));
                // A requeue for the active deadline or a pending timeout is no backoff.
                let other = self.requeue_for_deadline_or_pending_timeout(wait);
                // Upstream holds a backoffLimitPerIndex Job's replacements by each index's
                // own failures, never by the Job-wide record.
                let per_index = self
                    .job
                    .spec
                    .as_ref()
                    .is_some_and(|s| s.backoff_limit_per_index.is_some());
                let record = self
                    .state
                    .as_ref()
                    .and_then(|s| s.backoff.as_ref())
                    .map(|b| b.failures_after_last_success)
                    .filter(|&n| !per_index && n > 0);
                let waiting = if record.is_some() {
                    Vec::new()
                } else {
                    self.indexes_awaiting_replacement()
                };
                let (record, waiting) = if other {
                    (None, Vec::new())
                } else {
                    (record, waiting)
                };
                let backoff = match (record, waiting.as_slice()) {
                    (Some(n), _) => {
                        format!("; backoff record: {n} failure(s) since the last success")
                    }
                    (None, []) => String::new(),
                    (None, indexes) => {
                        format!("; per-index backoff: {}", self.describe_waiting(indexes))
                    }
                };
                let detail = format!(
                    "decide again in {} (at {}){backoff}",
                    human(wait),
                    clock(self.now.saturating_add(wait))
                );
                if news {
                    if !backoff.is_empty() {
                        self.backoff_waits.push(BackoffWait {
                            at_ms: self.now.saturating_sub(self.start).div_euclid(1_000_000),
                            wait_ms: wait.div_euclid(1_000_000),
                            // Cut short, if it was, when the timeline is made.
                            held_ms: wait.div_euclid(1_000_000),
                            indexes: waiting,
                        });
                    }
                    self.push(EventKind::Requeue, None, detail);
                }
            }
            if acted {
                // The controller's own writes come back through its informers.
                next_sync = Some(self.now);
            } else if has_condition(&self.job, &["Complete", "Failed"]).is_some() {
                return Ok("finished".to_string());
            }
        }
        Ok("idle".to_string())
    }

    /// backoffLimitPerIndex: the indexes whose last pod failed and that wait to be
    /// recreated (not completed, not failed, no pod of theirs still there), while
    /// the Job runs on. Their pods wait out the index's own backoff, which the Job's
    /// backoff record does not show.
    pub(super) fn indexes_awaiting_replacement(&mut self) -> Vec<i32> {
        let per_index = self
            .job
            .spec
            .as_ref()
            .is_some_and(|s| s.backoff_limit_per_index.is_some());
        let suspended = self.job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
        if !self.indexed || !per_index || suspended {
            return Vec::new();
        }
        if has_condition(
            &self.job,
            &["FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"],
        )
        .is_some()
        {
            return Vec::new();
        }
        let status = self.job.status.clone().unwrap_or_default();
        let done = self
            .indexes(&status.completed_indexes)
            .union(&self.indexes(status.failed_indexes.as_deref().unwrap_or_default()));
        // Only the indexes whose latest pod failed, not every pod of the Job.
        self.indexes_with_a_failed_last_pod()
            .iter()
            .copied()
            .filter(|&i| !done.contains(i))
            .collect()
    }

    /// `index 7 (1 failed attempt)`, for a few indexes; the rest counted.
    pub(super) fn describe_waiting(&self, indexes: &[i32]) -> String {
        let failed = |i: i32| {
            self.slots_of_index(i)
                .iter()
                .filter(|&&k| self.pods[k].outcome == "failed")
                .count()
        };
        let mut parts: Vec<String> = indexes
            .iter()
            .take(5)
            .map(|&i| match failed(i) {
                1 => format!("index {i} (1 failed attempt)"),
                n => format!("index {i} ({n} failed attempts)"),
            })
            .collect();
        if indexes.len() > 5 {
            parts.push(format!("{} more indexes", indexes.len() - 5));
        }
        parts.join(", ")
    }

    /// Applies one happening; true when it changed the Job (synced at once).
    pub(super) fn happen(&mut self, h: Happening) -> bool {
        if let Happening::Finish(i)
        | Happening::Stop(i)
        | Happening::Restart(i)
        | Happening::Start(i)
        | Happening::Evict(i) = h
        {
            // Its timers change (this one is done), and maybe whether it is collected.
            self.touch(i);
        }
        match h {
            Happening::Start(i) => {
                self.start_pod(i);
                false
            }
            Happening::Finish(i) => {
                let plan = self.pods[i].plan.clone();
                self.finish_pod(i, &plan.container, plan.exit_code, &plan.reason);
                false
            }
            Happening::Stop(i) => {
                self.stop_pod(i);
                false
            }
            Happening::Restart(i) => {
                self.restart_container(i);
                false
            }
            Happening::Evict(i) => {
                self.evict_from_lost_node(i);
                false
            }
            Happening::Scripted(k) => {
                self.next_scripted = k + 1;
                let Some(action) = self.actions.get(k).cloned() else {
                    return false;
                };
                match action {
                    EventAction::Drain(t) => {
                        if self.drain(&t) == 0 && t.node.is_none() {
                            self.warn_no_target(k, "drain", &t);
                        }
                        false
                    }
                    EventAction::NodeLost(t) => {
                        if self.lose_nodes(&t) == 0 && t.node.is_none() {
                            self.warn_no_target(k, "nodeLost", &t);
                        }
                        false
                    }
                    EventAction::Preempt(t) => {
                        if self.on_targets(&t, Removal::Preempt) == 0 {
                            self.warn_no_target(k, "preempt", &t);
                        }
                        false
                    }
                    EventAction::DeletePod(t) => {
                        if self.on_targets(&t, Removal::User) == 0 {
                            self.warn_no_target(k, "deletePod", &t);
                        }
                        false
                    }
                    EventAction::Suspend(s) => {
                        let spec = self.job.spec.get_or_insert_with(Default::default);
                        spec.suspend = Some(s);
                        self.bump_generation();
                        let what = if s {
                            "suspended (spec.suspend: true)"
                        } else {
                            "resumed (spec.suspend: false)"
                        };
                        self.push(EventKind::JobChanged, None, what.to_string());
                        true
                    }
                    EventAction::Parallelism(p) => {
                        let spec = self.job.spec.get_or_insert_with(Default::default);
                        spec.parallelism = Some(p);
                        self.bump_generation();
                        self.push(
                            EventKind::JobChanged,
                            None,
                            format!("spec.parallelism set to {p}"),
                        );
                        true
                    }
                }
            }
        }
    }

    pub(super) fn bump_generation(&mut self) {
        let m = self.job.metadata.get_or_insert_with(Default::default);
        m.generation += 1;
        self.rv += 1;
        m.resource_version = self.rv.to_string();
    }

    /// Whether a pod can still be removed: there, not ended, not already being deleted.
    fn removable(sp: &SimPod) -> bool {
        let deleting = sp
            .pod
            .metadata
            .as_ref()
            .is_some_and(|m| m.deletion_timestamp.is_some());
        !sp.gone && !deleting && !terminal(&sp.pod)
    }

    /// Scripted event `k` (a `name`) found no pod to act on: a warning saying why.
    fn warn_no_target(&mut self, k: usize, name: &str, t: &TargetSet) {
        let at = self
            .script
            .events
            .get(k)
            .map_or_else(String::new, |e| e.at.to_string());
        let mut what: Vec<String> = Vec::new();
        if let Some(index) = &t.index {
            what.push(format!("index {}", super::numbers_text(index)));
        }
        if let Some(pod) = &t.pod {
            what.push(format!("pod {}", super::numbers_text(pod)));
        }
        let what = what.join(" and ");
        let never_created = t
            .pod
            .as_ref()
            .is_some_and(|p| p.iter().all(|&n| n > self.created));
        let why = if never_created {
            format!(
                "{what} was never created by then ({} pods so far): it did nothing",
                self.created
            )
        } else {
            let matching: Vec<&SimPod> = self
                .pods
                .iter()
                .filter(|sp| t.matches(sp.index, sp.ordinal))
                .collect();
            let live = matching.iter().any(|sp| Self::removable(sp));
            if name != "deletePod" && live {
                format!(
                    "{what} is not running on a node yet (Pending): a {name} acts on pods a node runs, so it did nothing"
                )
            } else {
                format!(
                    "{what} has no pod left to act on (each has ended or is being deleted): it did nothing"
                )
            }
        };
        self.warnings.push(crate::script::ScriptError::at(
            format!("events[{k}].{name}"),
            format!("at {at}, {why}"),
        ));
    }

    /// A preemption or a user's deletion of the targeted pods; how many were removed.
    pub(super) fn on_targets(&mut self, t: &TargetSet, how: Removal) -> usize {
        let mut removed = 0;
        for i in 0..self.pods.len() {
            let sp = &self.pods[i];
            if !Self::removable(sp) || !t.matches(sp.index, sp.ordinal) {
                continue;
            }
            // Preemption acts on pods a node runs; a pending pod has none yet.
            if how != Removal::User && !scheduled(&sp.pod) {
                continue;
            }
            self.remove_pod(i, how, "");
            removed += 1;
        }
        self.collect();
        removed
    }

    /// `kubectl drain` of the named nodes, or of those the targeted pods are on:
    /// each node is cordoned, so the scheduler places no new pod there, and every
    /// pod bound to it is evicted (`kubectl drain` lists the node's pods by
    /// `spec.nodeName` and calls the eviction API for each, pending ones included).
    /// Without the script's nodes each pod runs on a node of its own, so this
    /// evicts exactly the targeted pods, as before nodes were modelled.
    /// Returns the pods evicted.
    pub(super) fn drain(&mut self, t: &TargetSet) -> usize {
        let mut evicted = 0;
        let nodes = self.target_nodes(t);
        let named = self.script.nodes.is_some();
        for node in nodes {
            self.cordoned.insert(node.clone());
            let on_node: Vec<usize> = (0..self.pods.len())
                .filter(|&i| {
                    let sp = &self.pods[i];
                    Self::removable(sp) && sp.pod.spec.as_ref().is_some_and(|s| s.node_name == node)
                })
                .collect();
            if named {
                let detail = match on_node.len() {
                    1 => format!("{node} cordoned; its 1 pod evicted"),
                    n => format!("{node} cordoned; its {n} pods evicted"),
                };
                self.push(EventKind::NodeDrained, None, detail);
            }
            let what = if named {
                format!("{node} is drained")
            } else {
                "its node is drained".to_string()
            };
            for i in on_node {
                self.remove_pod(i, Removal::Drain, &what);
                evicted += 1;
            }
        }
        self.collect();
        evicted
    }

    /// The named nodes, or those the targeted pods are on, stop answering: each is
    /// marked lost (the scheduler places nothing there; its kubelet does nothing
    /// more) and the taint manager will delete its pods once their toleration of the
    /// unreachable taint runs out. Returns the pods on the nodes lost.
    pub(super) fn lose_nodes(&mut self, t: &TargetSet) -> usize {
        let nodes = self.target_nodes(t);
        let mut affected = 0;
        for node in nodes {
            if self.lost.contains_key(&node) {
                continue;
            }
            self.cordoned.insert(node.clone());
            let evict_at = self.now.saturating_add(UNREACHABLE_TOLERATION);
            let on_node: Vec<usize> = (0..self.pods.len())
                .filter(|&i| {
                    let sp = &self.pods[i];
                    !sp.gone
                        && !terminal(&sp.pod)
                        && sp.pod.spec.as_ref().is_some_and(|s| s.node_name == node)
                })
                .collect();
            self.push(
                EventKind::NodeLost,
                None,
                format!(
                    "{node} stopped answering: NotReady (Ready Unknown), tainted node.kubernetes.io/unreachable; {} pod(s) on it",
                    on_node.len()
                ),
            );
            for &i in &on_node {
                self.pods[i].evict_at = Some(evict_at);
                self.touch(i);
                affected += 1;
            }
            self.lost.insert(node, on_node);
        }
        affected
    }

    /// The nodes an event acts on: the named ones, or those the targeted pods
    /// (not ended) are on, each once.
    fn target_nodes(&self, t: &TargetSet) -> Vec<String> {
        let mut nodes: Vec<String> = Vec::new();
        match &t.node {
            Some(names) => nodes.extend(names.iter().cloned()),
            None => {
                for sp in &self.pods {
                    let on = sp.pod.spec.as_ref().map_or("", |s| s.node_name.as_str());
                    if on.is_empty()
                        || sp.gone
                        || terminal(&sp.pod)
                        || !t.matches(sp.index, sp.ordinal)
                        || nodes.iter().any(|n| n == on)
                    {
                        continue;
                    }
                    nodes.push(on.to_string());
                }
            }
        }
        nodes
    }

    /// The taint manager deletes a pod of an unreachable node once its toleration
    /// ran out: a DisruptionTarget condition, then the DELETE. No kubelet will
    /// stop it, so it stays terminating.
    pub(super) fn evict_from_lost_node(&mut self, i: usize) {
        let now = self.now;
        let node = self.pods[i]
            .pod
            .spec
            .as_ref()
            .map_or_else(String::new, |s| s.node_name.clone());
        self.pods[i].evict_at = None;
        status(&mut self.pods[i].pod)
            .conditions
            .push(pb::PodCondition {
                r#type: "DisruptionTarget".to_string(),
                status: "True".to_string(),
                reason: "DeletionByTaintManager".to_string(),
                message: "Taint manager: deleting due to NoExecute taint".to_string(),
                last_transition_time: Some(whole(now)),
                ..Default::default()
            });
        self.push(
            EventKind::PodEvicted,
            Some(i),
            format!(
                "{node} unreachable for 5m: the taint manager deletes it (DisruptionTarget, DeletionByTaintManager); no kubelet will report it ended, so it stays terminating"
            ),
        );
        self.delete_pod(i);
        self.pods[i].stop_at = None;
        self.touch(i);
    }

    /// One pod removed: evicted (a drain, `what` saying which node) or preempted with
    /// its DisruptionTarget condition, or deleted by a user; then the DELETE.
    fn remove_pod(&mut self, i: usize, how: Removal, what: &str) {
        self.touch(i);
        let now = self.now;
        let grace = self.grace_seconds;
        let disruption = match how {
            Removal::Drain => Some(("EvictionByEvictionAPI", "Eviction API: evicting", what)),
            Removal::Preempt => Some((
                "PreemptionByScheduler",
                "default-scheduler: preempting to accommodate a higher priority pod",
                "preempted by the scheduler",
            )),
            Removal::User => None,
        };
        if let Some((reason, message, what)) = disruption {
            let st = status(&mut self.pods[i].pod);
            st.conditions.push(pb::PodCondition {
                r#type: "DisruptionTarget".to_string(),
                status: "True".to_string(),
                reason: reason.to_string(),
                message: message.to_string(),
                last_transition_time: Some(whole(now)),
                ..Default::default()
            });
            self.push(
                EventKind::PodEvicted,
                Some(i),
                format!(
                    "{what}: DisruptionTarget ({reason}), deleted with a {grace}s grace period"
                ),
            );
        } else {
            self.push(
                EventKind::PodDeletedByUser,
                Some(i),
                format!("deleted by a user with a {grace}s grace period"),
            );
        }
        self.delete_pod(i);
    }
}
