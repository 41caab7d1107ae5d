//! Wire ↔ domain for `DecideJobSet` and `ValidateJobSet`.
//!
//! Input the decision cannot work with becomes field-named [`Violation`]s, with paths in the
//! request's proto3 JSON names (`jobSet.metadata.uid`, `jobs[2].metadata.labels[...]`). The
//! feature gate `RestartJob` is treated as on, so, as JobSet's controller does then, a child
//! Job must carry an integer `restart-attempt` label, and one of the current attempt (label not
//! below `status.restarts`) also integer `job-index` and `replicatedjob-name` labels naming a
//! replicatedJob of the spec, with the index inside its replicas; a missing
//! `job-restart-attempt` label is accepted (Jobs created before the gate lack it). A Job of an
//! earlier attempt is only deleted, whatever its other labels, as getChildJobs does.
//!
//! Before deciding, empty rule names are defaulted to `failurePolicyRule<index>` as JobSet's
//! webhook does on create. An invalid message pattern does not stop a decision: as upstream,
//! it never matches. `ValidateJobSet` rejects it.
//!
//! Message patterns are bounded (`job_decider_core::message_pattern`): at most
//! [`MAX_FAILURE_POLICY_RULES`] rules, [`MAX_PATTERNS_PER_RULE`] patterns in a rule and
//! [`MAX_MESSAGE_PATTERNS`] in all, child Job condition messages of at most
//! [`MAX_CONDITION_MESSAGE_BYTES`], and at most [`MAX_MESSAGE_SCAN_BYTES`] searched per
//! decision. A pattern RE2 accepts but this service's limits refuse (its DFA too large) fails
//! the decision at its field, unlike an invalid one: deciding as if it never matched would be a
//! guess where upstream could match.
//!
//! [`snapshot_until`] asks an [`Interrupt`] before each child Job and each pattern it compiles
//! (a request's conversion cost), so a server can stop converting for a caller who has left.

use std::collections::{HashMap, HashSet};

use pbjson_types::Timestamp;

use crate::convert::Unconverted;
use crate::pb;
use crate::violations::{Violations, violation_to_pb};
use crate::wire_time::time_from_pb;
use job_decider_core::cancel::{Interrupt, Never};
use job_decider_core::go_text::go_quote;
use job_decider_core::jobset::{
    ChildJob, ChildJobCondition, Condition, FailurePolicy, FailurePolicyAction, FailurePolicyRule,
    JOB_INDEX_KEY, JOB_RESTART_ATTEMPT_KEY, JobSet, JobSetSnapshot, JobSetSpec, JobSetStatus,
    MessagePattern, REPLICATED_JOB_NAME_KEY, RESTART_ATTEMPT_KEY, ReplicatedJob,
    ReplicatedJobStatus, RestartStrategy, decide_jobset,
};
use job_decider_core::jobset_validate::{default_rule_names, validate_jobset};
use job_decider_core::time::Time;
use job_decider_core::validate::{Violation, ViolationKind, truncated};

mod to_wire;
pub use to_wire::{explanation_to_pb, plan_to_pb, status_to_pb};

/// Most child Jobs one JobSet may describe (Σ replicas). A plan creates at most
/// `MAX_JOB_CHANGES_PER_PLAN` of them; this bounds the per-Job restart arrays a status carries.
pub const MAX_TOTAL_REPLICAS: i64 = 1_000_000;
/// Longest JobSet or replicatedJob name a decision accepts, in bytes: the plan writes both as
/// label values on every Job it creates, and a label value is at most 63 bytes.
pub const MAX_LABEL_VALUE_BYTES: usize = 63;
/// Longest child Job name a decision accepts, in bytes: an object name's limit (DNS-1123
/// subdomain). Names reach condition and event messages, so they must not be megabytes.
pub const MAX_OBJECT_NAME_BYTES: usize = 253;
/// Longest failure-policy rule name a decision accepts, in bytes (the webhook's limit): it
/// becomes a condition reason.
pub const MAX_RULE_NAME_BYTES: usize = 128;

