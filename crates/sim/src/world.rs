//! The simulated world: one Job, its pods, a virtual clock, the controller
//! state fed back, and the script. Plans are applied as the shim applies them
//! against an API server; pods start, run and end as the kubelet would write
//! them; nothing here reads a clock or does I/O.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use bytes::Bytes;
use job_decider_api::LazyDecideJobRequest;
use job_decider_api::convert::CompiledDocument;
use job_decider_api::pb;
use job_decider_core::defaults::completion_index;
use job_decider_core::extended::FAILURE_POLICY_ANNOTATION;
use job_decider_core::extended::retry_limits::document_match_among;
use job_decider_core::extended::rules::max_retries;
use job_decider_core::extended::rules::{
    DocumentMatch, asked, matched_on, policy_action_of, rule_action, rule_label,
};
use job_decider_core::index_set::IndexSet;
use job_decider_core::matched_on::MatchedOn;
use job_decider_core::model::ExtendedFailurePolicy;
use job_decider_core::model::{JOB_TRACKING_FINALIZER, PodFailurePolicyAction};
use job_decider_core::pod_failure_policy::match_pod_failure_policy;
use pb::action::Kind;
use pbjson_types::Timestamp;
use prost::Message;

use crate::canon::canonical;
use crate::duration::{SECOND, clock, human, rfc3339};
use crate::script::{
    DEFAULT_MAX_SYNCS, DEFAULT_RUN_TIME, DEFAULT_STOP_TIME, EventAction, MAX_JOB_PODS, Numbers,
    Script, ScriptError, ScriptErrors, ScriptWarning, TargetSet,
};
use crate::timeline::{Attempt, BackoffWait, Ending, Event, EventKind, Summary, Timeline};

mod apply;
mod build;
mod events;
mod kubelet;
mod narration;
mod plan;
mod record;
mod slots;

use narration::{NarrationDocument, deletion_context};

/// The API server's default `terminationGracePeriodSeconds` for a pod.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;
/// The least the kubelet waits after SIGTERM before SIGKILL, whatever the grace period
/// (`kuberuntime_manager.go` `minimumGracePeriodInSeconds`).
const MIN_KILL_GRACE_SECONDS: i64 = 2;
/// The exit code of a container killed with SIGKILL (128 + 9).
const SIGKILL_EXIT: i32 = 137;
/// The exit code of a container that stopped on SIGTERM (128 + 15).
const SIGTERM_EXIT: i32 = 143;
/// The kubelet's first crash-loop back-off (`kubelet.go` `initialCrashLoopBackOff`).
const CRASH_BACK_OFF_INITIAL: i64 = 10 * SECOND;
/// The kubelet's crash-loop back-off cap (`MaxContainerBackOff`, the default of its
/// config's `crashLoopBackOff.maxContainerRestartPeriod`).
const CRASH_BACK_OFF_MAX: i64 = 300 * SECOND;
/// A back-off entry last updated longer ago than this is forgotten (the kubelet's
/// `HasExpiredFunc`: 600s).
const CRASH_BACK_OFF_EXPIRY: i64 = 600 * SECOND;
/// How long pod events wait before they cause a sync: upstream's controller and the
/// shim both batch a pod's updates for one second.
const POD_EVENT_BATCH: i64 = SECOND;
/// How long a pod tolerates its node's `node.kubernetes.io/unreachable` taint
/// before the taint manager deletes it: the 300 s the DefaultTolerationSeconds
/// admission plugin gives every pod.
const UNREACHABLE_TOLERATION: i64 = 300 * SECOND;
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

    /// Decides one request whose pods come encoded, as the server reads them: the world
    /// keeps each pod's encoding until the pod changes, so a sync copies no pod. By
    /// default the pods are decoded and [`Decider::decide`] asked; job-decider in
    /// process takes them as they are (`api::decide` reads a `LazyDecideJobRequest`).
    fn decide_encoded(
        &mut self,
        request: LazyDecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        let pods = request
            .pods
            .into_iter()
            .map(pb::Pod::decode)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| DecideError {
                bad_input: false,
                message: format!("a pod the world encoded does not decode: {e}"),
            })?;
        self.decide(pb::DecideJobRequest {
            job: request.job,
            pods,
            now: request.now,
            state: request.state,
            controller_name: request.controller_name,
            expectations: request.expectations,
            explain: request.explain,
            failure_policy: request.failure_policy,
            nodes: request.nodes,
            missing_nodes: request.missing_nodes,
            ..Default::default()
        })
    }
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
    /// The script does not fit the Job (or is malformed): every error.
    #[error("script: {0}")]
    Script(#[from] ScriptErrors),
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
    /// The Job's pod template `terminationGracePeriodSeconds` (the contract's template
    /// does not carry it, so the caller reads it from the manifest); `None` is the API
    /// server's default, [`DEFAULT_GRACE_SECONDS`].
    pub termination_grace_period_seconds: Option<i64>,
    /// The template's containers' own restart policies (KEP-5307), read from the
    /// manifest as the grace period is; empty: every container follows the pod's.
    pub container_restarts: Vec<ContainerRestart>,
    /// Every sync carries every pod still there, as an informer lists them; by default
    /// a request leaves out the pods no decision reads (see `World::prunable`), which
    /// changes no decision: playing both ways gives the same timeline, byte for byte.
    pub carry_all_pods: bool,
}

