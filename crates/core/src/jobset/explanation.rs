//! Why a JobSet plan is what it is, for people: the Jobs by state, each rule against each
//! failed Job, the one failure-policy action, and a summary, every list and text bounded.

use std::fmt;

use crate::text::truncated;

use super::*;

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
    pub(super) fn bounded(self) -> Self {
        match self {
            RuleVerdict::ReasonNotListed(r) => RuleVerdict::ReasonNotListed(explanation_text(&r)),
            RuleVerdict::NotTargeted(rj) => RuleVerdict::NotTargeted(explanation_text(&rj)),
            other => other,
        }
    }
}

/// Text from the request as an explanation repeats it: cut at [`MAX_EXPLANATION_TEXT_BYTES`].
pub(super) fn explanation_text(s: &str) -> String {
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

pub(super) fn creation_summary(js: &JobSet, groups: &Groups, n: usize, more: bool) -> String {
    if blocked_by_previous_attempt(js, groups) {
        format!(
            "no failed Job; BlockingRecreate: nothing is created while {} previous-attempt Job(s) still exist",
            groups.previous.len()
        )
    } else {
        let more = if more { " now" } else { "" };
        format!("no failed Job; {n} Job(s) may be created{more}")
    }
}

pub(super) fn decision_summary(d: &FailureDecision) -> String {
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
