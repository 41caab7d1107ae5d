//! The simulated world: one Job, its pods, a virtual clock, the controller
//! state fed back, and the script. Plans are applied as the shim applies them
//! against an API server; pods start, run and end as the kubelet would write
//! them; nothing here reads a clock or does I/O.

use std::collections::{BTreeMap, BTreeSet};

use job_decider_api::convert::{CompiledDocument, snapshot_with_document};
use job_decider_api::pb;
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;
use job_decider_core::extended::retry_limits::{document_match_among, max_retries};
use job_decider_core::extended::rules::{
    DocumentMatch, describe_matched_on, matched_on, policy_action_of, rule_action, rule_label,
};
use job_decider_core::model::ExtendedFailurePolicy;
use job_decider_core::model::{JOB_TRACKING_FINALIZER, PodFailurePolicyAction};
use job_decider_core::pod_failure_policy::{MatchedOn, match_pod_failure_policy};
use pb::action::Kind;
use pbjson_types::Timestamp;

use crate::canon::canonical;
use crate::duration::{SECOND, clock, human, rfc3339};
use crate::script::{
    DEFAULT_MAX_SYNCS, DEFAULT_RUN_TIME, DEFAULT_STOP_TIME, EventAction, MAX_JOB_PODS, Script,
    ScriptError, TargetSet,
};
use crate::timeline::{
    Attempt, BackoffWait, Ending, Event, EventKind, Summary, Timeline, index_set,
};

/// The API server's default grace period for a pod deletion.
const GRACE_SECONDS: i64 = 30;
/// How long pod events wait before they cause a sync: upstream's controller and the
/// shim both batch a pod's updates for one second.
const POD_EVENT_BATCH: i64 = SECOND;
/// Syncs in a row at one instant before the world calls it a loop (a plan creates at
/// most 500 pods, so a Job of 100,000 pods needs 200 syncs at its start).
const SAME_INSTANT_SYNCS: u32 = 1000;
/// The longest a generated pod name's prefix may be (the API server cuts generateName there).
const MAX_GENERATE_NAME: usize = 58;

/// A decision failed: the decider refused the request or could not be reached.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecideError {
    /// The request was refused as invalid (the Job or pods are bad input).
    pub bad_input: bool,
    /// What the decider said.
    pub message: String,
}

/// Whatever decides one sync: job-decider in process, a gRPC client, a test double.
pub trait Decider {
    /// Decides one request.
    fn decide(
        &mut self,
        request: pb::DecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError>;
}

impl<F> Decider for F
where
    F: FnMut(pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError>,
{
    fn decide(
        &mut self,
        request: pb::DecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        self(request)
    }
}

/// Why a simulation could not be played to its end.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The script does not fit the Job (or is malformed).
    #[error("script: {0}")]
    Script(#[from] ScriptError),
    /// The Job or pods cannot start a simulation.
    #[error("{0}")]
    Start(String),
    /// A decision failed.
    #[error("sync {sync} at {at}: {source}")]
    Decide {
        /// Which sync (from 1).
        sync: u32,
        /// When (RFC 3339).
        at: String,
        /// The decider's error.
        source: DecideError,
    },
    /// A plan could not be applied, as an API server would refuse a write.
    #[error("sync {sync}: applying the plan: {message}")]
    Apply {
        /// Which sync (from 1).
        sync: u32,
        /// What was refused.
        message: String,
    },
}

/// How to play a script.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// When the simulation starts (ns since the epoch); default the Job's
    /// creationTimestamp, else 2025-01-01T00:00:00Z.
    pub start_nanos: Option<i64>,
    /// The `controllerName` each request carries (empty: the Job's `spec.managedBy`,
    /// else upstream's own).
    pub controller_name: String,
    /// How pods running at the start count the script's run time.
    pub running_pods: RunningPods,
    /// The extended failure policy document each request carries
    /// (`DecideJobRequest.failure_policy`); empty for none, or the Job's annotation.
    pub failure_policy: String,
    /// How far a simulation may grow before it stops (the defaults unless a test says).
    pub limits: Limits,
}

/// How far one simulation may grow: reaching a bound stops it, and the
/// timeline says which (`stopped` and `stopReason`), as the horizon does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Timeline events (each a line of the text, an entry of the JSON).
    pub events: usize,
    /// Bytes of the events' details together (a detail may quote a 4 KiB message).
    pub event_bytes: usize,
    /// Pods in the world, those given at the start included (gone ones stay in the timeline).
    pub pods: usize,
    /// Pods carried by all syncs together: each sync sends every pod still
    /// there, so this is the work a simulation does.
    pub pod_syncs: u64,
}

/// About 25 MB of timeline at the most.
const MAX_EVENTS: usize = 100_000;
/// What the details of [`MAX_EVENTS`] events of a few hundred bytes come to.
const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;
/// Twice the most pods a Job may run at once ([`MAX_JOB_PODS`]): finding the next
/// happening looks at every pod, so a run's time grows with their square.
const MAX_PODS: usize = 20_000;
/// Seconds of deciding for the release build, minutes for a debug one (about 100 µs
/// per pod per sync measured there).
const MAX_POD_SYNCS: u64 = 2_000_000;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            events: MAX_EVENTS,
            event_bytes: MAX_EVENT_BYTES,
            pods: MAX_PODS,
            pod_syncs: MAX_POD_SYNCS,
        }
    }
}

/// A bound reached: the `stopped` token and the sentence for people.
#[derive(Clone, Debug)]
struct Reached {
    token: &'static str,
    reason: String,
}

/// How a pod given at the start that is already running counts the script's run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunningPods {
    /// From its containers' start: a snapshot replayed as it was (`--pods`); a pod
    /// that has run longer than its run time ends at the start.
    #[default]
    FromTheirStart,
    /// From the start of the simulation: the run time is what is left of the run
    /// (`--from-cluster`, where nobody knows how long a live pod has still to go).
    FromNow,
}

/// 2025-01-01T00:00:00Z, the start when neither the caller nor the Job says.
const DEFAULT_START: i64 = 1_735_689_600 * SECOND;

/// How one attempt will go, resolved from the script when its pod is created.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AttemptPlan {
    exit_code: i32,
    reason: String,
    container: String,
    run_time: i64,
    start_delay: i64,
    /// How the attempt ends when it does not run to its exit code.
    ending: PlannedEnding,
    /// The failing container's termination message, or the pod's status message.
    message: String,
}

/// How an attempt goes other than running to its exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PlannedEnding {
    /// It runs and exits with the plan's code.
    Exits,
    /// It never starts: its containers wait with this reason.
    Stuck(String),
    /// It fails as it would start, with this pod `status.reason` and no container run.
    Rejected(String),
}

