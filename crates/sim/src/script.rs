//! The failure script: how a Job's pods behave and what happens around them,
//! written for people (YAML; `examples/simulate/README.md` documents it).
//!
//! ```yaml
//! horizon: 2h                 # stop here at the latest
//! seed: 7                     # for `percent` rules
//! defaults: {runTime: 5m, startDelay: 2s}
//! attempts:                   # how each attempt (pod) ends
//!   - {index: 3, attempt: 1-2, exitCode: 137, reason: OOMKilled}
//!   - {attempt: 1, exitCode: 1}
//!   - {percent: 10, exitCodes: [1, 137]}
//! events:                     # what happens around the pods, at times from the start
//!   - {at: 5m, drain: {index: 2}}
//!   - {at: 6m, nodeLost: {index: 1}}
//!   - {at: 7m, preempt: {pod: 4}}
//!   - {at: 20m, suspend: true}
//!   - {at: 25m, resume: true}
//! ```

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::duration::Span;

mod dist;
pub use dist::{Dist, MAX_SIGMA};

/// Why a script cannot be played; `path` names the field (`attempts[1].exitCode`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ScriptError {
    /// The field's path in the script; empty for the document as a whole.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl ScriptError {
    pub(crate) fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScriptError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Every error of a script, in the order found: a script is read whole, so its
/// author can fix them all at once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct ScriptErrors(pub Vec<ScriptError>);

impl ScriptErrors {
    /// The first error (a script with errors has at least one).
    pub fn first(&self) -> Option<&ScriptError> {
        self.0.first()
    }
}

impl From<ScriptError> for ScriptErrors {
    fn from(e: ScriptError) -> Self {
        ScriptErrors(vec![e])
    }
}

/// A script mistake that is not fatal: the script plays, but a line of it does
/// nothing or does something other than its author may think. `path` names the field.
pub type ScriptWarning = ScriptError;

/// A whole script.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    /// What the script plays, for people; printed with the timeline.
    #[serde(default)]
    pub description: Option<String>,
    /// The longest virtual time played (default 24h).
    #[serde(default)]
    pub horizon: Option<Span>,
    /// The seed of `percent` rules' draws (default 0): the same seed, the same attempts fail.
    #[serde(default)]
    pub seed: u64,
    /// The most syncs played (default 10,000, at most [`MAX_SYNCS`]): a bound so that no
    /// script runs forever.
    #[serde(default)]
    pub max_syncs: Option<u32>,
    /// What every attempt does unless a rule says otherwise.
    #[serde(default)]
    pub defaults: Defaults,
    /// Rules for attempts, in order (see [`AttemptRule`]).
    #[serde(default)]
    pub attempts: Vec<AttemptRule>,
    /// Things that happen at given times.
    #[serde(default)]
    pub events: Vec<ScriptedEvent>,
    /// The cluster's nodes, by count (`3`: node-1 to node-3) or by name. Given, the
    /// scheduler places each new pod on the allowed node running the fewest pods (a
    /// pod that avoids every node stays Pending, `Unschedulable`) and rules can select
    /// attempts by `node`; not given, every pod runs on a node of its own.
    #[serde(default)]
    pub nodes: Option<NodeList>,
}

/// The cluster's nodes: a count or names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeList(pub Vec<String>);

