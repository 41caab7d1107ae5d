//! JobSet failure policy: one reconcile's failure-handling part, as JobSet's controller
//! (kubernetes-sigs/jobset, v0.12 line) does it.
//!
//! [`decide_jobset`] takes a [`JobSetSnapshot`] (the JobSet, its child Jobs, `now`) and returns
//! a [`JobSetPlan`]: previous-attempt Jobs to delete (foreground), the new status (counters,
//! `Failed` and `RestartingJobSet` conditions, `terminalState`, `replicatedJobsStatus`), the
//! events to record after the status write, and the Jobs that may be created now.
//!
//! The order is the controller's: group the child Jobs; recompute the replicatedJob statuses;
//! stop (deleting active Jobs) when the JobSet has finished; delete previous attempts; mark
//! `RestartingJobSet=False/JobsReady` when all Jobs are ready; then, if any Job of the current
//! attempt failed, run exactly one failure-policy action and create nothing; otherwise work out
//! which Jobs may be created under `Recreate` or `BlockingRecreate`.
//!
//! The feature gate `RestartJob` is treated as on: the per-Job counters and the
//! `job-restart-attempt` label are read and written, and `RestartJob*` actions run. The gate
//! `InPlaceRestart` is not modelled: `InPlaceRestart` JobSets are recreated as under
//! `Recreate`, and the in-place restart limit (which needs Pods) is not decided here.
//! With no failed Job, the `Suspended` condition follows `spec.suspend` (True/`SuspendedJobs`
//! plus `RestartingJobSet=False/JobSetSuspended`, or an existing one turns False/`ResumeJobs`),
//! as suspendJobs / resumeJobsIfNecessary leave it; the child Jobs' own suspend flag is the
//! caller's. Not decided either: the success policy (`Completed`), startup policy ordering
//! (an `InOrder` JobSet may set `StartupPolicyInProgress` instead of resuming), TTL after
//! finished.
//!
//! Deliberately unlike upstream, which creates every missing Job (and deletes every previous
//! attempt) in one reconcile, a plan creates and deletes at most [`MAX_JOB_CHANGES_PER_PLAN`]
//! Jobs and sets [`JobSetPlan::requeue`] when more follow, so a small request never buys a huge
//! answer; the explanation keeps [`MAX_EXPLANATION_ENTRIES`] entries per list.

use std::collections::HashMap;
use std::fmt;

use regex::{Regex, RegexBuilder};

use crate::plan::{Event, EventType};
use crate::time::Time;
use crate::validate::truncated;

/// Label (and annotation) naming a child Job's replicatedJob.
pub const REPLICATED_JOB_NAME_KEY: &str = "jobset.sigs.k8s.io/replicatedjob-name";
/// Label (and annotation) carrying a child Job's index within its replicatedJob.
pub const JOB_INDEX_KEY: &str = "jobset.sigs.k8s.io/job-index";
/// Label (and annotation) carrying the JobSet restart attempt a child Job belongs to.
pub const RESTART_ATTEMPT_KEY: &str = "jobset.sigs.k8s.io/restart-attempt";
/// Label (and annotation) carrying the per-Job restart attempt (gate `RestartJob`).
pub const JOB_RESTART_ATTEMPT_KEY: &str = "jobset.sigs.k8s.io/job-restart-attempt";
/// Label (and annotation) naming the owning JobSet.
pub const JOBSET_NAME_KEY: &str = "jobset.sigs.k8s.io/jobset-name";
/// Label (and annotation) carrying the replicatedJob's replica count.
pub const REPLICATED_JOB_REPLICAS_KEY: &str = "jobset.sigs.k8s.io/replicatedjob-replicas";

/// Condition type of a failed JobSet.
pub const CONDITION_FAILED: &str = "Failed";
/// Condition type of a completed JobSet.
pub const CONDITION_COMPLETED: &str = "Completed";
/// Condition type that is True while the JobSet is suspended.
pub const CONDITION_SUSPENDED: &str = "Suspended";
/// Condition type that is True while a global restart is in progress.
pub const CONDITION_RESTARTING: &str = "RestartingJobSet";

/// Reason of `Failed` when there is no failure policy.
pub const REASON_FAILED_JOBS: &str = "FailedJobs";
/// Reason of `Failed` set by the `FailJobSet` action.
pub const REASON_FAIL_JOBSET_ACTION: &str = "FailJobSetFailurePolicyAction";
/// Reason of `Failed` when the restart budget is used up.
pub const REASON_REACHED_MAX_RESTARTS: &str = "ReachedMaxRestarts";
/// Event reason of a `RestartJobSet` action.
pub const REASON_RESTART_JOBSET_ACTION: &str = "RestartJobSetFailurePolicyAction";
/// Event reason of a `RestartJobSetAndIgnoreMaxRestarts` action.
pub const REASON_RESTART_JOBSET_IGNORE_ACTION: &str =
    "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction";
/// Event reason of a `RestartJob` action.
pub const REASON_RESTART_JOB_ACTION: &str = "RestartJobFailurePolicyAction";
/// Event reason of a `RestartJobAndIgnoreMaxRestarts` action.
pub const REASON_RESTART_JOB_IGNORE_ACTION: &str =
    "RestartJobAndIgnoreMaxRestartsFailurePolicyAction";
/// `RestartingJobSet` reason when no rule matched (the default action).
pub const REASON_DEFAULT_FAILURE_POLICY: &str = "DefaultFailurePolicy";
/// `RestartingJobSet=False` reason once every Job is ready or succeeded.
pub const REASON_JOBS_READY: &str = "JobsReady";
/// `RestartingJobSet=False` reason once the JobSet failed.
pub const REASON_JOBSET_FAILED: &str = "JobSetFailed";
/// `Suspended=True` reason.
pub const REASON_SUSPENDED_JOBS: &str = "SuspendedJobs";
/// `Suspended=False` reason once the JobSet is resumed.
pub const REASON_RESUME_JOBS: &str = "ResumeJobs";
/// `RestartingJobSet=False` reason while the JobSet is suspended.
pub const REASON_JOBSET_SUSPENDED: &str = "JobSetSuspended";

const MSG_FAILED_JOBS: &str = "jobset failed due to one or more job failures";
const MSG_REACHED_MAX_RESTARTS: &str = "jobset failed due to reaching max number of restarts";
const MSG_JOBS_READY: &str = "all jobs are ready";
const MSG_JOBSET_FAILED: &str = "jobset failed";
const MSG_JOBSET_SUSPENDED: &str = "jobset is suspended";
const MSG_JOBSET_RESUMED: &str = "jobset is resumed";