#[derive(Clone, Debug)]
struct SimPod {
    pod: pb::Pod,
    ordinal: u32,
    index: Option<i32>,
    attempt: u32,
    plan: AttemptPlan,
    created: i64,
    start_at: Option<i64>,
    started: Option<i64>,
    ended: Option<i64>,
    /// When the kubelet stops it, once it is being deleted.
    stop_at: Option<i64>,
    gone: bool,
    outcome: String,
    exit_code: Option<i32>,
    why: String,
    policy: Option<String>,
    ignored: bool,
    /// The action of the pod failure policy rule its failure matched, if one did.
    rule: Option<PodFailurePolicyAction>,
    /// It failed after the Job's outcome was settled (a rule matched, changing nothing).
    settled: bool,
    /// It was stopped after a DisruptionTarget (a drain or a preemption).
    evicted: bool,
    /// The controller deleted it.
    deleted_by_controller: bool,
    /// restartPolicy OnFailure: container restarts so far, runs that ended, and when
    /// the kubelet starts the container again.
    restarts: i32,
    history: Vec<Run>,
    restart_at: Option<i64>,
}

/// A run of a pod's containers that ended in a restart (restartPolicy OnFailure).
#[derive(Clone, Debug)]
struct Run {
    attempt: u32,
    started: i64,
    ended: i64,
    exit_code: i32,
    why: String,
}

/// Who removes a pod in a scripted event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Removal {
    /// The eviction API, for a node drain.
    Drain,
    /// The scheduler, for a higher-priority pod.
    Preempt,
    /// A user's DELETE.
    User,
}

/// What moves the world next, other than a sync.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Happening {
    Finish(usize),
    Stop(usize),
    Restart(usize),
    Start(usize),
    Scripted(usize),
}

struct World<'s> {
    job: pb::Job,
    pods: Vec<SimPod>,
    now: i64,
    start: i64,
    state: Option<pb::ControllerState>,
    controller_name: String,
    failure_policy: String,
    script: &'s Script,
    actions: Vec<EventAction>,
    next_scripted: usize,
    created: u32,
    per_index: BTreeMap<i32, u32>,
    events: Vec<Event>,
    rv: i64,
    syncs: u32,
    finished_at: Option<i64>,
    container_names: Vec<String>,
    indexed: bool,
    /// Pods given at the start (not created by the controller).
    existing: u32,
    /// The waits the controller imposed before recreating failed pods.
    backoff_waits: Vec<BackoffWait>,
    /// restartPolicy OnFailure: a failed container is restarted in place by the kubelet.
    on_failure: bool,
    /// Runs started, for NonIndexed attempt numbers (one per pod under restartPolicy Never).
    runs: u32,
    /// When a FailureTarget or Failed condition first turned True: the Job's verdict.
    verdict_at: Option<i64>,
    /// How far the simulation may grow.
    limits: Limits,
    /// Pods carried by the syncs so far.
    pod_syncs: u64,
    /// Bytes of the events' details so far.
    event_bytes: usize,
    /// The first bound reached; the run stops at the next turn of its loop.
    reached: Option<Reached>,
    /// Why the run stopped, for people, when a bound stopped it.
    stop_reason: String,
    /// The failure policy document narration reads, compiled once for the Job's spec.
    narration_document: Option<NarrationDocument>,
}

/// A compiled document and what it was compiled from: the Job's spec (a document is checked
/// against it) and its annotation; the request field is the world's, fixed for the run.
struct NarrationDocument {
    spec: Option<pb::JobSpec>,
    annotation: Option<String>,
    compiled: CompiledDocument,
}

fn ts(nanos: i64) -> Timestamp {
    Timestamp {
        seconds: nanos.div_euclid(SECOND),
        nanos: i32::try_from(nanos.rem_euclid(SECOND)).unwrap_or(0),
    }
}

/// A timestamp as the API server stores it: whole seconds.
fn whole(nanos: i64) -> Timestamp {
    Timestamp {
        seconds: nanos.div_euclid(SECOND),
        nanos: 0,
    }
}

fn ts_nanos(t: &Timestamp) -> i64 {
    t.seconds
        .saturating_mul(SECOND)
        .saturating_add(i64::from(t.nanos))
}

/// The next whole second at or after `nanos`.
fn ceil_second(nanos: i64) -> i64 {
    let r = nanos.rem_euclid(SECOND);
    if r == 0 {
        nanos
    } else {
        (nanos - r).saturating_add(SECOND)
    }
}

/// A deterministic stand-in for the API server's random 5-character name suffix.
fn suffix(mut n: u32) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out = [b'b'; 5];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n as usize) % ALPHABET.len()];
        n /= ALPHABET.len() as u32;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A uniform draw in [0, 1) for (seed, attempt, rule, salt): the same attempt