/// Most failure-policy rules a JobSet may have here (JobSet's API sets no limit).
pub const MAX_FAILURE_POLICY_RULES: usize = 32;
/// Most `onJobFailureMessagePatterns` in one rule.
pub const MAX_PATTERNS_PER_RULE: usize = 16;
/// Most message patterns in all of a JobSet's rules: each is compiled to a DFA per call, a
/// few milliseconds at worst, so this bounds a call's compiling.
pub const MAX_MESSAGE_PATTERNS: usize = 32;
/// Longest child Job condition message a decision reads, in bytes (the Job controller's own
/// messages are a few hundred bytes).
pub const MAX_CONDITION_MESSAGE_BYTES: usize = 32 * 1024;
/// Most message bytes one decision's patterns may search (Failed condition message bytes ×
/// patterns): about a second of matching at ~2 ns a byte.
pub const MAX_MESSAGE_SCAN_BYTES: u64 = job_decider_core::message_pattern::MAX_SCAN_BYTES;

/// `"A", "B"`: the values a NotSupported violation lists (an enum's `NAMES` in the core's
/// `api_names`, so the KEP's `RecreateJob` is read but never listed).
fn listed(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    quoted.join(", ")
}

/// Decides one `DecideJobSetRequest`: converts it, runs [`decide_jobset`] and encodes the
/// plan (with the explanation when the request asks for it). Errors name every bad field.
pub fn decide_jobset_request(
    req: pb::DecideJobSetRequest,
) -> Result<pb::DecideJobSetResponse, Vec<Violation>> {
    let explain = req.explain;
    let snapshot = snapshot_from_pb(req)?;
    Ok(plan_to_pb(&decide_jobset(&snapshot), explain))
}

/// Validates one `ValidateJobSetRequest` the way JobSet's webhook validates a create (after
/// its rule-name defaulting). `Ok` lists the broken rules (empty when valid); `Err` means the
/// request itself is unusable (no JobSet, an unknown action or restart strategy).
pub fn validate_jobset_request(
    req: pb::ValidateJobSetRequest,
) -> Result<pb::ValidateJobSetResponse, Vec<Violation>> {
    let mut errs = Violations::default();
    let Some(js) = req.job_set else {
        errs.push(
            "jobSet",
            ViolationKind::Required,
            None,
            "the JobSet to validate",
        );
        return Err(errs.into_vec());
    };
    // Paths are the webhook's: relative to the JobSet.
    let js = jobset_from_pb(js, "", Purpose::Validate, &Never, &mut errs);
    if !errs.is_empty() {
        return Err(errs.into_vec());
    }
    Ok(pb::ValidateJobSetResponse {
        violations: validate_jobset(&js).iter().map(violation_to_pb).collect(),
    })
}

/// The domain snapshot of a request, or every field that makes it undecidable.
pub fn snapshot_from_pb(req: pb::DecideJobSetRequest) -> Result<JobSetSnapshot, Vec<Violation>> {
    snapshot_until(req, &Never).map_err(|unconverted| match unconverted {
        Unconverted::Invalid(violations) => violations,
        // `Never` never interrupts; an empty list is never returned.
        Unconverted::Cancelled => Vec::new(),
    })
}

/// Remembers that its interrupt said "stop", so work cut short anywhere is known to be.
struct Latched<'a> {
    interrupt: &'a dyn Interrupt,
    stopped: std::cell::Cell<bool>,
}

impl Interrupt for Latched<'_> {
    fn interrupted(&self) -> bool {
        if !self.stopped.get() {
            self.stopped.set(self.interrupt.interrupted());
        }
        self.stopped.get()
    }
}