/// The failure reasons a rule may list (the Job controller's Failed reasons).
pub const KNOWN_JOB_FAILURE_REASONS: [&str; 5] = [
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
];

/// Largest compiled size of one message pattern; bigger patterns count as invalid.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Most child Jobs one plan creates, and most it deletes. 500 is the cap upstream's Job
/// controller puts on Pods created or deleted per sync: a plan stays a few hundred KiB however
/// many replicas a JobSet asks for, and the caller decides again for the rest.
pub const MAX_JOB_CHANGES_PER_PLAN: usize = 500;
/// Most entries each list of an explanation holds; the rest are only counted.
pub const MAX_EXPLANATION_ENTRIES: usize = 100;
/// Longest name, rule name or detail an explanation entry repeats, in bytes.
pub const MAX_EXPLANATION_TEXT_BYTES: usize = 256;
/// Longest explanation summary, in bytes.
pub const MAX_EXPLANATION_SUMMARY_BYTES: usize = 1024;

/// A JobSet, trimmed to what failure-policy decisions read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSet {
    /// `metadata.name`; child Jobs are named `<name>-<replicatedJob>-<index>`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: String,
    /// The desired behaviour.
    pub spec: JobSetSpec,
    /// The current status.
    pub status: JobSetStatus,
}

/// The JobSet spec, trimmed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSetSpec {
    /// The groups of identical Jobs, in spec order.
    pub replicated_jobs: Vec<ReplicatedJob>,
    /// The failure policy; `None` fails the JobSet on the first failed Job.
    pub failure_policy: Option<FailurePolicy>,
    /// Whether the JobSet is suspended.
    pub suspend: bool,
}

/// One group of identical Jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicatedJob {
    /// Name of the group.
    pub name: String,
    /// Number of Jobs (indexes `0..replicas`).
    pub replicas: i32,
}

/// `spec.failurePolicy`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailurePolicy {
    /// The budget of counted restarts, compared with `>=`.
    pub max_restarts: i32,
    /// How Jobs are recreated after a restart.
    pub restart_strategy: RestartStrategy,
    /// Rules in order; the first rule matching any failed Job wins.
    pub rules: Vec<FailurePolicyRule>,
}

/// `spec.failurePolicy.restartStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RestartStrategy {
    /// Each Job is recreated as soon as its own previous copy is gone (the default).
    #[default]
    Recreate,
    /// No Job is created while any Job of a previous attempt still exists.
    BlockingRecreate,
    /// Healthy Pods restart in place (alpha); failed Jobs are recreated as under `Recreate`.
    InPlaceRestart,
}

impl RestartStrategy {
    /// The strategy named `s` (empty means the default `Recreate`), or `None` when unknown.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "" | "Recreate" => Some(RestartStrategy::Recreate),
            "BlockingRecreate" => Some(RestartStrategy::BlockingRecreate),
            "InPlaceRestart" => Some(RestartStrategy::InPlaceRestart),
            _ => None,
        }
    }
}

/// One failure policy rule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailurePolicyRule {
    /// Name (the webhook defaults an empty name to `failurePolicyRule<index>`).
    pub name: String,
    /// What to do when the rule matches.
    pub action: FailurePolicyAction,
    /// Failed-condition reasons the rule matches exactly; empty matches any.
    pub on_job_failure_reasons: Vec<String>,
    /// RE2 patterns searched (unanchored) in the Failed-condition message; empty matches any.
    pub on_job_failure_message_patterns: Vec<MessagePattern>,
    /// replicatedJob names the rule applies to; empty means all.
    pub target_replicated_jobs: Vec<String>,
}

/// A failure policy action.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicyAction {
    /// Fail the JobSet at once.
    FailJobSet,
    /// Recreate every Job, counting towards `maxRestarts` (the default action).
    #[default]
    RestartJobSet,
    /// Recreate every Job without counting towards `maxRestarts`.
    RestartJobSetAndIgnoreMaxRestarts,
    /// Recreate only the failed Job, counting towards `maxRestarts`. The KEP's
    /// `RecreateJob` (never released) is read as this action.
    RestartJob,
    /// Recreate only the failed Job without counting towards `maxRestarts`.
    RestartJobAndIgnoreMaxRestarts,
}

impl FailurePolicyAction {
    /// The action named `s`; `RecreateJob` (the KEP's name) is read as `RestartJob`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "FailJobSet" => Some(FailurePolicyAction::FailJobSet),
            "RestartJobSet" => Some(FailurePolicyAction::RestartJobSet),
            "RestartJobSetAndIgnoreMaxRestarts" => {
                Some(FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts)
            }
            "RestartJob" | "RecreateJob" => Some(FailurePolicyAction::RestartJob),
            "RestartJobAndIgnoreMaxRestarts" => {
                Some(FailurePolicyAction::RestartJobAndIgnoreMaxRestarts)
            }
            _ => None,
        }
    }

    /// The API name of the action.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicyAction::FailJobSet => "FailJobSet",
            FailurePolicyAction::RestartJobSet => "RestartJobSet",
            FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts => {
                "RestartJobSetAndIgnoreMaxRestarts"
            }
            FailurePolicyAction::RestartJob => "RestartJob",
            FailurePolicyAction::RestartJobAndIgnoreMaxRestarts => "RestartJobAndIgnoreMaxRestarts",
        }
    }

    /// Whether the action recreates a single Job (and so needs the per-Job counters).
    pub fn is_per_job(self) -> bool {
        matches!(
            self,
            FailurePolicyAction::RestartJob | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts
        )
    }
}

impl fmt::Display for FailurePolicyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `onJobFailureMessagePatterns` entry: its source and, when it compiles, its regex.
#[derive(Clone, Debug)]
pub struct MessagePattern {
    source: String,
    compiled: Result<Regex, String>,
}

impl MessagePattern {
    /// Compiles `source` as an RE2-style regex; an invalid one is kept and never matches,
    /// as upstream logs it and treats it as a non-match.
    pub fn new(source: &str) -> Self {
        let compiled = RegexBuilder::new(source)
            .size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map_err(|e| regex_error_summary(&e));
        MessagePattern {
            source: source.to_string(),
            compiled,
        }
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Why the pattern does not compile, or `None` when it does.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }

    /// Whether the pattern compiled.
    pub fn is_valid(&self) -> bool {
        self.compiled.is_ok()
    }

    /// Whether the pattern occurs anywhere in `message` (an unanchored search).
    pub fn is_match(&self, message: &str) -> bool {
        self.compiled.as_ref().is_ok_and(|r| r.is_match(message))
    }
}

/// The one-line cause of a regex error (the crate's message spans several lines).
fn regex_error_summary(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(limit) => {
            format!("compiled pattern exceeds the size limit of {limit} bytes")
        }
        other => {
            let text = other.to_string();
            text.lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error: "))
                .unwrap_or(text.trim())
                .to_string()
        }
    }
}

impl PartialEq for MessagePattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// The JobSet status, trimmed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSetStatus {
    /// Conditions, in the order written.
    pub conditions: Vec<Condition>,
    /// Global restarts so far (`RestartJobSet*`).
    pub restarts: i32,
    /// Global restarts that count towards `maxRestarts`.
    pub restarts_count_towards_max: i32,
    /// `Failed` or `Completed` once finished; empty before.
    pub terminal_state: String,
    /// Per-replicatedJob status; written sorted by name, descending, as upstream leaves it.
    pub replicated_jobs_status: Vec<ReplicatedJobStatus>,
}

/// A metav1.Condition on the JobSet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Condition {
    /// Type, e.g. `Failed`.
    pub condition_type: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The generation the condition was set for (kept as given).
    pub observed_generation: i64,
    /// When the status last changed.
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// Status of one replicatedJob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicatedJobStatus {
    /// Name of the replicatedJob.
    pub name: String,
    /// Current-attempt Jobs whose ready plus succeeded Pods reach the expected count.
    pub ready: i32,
    /// Current-attempt Jobs that completed.
    pub succeeded: i32,
    /// Current-attempt Jobs that failed.
    pub failed: i32,
    /// Current-attempt Jobs with active Pods (`status.active > 0`), deletion pending or not.
    pub active: i32,
    /// Current-attempt Jobs that are suspended.
    pub suspended: i32,
    /// Per-Job restarts by index; empty until first written, then `replicas` long.
    pub job_restarts: Vec<i32>,
    /// Per-Job counted restarts by index; empty until first written, then `replicas` long.
    pub job_restarts_count_towards_max: Vec<i32>,
}

/// A child Job as the decision sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildJob {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// Label `jobset.sigs.k8s.io/replicatedjob-name` (empty when absent).
    pub replicated_job: String,
    /// Label `jobset.sigs.k8s.io/job-index`.
    pub job_index: i32,
    /// Label `jobset.sigs.k8s.io/restart-attempt`.
    pub restart_attempt: i32,
    /// Label `jobset.sigs.k8s.io/job-restart-attempt`; absent on Jobs created before the gate.
    pub job_restart_attempt: Option<i32>,
    /// The Job's conditions, in order.
    pub conditions: Vec<ChildJobCondition>,
    /// Whether the Job has a deletionTimestamp.
    pub deletion_pending: bool,
    /// Whether its ready plus succeeded Pods reach min(parallelism, completions).
    pub ready: bool,
    /// Whether it has active Pods.
    pub has_active_pods: bool,
    /// Whether `spec.suspend` is true.
    pub suspended: bool,
}

/// One condition of a child Job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildJobCondition {
    /// Type, e.g. `Failed`.
    pub condition_type: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Reason, e.g. `BackoffLimitExceeded`.
    pub reason: String,
    /// Message.
    pub message: String,
    /// When the status last changed; absent reads as the earliest time (Go's zero time).
    pub last_transition_time: Option<Time>,
}

impl ChildJob {
    /// The first `Failed=True` condition, which the failure policy reads.
    pub fn failure_condition(&self) -> Option<&ChildJobCondition> {
        self.conditions
            .iter()
            .find(|c| c.condition_type == "Failed" && c.status == "True")
    }

    /// Whether the Job finished, and how: the first `Complete` or `Failed` condition that is True.
    fn finished(&self) -> Option<Finished> {
        self.conditions
            .iter()
            .filter(|c| c.status == "True")
            .find_map(|c| match c.condition_type.as_str() {
                "Complete" => Some(Finished::Succeeded),
                "Failed" => Some(Finished::Failed),
                _ => None,
            })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finished {
    Succeeded,
    Failed,
}

/// One decision's input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSetSnapshot {
    /// The JobSet.
    pub job_set: JobSet,
    /// The Jobs it owns, in the order listed (ties in failure time go to the first listed).
    pub jobs: Vec<ChildJob>,
    /// The current time.
    pub now: Time,
}

/// One decision's output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSetPlan {
    /// Actions in the order they must be applied; events only after the status write.
    pub actions: Vec<JobSetAction>,
    /// Jobs the caller may create now from their replicatedJob's template (at most
    /// [`MAX_JOB_CHANGES_PER_PLAN`]).
    pub jobs_to_create: Vec<JobToCreate>,
    /// Whether the plan stopped at [`MAX_JOB_CHANGES_PER_PLAN`] creations or deletions: more
    /// follow, so the caller decides again as soon as it has applied this plan.
    pub requeue: bool,
    /// Why: the groups, the rule evaluations and the outcome, for people.
    pub explanation: JobSetExplanation,
}

/// A list kept to its first few entries, counting the ones left out, so an explanation stays
/// small however many Jobs or rules the request carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capped<T> {
    /// The entries kept, in order.
    pub items: Vec<T>,
    /// How many more were offered and left out.
    pub omitted: usize,
    cap: usize,
}

impl<T> Capped<T> {
    /// An empty list that keeps at most `cap` entries.
    pub fn new(cap: usize) -> Self {
        Capped {
            items: Vec::new(),
            omitted: 0,
            cap,
        }
    }

    /// Adds the entry `make` builds, or only counts it once the list is full (so a left-out
    /// entry costs nothing to build).
    pub fn push_with(&mut self, make: impl FnOnce() -> T) {
        if self.items.len() < self.cap {
            self.items.push(make());
        } else {
            self.omitted += 1;
        }
    }
}

impl<T> Default for Capped<T> {
    fn default() -> Self {
        Capped::new(MAX_EXPLANATION_ENTRIES)
    }
}

impl<T> std::ops::Deref for Capped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