impl<'de> Deserialize<'de> for NodeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NodeList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of nodes (1 to 1000) or a list of node names")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeList, E> {
                if !(1..=MAX_NODES as u64).contains(&v) {
                    return Err(E::custom(format!("{v}: give 1 to {MAX_NODES} nodes")));
                }
                Ok(NodeList((1..=v).map(|n| format!("node-{n}")).collect()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NodeList, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v}: must not be negative")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeList, A::Error> {
                let mut out: Vec<String> = Vec::new();
                while let Some(n) = seq.next_element::<String>()? {
                    if out.len() >= MAX_NODES {
                        return Err(de::Error::custom(format!("more than {MAX_NODES} nodes")));
                    }
                    out.push(n);
                }
                Ok(NodeList(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The most nodes a script may name.
pub const MAX_NODES: usize = 1000;

/// What an attempt does when no rule says otherwise.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    /// From the container starting to it exiting (default 1m): a duration or a
    /// distribution ([`Dist`]), drawn per attempt.
    #[serde(default)]
    pub run_time: Option<Dist>,
    /// From the pod being created to its containers running (default 0s; starts land on
    /// the next whole second, as the kubelet reports them): a duration or a distribution.
    #[serde(default)]
    pub start_delay: Option<Dist>,
    /// From a running pod being sent SIGTERM to its containers having stopped (default
    /// 5s); longer than the Job's `terminationGracePeriodSeconds`, the kubelet kills
    /// them with SIGKILL (exit 137) at the end of the grace period.
    #[serde(default)]
    pub stop_time: Option<Span>,
    /// The exit code of an attempt no rule fails (default 0: it succeeds).
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// One rule for attempts. An attempt (a pod) takes its exit code from the first
/// rule that matches it and gives one, its run time from the first that matches
/// and gives one, and so on: rules that only set `runTime` do not hide later
/// failure rules.
///
/// A rule matches an attempt when every selector it has matches: `index` (an
/// Indexed Job's completion index), `attempt` (the pod's number within its
/// index, from 1; a NonIndexed Job has one sequence, its pods in creation
/// order) and `percent` (a draw from the script's seed, the same for the same
/// attempt whatever the Job's policy).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttemptRule {
    /// Completion indexes (`3`, `"0-4,7"`, `[1, 3]`); Indexed Jobs only.
    #[serde(default)]
    pub index: Option<Numbers>,
    /// Attempt numbers from 1 (`1`, `"1-2"`, `[1, 3]`).
    #[serde(default)]
    pub attempt: Option<Numbers>,
    /// The share of matching attempts the rule applies to, 0 to 100.
    #[serde(default)]
    pub percent: Option<f64>,
    /// The exit code of the failing (or, with 0, succeeding) container.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Exit codes to draw one from, each as likely (with the script's seed).
    #[serde(default)]
    pub exit_codes: Option<Vec<i32>>,
    /// The container's terminated reason (default `Completed` for 0, `Error` otherwise;
    /// the kubelet writes `OOMKilled` for a container the kernel killed for memory).
    #[serde(default)]
    pub reason: Option<String>,
    /// The container that exits with the code (default the template's first).
    #[serde(default)]
    pub container: Option<String>,
    /// How long the attempt runs: a duration or a distribution, drawn per attempt.
    #[serde(default)]
    pub run_time: Option<Dist>,
    /// How long the pod waits before it runs: a duration or a distribution.
    #[serde(default)]
    pub start_delay: Option<Dist>,
    /// The pod never starts: once scheduled, its containers wait with this reason
    /// (`ImagePullBackOff`, `ErrImagePull`, `CreateContainerConfigError`, ...) until
    /// something fails or deletes the pod.
    #[serde(default)]
    pub pending: Option<String>,
    /// The pod fails when it would start, before any container runs, with this
    /// `status.reason` (e.g. `UnexpectedAdmissionError`) and no container statuses.
    #[serde(default)]
    pub pod_reason: Option<String>,
    /// The pod runs but never becomes Ready (a readiness probe that never passes):
    /// its Ready condition stays False with reason `ContainersNotReady`.
    #[serde(default)]
    pub never_ready: Option<bool>,
    /// The failing container's termination message (with `exitCode`), or the pod's
    /// `status.message` (with `podReason`).
    #[serde(default)]
    pub message: Option<String>,
    /// Only attempts placed on these nodes (needs `nodes`).
    #[serde(default)]
    pub node: Option<Names>,
}

/// One name or a list of names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Names {
    /// No names.
    #[default]
    None,
    /// One name.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Names {
    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        match self {
            Names::None => false,
            Names::One(n) => n == name,
            Names::Many(ns) => ns.iter().any(|n| n == name),
        }
    }

    /// The names, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let slice: &[String] = match self {
            Names::None => &[],
            Names::One(n) => std::slice::from_ref(n),
            Names::Many(ns) => ns,
        };
        slice.iter().map(String::as_str)
    }
}