/// [`snapshot_from_pb`], asking `interrupt` before each child Job and each pattern compiled.
pub fn snapshot_until(
    req: pb::DecideJobSetRequest,
    interrupt: &dyn Interrupt,
) -> Result<JobSetSnapshot, Unconverted> {
    let latched = Latched {
        interrupt,
        stopped: std::cell::Cell::new(false),
    };
    let converted = snapshot_with(req, &latched);
    // Cut short, what was converted says nothing about the request.
    if latched.stopped.get() {
        return Err(Unconverted::Cancelled);
    }
    converted.map_err(Unconverted::Invalid)
}

fn snapshot_with(
    req: pb::DecideJobSetRequest,
    interrupt: &dyn Interrupt,
) -> Result<JobSetSnapshot, Vec<Violation>> {
    let mut errs = Violations::default();
    let js = match req.job_set {
        Some(js) => Some(jobset_from_pb(
            js,
            "jobSet.",
            Purpose::Decide,
            interrupt,
            &mut errs,
        )),
        None => {
            errs.push(
                "jobSet",
                ViolationKind::Required,
                None,
                "a DecideJobSetRequest needs the JobSet to decide",
            );
            None
        }
    };
    let now = match &req.now {
        Some(ts) => time_or_err(ts, "now", &mut errs),
        None => {
            errs.push(
                "now",
                ViolationKind::Required,
                None,
                "decisions never read a clock; send the current time",
            );
            None
        }
    };
    let jobs = match &js {
        Some(js) => children_from_pb(req.jobs, js, interrupt, &mut errs),
        None => Vec::new(),
    };
    if let Some(policy) = js.as_ref().and_then(|js| js.spec.failure_policy.as_ref()) {
        let cost = policy.message_scan_bound(&jobs);
        if cost > MAX_MESSAGE_SCAN_BYTES {
            errs.push(
                "jobSet.spec.failurePolicy",
                ViolationKind::TooMany,
                None,
                format!(
                    "the onJobFailureMessagePatterns would search {cost} bytes of Failed \
                     condition messages (message bytes × patterns); one decision may search at \
                     most {MAX_MESSAGE_SCAN_BYTES}"
                ),
            );
        }
    }
    match (js, now) {
        (Some(job_set), Some(now)) if errs.is_empty() => Ok(JobSetSnapshot { job_set, jobs, now }),
        _ => Err(errs.into_vec()),
    }
}

/// Whether a JobSet is converted for a decision (identity and status needed) or validation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Decide,
    Validate,
}

/// A violation's value quoted as Go's `%q`, as upstream's field errors quote it.
fn quote(s: &str) -> Option<String> {
    Some(go_quote(s))
}

fn time_or_err(ts: &Timestamp, path: &str, errs: &mut Violations) -> Option<Time> {
    let t = time_from_pb(ts);
    if t.is_none() {
        errs.push(
            path,
            ViolationKind::Invalid,
            None,
            "must be a time between the years 1678 and 2262",
        );
    }
    t
}

/// `prefix` is `jobSet.` for a decision and empty for validation (the webhook's paths).
fn jobset_from_pb(
    js: pb::JobSet,
    prefix: &str,
    purpose: Purpose,
    interrupt: &dyn Interrupt,
    errs: &mut Violations,
) -> JobSet {
    let meta = js.metadata.unwrap_or_default();
    if purpose == Purpose::Decide {
        if meta.name.is_empty() {
            errs.push(
                format!("{prefix}metadata.name"),
                ViolationKind::Required,
                None,
                "child Jobs are named after the JobSet",
            );
        }
        too_long(
            &meta.name,
            MAX_LABEL_VALUE_BYTES,
            format!("{prefix}metadata.name"),
            "it is the jobset-name label value of every child Job",
            errs,
        );
        if meta.uid.is_empty() {
            errs.push(
                format!("{prefix}metadata.uid"),
                ViolationKind::Required,
                None,
                "a decision is about one existing JobSet",
            );
        }
    }
    let spec = spec_from_pb(
        js.spec.unwrap_or_default(),
        prefix,
        purpose,
        interrupt,
        errs,
    );
    let status = match purpose {
        Purpose::Decide => status_from_pb(js.status.unwrap_or_default(), &spec, prefix, errs),
        Purpose::Validate => JobSetStatus::default(),
    };
    JobSet {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        spec,
        status,
    }
}