/// One step of a JobSet plan.
#[derive(Clone, Debug, PartialEq)]
pub enum JobSetAction {
    /// Delete these child Jobs with foreground propagation.
    DeleteJobs(Vec<JobRef>),
    /// Write the JobSet's whole status.
    UpdateStatus(Box<JobSetStatus>),
    /// Record an event on the JobSet.
    RecordEvent(Event),
}

/// A child Job named by name and UID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRef {
    /// Name.
    pub name: String,
    /// UID, as a precondition.
    pub uid: String,
}

/// A child Job the caller may create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobToCreate {
    /// `<jobset>-<replicatedJob>-<index>`.
    pub name: String,
    /// Its replicatedJob.
    pub replicated_job: String,
    /// Its index within the replicatedJob.
    pub job_index: i32,
    /// Labels for the Job and its Pod template, in key order.
    pub labels: Vec<(String, String)>,
    /// Annotations for the Job and its Pod template, in key order.
    pub annotations: Vec<(String, String)>,
}

/// Why the plan is what it is. Every list keeps its first [`MAX_EXPLANATION_ENTRIES`] entries
/// and every name or detail its first [`MAX_EXPLANATION_TEXT_BYTES`] bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSetExplanation {
    /// Jobs of earlier attempts, by name.
    pub previous_jobs: Capped<String>,
    /// Running Jobs of the current attempt.
    pub active_jobs: Capped<String>,
    /// Failed Jobs of the current attempt.
    pub failed_jobs: Capped<String>,
    /// Completed Jobs of the current attempt.
    pub succeeded_jobs: Capped<String>,
    /// The (rule, failed Job) pairs evaluated, in evaluation order.
    pub evaluations: Capped<RuleEvaluation>,
    /// The failure-policy decision, when one was taken.
    pub decision: Option<FailureDecision>,
    /// One line saying what happens.
    pub summary: String,
}

/// One rule checked against one failed Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleEvaluation {
    /// Index of the rule in `rules`.
    pub rule_index: usize,
    /// Name of the rule.
    pub rule_name: String,
    /// The failed Job.
    pub job: String,
    /// Whether the rule applies, and if not, the first requirement that failed.
    pub verdict: RuleVerdict,
}

/// Whether a rule applies to a failed Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleVerdict {
    /// All three requirements hold.
    Applies,
    /// The Failed reason is not in `onJobFailureReasons`.
    ReasonNotListed(String),
    /// No pattern in `onJobFailureMessagePatterns` occurs in the message (invalid ones never do).
    MessageNotMatched,
    /// The Job has no `replicatedjob-name` label.
    NoReplicatedJob,
    /// The Job's replicatedJob is not in `targetReplicatedJobs`.
    NotTargeted(String),
}

impl RuleVerdict {
    /// Whether the rule applies.
    pub fn applies(&self) -> bool {
        matches!(self, RuleVerdict::Applies)
    }

    /// The verdict with the request's text it quotes cut for an explanation.
    fn bounded(self) -> Self {
        match self {
            RuleVerdict::ReasonNotListed(r) => RuleVerdict::ReasonNotListed(explanation_text(&r)),
            RuleVerdict::NotTargeted(rj) => RuleVerdict::NotTargeted(explanation_text(&rj)),
            other => other,
        }
    }
}

/// Text from the request as an explanation repeats it: cut at [`MAX_EXPLANATION_TEXT_BYTES`].
fn explanation_text(s: &str) -> String {
    truncated(s, MAX_EXPLANATION_TEXT_BYTES).into_owned()
}

impl fmt::Display for RuleVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleVerdict::Applies => f.write_str("matches"),
            RuleVerdict::ReasonNotListed(r) => {
                write!(f, "failure reason {r:?} is not in onJobFailureReasons")
            }
            RuleVerdict::MessageNotMatched => {
                f.write_str("no onJobFailureMessagePatterns entry occurs in the failure message")
            }
            RuleVerdict::NoReplicatedJob => {
                f.write_str("the Job has no jobset.sigs.k8s.io/replicatedjob-name label")
            }
            RuleVerdict::NotTargeted(rj) => {
                write!(f, "replicatedJob {rj:?} is not in targetReplicatedJobs")
            }
        }
    }
}

/// The one failure-policy action of this decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureDecision {
    /// The matching rule (index, name); `None` for the default action or no policy.
    pub rule: Option<(usize, String)>,
    /// The Job the action was chosen for ("first failed job").
    pub job: String,
    /// The action; `None` when there is no failure policy.
    pub action: Option<FailurePolicyAction>,
    /// What the action did.
    pub outcome: FailureOutcome,
    /// Counted restarts before the action (global plus per-Job).
    pub counted_restarts: i64,
    /// `maxRestarts`, when there is a policy.
    pub max_restarts: Option<i32>,
}

/// What a failure-policy action did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureOutcome {
    /// The JobSet failed with this reason.
    JobSetFailed(&'static str),
    /// Every Job will be recreated (restart attempt `restarts`).
    JobSetRestarted {
        /// The new `status.restarts`.
        restarts: i32,
        /// Whether the restart counts towards `maxRestarts`.
        counted: bool,
    },
    /// One Job will be recreated.
    JobRestarted {
        /// Its replicatedJob.
        replicated_job: String,
        /// Its index.
        job_index: i32,
        /// The new `jobRestarts[index]`.
        job_restarts: i32,
        /// Whether the restart counts towards `maxRestarts`.
        counted: bool,
    },
}

/// The child Jobs sorted the way `getChildJobs` sorts them (indexes into the snapshot's list).
#[derive(Debug, Default)]
struct Groups {
    previous: Vec<usize>,
    active: Vec<usize>,
    failed: Vec<usize>,
    succeeded: Vec<usize>,
}

/// The status being built and the events it queues.
struct Writer {
    status: JobSetStatus,
    events: Vec<Event>,
    now: Time,
}

impl Writer {
    /// JobSet's setCondition: update the condition and, when it changed, queue its event.
    fn set_condition(
        &mut self,
        condition_type: &str,
        status: &str,
        reason: &str,
        message: &str,
        event_type: EventType,
    ) {
        if update_condition(
            &mut self.status.conditions,
            condition_type,
            status,
            reason,
            message,
            self.now,
        ) {
            self.event(event_type, reason, message.to_string());
        }
    }

    fn event(&mut self, event_type: EventType, reason: &str, message: String) {
        self.events.push(Event {
            event_type,
            reason: reason.to_string(),
            message,
        });
    }

