//! The JobSet, its child Jobs and the plan, as the JobSet decision sees them.

use crate::message_pattern::{BoundedPattern, PatternError};
use crate::plan::Event;
use crate::time::Time;

use super::explanation::JobSetExplanation;

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

pub(super) const MSG_FAILED_JOBS: &str = "jobset failed due to one or more job failures";
pub(super) const MSG_REACHED_MAX_RESTARTS: &str =
    "jobset failed due to reaching max number of restarts";
pub(super) const MSG_JOBS_READY: &str = "all jobs are ready";
pub(super) const MSG_JOBSET_FAILED: &str = "jobset failed";
pub(super) const MSG_JOBSET_SUSPENDED: &str = "jobset is suspended";
pub(super) const MSG_JOBSET_RESUMED: &str = "jobset is resumed";

/// The failure reasons a rule may list (the Job controller's Failed reasons).
pub const KNOWN_JOB_FAILURE_REASONS: [&str; 5] = [
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
];

/// Most child Jobs one plan creates, and most it deletes. 500 is the cap upstream's Job
/// controller puts on Pods created or deleted per sync: a plan stays a few hundred KiB however
/// many replicas a JobSet asks for, and the caller decides again for the rest.
pub const MAX_JOB_CHANGES_PER_PLAN: usize = 500;
pub use crate::text::{Capped, MAX_EXPLANATION_ENTRIES};
/// Longest name, rule name or detail an explanation entry repeats, in bytes.
pub const MAX_EXPLANATION_TEXT_BYTES: usize = crate::text::MAX_TEXT_BYTES;
/// Longest explanation summary, in bytes.
pub const MAX_EXPLANATION_SUMMARY_BYTES: usize = crate::text::MAX_MESSAGE_BYTES;

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

impl FailurePolicy {
    /// The most message bytes one decision's `onJobFailureMessagePatterns` can search: each
    /// child Job's Failed condition message once per pattern (a decision tries each rule's
    /// patterns once on each failed Job, `first_matching_rule_and_job`).
    pub fn message_scan_bound(&self, jobs: &[ChildJob]) -> u64 {
        let patterns: usize = self
            .rules
            .iter()
            .map(|r| r.on_job_failure_message_patterns.len())
            .sum();
        if patterns == 0 {
            return 0;
        }
        let bytes = jobs
            .iter()
            .filter_map(ChildJob::failure_condition)
            .fold(0u64, |sum, c| {
                sum.saturating_add(u64::try_from(c.message.len()).unwrap_or(u64::MAX))
            });
        bytes.saturating_mul(u64::try_from(patterns).unwrap_or(u64::MAX))
    }
}

/// `spec.failurePolicy.restartStrategy` (spelled by `crate::api_names`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestartStrategy {
    /// Each Job is recreated as soon as its own previous copy is gone (the default).
    #[default]
    Recreate,
    /// No Job is created while any Job of a previous attempt still exists.
    BlockingRecreate,
    /// Healthy Pods restart in place (alpha); failed Jobs are recreated as under `Recreate`.
    InPlaceRestart,
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

/// A failure policy action (spelled by `crate::api_names`).
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
    /// Whether the action recreates a single Job (and so needs the per-Job counters).
    pub fn is_per_job(self) -> bool {
        matches!(
            self,
            FailurePolicyAction::RestartJob | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts
        )
    }
}

/// One `onJobFailureMessagePatterns` entry: its source and, when it compiles, its matcher (the
/// one bounded matcher of [`crate::message_pattern`], shared with the extended failure policy).
#[derive(Clone, Debug)]
pub struct MessagePattern {
    source: String,
    compiled: Result<BoundedPattern, PatternError>,
}

impl MessagePattern {
    /// Compiles `source` as an RE2-style regex; an invalid one is kept and never matches,
    /// as upstream logs it and treats it as a non-match.
    pub fn new(source: &str) -> Self {
        MessagePattern {
            source: source.to_string(),
            compiled: BoundedPattern::new(source),
        }
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Why the pattern does not compile, or `None` when it does.
    pub fn error(&self) -> Option<&PatternError> {
        self.compiled.as_ref().err()
    }

    /// Whether the pattern compiled.
    pub fn is_valid(&self) -> bool {
        self.compiled.is_ok()
    }

    /// Whether the pattern is valid RE2 that this service refuses for its own limits (too
    /// long, or its automaton too large): a decision cannot treat it as upstream does, so it
    /// refuses the request instead of guessing.
    pub fn refused_by_limits(&self) -> bool {
        self.error().is_some_and(|e| !e.invalid_in_re2())
    }

    /// Whether the pattern occurs anywhere in `message` (an unanchored search).
    pub fn is_match(&self, message: &str) -> bool {
        self.compiled.as_ref().is_ok_and(|p| p.is_match(message))
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
    pub(super) fn finished(&self) -> Option<Finished> {
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
pub(super) enum Finished {
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
