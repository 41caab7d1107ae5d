//! Building the world: the Job and the pods given with it turned into the world's
//! state (its clock, nodes, indexes and script), existing pods adopted as they are.

use super::*;

impl<'s> World<'s> {
    pub(super) fn new(
        mut job: pb::Job,
        pods: Vec<pb::Pod>,
        script: &'s Script,
        options: &Options,
    ) -> Result<Self, SimError> {
        let job_meta = job.metadata.get_or_insert_with(Default::default);
        let start = options
            .start_nanos
            .or(job_meta.creation_timestamp.as_ref().map(ts_nanos))
            .unwrap_or(DEFAULT_START);
        if job_meta.creation_timestamp.is_none() {
            job_meta.creation_timestamp = Some(whole(start));
        }
        let rv = job_meta.resource_version.parse().unwrap_or(1);
        let spec = job.spec.clone().unwrap_or_default();
        let template_spec = spec
            .template
            .as_ref()
            .and_then(|t| t.spec.clone())
            .unwrap_or_default();
        let on_failure = template_spec.restart_policy == "OnFailure";
        let container_names: Vec<String> = template_spec
            .containers
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        for (field, value) in [
            ("spec.completions", spec.completions),
            ("spec.parallelism", spec.parallelism),
        ] {
            if let Some(n) = value
                && i64::from(n) > MAX_JOB_PODS
            {
                return Err(SimError::Start(format!(
                    "{field}: {n} is more than the {MAX_JOB_PODS} pods a simulation plays"
                )));
            }
        }
        if pods.len() as u64 > MAX_JOB_PODS as u64 {
            return Err(SimError::Start(format!(
                "{} pods given: more than the {MAX_JOB_PODS} pods a simulation plays",
                pods.len()
            )));
        }
        let grace_seconds = options
            .termination_grace_period_seconds
            .map_or(DEFAULT_GRACE_SECONDS, |g| if g < 0 { 1 } else { g });
        let mut errors = script.errors();
        let mut warnings = script.warnings();
        let not_indexed = "the Job is not Indexed (spec.completionMode), so its pods have no index";
        let completions = spec.completions.filter(|_| indexed);
        for (i, rule) in script.attempts.iter().enumerate() {
            if let Some(index) = &rule.index {
                let path = format!("attempts[{i}].index");
                if !indexed {
                    errors.push(ScriptError::at(path, not_indexed));
                } else if let Some(n) = completions {
                    index_beyond(path, index, n, &mut errors, &mut warnings);
                }
            }
            if let Some(c) = &rule.container
                && !container_names.contains(c)
            {
                errors.push(ScriptError::at(
                    format!("attempts[{i}].container"),
                    format!(
                        "the Job's template has no container {c:?} (it has {})",
                        container_names.join(", ")
                    ),
                ));
            }
        }
        let mut suspended = spec.suspend.unwrap_or(false);
        for (i, e) in script.events.iter().enumerate() {
            for (name, target) in [
                ("drain", &e.drain),
                ("preempt", &e.preempt),
                ("deletePod", &e.delete_pod),
            ] {
                let Some(index) = target.as_ref().and_then(|t| t.index.as_ref()) else {
                    continue;
                };
                let path = format!("events[{i}].{name}.index");
                if !indexed {
                    errors.push(ScriptError::at(path, not_indexed));
                } else if let Some(n) = completions {
                    index_beyond(path, index, n, &mut errors, &mut warnings);
                }
            }
            if let Ok(EventAction::Suspend(s)) = e.action(i) {
                let field = if e.resume.is_some() {
                    "resume"
                } else {
                    "suspend"
                };
                if s == suspended {
                    let (state, does) = if s {
                        ("already suspended", "suspending it again does nothing")
                    } else {
                        (
                            "not suspended (spec.suspend is not true and no earlier event suspends it)",
                            "resuming it does nothing",
                        )
                    };
                    warnings.push(ScriptError::at(
                        format!("events[{i}].{field}"),
                        format!("the Job is {state} at {}: {does}", e.at),
                    ));
                }
                suspended = s;
            }
        }
        if let Some(stop) = script.defaults.stop_time
            && stop.nanos() > grace_seconds.saturating_mul(SECOND)
        {
            warnings.push(ScriptError::at(
                "defaults.stopTime",
                format!(
                    "{stop} is longer than the Job's {grace_seconds}s grace period (terminationGracePeriodSeconds): the kubelet kills a deleted pod's containers with SIGKILL when the grace period ends, so they end after {grace_seconds}s with exit code 137"
                ),
            ));
        }
        if !errors.is_empty() {
            return Err(SimError::Script(ScriptErrors(errors)));
        }
        let mut actions = Vec::new();
        for (i, e) in script.events.iter().enumerate() {
            actions.push(e.action(i).map_err(ScriptErrors::from)?);
        }
        let running_pods = options.running_pods;
        let mut world = World {
            job,
            pods: Vec::new(),
            now: start,
            start,
            state: None,
            // The simulation plays the Job's own controller: a Job that names one in
            // spec.managedBy is decided as that controller, not left to it.
            failure_policy: options.failure_policy.clone(),
            controller_name: if options.controller_name.is_empty() {
                spec.managed_by.clone().unwrap_or_default()
            } else {
                options.controller_name.clone()
            },
            script,
            actions,
            next_scripted: 0,
            created: 0,
            per_index: BTreeMap::new(),
            events: Vec::new(),
            rv,
            syncs: 0,
            finished_at: None,
            container_names,
            indexed,
            existing: 0,
            backoff_waits: Vec::new(),
            verdict_at: None,
            on_failure,
            runs: 0,
            limits: options.limits,
            pod_syncs: 0,
            event_bytes: 0,
            reached: None,
            stop_reason: String::new(),
            due: None,
            warnings,
            narration_document: None,
            // As the API server's CheckGracefulDelete: a negative period is 1s.
            grace_seconds,
            cordoned: BTreeSet::new(),
            lost: BTreeMap::new(),
            container_restarts: options.container_restarts.clone(),
            slots: Slots::default(),
            carry_all: false,
        };
        // A document's node avoidance and retry limits read the failed pods it sees.
        world.carry_all = options.carry_all_pods
            || !world.failure_policy.is_empty()
            || world
                .job
                .metadata
                .as_ref()
                .is_some_and(|m| m.annotations.contains_key(FAILURE_POLICY_ANNOTATION));
        for pod in pods {
            world.adopt_existing(pod, running_pods);
        }
        world.existing = world.created;
        Ok(world)
    }