fn spec_from_pb(
    spec: pb::JobSetSpec,
    prefix: &str,
    purpose: Purpose,
    interrupt: &dyn Interrupt,
    errs: &mut Violations,
) -> JobSetSpec {
    let mut seen = HashSet::new();
    let mut total: i64 = 0;
    let replicated_jobs = spec
        .replicated_jobs
        .into_iter()
        .enumerate()
        .map(|(i, rj)| {
            let path = format!("{prefix}spec.replicatedJobs[{i}]");
            if purpose == Purpose::Decide {
                too_long(
                    &rj.name,
                    MAX_LABEL_VALUE_BYTES,
                    format!("{path}.name"),
                    "it is the replicatedjob-name label value of its child Jobs",
                    errs,
                );
            }
            if rj.name.is_empty() {
                errs.push(format!("{path}.name"), ViolationKind::Required, None, "");
            } else if !seen.insert(rj.name.clone()) {
                errs.push(
                    format!("{path}.name"),
                    ViolationKind::Duplicate,
                    quote(&rj.name),
                    "",
                );
            }
            let replicas = rj.replicas.unwrap_or(1);
            if replicas < 0 {
                errs.push(
                    format!("{path}.replicas"),
                    ViolationKind::Invalid,
                    Some(replicas.to_string()),
                    "must be greater than or equal to 0",
                );
            }
            total += i64::from(replicas.max(0));
            ReplicatedJob {
                name: rj.name,
                replicas,
            }
        })
        .collect();
    if purpose == Purpose::Decide && total > MAX_TOTAL_REPLICAS {
        errs.push(
            format!("{prefix}spec.replicatedJobs"),
            ViolationKind::TooMany,
            None,
            format!(
                "the replicas add up to {total}; this service decides JobSets of at most \
                 {MAX_TOTAL_REPLICAS} child Jobs"
            ),
        );
    }
    let failure_policy = spec.failure_policy.map(|p| {
        let path = format!("{prefix}spec.failurePolicy");
        let mut policy = policy_from_pb(p, &path, purpose, interrupt, errs);
        if purpose == Purpose::Decide {
            for (i, rule) in policy.rules.iter().enumerate() {
                too_long(
                    &rule.name,
                    MAX_RULE_NAME_BYTES,
                    format!("{path}.rules[{i}].name"),
                    "JobSet's webhook allows no longer rule name",
                    errs,
                );
            }
            default_rule_names(&mut policy);
        }
        policy
    });
    JobSetSpec {
        replicated_jobs,
        failure_policy,
        suspend: spec.suspend.unwrap_or(false),
    }
}

/// The pattern counts past a cap, as violations; `true` when every count is within its cap
/// (only then are the patterns compiled, so an oversized list costs nothing to refuse).
fn pattern_counts_fit(p: &pb::JobSetFailurePolicy, path: &str, errs: &mut Violations) -> bool {
    let before = errs.len();
    if p.rules.len() > MAX_FAILURE_POLICY_RULES {
        errs.push(
            format!("{path}.rules"),
            ViolationKind::TooMany,
            None,
            format!(
                "{} rules; this service decides JobSets of at most {MAX_FAILURE_POLICY_RULES}",
                p.rules.len()
            ),
        );
    }
    for (i, r) in p.rules.iter().enumerate() {
        let n = r.on_job_failure_message_patterns.len();
        if n > MAX_PATTERNS_PER_RULE {
            errs.push(
                format!("{path}.rules[{i}].onJobFailureMessagePatterns"),
                ViolationKind::TooMany,
                None,
                format!("{n} patterns; a rule may have at most {MAX_PATTERNS_PER_RULE}"),
            );
        }
    }
    let total: usize = p
        .rules
        .iter()
        .map(|r| r.on_job_failure_message_patterns.len())
        .sum();
    if total > MAX_MESSAGE_PATTERNS {
        errs.push(
            format!("{path}.rules"),
            ViolationKind::TooMany,
            None,
            format!(
                "{total} onJobFailureMessagePatterns in all; a JobSet may have at most \
                 {MAX_MESSAGE_PATTERNS}"
            ),
        );
    }
    errs.len() == before
}