    /// setJobSetFailedCondition: Failed=True, RestartingJobSet=False (if present), terminal state.
    fn fail(&mut self, reason: &str, message: &str) {
        self.set_condition(
            CONDITION_FAILED,
            "True",
            reason,
            message,
            EventType::Warning,
        );
        self.set_condition(
            CONDITION_RESTARTING,
            "False",
            REASON_JOBSET_FAILED,
            MSG_JOBSET_FAILED,
            EventType::Normal,
        );
        self.status.terminal_state = CONDITION_FAILED.to_string();
    }
}

/// JobSet's updateCondition: an unchanged condition stays; a new reason or message under the
/// same status keeps the transition time; a new status takes `now`; a missing condition is
/// added only when True. Returns whether anything changed.
pub fn update_condition(
    conditions: &mut Vec<Condition>,
    condition_type: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Time,
) -> bool {
    // metav1.Time is stored with second precision; so is what we write.
    let now = Time::from_unix_nanos(now.unix_nanos() - now.unix_nanos().rem_euclid(1_000_000_000));
    if let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.condition_type == condition_type)
    {
        // Upstream replaces the whole condition with a fresh one (observedGeneration 0).
        if existing.status != status {
            existing.observed_generation = 0;
            existing.status = status.to_string();
            existing.reason = reason.to_string();
            existing.message = message.to_string();
            existing.last_transition_time = Some(now);
            return true;
        }
        if existing.reason != reason || existing.message != message {
            existing.observed_generation = 0;
            existing.reason = reason.to_string();
            existing.message = message.to_string();
            return true;
        }
        return false;
    }
    if status != "True" {
        return false;
    }
    conditions.push(Condition {
        condition_type: condition_type.to_string(),
        status: status.to_string(),
        observed_generation: 0,
        last_transition_time: Some(now),
        reason: reason.to_string(),
        message: message.to_string(),
    });
    true
}

/// Whether the JobSet has `Completed=True` or `Failed=True`.
pub fn is_finished(status: &JobSetStatus) -> bool {
    status.conditions.iter().any(|c| {
        (c.condition_type == CONDITION_COMPLETED || c.condition_type == CONDITION_FAILED)
            && c.status == "True"
    })
}

/// The name of Job `index` of `replicated_job`: `<jobset>-<replicatedJob>-<index>`.
pub fn job_name(job_set: &str, replicated_job: &str, index: i32) -> String {
    format!("{job_set}-{replicated_job}-{index}")
}

/// `message (first failed job: <job>)`, the suffix every failure-policy message carries.
pub fn message_with_first_failed_job(message: &str, job: &str) -> String {
    format!("{message} (first failed job: {job})")
}

/// Counted restarts: `restartsCountTowardsMax` plus every `jobRestartsCountTowardsMax` entry.
pub fn total_restarts_count_towards_max(status: &JobSetStatus) -> i64 {
    let per_job: i64 = status
        .replicated_jobs_status
        .iter()
        .flat_map(|s| s.job_restarts_count_towards_max.iter())
        .map(|&n| i64::from(n))
        .sum();
    i64::from(status.restarts_count_towards_max) + per_job
}

/// The status entries by replicatedJob name, the first of each name (as a linear search finds
/// it): one lookup per Job instead of a scan, so work stays linear in the request.
fn statuses_by_name(status: &JobSetStatus) -> HashMap<&str, &ReplicatedJobStatus> {
    let mut out = HashMap::with_capacity(status.replicated_jobs_status.len());
    for s in &status.replicated_jobs_status {
        out.entry(s.name.as_str()).or_insert(s);
    }
    out
}

/// `jobRestarts[index]` of `replicated_job`, zero when the array has not been written yet.
fn job_restarts_of(
    statuses: &HashMap<&str, &ReplicatedJobStatus>,
    replicated_job: &str,
    index: i32,
) -> i32 {
    statuses
        .get(replicated_job)
        .and_then(|s| {
            usize::try_from(index)
                .ok()
                .and_then(|i| s.job_restarts.get(i))
        })
        .copied()
        .unwrap_or(0)
}

fn group_jobs(js: &JobSet, jobs: &[ChildJob]) -> Groups {
    let mut groups = Groups::default();
    let statuses = statuses_by_name(&js.status);
    for (i, job) in jobs.iter().enumerate() {
        let older_attempt = job.restart_attempt < js.status.restarts;
        // A Job without the label predates the RestartJob gate: upstream only logs it.
        let older_job_attempt = job
            .job_restart_attempt
            .is_some_and(|a| a < job_restarts_of(&statuses, &job.replicated_job, job.job_index));
        if older_attempt || older_job_attempt {
            groups.previous.push(i);
            continue;
        }
        match job.finished() {
            None => groups.active.push(i),
            Some(Finished::Failed) => groups.failed.push(i),
            Some(Finished::Succeeded) => groups.succeeded.push(i),
        }
    }
    groups
}