    /// A pod given at the start: it becomes an attempt like those the controller creates.
    pub(super) fn adopt_existing(&mut self, pod: pb::Pod, running_pods: RunningPods) {
        let index = self.pod_index(&pod);
        let created = pod
            .metadata
            .as_ref()
            .and_then(|m| m.creation_timestamp.as_ref())
            .map_or(self.now, ts_nanos);
        let mut sp = self.new_sim_pod(pod, index, created);
        match phase(&sp.pod) {
            "Pending" | "" => {}
            "Running" => {
                let started = sp
                    .pod
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.first())
                    .and_then(running_since)
                    .map_or(self.now, |t| ts_nanos(&t));
                sp.start_at = None;
                sp.started = Some(started);
                sp.outcome = "running".to_string();
                if running_pods == RunningPods::FromNow {
                    // It ends its run time after now, whenever it started.
                    let ran = self.now.saturating_sub(started).max(0);
                    sp.plan.run_time = sp.plan.run_time.saturating_add(ran);
                }
            }
            other => {
                sp.start_at = None;
                sp.outcome = if other == "Succeeded" {
                    "succeeded"
                } else {
                    "failed"
                }
                .to_string();
                // It ended when its last container did (or, with no record, when it was created).
                let statuses = sp
                    .pod
                    .status
                    .as_ref()
                    .map(|s| s.container_statuses.clone())
                    .unwrap_or_default();
                let terminated: Vec<&pb::ContainerStateTerminated> = statuses
                    .iter()
                    .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
                    .collect();
                let finished = terminated
                    .iter()
                    .filter_map(|t| t.finished_at.as_ref())
                    .map(ts_nanos)
                    .max();
                sp.exit_code = terminated
                    .iter()
                    .map(|t| t.exit_code)
                    .find(|&c| c != 0 || other == "Succeeded");
                sp.ended = Some(finished.unwrap_or(created));
                // It ran from when its first container started, if the record says.
                sp.started = terminated
                    .iter()
                    .filter_map(|t| t.started_at.as_ref())
                    .map(ts_nanos)
                    .min();
            }
        }
        if sp
            .pod
            .metadata
            .as_ref()
            .is_some_and(|m| m.deletion_timestamp.is_some())
        {
            let grace = sp
                .pod
                .metadata
                .as_ref()
                .and_then(|m| m.deletion_grace_period_seconds)
                .unwrap_or(self.grace_seconds);
            let (after, code) = self.stopping(grace);
            sp.stop_at = Some(self.now.saturating_add(after));
            sp.stop_code = code;
        }
        let failed = sp.outcome == "failed";
        self.pods.push(sp);
        self.map_new_pod(self.pods.len() - 1);
        // A pod that failed before the start matched its rule then: the same rule now.
        if failed {
            let i = self.pods.len() - 1;
            let policy = self.policy_of(i);
            self.pods[i].policy = policy;
        }
    }
}