/// A regular container's own `restartPolicy` and `restartPolicyRules` (KEP-5307,
/// the `ContainerRestartRules` gate, beta and on by default in v1.37.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerRestart {
    /// The container's name.
    pub container: String,
    /// `Always`, `OnFailure` or `Never`; empty: the pod's.
    pub policy: String,
    /// Its rules, in order: the first whose exit codes match decides.
    pub rules: Vec<ContainerRestartRule>,
}

/// One `restartPolicyRules` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerRestartRule {
    /// `Restart` or `RestartAllContainers`.
    pub action: String,
    /// `In` or `NotIn`.
    pub operator: String,
    /// The exit codes.
    pub values: Vec<i32>,
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
    /// Pods carried by all syncs together: each sync sends the pods a decision
    /// can read (all of them with [`Options::carry_all_pods`]); deciding them is
    /// most of the work a simulation does.
    pub pod_syncs: u64,
}

/// About 25 MB of timeline at the most.
const MAX_EVENTS: usize = 100_000;
/// What the details of [`MAX_EVENTS`] events of a few hundred bytes come to.
const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;
/// Twice the most pods a Job may run at once ([`MAX_JOB_PODS`]), so that every index
/// of the largest Job may fail once; the world's own cost per pod is a few timers and
/// map entries, and a run's time grows with its events and the pods its syncs carry.
const MAX_PODS: usize = 20_000;
/// Seconds of deciding for the release build (about 3 µs a pod carried, so 6 s at the
/// bound), minutes for a debug one.
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
    /// It runs without ever becoming Ready.
    never_ready: bool,
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
    /// The exit code it stops with then: SIGTERM's, or SIGKILL's when the app
    /// outlasts the grace period.
    stop_code: i32,
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
    /// The controller listed it among `uncountedTerminatedPods.failed`: counted as failed.
    counted: bool,
    /// restartPolicy OnFailure: container restarts so far, runs that ended, and when
    /// the kubelet starts the container again.
    restarts: i32,
    history: Vec<Run>,
    restart_at: Option<i64>,
    /// The kubelet's crash-loop back-off entry for the pod's container, once it crashed.
    back_off: Option<CrashBackOff>,
    /// When the taint manager deletes it, its node being unreachable.
    evict_at: Option<i64>,
}

/// A container's entry in the kubelet's crash-loop back-off (client-go
/// `flowcontrol.Backoff`): the wait before the next restart and when it was set.
#[derive(Clone, Copy, Debug)]
struct CrashBackOff {
    wait: i64,
    updated: i64,
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

/// What moves the world next, other than a sync. The order matters: two at one
/// instant happen in this order (then by pod), as the timelines have always had it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Happening {
    Finish(usize),
    Stop(usize),
    Restart(usize),
    Start(usize),
    /// The taint manager deletes a pod of an unreachable node.
    Evict(usize),
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
    /// When the controller asked to decide next, if the run stopped before then.
    due: Option<i64>,
    /// Script lines that do nothing, or not what they seem to (see [`Played::warnings`]).
    warnings: Vec<ScriptWarning>,
    /// The failure policy document narration reads, compiled once for the Job's spec.
    narration_document: Option<NarrationDocument>,
    /// The pods' `terminationGracePeriodSeconds`: a deletion's grace period.
    grace_seconds: i64,
    /// Nodes a drain cordoned: the scheduler places no new pod on them.
    cordoned: BTreeSet<String>,
    /// Nodes that stopped answering (`nodeLost`), each with the pods it held
    /// then: their kubelets do nothing more, and no pod is placed there after.
    lost: BTreeMap<String, Vec<usize>>,
    /// The containers' own restart policies (KEP-5307).
    container_restarts: Vec<ContainerRestart>,
    /// Where to find pods without scanning them all (see [`Slots`]).
    slots: Slots,
    /// Every request carries every pod still there ([`Options::carry_all_pods`], or a
    /// failure policy document that reads visible failed pods).
    carry_all: bool,
}