fn policy_from_pb(
    p: pb::JobSetFailurePolicy,
    path: &str,
    purpose: Purpose,
    interrupt: &dyn Interrupt,
    errs: &mut Violations,
) -> FailurePolicy {
    let compile = pattern_counts_fit(&p, path, errs);
    let restart_strategy = RestartStrategy::parse(&p.restart_strategy).unwrap_or_else(|| {
        errs.push(
            format!("{path}.restartStrategy"),
            ViolationKind::NotSupported,
            quote(&p.restart_strategy),
            format!("supported values: {}", listed(RestartStrategy::NAMES)),
        );
        RestartStrategy::Recreate
    });
    let rules = p
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let rpath = format!("{path}.rules[{i}]");
            let action = if r.action.is_empty() {
                errs.push(format!("{rpath}.action"), ViolationKind::Required, None, "");
                FailurePolicyAction::default()
            } else {
                FailurePolicyAction::parse(&r.action).unwrap_or_else(|| {
                    errs.push(
                        format!("{rpath}.action"),
                        ViolationKind::NotSupported,
                        quote(&r.action),
                        format!("supported values: {}", listed(FailurePolicyAction::NAMES)),
                    );
                    FailurePolicyAction::default()
                })
            };
            let patterns: Vec<MessagePattern> = if compile {
                // A compile takes milliseconds: the caller may have left in between.
                r.on_job_failure_message_patterns
                    .iter()
                    .take_while(|_| !interrupt.interrupted())
                    .map(|s| MessagePattern::new(s))
                    .collect()
            } else {
                Vec::new()
            };
            for (j, pattern) in patterns.iter().enumerate() {
                // Validation reports it among the webhook's violations instead.
                if purpose == Purpose::Decide
                    && let Some(err) = pattern.error().filter(|_| pattern.refused_by_limits())
                {
                    errs.push(
                        format!("{rpath}.onJobFailureMessagePatterns[{j}]"),
                        ViolationKind::Invalid,
                        quote(&truncated(pattern.source(), 128)),
                        format!("valid RE2, but refused by this service's pattern limits: {err}"),
                    );
                }
            }
            FailurePolicyRule {
                name: r.name,
                action,
                on_job_failure_reasons: r.on_job_failure_reasons,
                on_job_failure_message_patterns: patterns,
                target_replicated_jobs: r.target_replicated_jobs,
            }
        })
        .collect();
    FailurePolicy {
        max_restarts: p.max_restarts,
        restart_strategy,
        rules,
    }
}

fn status_from_pb(
    s: pb::JobSetStatus,
    spec: &JobSetSpec,
    prefix: &str,
    errs: &mut Violations,
) -> JobSetStatus {
    let path = format!("{prefix}status");
    let by_name = replicated_jobs_by_name(spec);
    let conditions = s
        .conditions
        .into_iter()
        .enumerate()
        .map(|(i, c)| Condition {
            last_transition_time: c.last_transition_time.as_ref().and_then(|ts| {
                time_or_err(
                    ts,
                    &format!("{path}.conditions[{i}].lastTransitionTime"),
                    errs,
                )
            }),
            condition_type: c.r#type,
            status: c.status,
            observed_generation: c.observed_generation,
            reason: c.reason,
            message: c.message,
        })
        .collect();
    let replicated_jobs_status = s
        .replicated_jobs_status
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            // The arrays are written with `replicas` entries; any other length is undecidable.
            if let Some(rj) = by_name.get(r.name.as_str()) {
                let replicas = usize::try_from(rj.replicas).unwrap_or(0);
                for (field, arr) in [
                    ("jobRestarts", &r.job_restarts),
                    (
                        "jobRestartsCountTowardsMax",
                        &r.job_restarts_count_towards_max,
                    ),
                ] {
                    if !arr.is_empty() && arr.len() != replicas {
                        errs.push(
                            format!("{path}.replicatedJobsStatus[{i}].{field}"),
                            ViolationKind::Invalid,
                            None,
                            format!(
                                "has {} items; must be empty or have one per replica ({replicas})",
                                arr.len()
                            ),
                        );
                    }
                }
            }
            ReplicatedJobStatus {
                name: r.name,
                ready: r.ready,
                succeeded: r.succeeded,
                failed: r.failed,
                active: r.active,
                suspended: r.suspended,
                job_restarts: r.job_restarts,
                job_restarts_count_towards_max: r.job_restarts_count_towards_max,
            }
        })
        .collect();
    JobSetStatus {
        conditions,
        restarts: s.restarts,
        restarts_count_towards_max: s.restarts_count_towards_max,
        terminal_state: s.terminal_state,
        replicated_jobs_status,
    }
}