/// Which pods an event acts on: those of an index, or the pod of an attempt number;
/// a drain may name its nodes instead.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Target {
    /// The nodes to drain, by name (`drain` only; needs the script's `nodes`).
    #[serde(default)]
    pub node: Option<Names>,
    /// The pods of these completion indexes (Indexed Jobs).
    #[serde(default)]
    pub index: Option<Numbers>,
    /// The pods created n-th by the Job (from 1, counting every pod it created).
    #[serde(default)]
    pub pod: Option<Numbers>,
}

/// Something that happens at a time: exactly one of the actions.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedEvent {
    /// When, from the start of the simulation: a duration, or a distribution drawn
    /// once per life ([`Script::life`]; e.g. the time a node fails).
    pub at: Dist,
    /// The share of lives (0 to 100) the event happens in, drawn per life from the
    /// seed (default: every life).
    #[serde(default)]
    pub percent: Option<f64>,
    /// Drain nodes as `kubectl drain` does: the named ones (`node`), or those the
    /// targeted pods are on. Each is cordoned (no new pod is placed there) and every
    /// pod on it (not already ended or being deleted) is evicted as the eviction API
    /// does it (a `DisruptionTarget` condition, reason `EvictionByEvictionAPI`, then
    /// deletion with the pods' grace period; the kubelet stops it, phase `Failed`,
    /// exit code 143, or 137 when killed at the grace period's end). Without the
    /// script's `nodes` every pod runs on a node of its own, so a drain evicts just
    /// the targeted pods.
    #[serde(default)]
    pub drain: Option<Target>,
    /// Nodes stop answering (the named ones, `node`, or those the targeted pods are
    /// on), as when a machine loses power or its network: the node lifecycle
    /// controller marks each NotReady (Ready Unknown) and taints it
    /// `node.kubernetes.io/unreachable`; its kubelet does nothing more, so its pods
    /// neither start, finish nor stop, and the scheduler places nothing there. After
    /// 5 minutes (the pods' default toleration of that taint) the taint manager deletes
    /// its pods (a `DisruptionTarget` condition, reason `DeletionByTaintManager`); they
    /// then stay terminating, since no kubelet will report them ended.
    #[serde(default)]
    pub node_lost: Option<Target>,
    /// The scheduler preempts these pods (running ones) for a higher-priority pod: a
    /// `DisruptionTarget` condition, reason `PreemptionByScheduler`, then deletion with
    /// the pods' grace period; the kubelet stops them as for a drain.
    #[serde(default)]
    pub preempt: Option<Target>,
    /// A user deletes these pods (`kubectl delete pod`: no condition; the kubelet stops
    /// a running pod, phase `Failed`, exit code 143, or 137 past the grace period).
    #[serde(default)]
    pub delete_pod: Option<Target>,
    /// Set the Job's `spec.suspend` (`true` suspends, `false` resumes).
    #[serde(default)]
    pub suspend: Option<bool>,
    /// `resume: true` is `suspend: false`.
    #[serde(default)]
    pub resume: Option<bool>,
    /// Set the Job's `spec.parallelism`.
    #[serde(default)]
    pub parallelism: Option<i32>,
}

/// What a scripted event does, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventAction {
    /// Evict the matching pods (their nodes are drained).
    Drain(TargetSet),
    /// The matching nodes (or the nodes of the matching pods) stop answering.
    NodeLost(TargetSet),
    /// The scheduler preempts the matching pods.
    Preempt(TargetSet),
    /// A user deletes the matching pods.
    DeletePod(TargetSet),
    /// Set `spec.suspend`.
    Suspend(bool),
    /// Set `spec.parallelism`.
    Parallelism(i32),
}

/// A checked [`Target`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetSet {
    /// Completion indexes, if given.
    pub index: Option<BTreeSet<u32>>,
    /// Creation numbers, if given.
    pub pod: Option<BTreeSet<u32>>,
    /// Node names, if given (a drain's).
    pub node: Option<Vec<String>>,
}