/// What the world keeps to find pods without looking at every one, so that a run's cost
/// grows with its events, not with its syncs times its pods: maps by name, uid and index,
/// the pods' timers, and which pods each of these has yet to look at again.
#[derive(Debug, Default)]
struct Slots {
    /// The pods not gone, by name (more than one only if the pods given at the start repeat one).
    by_name: HashMap<String, Vec<usize>>,
    /// Every pod ever there, by uid.
    by_uid: HashMap<String, Vec<usize>>,
    /// Each index's pods, in the order they were created.
    by_index: BTreeMap<i32, Vec<usize>>,
    /// The pods' pending starts, finishes, stops and restarts, earliest first; an entry
    /// the pod no longer has is dropped when it comes up (`World::timers_of` says).
    timers: BinaryHeap<Reverse<(i64, Happening)>>,
    /// Timers already due: all happen "now", so only the happening orders them.
    timers_due: BTreeSet<(Happening, i64)>,
    /// Pods changed, in order, since the oldest cursor below (kept short: see `World::touch`).
    touched: Vec<usize>,
    /// How far into `touched` the timers, the collection of deleted pods, the request's
    /// pods and the indexes waiting for a replacement have looked.
    scheduled_to: usize,
    collected_to: usize,
    carried_to: usize,
    indexed_to: usize,
    /// The pods the next request carries, in the world's order.
    carried: BTreeSet<usize>,
    /// Each pod's encoding as the last request carried it, until the pod changes.
    encoded: Vec<Option<Bytes>>,
    /// The uids the Job's status listed as uncounted when `carried` was last brought up to date.
    uncounted: Vec<String>,
    /// backoffLimitPerIndex: the indexes whose latest pod failed and has ended.
    failed_last: BTreeSet<i32>,
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

/// When a container started running, if it is running.
fn running_since(cs: &pb::ContainerStatus) -> Option<Timestamp> {
    cs.state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at)
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
    play(job, pods, script, options, decider).map(|p| p.timeline)
}

/// A script played: its timeline and what in the script did nothing.
#[derive(Debug)]
pub struct Played {
    /// The Job's life.
    pub timeline: Timeline,
    /// Script lines that did nothing, or not what their author may think, each
    /// naming its field: found before the run ([`check`]) and while it played (a
    /// drain, preemption or deletion that found no pod).
    pub warnings: Vec<ScriptWarning>,
}

/// [`simulate`], with the script's warnings.
pub fn play(
    job: pb::Job,
    pods: Vec<pb::Pod>,
    script: &Script,
    options: &Options,
    decider: &mut dyn Decider,
) -> Result<Played, SimError> {
    let mut world = World::new(job, pods, script, options)?;
    let stopped = world.run(decider)?;
    let warnings = std::mem::take(&mut world.warnings);
    Ok(Played {
        timeline: world.timeline(stopped),
        warnings,
    })
}

/// Checks `script` against `job` (and its `pods`) without playing it: every
/// error, or the warnings found before a run.
pub fn check(
    job: pb::Job,
    pods: Vec<pb::Pod>,
    script: &Script,
    options: &Options,
) -> Result<Vec<ScriptWarning>, SimError> {
    World::new(job, pods, script, options).map(|w| w.warnings)
}

/// A set of numbers for people: `3`, `10-12`, `1, 4, 9-11` (at most five parts).
fn numbers_text(set: &std::collections::BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &n in set {
        match runs.last_mut() {
            Some((_, hi)) if n == hi.saturating_add(1) => *hi = n,
            _ => runs.push((n, n)),
        }
    }
    for (lo, hi) in runs.iter().take(5) {
        parts.push(if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        });
    }
    if runs.len() > 5 {
        parts.push("...".to_string());
    }
    parts.join(", ")
}

/// Indexes a script names beyond an Indexed Job's `completions`: none of them
/// is an error (the line can never act), some of them a warning.
fn index_beyond(
    path: String,
    index: &Numbers,
    completions: i32,
    errors: &mut Vec<ScriptError>,
    warnings: &mut Vec<ScriptWarning>,
) {
    let Ok(n) = u32::try_from(completions) else {
        return;
    };
    let beyond: std::collections::BTreeSet<u32> =
        index.0.iter().copied().filter(|&i| i >= n).collect();
    if beyond.is_empty() {
        return;
    }
    let range = match n {
        0 => "it has none".to_string(),
        1 => "its only index is 0".to_string(),
        _ => format!("its indexes are 0 to {}", n - 1),
    };
    if beyond.len() == index.0.len() {
        errors.push(ScriptError::at(
            path,
            format!(
                "index {} is beyond the Job's {completions} completions ({range}): no pod ever has it",
                numbers_text(&beyond)
            ),
        ));
    } else {
        warnings.push(ScriptError::at(
            path,
            format!(
                "indexes {} are beyond the Job's {completions} completions ({range}): they select no pod",
                numbers_text(&beyond)
            ),
        ));
    }
}

impl<'s> World<'s> {
    /// The pod's completion index as the core reads it (negative or not an integer is none).
    fn pod_index(&self, pod: &pb::Pod) -> Option<i32> {
        if !self.indexed {
            return None;
        }
        completion_index(
            pod.metadata
                .as_ref()?
                .annotations
                .get(job_decider_core::model::COMPLETION_INDEX_KEY)
                .map(String::as_str),
        )
    }

    /// An index list of the Job's status (`1,3-5`) as the controller reads its own, with
    /// the core's parser: intervals, never every index spelled out.
    fn indexes(&self, text: &str) -> IndexSet {
        let completions = self.job.spec.as_ref().and_then(|s| s.completions);
        IndexSet::parse_lenient(text, completions.unwrap_or(i32::MAX))
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
}

#[cfg(test)]
mod tests;