/// The spec's replicatedJobs by name, the first of each name: one lookup per Job or status
/// entry instead of a scan, so conversion stays linear in the request.
fn replicated_jobs_by_name(spec: &JobSetSpec) -> HashMap<&str, &ReplicatedJob> {
    let mut out = HashMap::with_capacity(spec.replicated_jobs.len());
    for rj in &spec.replicated_jobs {
        out.entry(rj.name.as_str()).or_insert(rj);
    }
    out
}

/// The child Jobs, skipping any whose controller reference names another owner.
fn children_from_pb(
    jobs: Vec<pb::Job>,
    js: &JobSet,
    interrupt: &dyn Interrupt,
    errs: &mut Violations,
) -> Vec<ChildJob> {
    let mut names = HashSet::new();
    let by_name = replicated_jobs_by_name(&js.spec);
    let mut out = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.into_iter().enumerate() {
        if interrupt.interrupted() {
            break;
        }
        let path = format!("jobs[{i}]");
        let meta = job.metadata.unwrap_or_default();
        let owned_elsewhere = meta
            .owner_references
            .iter()
            .any(|o| o.controller == Some(true) && !js.uid.is_empty() && o.uid != js.uid);
        if owned_elsewhere {
            continue;
        }
        if meta.name.is_empty() {
            errs.push(
                format!("{path}.metadata.name"),
                ViolationKind::Required,
                None,
                "",
            );
        } else if meta.name.len() > MAX_OBJECT_NAME_BYTES {
            too_long(
                &meta.name,
                MAX_OBJECT_NAME_BYTES,
                format!("{path}.metadata.name"),
                "an object name's limit",
                errs,
            );
        } else if !names.insert(meta.name.clone()) {
            errs.push(
                format!("{path}.metadata.name"),
                ViolationKind::Duplicate,
                quote(&meta.name),
                "",
            );
        }
        if meta.uid.is_empty() {
            errs.push(
                format!("{path}.metadata.uid"),
                ViolationKind::Required,
                None,
                "deletions name the Job's uid as a precondition",
            );
        }
        let label = |key: &str| meta.labels.get(key).map(String::as_str);
        let lpath = |key: &str| format!("{path}.metadata.labels[{key}]");
        let restart_attempt = int_label(
            label(RESTART_ATTEMPT_KEY),
            &lpath(RESTART_ATTEMPT_KEY),
            true,
            errs,
        );
        // getChildJobs puts a Job of an earlier restart attempt among the previous ones before
        // reading any other label, so only the current attempt's Jobs need them.
        let previous = restart_attempt.is_some_and(|a| a < js.status.restarts);
        let mut scratch = Violations::default();
        let errs_current: &mut Violations = if previous { &mut scratch } else { errs };
        let job_restart_attempt = int_label(
            label(JOB_RESTART_ATTEMPT_KEY),
            &lpath(JOB_RESTART_ATTEMPT_KEY),
            false,
            errs_current,
        );
        let replicated_job = label(REPLICATED_JOB_NAME_KEY)
            .unwrap_or_default()
            .to_string();
        let rj = by_name.get(replicated_job.as_str()).copied();
        if replicated_job.is_empty() {
            errs_current.push(
                lpath(REPLICATED_JOB_NAME_KEY),
                ViolationKind::Required,
                None,
                "JobSet's controller needs it with the RestartJob feature gate on",
            );
        } else if rj.is_none() {
            errs_current.push(
                lpath(REPLICATED_JOB_NAME_KEY),
                ViolationKind::Invalid,
                quote(&replicated_job),
                "must name one of spec.replicatedJobs",
            );
        }
        let job_index = int_label(
            label(JOB_INDEX_KEY),
            &lpath(JOB_INDEX_KEY),
            true,
            errs_current,
        );
        if let (Some(idx), Some(rj)) = (job_index, rj)
            && !(0..rj.replicas).contains(&idx)
        {
            errs_current.push(
                lpath(JOB_INDEX_KEY),
                ViolationKind::Invalid,
                quote(&idx.to_string()),
                format!(
                    "must be in [0, {}), the replicas of replicatedJob {}",
                    rj.replicas,
                    go_quote(&rj.name)
                ),
            );
        }
        let spec = job.spec.unwrap_or_default();
        let status = job.status.unwrap_or_default();
        let conditions = status
            .conditions
            .into_iter()
            .enumerate()
            .map(|(k, c)| ChildJobCondition {
                last_transition_time: c.last_transition_time.as_ref().and_then(|ts| {
                    time_or_err(
                        ts,
                        &format!("{path}.status.conditions[{k}].lastTransitionTime"),
                        errs,
                    )
                }),
                condition_type: c.r#type,
                status: c.status,
                reason: c.reason,
                message: {
                    too_long(
                        &c.message,
                        MAX_CONDITION_MESSAGE_BYTES,
                        format!("{path}.status.conditions[{k}].message"),
                        "the patterns search it; the Job controller's messages are far shorter",
                        errs,
                    );
                    c.message
                },
            })
            .collect();
        // JobSet counts a Job ready once ready + succeeded Pods reach min(parallelism, completions).
        let parallelism = spec.parallelism.unwrap_or(1);
        let expected = spec.completions.map_or(parallelism, |c| c.min(parallelism));
        let ready_pods = i64::from(status.ready.unwrap_or(0)) + i64::from(status.succeeded);
        out.push(ChildJob {
            name: meta.name,
            uid: meta.uid,
            replicated_job,
            job_index: job_index.unwrap_or(0),
            restart_attempt: restart_attempt.unwrap_or(0),
            job_restart_attempt,
            conditions,
            deletion_pending: meta.deletion_timestamp.is_some(),
            ready: ready_pods >= i64::from(expected),
            has_active_pods: status.active > 0,
            suspended: spec.suspend.unwrap_or(false),
        });
    }
    out
}

/// A `TooLong` violation at `path` when `value` is longer than `max` bytes.
fn too_long(value: &str, max: usize, path: String, why: &str, errs: &mut Violations) {
    if value.len() > max {
        errs.push(
            path,
            ViolationKind::TooLong,
            None,
            format!(
                "may not be more than {max} bytes ({why}); it has {}",
                value.len()
            ),
        );
    }
}

/// An integer label; `required` ones must be present.
fn int_label(
    value: Option<&str>,
    path: &str,
    required: bool,
    errs: &mut Violations,
) -> Option<i32> {
    match value {
        None => {
            if required {
                errs.push(
                    path,
                    ViolationKind::Required,
                    None,
                    "JobSet's controller cannot place the Job without it",
                );
            }
            None
        }
        Some(v) => match v.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                errs.push(path, ViolationKind::Invalid, quote(v), "must be an integer");
                None
            }
        },
    }
}

#[cfg(test)]
mod tests;