/// gets the same draw whichever policy the Job has and whenever it is created.
fn draw(seed: u64, ordinal_key: u64, rule: u64, salt: u64) -> f64 {
    let mut x = seed
        ^ ordinal_key.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ rule.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ salt.wrapping_mul(0x1656_67B1_9E37_79F9);
    for _ in 0..2 {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x = z ^ (z >> 31);
    }
    #[allow(clippy::cast_precision_loss)]
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

fn has_condition(job: &pb::Job, kinds: &[&str]) -> Option<pb::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| kinds.contains(&c.r#type.as_str()) && c.status == "True")
        .cloned()
}

fn phase(p: &pb::Pod) -> &str {
    p.status.as_ref().map_or("", |s| s.phase.as_str())
}

fn terminal(p: &pb::Pod) -> bool {
    matches!(phase(p), "Succeeded" | "Failed")
}

fn meta(p: &mut pb::Pod) -> &mut pb::ObjectMeta {
    p.metadata.get_or_insert_with(Default::default)
}

fn status(p: &mut pb::Pod) -> &mut pb::PodStatus {
    p.status.get_or_insert_with(Default::default)
}

fn scheduled(p: &pb::Pod) -> bool {
    p.spec.as_ref().is_some_and(|s| !s.node_name.is_empty())
}

fn remove_tracking_finalizer(p: &mut pb::Pod) {
    meta(p).finalizers.retain(|f| f != JOB_TRACKING_FINALIZER);
}

/// Plays `script` on `job` (and its current `pods`) with `decider` to the end.
pub fn simulate(
    job: pb::Job,
    pods: Vec<pb::Pod>,
    script: &Script,
    options: &Options,
    decider: &mut dyn Decider,
) -> Result<Timeline, SimError> {
    let mut world = World::new(job, pods, script, options)?;
    let stopped = world.run(decider)?;
    Ok(world.timeline(stopped))
}

impl<'s> World<'s> {
    fn new(
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
        for (i, rule) in script.attempts.iter().enumerate() {
            if rule.index.is_some() && !indexed {
                return Err(ScriptError::at(
                    format!("attempts[{i}].index"),
                    "the Job is not Indexed (spec.completionMode), so its pods have no index",
                )
                .into());
            }
            if let Some(c) = &rule.container
                && !container_names.contains(c)
            {
                return Err(ScriptError::at(
                    format!("attempts[{i}].container"),
                    format!(
                        "the Job's template has no container {c:?} (it has {})",
                        container_names.join(", ")
                    ),
                )
                .into());
            }
        }
        let mut actions = Vec::new();
        for (i, e) in script.events.iter().enumerate() {
            let action = e.action(i)?;
            if let EventAction::Drain(t) | EventAction::Preempt(t) | EventAction::DeletePod(t) =
                &action
                && t.index.is_some()
                && !indexed
            {
                let name = match action {
                    EventAction::Drain(_) => "drain",
                    EventAction::Preempt(_) => "preempt",
                    _ => "deletePod",
                };
                return Err(ScriptError::at(
                    format!("events[{i}].{name}.index"),
                    "the Job is not Indexed (spec.completionMode), so its pods have no index",
                )
                .into());
            }
            actions.push(action);
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
            narration_document: None,
        };
        for pod in pods {
            world.adopt_existing(pod, running_pods);
        }
        world.existing = world.created;
        Ok(world)
    }

    /// A pod given at the start: it becomes an attempt like those the controller creates.
    fn adopt_existing(&mut self, pod: pb::Pod, running_pods: RunningPods) {
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
                    .and_then(|c| c.state.as_ref())
                    .and_then(|s| s.running.as_ref())
                    .and_then(|r| r.started_at.as_ref())
                    .map_or(self.now, ts_nanos);
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
            sp.stop_at = Some(self.now.saturating_add(self.stop_time()));
        }
        let failed = sp.outcome == "failed";
        self.pods.push(sp);
        // A pod that failed before the start matched its rule then: the same rule now.
        if failed {
            let i = self.pods.len() - 1;
            let policy = self.policy_of(i);
            self.pods[i].policy = policy;
        }
    }

    fn pod_index(&self, pod: &pb::Pod) -> Option<i32> {
        if !self.indexed {
            return None;
        }
        pod.metadata
            .as_ref()?
            .annotations
            .get(job_decider_core::model::COMPLETION_INDEX_KEY)?
            .parse()
            .ok()
    }

    fn stop_time(&self) -> i64 {
        self.script
            .defaults
            .stop_time
            .unwrap_or(DEFAULT_STOP_TIME)
            .nanos()
            .min(GRACE_SECONDS * SECOND)
    }

    /// The number of the next attempt: per index for an Indexed Job, else across the Job.
    fn next_attempt(&mut self, index: Option<i32>) -> u32 {
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
    fn new_sim_pod(&mut self, pod: pb::Pod, index: Option<i32>, created: i64) -> SimPod {
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
            restarts: 0,
            history: Vec::new(),
            restart_at: None,
        }
    }

    fn plan_for(&self, index: Option<i32>, attempt: u32, node: Option<&str>) -> AttemptPlan {
        let d = &self.script.defaults;
        let mut exit: Option<(i32, Option<String>, Option<String>)> = None;
        let mut ending: Option<(PlannedEnding, Option<String>)> = None;
        let mut run_time = None;
        let mut start_delay = None;
        let mut message: Option<String> = None;
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
                run_time = rule.run_time;
            }
            if start_delay.is_none() {
                start_delay = rule.start_delay;
            }
        }
        let (exit_code, reason, container) = exit.unwrap_or((d.exit_code.unwrap_or(0), None, None));
        let (ending, pod_message) = ending.unwrap_or((PlannedEnding::Exits, None));
        AttemptPlan {
            ending,
            message: pod_message.or(message).unwrap_or_default(),
            exit_code,
            reason: reason
                .unwrap_or_else(|| if exit_code == 0 { "Completed" } else { "Error" }.to_string()),
            container: container
                .or_else(|| self.container_names.first().cloned())
                .unwrap_or_default(),
            run_time: run_time.or(d.run_time).unwrap_or(DEFAULT_RUN_TIME).nanos(),
            start_delay: start_delay.or(d.start_delay).unwrap_or_default().nanos(),
        }
    }

    fn horizon_end(&self) -> i64 {
        self.start.saturating_add(self.script.horizon().nanos())
    }

    fn push(&mut self, kind: EventKind, pod: Option<usize>, detail: String) {
        if self.events.len() >= self.limits.events {
            let events = self.limits.events;
            self.reach(
                "eventLimit",
                format!("the timeline reached {events} events, the simulator's bound"),
            );
            return;
        }
        if self.event_bytes.saturating_add(detail.len()) > self.limits.event_bytes {
            let most = self.limits.event_bytes;
            self.reach(
                "eventLimit",
                format!("the timeline's events reached {most} bytes, the simulator's bound"),
            );
            return;
        }
        self.event_bytes += detail.len();
        let (name, index) = match pod {
            Some(i) => (
                Some(
                    self.pods[i]
                        .pod
                        .metadata
                        .as_ref()
                        .map(|m| m.name.clone())
                        .unwrap_or_default(),
                ),
                self.pods[i].index,
            ),
            None => (None, None),
        };
        self.events.push(Event {
            at: rfc3339(self.now),
            offset_ms: self.now.saturating_sub(self.start).div_euclid(1_000_000),
            kind,
            pod: name,
            index,
            detail,
        });
    }

    /// Notes a bound reached; the first one is the reason the run stops.
    fn reach(&mut self, token: &'static str, reason: String) {
        if self.reached.is_none() {
            self.reached = Some(Reached { token, reason });
        }
    }

    /// Stops the run at a bound reached: the `stopped` token, the reason kept.
    fn stop_at_bound(&mut self) -> Option<String> {
        let reached = self.reached.take()?;
        self.stop_reason = reached.reason;
        Some(reached.token.to_string())
    }

    /// The next happening and its time.
    fn next_happening(&self) -> Option<(i64, Happening)> {
        let mut best: Option<(i64, Happening)> = None;
        let mut consider = |t: i64, h: Happening| {
            if best.as_ref().is_none_or(|(bt, bh)| (t, &h) < (*bt, bh)) {
                best = Some((t, h));
            }
        };
        for (i, sp) in self.pods.iter().enumerate() {
            if sp.gone || terminal(&sp.pod) {
                continue;
            }
            let deleting = sp
                .pod
                .metadata
                .as_ref()
                .is_some_and(|m| m.deletion_timestamp.is_some());
            match phase(&sp.pod) {
                "Running" => {
                    if let Some(started) = sp.started {
                        consider(
                            started.saturating_add(sp.plan.run_time).max(self.now),
                            Happening::Finish(i),
                        );
                    }
                    if let Some(stop) = sp.stop_at {
                        consider(stop.max(self.now), Happening::Stop(i));
                    }
                    if let Some(t) = sp.restart_at.filter(|_| !deleting) {
                        consider(t.max(self.now), Happening::Restart(i));
                    }
                }
                _ if !deleting => {
                    if let Some(t) = sp.start_at {
                        consider(t.max(self.now), Happening::Start(i));
                    }
                }
                _ => {}
            }
        }
        if let Some(e) = self.script.events.get(self.next_scripted) {
            consider(
                self.start.saturating_add(e.at.nanos()).max(self.now),
                Happening::Scripted(self.next_scripted),
            );
        }
        best
    }

    /// Plays until the Job is finished and quiet, the horizon, idleness or the sync bound.
    fn run(&mut self, decider: &mut dyn Decider) -> Result<String, SimError> {
        let max_syncs = self.script.max_syncs.unwrap_or(DEFAULT_MAX_SYNCS);
        let mut next_sync: Option<i64> = Some(self.now);
        let mut requeues: BTreeSet<i64> = BTreeSet::new();
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
            let carried = self.pods.iter().filter(|p| !p.gone).count() as u64;
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
                    return Ok("syncLimit".to_string());
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
                let record = self
                    .state
                    .as_ref()
                    .and_then(|s| s.backoff.as_ref())
                    .filter(|b| b.failures_after_last_success > 0);
                let waiting = if record.is_some() {
                    Vec::new()
                } else {
                    self.indexes_awaiting_replacement()
                };
                let backoff = match (record, waiting.as_slice()) {
                    (Some(b), _) => format!(
                        "; backoff record: {} failure(s) since the last success",
                        b.failures_after_last_success
                    ),
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
    fn indexes_awaiting_replacement(&self) -> Vec<i32> {
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
        let done: std::collections::BTreeSet<i32> = index_set(&status.completed_indexes)
            .into_iter()
            .chain(index_set(
                status.failed_indexes.as_deref().unwrap_or_default(),
            ))
            .collect();
        let mut last: BTreeMap<i32, &SimPod> = BTreeMap::new();
        for sp in &self.pods {
            if let Some(i) = sp.index {
                last.insert(i, sp);
            }
        }
        last.into_iter()
            .filter(|(i, sp)| !done.contains(i) && sp.outcome == "failed" && terminal(&sp.pod))
            .map(|(i, _)| i)
            .collect()
    }

    /// `index 7 (1 failed attempt)`, for a few indexes; the rest counted.
    fn describe_waiting(&self, indexes: &[i32]) -> String {
        let failed = |i: i32| {
            self.pods
                .iter()
                .filter(|p| p.index == Some(i) && p.outcome == "failed")
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
    fn happen(&mut self, h: Happening) -> bool {
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
            Happening::Scripted(k) => {
                self.next_scripted = k + 1;
                let Some(action) = self.actions.get(k).cloned() else {
                    return false;
                };
                match action {
                    EventAction::Drain(t) => {
                        self.on_targets(&t, Removal::Drain);
                        false
                    }
                    EventAction::Preempt(t) => {
                        self.on_targets(&t, Removal::Preempt);
                        false
                    }
                    EventAction::DeletePod(t) => {
                        self.on_targets(&t, Removal::User);
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

    fn bump_generation(&mut self) {
        let m = self.job.metadata.get_or_insert_with(Default::default);
        m.generation += 1;
        self.rv += 1;
        m.resource_version = self.rv.to_string();
    }

    fn on_targets(&mut self, t: &TargetSet, how: Removal) {
        let now = self.now;
        for i in 0..self.pods.len() {
            let sp = &self.pods[i];
            let deleting = sp
                .pod
                .metadata
                .as_ref()
                .is_some_and(|m| m.deletion_timestamp.is_some());
            if sp.gone || deleting || terminal(&sp.pod) || !t.matches(sp.index, sp.ordinal) {
                continue;
            }
            // Drains and preemption act on pods a node runs; a pending pod has none yet.
            let disruption = match how {
                Removal::Drain => Some((
                    "EvictionByEvictionAPI",
                    "Eviction API: evicting",
                    "its node is drained",
                )),
                Removal::Preempt => Some((
                    "PreemptionByScheduler",
                    "default-scheduler: preempting to accommodate a higher priority pod",
                    "preempted by the scheduler",
                )),
                Removal::User => None,
            };
            if disruption.is_some() && !scheduled(&sp.pod) {
                continue;
            }
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
                    format!("{what}: DisruptionTarget ({reason}), deleted with a 30s grace period"),
                );
            } else {
                self.push(
                    EventKind::PodDeletedByUser,
                    Some(i),
                    "deleted by a user with a 30s grace period".to_string(),
                );
            }
            self.delete_pod(i);
        }
        self.collect();
    }

    /// A DELETE with the default grace period: at once for a pod that is not
    /// running on a node (or already ended), else the kubelet stops it.
    fn delete_pod(&mut self, i: usize) {
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

    fn start_pod(&mut self, i: usize) {
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
    fn stick(&mut self, i: usize, reason: &str) {
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
    fn reject(&mut self, i: usize, reason: &str) {
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
    fn fail_stuck_pod(&mut self, i: usize, failure: &pb::PodFailure) {
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
    fn placed_on<'p>(&self, pod: &'p pb::Pod) -> Option<&'p str> {
        let node = pod.spec.as_ref().map(|s| s.node_name.as_str());
        node.filter(|n| !n.is_empty() && self.script.nodes.is_some())
    }

    /// The scheduler's choice for a new pod: the allowed node running the fewest
    /// pods, in the script's order; `None` when every node is excluded.
    fn place(&self, avoid: Option<&pb::AvoidNodes>) -> Option<String> {
        let nodes = &self.script.nodes.as_ref()?.0;
        let avoided = |n: &String| avoid.is_some_and(|a| a.nodes.contains(n));
        let required = avoid.is_some_and(|a| a.mode != "Preferred");
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
    fn finish_pod(&mut self, i: usize, container: &str, code: i32, reason: &str) {
        if self.on_failure && code != 0 {
            self.crash(i, container, code, reason);
            return;
        }
        let now = self.now;
        let sp = &mut self.pods[i];
        let st = status(&mut sp.pod);
        for cs in &mut st.container_statuses {
            let started = cs
                .state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .and_then(|r| r.started_at);
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
    fn crash(&mut self, i: usize, container: &str, code: i32, reason: &str) {
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
    fn restart_container(&mut self, i: usize) {
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
    fn stop_pod(&mut self, i: usize) {
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
                let started = cs
                    .state
                    .as_ref()
                    .and_then(|s| s.running.as_ref())
                    .and_then(|r| r.started_at);
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

    /// Records the failure of pod `i` as an event of `kind`: `what` happened, then
    /// the policy rule it matches, if any (kept on the pod for its attempt line).
    fn tell_failure(&mut self, i: usize, kind: EventKind, what: &str) {
        let policy = self.policy_of(i);
        let detail = match &policy {
            Some(p) => format!("{what}; {p}"),
            None => what.to_string(),
        };
        self.pods[i].policy = policy;
        self.push(kind, Some(i), detail);
    }

    /// Which pod failure policy rule the failed pod matches, as job-decider's
    /// matcher reads it (the same rules upstream applies).
    fn policy_of(&mut self, i: usize) -> Option<String> {
        let has_policy = self
            .job
            .spec
            .as_ref()
            .is_some_and(|s| s.pod_failure_policy.is_some());
        let uid = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .map(|m| m.uid.clone())
            .unwrap_or_default();
        // A document's retry limits count a failure among its scope's: every pod then.
        let documented = !self.failure_policy.is_empty()
            || self
                .job
                .metadata
                .as_ref()
                .is_some_and(|m| m.annotations.contains_key(FAILURE_POLICY_ANNOTATION));
        let pods = if documented {
            self.pods
                .iter()
                .filter(|p| !p.gone)
                .map(|p| p.pod.clone())
                .collect()
        } else {
            vec![self.pods[i].pod.clone()]
        };
        let document = self.narration_document()?;
        let request = pb::DecideJobRequest {
            job: Some(self.job.clone()),
            pods,
            now: Some(ts(self.now)),
            failure_policy: self.failure_policy.clone(),
            ..Default::default()
        };
        let snapshot = snapshot_with_document(request, &document).ok()?;
        let pod = snapshot.pods.iter().find(|p| p.uid == uid)?;
        if let Some(doc) = snapshot.job.extended_failure_policy.as_deref()
            && let Some(m) = document_match_among(&snapshot.job, &snapshot.pods, &uid)
        {
            return Some(self.narrate_document_match(i, doc, &m, pod));
        }
        let decision = match_pod_failure_policy(
            snapshot.job.spec.pod_failure_policy.as_ref(),
            &snapshot.job.namespace,
            pod,
        );
        let Some(rule) = decision.rule_index else {
            let rules = snapshot
                .job
                .extended_failure_policy
                .as_deref()
                .is_some_and(|d| !d.rules.is_empty());
            return (has_policy || rules)
                .then(|| "no pod failure policy rule matches: counted".to_string());
        };
        let action = decision.action.clone()?;
        let on = match &decision.matched_on {
            Some(MatchedOn::ExitCode {
                container,
                exit_code,
                ..
            }) => format!("exit code {exit_code} of {container}"),
            Some(MatchedOn::Condition { condition_type }) => format!("condition {condition_type}"),
            None => String::new(),
        };
        let name = action.as_str().to_string();
        let effect = self.handled_by(i, action);
        Some(format!(
            "podFailurePolicy rule {rule} ({name}) matches {on}: {effect}"
        ))
    }

    /// The Job's failure policy document as narration reads it: compiled once, and again
    /// only when the Job's spec or its annotation changes — not once per failure, which made
    /// narrating N failures cost N compiles. `None` when the Job or its document does not
    /// convert (then the decider refuses it too); such an attempt is not kept.
    fn narration_document(&mut self) -> Option<CompiledDocument> {
        let annotation = self
            .job
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.get(FAILURE_POLICY_ANNOTATION));
        if let Some(kept) = &self.narration_document
            && kept.spec == self.job.spec
            && kept.annotation.as_ref() == annotation
        {
            return Some(kept.compiled.clone());
        }
        let compiled = CompiledDocument::compile(&self.job, &self.failure_policy).ok()?;
        self.narration_document = Some(NarrationDocument {
            spec: self.job.spec.clone(),
            annotation: annotation.cloned(),
            compiled: compiled.clone(),
        });
        Some(compiled)
    }

    /// Records on pod `i` the action its failure was handled by, and says what
    /// that did: `counted`, `fails the Job`… and whether the Job's outcome was
    /// already settled (a pod that ends after it changes nothing).
    fn handled_by(&mut self, i: usize, action: PodFailurePolicyAction) -> String {
        let effect = match action {
            PodFailurePolicyAction::FailJob => "fails the Job",
            PodFailurePolicyAction::FailIndex => "fails its index",
            PodFailurePolicyAction::Ignore => "not counted",
            PodFailurePolicyAction::Count => "counted",
            PodFailurePolicyAction::Unknown(_) => "skipped",
        };
        let settled = has_condition(
            &self.job,
            &["FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"],
        )
        .is_some();
        let sp = &mut self.pods[i];
        sp.ignored = action == PodFailurePolicyAction::Ignore;
        sp.settled = settled;
        sp.rule = Some(action);
        if settled {
            format!("{effect} (the Job's outcome is already settled)")
        } else {
            effect.to_string()
        }
    }

    /// The story of a failure the extended policy document handled, as `policy_of` tells it.
    fn narrate_document_match(
        &mut self,
        i: usize,
        doc: &ExtendedFailurePolicy,
        m: &DocumentMatch,
        pod: &job_decider_core::model::Pod,
    ) -> String {
        let on: Vec<String> = matched_on(doc, m.rule, pod)
            .iter()
            .map(|o| describe_matched_on(doc, m.rule, o))
            .collect();
        let effect = self.handled_by(i, policy_action_of(m.action).clone());
        let rule = rule_label(doc, m.rule);
        let limit = match max_retries(doc, m.rule) {
            Some(max) if m.exhausted => format!(
                "; match {} of a rule allowing {max} retries: used up, so whenRetriesExhausted",
                m.ordinal
            ),
            Some(max) => format!("; match {} of {max} retries", m.ordinal),
            None => String::new(),
        };
        format!(
            "failure policy document rule {rule} ({}) matches {}{limit}: {effect}",
            rule_action(doc, m.rule).as_str(),
            on.join(" and ")
        )
    }

    /// Removes deleted pods that nothing holds any more.
    fn collect(&mut self) {
        let now = self.now;
        let mut removed = Vec::new();
        for (i, sp) in self.pods.iter_mut().enumerate() {
            if sp.gone {
                continue;
            }
            let Some(m) = sp.pod.metadata.as_ref() else {
                continue;
            };
            if m.deletion_timestamp.is_none() || !m.finalizers.is_empty() {
                continue;
            }
            if terminal(&sp.pod)
                || !scheduled(&sp.pod)
                || m.deletion_grace_period_seconds == Some(0)
            {
                sp.gone = true;
                if sp.ended.is_none() {
                    sp.ended = Some(now);
                    sp.outcome = "removed".to_string();
                    sp.why = "deleted before it ended".to_string();
                }
                removed.push(i);
            }
        }
        for i in removed {
            self.push(
                EventKind::PodRemoved,
                Some(i),
                "gone from the API".to_string(),
            );
        }
    }

    /// One sync: the request, the decision, the plan applied.
    fn sync(&mut self, decider: &mut dyn Decider) -> Result<pb::DecideJobResponse, SimError> {
        self.syncs += 1;
        let request = pb::DecideJobRequest {
            job: Some(self.job.clone()),
            pods: self
                .pods
                .iter()
                .filter(|p| !p.gone)
                .map(|p| p.pod.clone())
                .collect(),
            now: Some(ts(self.now)),
            state: self.state,
            controller_name: self.controller_name.clone(),
            failure_policy: self.failure_policy.clone(),
            // The world's pod cache is never stale: every write is seen at once.
            expectations: Some(pb::Expectations::default()),
            ..Default::default()
        };
        let response = decider.decide(request).map_err(|source| SimError::Decide {
            sync: self.syncs,
            at: rfc3339(self.now),
            source,
        })?;
        let response = canonical(response);
        self.state = response.state;
        self.apply(&response)?;
        Ok(response)
    }

    fn apply(&mut self, response: &pb::DecideJobResponse) -> Result<(), SimError> {
        let sync = self.syncs;
        let refused = |message: String| SimError::Apply { sync, message };
        for action in &response.actions {
            match action.kind.as_ref() {
                Some(Kind::CreatePods(c)) => {
                    for (k, pc) in c.pods.iter().enumerate() {
                        self.create_pod(pc, k).map_err(refused)?;
                    }
                }
                Some(Kind::DeletePods(d)) => {
                    for pd in &d.pods {
                        let Some(i) = self.find(&pd.name) else {
                            continue;
                        };
                        self.check_uid(i, &pd.uid).map_err(refused)?;
                        if pd.remove_finalizer_first {
                            remove_tracking_finalizer(&mut self.pods[i].pod);
                        }
                        let detail = format!(
                            "deleted by the controller{}",
                            deletion_context(&self.job, response)
                        );
                        self.push(EventKind::PodDeleted, Some(i), detail);
                        self.pods[i].deleted_by_controller = true;
                        self.delete_pod(i);
                        self.collect();
                    }
                }
                Some(Kind::FailPods(f)) => {
                    for failure in &f.pods {
                        let Some(pr) = failure.pod.as_ref() else {
                            return Err(refused("failPods names no pod".to_string()));
                        };
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        if terminal(&self.pods[i].pod) {
                            return Err(refused(format!(
                                "failPods: {} has already ended",
                                pr.name
                            )));
                        }
                        self.fail_stuck_pod(i, failure);
                    }
                }
                Some(Kind::RemoveFinalizers(r)) => {
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        remove_tracking_finalizer(&mut self.pods[i].pod);
                    }
                    self.collect();
                }
                Some(Kind::AdoptPods(r)) => {
                    let owner = self.owner_ref();
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        let m = meta(&mut self.pods[i].pod);
                        m.owner_references.retain(|o| o.uid != owner.uid);
                        m.owner_references.push(owner.clone());
                        if !m.finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
                            m.finalizers.push(JOB_TRACKING_FINALIZER.to_string());
                        }
                    }
                }
                Some(Kind::ReleasePods(r)) => {
                    let uid = self.owner_ref().uid;
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        meta(&mut self.pods[i].pod)
                            .owner_references
                            .retain(|o| o.uid != uid);
                    }
                }
                Some(Kind::UpdateStatus(u)) => {
                    let new = u.status.clone().unwrap_or_default();
                    self.record_status(&new);
                    self.job.status = Some(new);
                    self.rv += 1;
                    self.job
                        .metadata
                        .get_or_insert_with(Default::default)
                        .resource_version = self.rv.to_string();
                }
                Some(Kind::RecordEvent(e)) => {
                    self.push(
                        EventKind::JobEvent,
                        None,
                        format!("{} {}: {}", e.r#type, e.reason, e.message),
                    );
                }
                None => {
                    return Err(refused(
                        "an action of a kind this simulator does not know".to_string(),
                    ));
                }
            }
        }
        Ok(())
    }

    fn owner_ref(&self) -> pb::OwnerReference {
        let m = self.job.metadata.clone().unwrap_or_default();
        pb::OwnerReference {
            api_version: "batch/v1".to_string(),
            kind: "Job".to_string(),
            name: m.name,
            uid: m.uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.pods
            .iter()
            .position(|p| !p.gone && p.pod.metadata.as_ref().is_some_and(|m| m.name == name))
    }

    fn check_uid(&self, i: usize, uid: &str) -> Result<(), String> {
        let have = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .map(|m| m.uid.as_str())
            .unwrap_or("");
        if uid.is_empty() || uid == have {
            Ok(())
        } else {
            Err(format!(
                "pod {i}: uid precondition {uid}, the pod has {have}"
            ))
        }
    }

    /// Creates one pod as the API server would from the template and the plan's entry.
    fn create_pod(&mut self, pc: &pb::PodCreation, k: usize) -> Result<(), String> {
        let job_meta = self.job.metadata.clone().unwrap_or_default();
        let template_meta = self
            .job
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.clone())
            .unwrap_or_default();
        let name = if pc.name.is_empty() {
            let mut base = if pc.generate_name.is_empty() {
                format!("{}-", job_meta.name)
            } else {
                pc.generate_name.clone()
            };
            if base.len() > MAX_GENERATE_NAME {
                let mut cut = MAX_GENERATE_NAME;
                while !base.is_char_boundary(cut) {
                    cut -= 1;
                }
                base.truncate(cut);
            }
            format!("{base}{}", suffix(self.created))
        } else {
            pc.name.clone()
        };
        if self.find(&name).is_some() {
            return Err(format!("create {name}: already exists"));
        }
        if self.pods.len() >= self.limits.pods {
            // The API server would take it; the simulation stops here instead.
            let most = self.limits.pods;
            self.reach(
                "podLimit",
                format!("the Job reached {most} pods, the simulator's bound"),
            );
            return Ok(());
        }
        let mut labels = template_meta.labels.clone();
        labels.extend(pc.labels.clone());
        let mut annotations = template_meta.annotations.clone();
        annotations.extend(pc.annotations.clone());
        let mut finalizers = template_meta.finalizers.clone();
        for f in &pc.finalizers {
            if !finalizers.contains(f) {
                finalizers.push(f.clone());
            }
        }
        let mut owner_references = template_meta.owner_references.clone();
        owner_references.extend(pc.owner_reference.clone());
        let created = self
            .now
            .saturating_add((i64::try_from(k).unwrap_or(0) + 1).saturating_mul(1_000_000));
        let placed = self.place(pc.avoid_nodes.as_ref());
        let mut pod_status = pb::PodStatus {
            phase: "Pending".to_string(),
            ..Default::default()
        };
        if self.script.nodes.is_some() {
            let (status, reason) = match &placed {
                Some(_) => ("True", ""),
                None => ("False", "Unschedulable"),
            };
            pod_status.conditions.push(pb::PodCondition {
                r#type: "PodScheduled".to_string(),
                status: status.to_string(),
                reason: reason.to_string(),
                last_transition_time: Some(whole(created)),
                ..Default::default()
            });
        }
        let pod = pb::Pod {
            metadata: Some(pb::ObjectMeta {
                name: name.clone(),
                generate_name: pc.generate_name.clone(),
                namespace: job_meta.namespace.clone(),
                uid: format!("{}-pod-{}", job_meta.uid, self.created + 1),
                creation_timestamp: Some(ts(created)),
                labels,
                annotations,
                finalizers,
                owner_references,
                ..Default::default()
            }),
            spec: Some(pb::PodSpecSummary {
                node_name: placed.clone().unwrap_or_default(),
                ..Default::default()
            }),
            status: Some(pod_status),
            ..Default::default()
        };
        let index = if self.indexed {
            pc.completion_index.or_else(|| self.pod_index(&pod))
        } else {
            None
        };
        let mut sp = self.new_sim_pod(pod, index, created);
        let unschedulable = self.script.nodes.is_some() && placed.is_none();
        if unschedulable {
            // No node may take it: it waits, unscheduled, until failed or deleted.
            sp.start_at = None;
        }
        let avoiding = pc
            .avoid_nodes
            .as_ref()
            .filter(|a| !a.nodes.is_empty())
            .map(|a| format!(", avoiding {} ({})", a.nodes.join(", "), a.mode))
            .unwrap_or_default();
        let detail = match &placed {
            Some(node) if self.script.nodes.is_some() => {
                format!("attempt {}, on {node}{avoiding}", sp.attempt)
            }
            _ if unschedulable => {
                format!("attempt {}, unschedulable{avoiding}", sp.attempt)
            }
            _ => format!("attempt {}{avoiding}", sp.attempt),
        };
        self.pods.push(sp);
        let i = self.pods.len() - 1;
        self.push(EventKind::PodCreated, Some(i), detail);
        Ok(())
    }

    /// Timeline events for what a status write changes.
    fn record_status(&mut self, new: &pb::JobStatus) {
        let old = self.job.status.clone().unwrap_or_default();
        let mut changes = Vec::new();
        let mut num = |name: &str, a: i32, b: i32| {
            if a != b {
                changes.push(format!("{name} {a}→{b}"));
            }
        };
        num("active", old.active, new.active);
        num("succeeded", old.succeeded, new.succeeded);
        num("failed", old.failed, new.failed);
        num(
            "terminating",
            old.terminating.unwrap_or(0),
            new.terminating.unwrap_or(0),
        );
        num("ready", old.ready.unwrap_or(0), new.ready.unwrap_or(0));
        let uncounted = |s: &pb::JobStatus| {
            s.uncounted_terminated_pods
                .as_ref()
                .map_or((0, 0), |u| (u.succeeded.len(), u.failed.len()))
        };
        let (ou, nu) = (uncounted(&old), uncounted(new));
        if ou != nu {
            changes.push(format!(
                "uncounted succeeded/failed {}/{}→{}/{}",
                ou.0, ou.1, nu.0, nu.1
            ));
        }
        if old.completed_indexes != new.completed_indexes {
            changes.push(format!("completedIndexes {:?}", new.completed_indexes));
        }
        if old.failed_indexes != new.failed_indexes {
            changes.push(format!(
                "failedIndexes {:?}",
                new.failed_indexes.clone().unwrap_or_default()
            ));
        }
        if old.start_time != new.start_time {
            changes.push(match &new.start_time {
                Some(t) => format!("startTime {}", rfc3339(ts_nanos(t))),
                None => "startTime cleared".to_string(),
            });
        }
        if !changes.is_empty() {
            self.push(EventKind::Status, None, changes.join(", "));
        }
        for c in &new.conditions {
            let before = old.conditions.iter().find(|o| o.r#type == c.r#type);
            let changed = before.is_none_or(|o| o.status != c.status || o.reason != c.reason);
            if !changed {
                continue;
            }
            let mut detail = format!("{}={}", c.r#type, c.status);
            if !c.reason.is_empty() {
                detail += &format!(" ({})", c.reason);
            }
            if !c.message.is_empty() {
                detail += &format!(": {}", c.message);
            }
            self.push(EventKind::Condition, None, detail);
            if (c.r#type == "FailureTarget" || c.r#type == "Failed")
                && c.status == "True"
                && self.verdict_at.is_none()
            {
                self.verdict_at = Some(self.now);
            }
            if (c.r#type == "Complete" || c.r#type == "Failed")
                && c.status == "True"
                && self.finished_at.is_none()
            {
                self.finished_at = Some(self.now);
            }
        }
    }

    /// The failures that used up a backoff limit are fatal too: the last failed attempt
    /// of each index in `failed_indexes`, and, when the Job failed with
    /// BackoffLimitExceeded, the last counted failure up to the verdict.
    fn mark_fatal(&self, attempts: &mut [Attempt], failed_indexes: &str, backoff_exceeded: bool) {
        let counted = |e: Ending| matches!(e, Ending::Counted | Ending::Disrupted);
        for i in index_set(failed_indexes) {
            let last = attempts
                .iter()
                .enumerate()
                .filter(|(_, a)| a.index == Some(i))
                .max_by_key(|(_, a)| (a.ended_ms, a.created_ms))
                .map(|(k, _)| k);
            if let Some(k) = last
                && counted(attempts[k].ending)
            {
                attempts[k].ending = Ending::Fatal;
            }
        }
        if !backoff_exceeded {
            return;
        }
        let verdict = self
            .verdict_at
            .map(|t| t.saturating_sub(self.start).div_euclid(1_000_000));
        let last = attempts
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                counted(a.ending) && a.ended_ms.zip(verdict).is_some_and(|(e, v)| e <= v)
            })
            .max_by_key(|(_, a)| a.ended_ms)
            .map(|(k, _)| k);
        if let Some(k) = last {
            attempts[k].ending = Ending::Fatal;
        }
    }

    fn timeline(&self, stopped: String) -> Timeline {
        let ms = |t: i64| t.saturating_sub(self.start).div_euclid(1_000_000);
        let mut attempts: Vec<Attempt> = Vec::new();
        for sp in &self.pods {
            let pod = sp
                .pod
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            for run in &sp.history {
                attempts.push(Attempt {
                    pod: pod.clone(),
                    index: sp.index,
                    attempt: run.attempt,
                    created_ms: ms(sp.created),
                    started_ms: Some(ms(run.started)),
                    ended_ms: Some(ms(run.ended)),
                    outcome: "failed".to_string(),
                    ending: Ending::Restarted,
                    exit_code: Some(run.exit_code),
                    why: run.why.clone(),
                    policy: None,
                });
            }
            // A pod waiting to restart has no run in progress.
            if sp.restart_at.is_some() && sp.started.is_none() && !terminal(&sp.pod) {
                continue;
            }
            attempts.push(Attempt {
                pod,
                index: sp.index,
                attempt: sp.attempt,
                created_ms: ms(sp.created),
                started_ms: sp.started.map(ms),
                ended_ms: sp.ended.map(ms),
                outcome: sp.outcome.clone(),
                ending: ending(sp),
                exit_code: sp.exit_code,
                why: sp.why.clone(),
                policy: sp.policy.clone(),
            });
        }
        let status = self.job.status.clone().unwrap_or_default();
        let finished = has_condition(&self.job, &["Complete", "Failed"]);
        let (result, reason, message) = match &finished {
            Some(c) => (c.r#type.clone(), c.reason.clone(), c.message.clone()),
            None => ("Unfinished".to_string(), String::new(), String::new()),
        };
        self.mark_fatal(
            &mut attempts,
            status.failed_indexes.as_deref().unwrap_or_default(),
            result == "Failed" && reason == "BackoffLimitExceeded",
        );
        let end = self.finished_at.unwrap_or(self.now);
        let mut per_index: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for a in &attempts {
            if let Some(i) = a.index {
                let o = match (a.outcome.as_str(), a.exit_code) {
                    ("failed", Some(c)) => format!("failed({c})"),
                    (o, _) => o.to_string(),
                };
                per_index.entry(i).or_default().push(o);
            }
        }
        let job_meta = self.job.metadata.clone().unwrap_or_default();
        Timeline {
            job: format!("{}/{}", job_meta.namespace, job_meta.name),
            description: self.script.description.clone(),
            start: rfc3339(self.start),
            start_nanos: self.start,
            events: self.events.clone(),
            attempts,
            backoff_waits: self.backoff_waits.clone(),
            summary: Summary {
                result,
                reason,
                message,
                stopped,
                stop_reason: self.stop_reason.clone(),
                wall_time_ms: ms(end),
                wall_time: human(end.saturating_sub(self.start)),
                syncs: self.syncs,
                pods_created: self.created - self.existing,
                pods_failed: self.pods.iter().filter(|p| p.outcome == "failed").count() as u32,
                failures_counted: status.failed,
                failures_ignored: self
                    .pods
                    .iter()
                    .filter(|p| p.outcome == "failed" && p.ignored)
                    .count() as u32,
                succeeded: status.succeeded,
                backoff_waits: u32::try_from(self.backoff_waits.len()).unwrap_or(u32::MAX),
                restarts: self
                    .pods
                    .iter()
                    .map(|p| p.restarts.max(0).unsigned_abs())
                    .sum(),
                backoff_wait_ms: self.backoff_waits.iter().map(|w| w.wait_ms).sum(),
                longest_backoff_wait_ms: self
                    .backoff_waits
                    .iter()
                    .map(|w| w.wait_ms)
                    .max()
                    .unwrap_or(0),
                completed_indexes: status.completed_indexes.clone(),
                failed_indexes: status.failed_indexes.clone().unwrap_or_default(),
                per_index,
            },
        }
    }
}

/// How a pod's latest attempt ended, from what the world recorded as it happened.
fn ending(sp: &SimPod) -> Ending {
    match sp.outcome.as_str() {
        "succeeded" => return Ending::Succeeded,
        "running" => return Ending::Running,
        "pending" => return Ending::Pending,
        "removed" => return Ending::Deleted,
        _ => {}
    }
    let live = !sp.settled;
    match &sp.rule {
        Some(PodFailurePolicyAction::FailJob | PodFailurePolicyAction::FailIndex) if live => {
            return Ending::Fatal;
        }
        Some(PodFailurePolicyAction::Ignore) if live => return Ending::Ignored,
        _ => {}
    }
    if sp.evicted {
        Ending::Disrupted
    } else if sp.deleted_by_controller || sp.settled {
        Ending::Deleted
    } else {
        Ending::Counted
    }
}

/// What the Job was going through when its controller deleted pods, as far as
/// the Job and the plan's status say (the plan itself gives no reasons).
fn deletion_context(job: &pb::Job, response: &pb::DecideJobResponse) -> String {
    let planned = response
        .actions
        .iter()
        .rev()
        .find_map(|a| match a.kind.as_ref() {
            Some(Kind::UpdateStatus(u)) => u.status.as_ref(),
            _ => None,
        });
    let status = planned.or(job.status.as_ref());
    let condition = |kind: &str| {
        status.and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.r#type == kind && c.status == "True")
        })
    };
    if let Some(c) = condition("FailureTarget").or_else(|| condition("Failed")) {
        return format!(": the Job is failing ({})", c.reason);
    }
    if let Some(c) = condition("SuccessCriteriaMet").or_else(|| condition("Complete")) {
        return format!(": the Job has succeeded ({})", c.reason);
    }
    if job.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
        return ": the Job is suspended".to_string();
    }
    String::new()
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

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