impl TargetSet {
    /// Whether a pod with this index and creation number is targeted.
    pub fn matches(&self, index: Option<i32>, ordinal: u32) -> bool {
        let index_ok = self.index.as_ref().is_none_or(|set| {
            index
                .and_then(|i| u32::try_from(i).ok())
                .is_some_and(|i| set.contains(&i))
        });
        let pod_ok = self.pod.as_ref().is_none_or(|set| set.contains(&ordinal));
        index_ok && pod_ok
    }
}

/// A set of non-negative numbers as written: `3`, `"1-3,7"` or `[1, 3]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbers(pub BTreeSet<u32>);

impl<'de> Deserialize<'de> for Numbers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Numbers, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Numbers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, a list of numbers, or ranges such as \"1-3,7\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Numbers, E> {
                let n = u32::try_from(v).map_err(|_| E::custom(format!("{v} is too large")))?;
                spend_numbers(1).map_err(E::custom)?;
                Ok(Numbers(BTreeSet::from([n])))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Numbers, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v}: must not be negative")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Numbers, E> {
                parse_numbers(v).map(Numbers).map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Numbers, A::Error> {
                let mut out = BTreeSet::new();
                while let Some(n) = seq.next_element::<u32>()? {
                    spend_numbers(1).map_err(de::Error::custom)?;
                    out.insert(n);
                }
                Ok(Numbers(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses `"1-3,7"` (ranges inclusive) into a set.
fn parse_numbers(text: &str) -> Result<BTreeSet<u32>, String> {
    const MOST: u64 = 1_000_000;
    let mut out = BTreeSet::new();
    for part in text.split(',') {
        let part = part.trim();
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{text:?}: {s:?} is not a non-negative number"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(part)?, number(part)?),
        };
        if lo > hi {
            return Err(format!("{text:?}: the range {part} is backwards"));
        }
        if u64::from(hi - lo) + out.len() as u64 > MOST {
            return Err(format!("{text:?}: more than {MOST} numbers"));
        }
        // Charged before the set grows: an alias repeats the text, not the set.
        spend_numbers(u64::from(hi - lo) + 1)?;
        out.extend(lo..=hi);
    }
    Ok(out)
}

/// The most numbers a whole script may name, every field and every alias
/// together: each is kept as one entry of a set, and YAML aliases repeat a field
/// without repeating its text.
pub const MAX_SCRIPT_NUMBERS: u64 = 1_000_000;

thread_local! {
    /// Numbers the script being read may still name; `None` outside
    /// [`Script::from_yaml`] (each field then has only its own bound).
    static NUMBERS_LEFT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Charges `count` numbers to the script being read.
fn spend_numbers(count: u64) -> Result<(), String> {
    NUMBERS_LEFT.with(|left| match left.get() {
        None => Ok(()),
        Some(have) if count <= have => {
            left.set(Some(have - count));
            Ok(())
        }
        Some(_) => Err(format!(
            "the script names more than {MAX_SCRIPT_NUMBERS} numbers in all (aliases count each time they are used)"
        )),
    })
}

/// Holds a fresh number budget while a script is read, and ends it however the reading ends.
struct NumberBudget;

impl NumberBudget {
    fn start() -> NumberBudget {
        NUMBERS_LEFT.with(|left| left.set(Some(MAX_SCRIPT_NUMBERS)));
        NumberBudget
    }
}

impl Drop for NumberBudget {
    fn drop(&mut self) {
        NUMBERS_LEFT.with(|left| left.set(None));
    }
}

/// The longest message a rule may give (the kubelet keeps 4 KiB of a termination message).
pub const MAX_MESSAGE: usize = 4096;

/// A Kubernetes reason: a CamelCase word (letters and digits, from a letter), at most 128 bytes.
fn is_reason(s: &str) -> bool {
    s.len() <= 128
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// What an event's draws are keyed by, apart from attempts' and lives'.
const EVENT_DRAWS: u64 = 0x4556_454E_5453;
/// What the lives' seeds are keyed by.
const LIFE_SEEDS: u64 = 0x004C_4956_4553;

/// The default horizon: a day of virtual time.
pub const DEFAULT_HORIZON: Span = Span::secs(24 * 3600);
/// The default bound on syncs.
pub const DEFAULT_MAX_SYNCS: u32 = 10_000;
/// The most syncs a script may ask for: a small Job's sync costs tens of
/// microseconds, so a million is about a minute of work, and the timeline's
/// own bounds ([`crate::world::Limits`]) hold its memory meanwhile.
pub const MAX_SYNCS: u32 = 1_000_000;
/// The most pods a Job may run at once or complete in a simulation
/// (`spec.parallelism`, `spec.completions`, a `parallelism` event, the pods
/// given): every sync carries every pod, so the work grows with their square.
pub const MAX_JOB_PODS: i64 = 10_000;
/// The default run time of an attempt.
pub const DEFAULT_RUN_TIME: Span = Span::secs(60);
/// The default time a deleted pod takes to stop.
pub const DEFAULT_STOP_TIME: Span = Span::secs(5);

impl Script {
    /// Reads a script from YAML (or JSON) and checks it: every error, each naming its field.
    pub fn from_yaml(text: &str) -> Result<Script, ScriptErrors> {
        let script = Script::parse(text)?;
        let errors = script.errors();
        if errors.is_empty() {
            Ok(script)
        } else {
            Err(ScriptErrors(errors))
        }
    }

    /// Reads a script from YAML (or JSON) without [`Script::errors`]' checks (a
    /// syntax or type error stops the reading: it is the one error).
    pub fn parse(text: &str) -> Result<Script, ScriptError> {
        if text.trim().is_empty() {
            return Ok(Script::default());
        }
        use job_decider_api::yaml_bounds::{MAX_WHOLE_FILE_BYTES, check};
        check(text, MAX_WHOLE_FILE_BYTES).map_err(|e| ScriptError::at("", e.to_string()))?;
        let _budget = NumberBudget::start();
        let de = serde_yaml::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let message = e.into_inner().to_string();
            let message = without_path(&message, &path).to_string();
            ScriptError::at(path, message)
        })
    }

    /// What serde cannot check: ranges and exactly-one choices; every error.
    pub fn errors(&self) -> Vec<ScriptError> {
        let mut errors = Vec::new();
        for (i, rule) in self.attempts.iter().enumerate() {
            self.rule_errors(i, rule, &mut errors);
        }
        if let Some(code) = self.defaults.exit_code {
            exit_code_error("defaults.exitCode", code, &mut errors);
        }
        for (field, dist) in [
            ("defaults.runTime", &self.defaults.run_time),
            ("defaults.startDelay", &self.defaults.start_delay),
        ] {
            if let Some(d) = dist {
                d.errors(field, &mut errors);
            }
        }
        for (i, event) in self.events.iter().enumerate() {
            if let Err(e) = event.action(i) {
                errors.push(e);
            }
            for (name, target) in [
                ("drain", &event.drain),
                ("nodeLost", &event.node_lost),
                ("preempt", &event.preempt),
                ("deletePod", &event.delete_pod),
            ] {
                if let Some(t) = target {
                    if let Err(e) = self.check_target_node(i, name, t) {
                        errors.push(e);
                    }
                    if t.index.is_none() && t.pod.is_none() && t.node.is_none() {
                        let what = if name == "drain" || name == "nodeLost" {
                            "name the nodes or their pods: node, index or pod"
                        } else {
                            "name the pods: index or pod"
                        };
                        errors.push(ScriptError::at(format!("events[{i}].{name}"), what));
                    }
                    if t.pod.as_ref().is_some_and(|p| p.0.contains(&0)) {
                        errors.push(ScriptError::at(
                            format!("events[{i}].{name}.pod"),
                            "pods are numbered from 1",
                        ));
                    }
                }
            }
            if let Some(p) = event.parallelism
                && p < 0
            {
                errors.push(ScriptError::at(
                    format!("events[{i}].parallelism"),
                    "must not be negative",
                ));
            }
            if let Some(p) = event.parallelism
                && i64::from(p) > MAX_JOB_PODS
            {
                errors.push(ScriptError::at(
                    format!("events[{i}].parallelism"),
                    format!("{p} is more than the {MAX_JOB_PODS} pods a simulation runs at once"),
                ));
            }
            event.at.errors(&format!("events[{i}].at"), &mut errors);
            if let Some(p) = event.percent
                && !(0.0..=100.0).contains(&p)
            {
                errors.push(ScriptError::at(
                    format!("events[{i}].percent"),
                    format!("{p} is not between 0 and 100"),
                ));
            }
            // Events at drawn times are put in order in each life; fixed ones are listed in order.
            if let (Some(at), Some(before)) = (
                event.at.fixed(),
                self.events[..i].iter().rev().find_map(|e| e.at.fixed()),
            ) && at < before
            {
                errors.push(ScriptError::at(
                    format!("events[{i}].at"),
                    format!(
                        "{at} comes before the previous event's {before}: list events in time order"
                    ),
                ));
            }
        }
        if let Some(nodes) = &self.nodes {
            if nodes.0.is_empty() {
                errors.push(ScriptError::at("nodes", "name at least one node"));
            }
            let mut seen = BTreeSet::new();
            for (i, n) in nodes.0.iter().enumerate() {
                if n.is_empty() || n.len() > 253 {
                    errors.push(ScriptError::at(
                        format!("nodes[{i}]"),
                        "a node name has 1 to 253 characters",
                    ));
                } else if !seen.insert(n) {
                    errors.push(ScriptError::at(
                        format!("nodes[{i}]"),
                        format!("{n:?} twice"),
                    ));
                }
            }
        }
        if self.max_syncs == Some(0) {
            errors.push(ScriptError::at("maxSyncs", "must be at least 1"));
        }
        if let Some(n) = self.max_syncs
            && n > MAX_SYNCS
        {
            errors.push(ScriptError::at(
                "maxSyncs",
                format!("{n} is more than the {MAX_SYNCS} syncs a simulation plays"),
            ));
        }
        errors
    }

    /// What the script alone says that does nothing: events after the horizon.
    pub fn warnings(&self) -> Vec<ScriptWarning> {
        let horizon = self.horizon();
        self.events
            .iter()
            .enumerate()
            // A drawn time is after the horizon in no life only when its least is.
            .filter(|(_, e)| {
                e.at.nanos() > horizon.nanos() && matches!(e.at, Dist::Fixed(_) | Dist::Uniform(..))
            })
            .map(|(i, e)| {
                ScriptError::at(
                    format!("events[{i}].at"),
                    format!(
                        "{} is after the horizon ({horizon}): the event never happens",
                        e.at
                    ),
                )
            })
            .collect()
    }

    /// The script as one life plays it, with `seed` as its seed: each event with a
    /// `percent` kept or left out by a draw, each event time drawn from its
    /// distribution (then the events put in time order, a tie kept as listed).
    /// Attempts draw their own ends and times as their pods are created, from the
    /// same seed, so the life is the seed's whatever the Job. A script without
    /// event draws is the same script with the seed.
    pub fn life(&self, seed: u64) -> Script {
        let mut life = self.clone();
        life.seed = seed;
        if self
            .events
            .iter()
            .all(|e| e.percent.is_none() && e.at.fixed().is_some())
        {
            return life;
        }
        let mut events: Vec<ScriptedEvent> = Vec::with_capacity(self.events.len());
        for (i, e) in self.events.iter().enumerate() {
            let key = |salt: u64| dist::unit(&[seed, EVENT_DRAWS, i as u64, salt]);
            if let Some(p) = e.percent
                && key(0) * 100.0 >= p
            {
                continue;
            }
            let mut e = e.clone();
            e.at = Dist::Fixed(e.at.sample(key(1), key(2)));
            e.percent = None;
            events.push(e);
        }
        events.sort_by_key(|e| e.at.nanos());
        life.events = events;
        life
    }

    /// Whether anything in the script is drawn: a `percent`, `exitCodes` to pick
    /// from, or a distribution. A script with no draws plays every life alike.
    pub fn has_draws(&self) -> bool {
        let drawn = |d: &Option<Dist>| d.as_ref().is_some_and(|d| d.fixed().is_none());
        drawn(&self.defaults.run_time)
            || drawn(&self.defaults.start_delay)
            || self.attempts.iter().any(|r| {
                r.percent.is_some()
                    || r.exit_codes.as_ref().is_some_and(|c| c.len() > 1)
                    || drawn(&r.run_time)
                    || drawn(&r.start_delay)
            })
            || self
                .events
                .iter()
                .any(|e| e.percent.is_some() || e.at.fixed().is_none())
    }

    /// The seed of life `life` (from 1) of a Monte Carlo run seeded with `seed`.
    pub fn life_seed(seed: u64, life: u64) -> u64 {
        dist::mix(&[seed, LIFE_SEEDS, life])
    }

    /// The errors of attempt rule `i`.
    fn rule_errors(&self, i: usize, rule: &AttemptRule, errors: &mut Vec<ScriptError>) {
        let at = |field: &str| format!("attempts[{i}].{field}");
        if let Some(p) = rule.percent
            && !(0.0..=100.0).contains(&p)
        {
            errors.push(ScriptError::at(
                at("percent"),
                format!("{p} is not between 0 and 100"),
            ));
        }
        for (field, dist) in [
            ("runTime", &rule.run_time),
            ("startDelay", &rule.start_delay),
        ] {
            if let Some(d) = dist {
                d.errors(&at(field), errors);
            }
        }
        if rule.exit_code.is_some() && rule.exit_codes.is_some() {
            errors.push(ScriptError::at(
                at("exitCodes"),
                "give exitCode or exitCodes, not both",
            ));
        }
        if let Some(code) = rule.exit_code {
            exit_code_error(&at("exitCode"), code, errors);
        }
        if let Some(codes) = &rule.exit_codes {
            if codes.is_empty() {
                errors.push(ScriptError::at(
                    at("exitCodes"),
                    "must list at least one exit code",
                ));
            }
            for &code in codes {
                exit_code_error(&at("exitCodes"), code, errors);
            }
        }
        if let Some(a) = &rule.attempt
            && a.0.contains(&0)
        {
            errors.push(ScriptError::at(
                at("attempt"),
                "attempts are numbered from 1",
            ));
        }
        if rule.reason.is_some() && rule.exit_code.is_none() && rule.exit_codes.is_none() {
            errors.push(ScriptError::at(
                at("reason"),
                "a reason needs exitCode or exitCodes",
            ));
        }
        let endings = usize::from(rule.exit_code.is_some() || rule.exit_codes.is_some())
            + usize::from(rule.pending.is_some())
            + usize::from(rule.pod_reason.is_some());
        if endings > 1 {
            let field = if rule.pod_reason.is_some() {
                "podReason"
            } else {
                "pending"
            };
            errors.push(ScriptError::at(
                at(field),
                "give one ending: exitCode(s), pending or podReason",
            ));
        }
        for (field, value) in [("pending", &rule.pending), ("podReason", &rule.pod_reason)] {
            if value.as_ref().is_some_and(|v| !is_reason(v)) {
                errors.push(ScriptError::at(
                    at(field),
                    "a reason is a CamelCase word such as ImagePullBackOff",
                ));
            }
        }
        if rule.message.is_some() && endings == 0 {
            errors.push(ScriptError::at(
                at("message"),
                "a message needs exitCode(s) or podReason",
            ));
        }
        if rule.message.as_ref().is_some_and(|m| m.len() > MAX_MESSAGE) {
            errors.push(ScriptError::at(
                at("message"),
                format!("longer than {MAX_MESSAGE} bytes"),
            ));
        }
        if let Some(names) = &rule.node {
            match &self.nodes {
                None => errors.push(ScriptError::at(
                    at("node"),
                    "selecting attempts by node needs the script's nodes",
                )),
                Some(nodes) => {
                    if let Some(unknown) = names.iter().find(|n| !nodes.0.iter().any(|m| m == n)) {
                        errors.push(ScriptError::at(
                            at("node"),
                            format!("{unknown:?} is not one of the script's nodes"),
                        ));
                    }
                }
            }
        }
    }

    /// A target's `node`: a drain's only, of the script's nodes, and not with pods.
    fn check_target_node(&self, i: usize, name: &str, t: &Target) -> Result<(), ScriptError> {
        let Some(names) = &t.node else {
            return Ok(());
        };
        let at = format!("events[{i}].{name}.node");
        if name != "drain" && name != "nodeLost" {
            return Err(ScriptError::at(
                at,
                format!(
                    "only a drain or a nodeLost acts on nodes: name the pods of a {name} with index or pod"
                ),
            ));
        }
        if t.index.is_some() || t.pod.is_some() {
            return Err(ScriptError::at(
                at,
                "give node, or index/pod (the nodes those pods are on), not both",
            ));
        }
        let Some(nodes) = &self.nodes else {
            return Err(ScriptError::at(
                at,
                format!("naming a node in a {name} needs the script's nodes"),
            ));
        };
        if names.iter().next().is_none() {
            return Err(ScriptError::at(at, "name at least one node"));
        }
        if let Some(unknown) = names.iter().find(|n| !nodes.0.iter().any(|m| m == n)) {
            return Err(ScriptError::at(
                at,
                format!("{unknown:?} is not one of the script's nodes"),
            ));
        }
        Ok(())
    }

    /// The horizon, defaulted.
    pub fn horizon(&self) -> Span {
        self.horizon.unwrap_or(DEFAULT_HORIZON)
    }
}

/// An exit code a Linux container cannot report is an error: a process's exit status
/// keeps 8 bits (`exit(300)` is seen as 44), and the kubelet reports what the runtime saw.
fn exit_code_error(path: &str, code: i32, errors: &mut Vec<ScriptError>) {
    if !(0..=255).contains(&code) {
        errors.push(ScriptError::at(
            path,
            format!(
                "{code} is not an exit code a container can have: exit codes are 0 to 255 (an exit status keeps 8 bits)"
            ),
        ));
    }
}

/// serde_yaml's message without the path it puts first, when that path is the
/// field's own (or one of its parents): the error names the field once.
fn without_path<'m>(message: &'m str, path: &str) -> &'m str {
    match message.split_once(": ") {
        Some((head, rest)) if !head.is_empty() && !path.is_empty() && path.starts_with(head) => {
            rest
        }
        _ => message,
    }
}

