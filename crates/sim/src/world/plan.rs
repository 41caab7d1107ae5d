//! Each attempt's plan from the script (how it ends, how long it runs, when it
//! starts), the next attempt's number and a new pod's state, and how long a deleted
//! pod takes to stop under its grace period.

use super::*;
use crate::duration::Span;
use crate::script::Dist;

impl<'s> World<'s> {
    /// How long a running pod deleted with `grace` seconds takes to stop, and its exit code.
    ///
    /// As v1.37.2's kubelet kills a container (`kuberuntime_container.go` `killContainer`
    /// with `setTerminationGracePeriod`): SIGTERM, then the runtime's `StopContainer`
    /// waits the pod's deletion grace period (at least `minimumGracePeriodInSeconds`,
    /// 2s) and sends SIGKILL. An app that needs the script's `stopTime` or less exits
    /// on SIGTERM (143); one that needs longer is killed at the grace period (137).
    pub(super) fn stopping(&self, grace: i64) -> (i64, i32) {
        let stop = self
            .script
            .defaults
            .stop_time
            .unwrap_or(DEFAULT_STOP_TIME)
            .nanos();
        let kill = grace.max(MIN_KILL_GRACE_SECONDS).saturating_mul(SECOND);
        if stop <= kill {
            (stop, SIGTERM_EXIT)
        } else {
            (kill, SIGKILL_EXIT)
        }
    }

    /// The number of the next attempt: per index for an Indexed Job, else across the Job.
    pub(super) fn next_attempt(&mut self, index: Option<i32>) -> u32 {
        match index {
            Some(i) => {
                let n = self.per_index.entry(i).or_insert(0);
                *n += 1;
                *n
            }
            None => {
                self.runs += 1;
                self.runs
            }
        }
    }

    /// Numbers a new attempt and resolves how it goes from the script.
    pub(super) fn new_sim_pod(&mut self, pod: pb::Pod, index: Option<i32>, created: i64) -> SimPod {
        self.created += 1;
        let ordinal = self.created;
        let attempt = self.next_attempt(index);
        let plan = self.plan_for(index, attempt, self.placed_on(&pod));
        SimPod {
            pod,
            ordinal,
            index,
            attempt,
            created,
            start_at: Some(ceil_second(created.saturating_add(plan.start_delay))),
            plan,
            started: None,
            ended: None,
            stop_at: None,
            stop_code: SIGTERM_EXIT,
            gone: false,
            outcome: "pending".to_string(),
            exit_code: None,
            why: String::new(),
            policy: None,
            ignored: false,
            rule: None,
            settled: false,
            evicted: false,
            deleted_by_controller: false,
            counted: false,
            restarts: 0,
            history: Vec::new(),
            restart_at: None,
            back_off: None,
            evict_at: None,
        }
    }

    pub(super) fn plan_for(
        &self,
        index: Option<i32>,
        attempt: u32,
        node: Option<&str>,
    ) -> AttemptPlan {
        let d = &self.script.defaults;
        let mut exit: Option<(i32, Option<String>, Option<String>)> = None;
        let mut ending: Option<(PlannedEnding, Option<String>)> = None;
        let mut run_time = None;
        let mut start_delay = None;
        let mut message: Option<String> = None;
        let mut never_ready = None;
        // The draw is keyed by index and attempt (Indexed) or the attempt alone, so
        // two policies that create pods in another order still draw alike.
        let key = match index {
            Some(i) => (u64::from(i.unsigned_abs()) << 32) | u64::from(attempt),
            None => u64::from(attempt) | (1 << 63),
        };
        for (r, rule) in self.script.attempts.iter().enumerate() {
            let index_ok = rule.index.as_ref().is_none_or(|set| {
                index
                    .and_then(|i| u32::try_from(i).ok())
                    .is_some_and(|i| set.0.contains(&i))
            });
            let attempt_ok = rule
                .attempt
                .as_ref()
                .is_none_or(|set| set.0.contains(&attempt));
            let node_ok = rule
                .node
                .as_ref()
                .is_none_or(|names| node.is_some_and(|n| names.contains(n)));
            if !index_ok || !attempt_ok || !node_ok {
                continue;
            }
            if let Some(p) = rule.percent
                && draw(self.script.seed, key, r as u64, 0) * 100.0 >= p
            {
                continue;
            }
            if exit.is_none() && ending.is_none() {
                if let Some(reason) = &rule.pending {
                    ending = Some((PlannedEnding::Stuck(reason.clone()), None));
                } else if let Some(reason) = &rule.pod_reason {
                    ending = Some((
                        PlannedEnding::Rejected(reason.clone()),
                        rule.message.clone(),
                    ));
                }
            }
            if exit.is_none() && ending.is_none() {
                let code = match (&rule.exit_code, &rule.exit_codes) {
                    (Some(c), _) => Some(*c),
                    (None, Some(codes)) if !codes.is_empty() => {
                        #[allow(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            clippy::cast_precision_loss
                        )]
                        let pick = (draw(self.script.seed, key, r as u64, 1) * codes.len() as f64)
                            as usize;
                        codes.get(pick.min(codes.len() - 1)).copied()
                    }
                    _ => None,
                };
                if let Some(code) = code {
                    exit = Some((code, rule.reason.clone(), rule.container.clone()));
                    message = rule.message.clone();
                }
            }
            if run_time.is_none() {
                run_time = rule.run_time.map(|d| (d, r as u64));
            }
            if never_ready.is_none() {
                never_ready = rule.never_ready;
            }
            if start_delay.is_none() {
                start_delay = rule.start_delay.map(|d| (d, r as u64));
            }
        }
        let (exit_code, reason, container) = exit.unwrap_or((d.exit_code.unwrap_or(0), None, None));
        let (ending, pod_message) = ending.unwrap_or((PlannedEnding::Exits, None));
        AttemptPlan {
            never_ready: never_ready.unwrap_or(false),
            ending,
            message: pod_message.or(message).unwrap_or_default(),
            exit_code,
            reason: reason
                .unwrap_or_else(|| if exit_code == 0 { "Completed" } else { "Error" }.to_string()),
            container: container
                .or_else(|| self.container_names.first().cloned())
                .unwrap_or_default(),
            run_time: self
                .drawn(key, run_time, d.run_time, RUN_TIME_SALT)
                .unwrap_or(DEFAULT_RUN_TIME)
                .nanos(),
            start_delay: self
                .drawn(key, start_delay, d.start_delay, START_DELAY_SALT)
                .unwrap_or_default()
                .nanos(),
        }
    }

    /// A time drawn for the attempt keyed `key` from the rule's distribution (or the
    /// defaults'), keyed as `percent` draws are, so that the same attempt runs as
    /// long whatever the Job's policy (common random numbers when comparing).
    fn drawn(
        &self,
        key: u64,
        rule: Option<(Dist, u64)>,
        default: Option<Dist>,
        salt: u64,
    ) -> Option<Span> {
        let (dist, r) = rule.or(default.map(|d| (d, DEFAULTS_RULE)))?;
        let seed = self.script.seed;
        Some(dist.sample(draw(seed, key, r, salt), draw(seed, key, r, salt + 1)))
    }
}

/// The rule number the defaults' draws are keyed by.
const DEFAULTS_RULE: u64 = u64::MAX;
/// Draw salts: 0 and 1 are `percent` and `exitCodes`; each time takes two.
const RUN_TIME_SALT: u64 = 2;
const START_DELAY_SALT: u64 = 4;