/// calculateReplicatedJobStatuses: counts over the current attempt, per-Job arrays carried over.
/// One pass over the Jobs tallies every replicatedJob at once (work linear in the request).
fn replicated_job_statuses(
    js: &JobSet,
    jobs: &[ChildJob],
    groups: &Groups,
) -> Vec<ReplicatedJobStatus> {
    #[derive(Default)]
    struct Tally {
        ready: usize,
        succeeded: usize,
        failed: usize,
        active: usize,
        suspended: usize,
    }
    let mut tallies: HashMap<&str, Tally> = HashMap::new();
    let mut tally = |idx: &[usize], add: &dyn Fn(&mut Tally, &ChildJob)| {
        for &i in idx {
            let job = &jobs[i];
            add(tallies.entry(job.replicated_job.as_str()).or_default(), job);
        }
    };
    tally(&groups.active, &|t, j| {
        t.ready += usize::from(j.ready);
        t.active += usize::from(j.has_active_pods);
        t.suspended += usize::from(j.suspended);
    });
    tally(&groups.succeeded, &|t, _| t.succeeded += 1);
    tally(&groups.failed, &|t, _| t.failed += 1);
    let old = statuses_by_name(&js.status);
    let n = |k: usize| i32::try_from(k).unwrap_or(i32::MAX);
    js.spec
        .replicated_jobs
        .iter()
        .map(|rj| {
            let t = tallies.get(rj.name.as_str());
            let old = old.get(rj.name.as_str());
            ReplicatedJobStatus {
                name: rj.name.clone(),
                ready: n(t.map_or(0, |t| t.ready)),
                succeeded: n(t.map_or(0, |t| t.succeeded)),
                failed: n(t.map_or(0, |t| t.failed)),
                active: n(t.map_or(0, |t| t.active)),
                suspended: n(t.map_or(0, |t| t.suspended)),
                job_restarts: old.map(|s| s.job_restarts.clone()).unwrap_or_default(),
                job_restarts_count_towards_max: old
                    .map(|s| s.job_restarts_count_towards_max.clone())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// replicatedJobStatusesEqual's side effect: the list ends up sorted by name, descending.
fn sort_replicated_job_statuses(statuses: &mut [ReplicatedJobStatus]) {
    statuses.sort_by(|a, b| b.name.cmp(&a.name));
}

/// Whether every Job is ready or succeeded: Σ(ready + succeeded) equals Σ replicas.
fn all_jobs_ready(js: &JobSet, statuses: &[ReplicatedJobStatus]) -> bool {
    let replicas: i64 = js
        .spec
        .replicated_jobs
        .iter()
        .map(|rj| i64::from(rj.replicas))
        .sum();
    let ready: i64 = statuses
        .iter()
        .map(|s| i64::from(s.ready) + i64::from(s.succeeded))
        .sum();
    replicas == ready
}

/// Whether `rule` applies to the failed `job` whose Failed condition is `failure`, checked in
/// upstream's order: reason, message, replicatedJob label, target.
pub fn rule_verdict(
    rule: &FailurePolicyRule,
    job: &ChildJob,
    failure: &ChildJobCondition,
) -> RuleVerdict {
    if !rule.on_job_failure_reasons.is_empty()
        && !rule.on_job_failure_reasons.contains(&failure.reason)
    {
        return RuleVerdict::ReasonNotListed(failure.reason.clone());
    }
    if !rule.on_job_failure_message_patterns.is_empty()
        && !rule
            .on_job_failure_message_patterns
            .iter()
            .any(|p| p.is_match(&failure.message))
    {
        return RuleVerdict::MessageNotMatched;
    }
    if job.replicated_job.is_empty() {
        return RuleVerdict::NoReplicatedJob;
    }
    if !rule.target_replicated_jobs.is_empty()
        && !rule.target_replicated_jobs.contains(&job.replicated_job)
    {
        return RuleVerdict::NotTargeted(job.replicated_job.clone());
    }
    RuleVerdict::Applies
}

/// findFirstFailedJob: the Job whose Failed=True condition is earliest; a tie goes to the
/// first listed. Returns its position in `jobs`.
pub fn first_failed_job<'a>(jobs: impl IntoIterator<Item = &'a ChildJob>) -> Option<usize> {
    let mut best: Option<(usize, Option<Time>)> = None;
    for (pos, job) in jobs.into_iter().enumerate() {
        let Some(failure) = job.failure_condition() else {
            continue;
        };
        // Option orders None first, as Go's zero time is before every real time.
        let t = failure.last_transition_time;
        if best.is_none_or(|(_, bt)| t < bt) {
            best = Some((pos, t));
        }
    }
    best.map(|(pos, _)| pos)
}

/// findFirstFailedPolicyRuleAndJob: rules in order; the first rule that applies to any failed
/// Job wins, paired with the earliest-failed Job among those it applies to. Returns the rule
/// index and the Job's position in `failed`, and records the evaluations (the first ones, as
/// `evaluations` keeps them).
pub fn first_matching_rule_and_job(
    rules: &[FailurePolicyRule],
    failed: &[&ChildJob],
    evaluations: &mut Capped<RuleEvaluation>,
) -> Option<(usize, usize)> {
    for (rule_index, rule) in rules.iter().enumerate() {
        let mut best: Option<(usize, Option<Time>)> = None;
        for (pos, job) in failed.iter().enumerate() {
            let Some(failure) = job.failure_condition() else {
                continue;
            };
            let verdict = rule_verdict(rule, job, failure);
            let t = failure.last_transition_time;
            if verdict.applies() && best.is_none_or(|(_, bt)| t < bt) {
                best = Some((pos, t));
            }
            evaluations.push_with(|| RuleEvaluation {
                rule_index,
                rule_name: explanation_text(&rule.name),
                job: explanation_text(&job.name),
                verdict: verdict.bounded(),
            });
        }
        if let Some((pos, _)) = best {
            return Some((rule_index, pos));
        }
    }
    None
}

/// One reconcile's failure-policy part. Pure: the same snapshot gives the same plan.
pub fn decide_jobset(snap: &JobSetSnapshot) -> JobSetPlan {
    let js = &snap.job_set;
    let jobs = &snap.jobs;
    let groups = group_jobs(js, jobs);
    let names = |idx: &[usize]| -> Capped<String> {
        let mut out = Capped::default();
        for &i in idx {
            out.push_with(|| explanation_text(&jobs[i].name));
        }
        out
    };
    let mut explanation = JobSetExplanation {
        previous_jobs: names(&groups.previous),
        active_jobs: names(&groups.active),
        failed_jobs: names(&groups.failed),
        succeeded_jobs: names(&groups.succeeded),
        ..JobSetExplanation::default()
    };
    let mut w = Writer {
        status: js.status.clone(),
        events: Vec::new(),
        now: snap.now,
    };
    w.status.replicated_jobs_status = replicated_job_statuses(js, jobs, &groups);
    sort_replicated_job_statuses(&mut w.status.replicated_jobs_status);
    let mut actions = Vec::new();
    let mut jobs_to_create = Vec::new();
    let mut requeue = false;

    if is_finished(&js.status) {
        // A finished JobSet only cleans up its running Jobs; failed and completed ones stay.
        let (active, more) = deletions(jobs, &groups.active);
        requeue |= more;
        explanation.summary = format!(
            "the JobSet has finished; {} active Job(s) to delete, nothing else to do",
            active.len()
        );
        if !active.is_empty() {
            actions.push(JobSetAction::DeleteJobs(active));
        }
    } else {
        let (previous, more) = deletions(jobs, &groups.previous);
        requeue |= more;
        if !previous.is_empty() {
            actions.push(JobSetAction::DeleteJobs(previous));
        }
        if !js.spec.suspend && all_jobs_ready(js, &w.status.replicated_jobs_status) {
            w.set_condition(
                CONDITION_RESTARTING,
                "False",
                REASON_JOBS_READY,
                MSG_JOBS_READY,
                EventType::Normal,
            );
        }
        if groups.failed.is_empty() {
            // suspendJobs / resumeJobsIfNecessary run after job creation, only on this path.
            if js.spec.suspend {
                w.set_condition(
                    CONDITION_SUSPENDED,
                    "True",
                    REASON_SUSPENDED_JOBS,
                    MSG_JOBSET_SUSPENDED,
                    EventType::Normal,
                );
                w.set_condition(
                    CONDITION_RESTARTING,
                    "False",
                    REASON_JOBSET_SUSPENDED,
                    MSG_JOBSET_SUSPENDED,
                    EventType::Normal,
                );
            } else {
                // Only changes an existing Suspended condition (a False one is never added).
                w.set_condition(
                    CONDITION_SUSPENDED,
                    "False",
                    REASON_RESUME_JOBS,
                    MSG_JOBSET_RESUMED,
                    EventType::Normal,
                );
            }
            let more;
            (jobs_to_create, more) = creatable_jobs(js, jobs, &groups);
            requeue |= more;
            explanation.summary = creation_summary(js, &groups, jobs_to_create.len(), more);
        } else {
            let failed: Vec<&ChildJob> = groups.failed.iter().map(|&i| &jobs[i]).collect();
            let decision = execute_failure_policy(js, &failed, &mut w, &mut explanation);
            explanation.summary = decision
                .as_ref()
                .map(decision_summary)
                .unwrap_or_else(|| "no failed Job carries a Failed=True condition".to_string());
            explanation.decision = decision;
        }
    }

    // Upstream's equality check on replicatedJobsStatus sorts both the old and the new list by
    // name, descending, in place: that is the order written, and a mere reordering is no change.
    let mut before = js.status.clone();
    sort_replicated_job_statuses(&mut before.replicated_jobs_status);
    if w.status != before {
        actions.push(JobSetAction::UpdateStatus(Box::new(w.status)));
    }
    actions.extend(w.events.into_iter().map(JobSetAction::RecordEvent));
    if requeue {
        explanation.summary.push_str(&format!(
            "; the plan stops at {MAX_JOB_CHANGES_PER_PLAN} Job creations or deletions, so \
             decide again once it is applied"
        ));
    }
    explanation.summary =
        truncated(&explanation.summary, MAX_EXPLANATION_SUMMARY_BYTES).into_owned();
    JobSetPlan {
        actions,
        jobs_to_create,
        requeue,
        explanation,
    }
}

/// The Jobs at these positions that are not already being deleted, the first
/// [`MAX_JOB_CHANGES_PER_PLAN`] of them, and whether more are left for the next plan.
fn deletions(jobs: &[ChildJob], idx: &[usize]) -> (Vec<JobRef>, bool) {
    let mut pending = idx
        .iter()
        .map(|&i| &jobs[i])
        .filter(|j| !j.deletion_pending);
    let out = pending
        .by_ref()
        .take(MAX_JOB_CHANGES_PER_PLAN)
        .map(|j| JobRef {
            name: j.name.clone(),
            uid: j.uid.clone(),
        })
        .collect();
    (out, pending.next().is_some())
}

fn execute_failure_policy(
    js: &JobSet,
    failed: &[&ChildJob],
    w: &mut Writer,
    explanation: &mut JobSetExplanation,
) -> Option<FailureDecision> {
    let counted_restarts = total_restarts_count_towards_max(&w.status);
    let Some(policy) = &js.spec.failure_policy else {
        let job = failed[first_failed_job(failed.iter().copied())?];
        w.fail(
            REASON_FAILED_JOBS,
            &message_with_first_failed_job(MSG_FAILED_JOBS, &job.name),
        );
        return Some(FailureDecision {
            rule: None,
            job: job.name.clone(),
            action: None,
            outcome: FailureOutcome::JobSetFailed(REASON_FAILED_JOBS),
            counted_restarts,
            max_restarts: None,
        });
    };
    let (rule, job, action) =
        match first_matching_rule_and_job(&policy.rules, failed, &mut explanation.evaluations) {
            Some((ri, pos)) => (
                Some((ri, &policy.rules[ri])),
                failed[pos],
                policy.rules[ri].action,
            ),
            None => (
                None,
                failed[first_failed_job(failed.iter().copied())?],
                FailurePolicyAction::RestartJobSet,
            ),
        };
    let outcome = apply_action(
        js,
        policy,
        action,
        rule.map(|(_, r)| r.name.as_str()),
        job,
        w,
    );
    Some(FailureDecision {
        rule: rule.map(|(i, r)| (i, r.name.clone())),
        job: job.name.clone(),
        action: Some(action),
        outcome,
        counted_restarts,
        max_restarts: Some(policy.max_restarts),
    })
}

fn apply_action(
    js: &JobSet,
    policy: &FailurePolicy,
    action: FailurePolicyAction,
    rule_name: Option<&str>,
    job: &ChildJob,
    w: &mut Writer,
) -> FailureOutcome {
    let over_budget = total_restarts_count_towards_max(&w.status) >= i64::from(policy.max_restarts);
    let action_message = message_with_first_failed_job(
        &format!("applying {action} failure policy action"),
        &job.name,
    );
    match action {
        FailurePolicyAction::FailJobSet => {
            w.fail(REASON_FAIL_JOBSET_ACTION, &action_message);
            FailureOutcome::JobSetFailed(REASON_FAIL_JOBSET_ACTION)
        }
        FailurePolicyAction::RestartJobSet | FailurePolicyAction::RestartJob if over_budget => {
            w.fail(
                REASON_REACHED_MAX_RESTARTS,
                &message_with_first_failed_job(MSG_REACHED_MAX_RESTARTS, &job.name),
            );
            FailureOutcome::JobSetFailed(REASON_REACHED_MAX_RESTARTS)
        }
        FailurePolicyAction::RestartJobSet
        | FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts => {
            let counted = action == FailurePolicyAction::RestartJobSet;
            w.status.restarts = w.status.restarts.saturating_add(1);
            if counted {
                w.status.restarts_count_towards_max =
                    w.status.restarts_count_towards_max.saturating_add(1);
            }
            let reason = rule_name.map_or_else(
                || REASON_DEFAULT_FAILURE_POLICY.to_string(),
                |n| format!("FailurePolicy_{n}"),
            );
            w.set_condition(
                CONDITION_RESTARTING,
                "True",
                &reason,
                &action_message,
                EventType::Warning,
            );
            let event_reason = if counted {
                REASON_RESTART_JOBSET_ACTION
            } else {
                REASON_RESTART_JOBSET_IGNORE_ACTION
            };
            w.event(EventType::Warning, event_reason, action_message);
            FailureOutcome::JobSetRestarted {
                restarts: w.status.restarts,
                counted,
            }
        }
        FailurePolicyAction::RestartJob | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts => {
            let counted = action == FailurePolicyAction::RestartJob;
            let replicas = js
                .spec
                .replicated_jobs
                .iter()
                .find(|rj| rj.name == job.replicated_job)
                .map_or(0, |rj| rj.replicas);
            let job_restarts = bump_job_restarts(&mut w.status, replicas, job, counted);
            let event_reason = if counted {
                REASON_RESTART_JOB_ACTION
            } else {
                REASON_RESTART_JOB_IGNORE_ACTION
            };
            w.event(EventType::Warning, event_reason, action_message);
            FailureOutcome::JobRestarted {
                replicated_job: job.replicated_job.clone(),
                job_index: job.job_index,
                job_restarts,
                counted,
            }
        }
    }
}

/// Increments `jobRestarts[index]` (and `jobRestartsCountTowardsMax[index]` when counted),
/// creating each array with `replicas` zeros the first time it is written. Returns the new
/// `jobRestarts[index]`.
fn bump_job_restarts(
    status: &mut JobSetStatus,
    replicas: i32,
    job: &ChildJob,
    counted: bool,
) -> i32 {
    let Some(rj) = status
        .replicated_jobs_status
        .iter_mut()
        .find(|s| s.name == job.replicated_job)
    else {
        return 0;
    };
    let Ok(index) = usize::try_from(job.job_index) else {
        return 0;
    };
    // The API boundary guarantees 0 <= index < replicas and arrays of length replicas.
    let len = usize::try_from(replicas).unwrap_or(0).max(index + 1);
    let bump = |arr: &mut Vec<i32>| -> i32 {
        if arr.is_empty() {
            arr.resize(len, 0);
        }
        arr.get_mut(index).map_or(0, |n| {
            *n = n.saturating_add(1);
            *n
        })
    };
    let new = bump(&mut rj.job_restarts);
    if counted {
        bump(&mut rj.job_restarts_count_towards_max);
    }
    new
}

/// The Jobs that may be created now: every `<jobset>-<rj>-<i>` with no object of that name,
/// and, under `BlockingRecreate`, nothing while a previous-attempt Job still exists. Only the
/// first [`MAX_JOB_CHANGES_PER_PLAN`] (spec order, then index), with whether more are missing;
/// the walk stops there, so its work is bounded by the Jobs listed plus the cap, not the replicas.
fn creatable_jobs(js: &JobSet, jobs: &[ChildJob], groups: &Groups) -> (Vec<JobToCreate>, bool) {
    let blocking = js
        .spec
        .failure_policy
        .as_ref()
        .is_some_and(|p| p.restart_strategy == RestartStrategy::BlockingRecreate);
    if blocking && !groups.previous.is_empty() {
        return (Vec::new(), false);
    }
    let existing: std::collections::HashSet<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    let statuses = statuses_by_name(&js.status);
    let restarts = js.status.restarts.to_string();
    let mut out = Vec::new();
    for rj in &js.spec.replicated_jobs {
        for index in 0..rj.replicas.max(0) {
            let name = job_name(&js.name, &rj.name, index);
            if existing.contains(name.as_str()) {
                continue;
            }
            if out.len() == MAX_JOB_CHANGES_PER_PLAN {
                return (out, true);
            }
            let job_restarts = job_restarts_of(&statuses, &rj.name, index).to_string();
            // Key order, so the plan is deterministic.
            let labels = vec![
                (JOB_INDEX_KEY.to_string(), index.to_string()),
                (JOB_RESTART_ATTEMPT_KEY.to_string(), job_restarts),
                (JOBSET_NAME_KEY.to_string(), js.name.clone()),
                (REPLICATED_JOB_NAME_KEY.to_string(), rj.name.clone()),
                (
                    REPLICATED_JOB_REPLICAS_KEY.to_string(),
                    rj.replicas.to_string(),
                ),
                (RESTART_ATTEMPT_KEY.to_string(), restarts.clone()),
            ];
            out.push(JobToCreate {
                name,
                replicated_job: rj.name.clone(),
                job_index: index,
                annotations: labels.clone(),
                labels,
            });
        }
    }
    (out, false)
}

fn creation_summary(js: &JobSet, groups: &Groups, n: usize, more: bool) -> String {
    let blocking = js
        .spec
        .failure_policy
        .as_ref()
        .is_some_and(|p| p.restart_strategy == RestartStrategy::BlockingRecreate);
    if blocking && !groups.previous.is_empty() {
        format!(
            "no failed Job; BlockingRecreate: nothing is created while {} previous-attempt Job(s) still exist",
            groups.previous.len()
        )
    } else {
        let more = if more { " now" } else { "" };
        format!("no failed Job; {n} Job(s) may be created{more}")
    }
}

fn decision_summary(d: &FailureDecision) -> String {
    let why = match (&d.rule, d.action) {
        (Some((i, name)), Some(a)) => format!("rule {i} ({name}) matched Job {}: {a}", d.job),
        (None, Some(a)) => format!(
            "no rule matched; default action {a} for the earliest-failed Job {}",
            d.job
        ),
        _ => format!("no failure policy; first failed Job {}", d.job),
    };
    let what = match &d.outcome {
        FailureOutcome::JobSetFailed(reason) => format!("the JobSet fails ({reason})"),
        FailureOutcome::JobSetRestarted { restarts, counted } => format!(
            "every Job is recreated as restart attempt {restarts}{}",
            if *counted { "" } else { " (not counted)" }
        ),
        FailureOutcome::JobRestarted {
            replicated_job,
            job_index,
            job_restarts,
            counted,
        } => format!(
            "Job {replicated_job}[{job_index}] is recreated as job restart attempt {job_restarts}{}",
            if *counted { "" } else { " (not counted)" }
        ),
    };
    let budget = d
        .max_restarts
        .map(|m| format!("; counted restarts before: {} of {m}", d.counted_restarts))
        .unwrap_or_default();
    format!("{why}; {what}{budget}")
}

#[cfg(test)]
#[path = "jobset_tests.rs"]
mod tests;