impl ScriptedEvent {
    /// The one action of event `i`, or an error naming it.
    pub fn action(&self, i: usize) -> Result<EventAction, ScriptError> {
        let set = |t: &Target| TargetSet {
            index: t.index.clone().map(|n| n.0),
            pod: t.pod.clone().map(|n| n.0),
            node: t
                .node
                .as_ref()
                .map(|n| n.iter().map(str::to_string).collect()),
        };
        let mut actions = Vec::new();
        if let Some(t) = &self.drain {
            actions.push(EventAction::Drain(set(t)));
        }
        if let Some(t) = &self.node_lost {
            actions.push(EventAction::NodeLost(set(t)));
        }
        if let Some(t) = &self.preempt {
            actions.push(EventAction::Preempt(set(t)));
        }
        if let Some(t) = &self.delete_pod {
            actions.push(EventAction::DeletePod(set(t)));
        }
        if let Some(s) = self.suspend {
            actions.push(EventAction::Suspend(s));
        }
        if let Some(r) = self.resume {
            actions.push(EventAction::Suspend(!r));
        }
        if let Some(p) = self.parallelism {
            actions.push(EventAction::Parallelism(p));
        }
        match actions.len() {
            1 => Ok(actions.remove(0)),
            _ => Err(ScriptError::at(
                format!("events[{i}]"),
                "give exactly one of drain, nodeLost, preempt, deletePod, suspend, resume, parallelism",
            )),
        }
    }
}

#[cfg(test)]
mod tests;
