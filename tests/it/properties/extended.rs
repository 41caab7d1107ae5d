//! The extended failure policy in the property tests: random documents (the
//! domain value, as the wire crate would hand it over after validation) and
//! random pod failure details, the checks a plan of a Job with a document must
//! pass, and the feature properties (issue 15).
//!
//! Like the parent's generators, raw choices are bent into what validation
//! allows: FailIndex (as an action, `whenRetriesExhausted` or the pending
//! timeout's action) only with backoffLimitPerIndex; a retry limit only on a
//! named Count or Ignore rule; every rule with at least one matcher; an In
//! exit-code set without 0. Rules force restartPolicy Never (in `build_job`).

use super::*;
use job_decider_core::backoff::finished_time;
use job_decider_core::extended::backoff_schedule::BackoffSchedule;
use job_decider_core::extended::parse_rule_match_counts;
use job_decider_core::extended::rules::{DocumentRule, carried, first_document_rule, rule_action};
use job_decider_core::extended::timeouts::Timeout;
use job_decider_core::extended::{
    FAILED_NODES_ANNOTATION, PENDING_TIMEOUT_CONDITION, RULE_MATCH_COUNTS_ANNOTATION,
};
use job_decider_core::fixtures::deletions;
use job_decider_core::model::{
    AttemptDeadline, NodeReport, NodeSignals, NodeState, ReadyTimeout, TerminatingNodes,
    TerminatingTimeout,
};
use job_decider_core::model::{
    BackoffSettings, ConditionMatcher, ContainerReasonMatcher, ContainerTermination,
    ExitCodeMatcher, ExtendedAction, ExtendedFailurePolicy, ExtendedRule, FailureMessage,
    IgnoredFailureDelay, MessagePattern, NodeAvoidance, NodeAvoidanceMode, PendingTimeout,
    PodFailureDetails, RetryLimit,
};
use job_decider_core::time::Time as DeadlineTime;

/// The nodes of the simulated cluster; pods' details name them.
pub(super) const NODES: [&str; 5] = ["node-a", "node-b", "node-c", "node-d", "node-e"];
/// Rule names by position in the document (unique by construction); carried
/// counts on pods name them too, so they match often.
const RULE_NAMES: [&str; 4] = ["oom", "crash", "gpu", "disk"];
/// `status.reason` values of pods and `onPodReasons` values.
const POD_REASONS: [&str; 4] = ["", "UnexpectedAdmissionError", "Evicted", "NodeLost"];
/// Termination reasons of containers and `onContainerReasons` values.
const CONTAINER_REASONS: [&str; 4] = ["Error", "OOMKilled", "ContainerCannotRun", "Completed"];
/// Messages of pods and containers.
const MESSAGES: [&str; 5] = [
    "",
    "CUDA error: device lost",
    "out of memory",
    "Timeout waiting for volume",
    "xx",
];
/// `onMessage` patterns.
const PATTERNS: [&str; 4] = ["CUDA error", "^out of memory", "(?i)TIMEOUT", "x{2,}"];
/// Container waiting reasons; the first four are the pending timeout's default.
const WAITING_REASONS: [&str; 5] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "InvalidImageName",
    "ContainerCreating",
];
/// What `pendingTimeout.reasons` may list: the waiting reasons and `Unschedulable`.
const TIMEOUT_REASONS: [&str; 6] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "InvalidImageName",
    "ContainerCreating",
    "Unschedulable",
];
/// Signal numbers a rule may name (SIGKILL, SIGSEGV, SIGTERM): codes 137, 139, 143.
const SIGNALS: [i32; 3] = [9, 11, 15];

/// Raw choices of an `onExitCodes` matcher with ranges and signals.
#[derive(Clone, Debug)]
pub(super) struct RawExit {
    /// 0 any container, 1 "main", 2 "init".
    container: u8,
    operator_in: bool,
    values: BTreeSet<i32>,
    ranges: Vec<(i32, i32)>,
    /// Bit i: SIGNALS[i].
    signals: u8,
}

/// Raw choices of one document rule.
#[derive(Clone, Debug)]
pub(super) struct RawExtRule {
    named: bool,
    /// 0 FailJob, 1 FailIndex, 2 Ignore, 3 Count.
    action: u8,
    exit: Option<RawExit>,
    /// (type: 0 DisruptionTarget, 1 ConfigIssue, 2 the pending-timeout condition; status).
    conditions: Vec<(u8, u8)>,
    /// Bits over POD_REASONS[1..].
    pod_reasons: u8,
    /// (0 any container, 1 "main", 2 "init"; bits over CONTAINER_REASONS).
    container_reasons: Option<(u8, u8)>,
    message: Option<u8>,
    /// (maxRetries, whenRetriesExhausted FailIndex).
    limit: Option<(i32, bool)>,
}

/// A timeout's (seconds, action).
type RawTimeout = (i64, u8);

/// Raw choices of a whole document.
#[derive(Clone, Debug)]
pub(super) struct RawDoc {
    rules: Vec<RawExtRule>,
    /// (base, max above base, factor, jitter percent, Immediate).
    backoff: Option<(i64, i64, i32, i32, bool)>,
    /// (seconds, bits over TIMEOUT_REASONS (0: the default four), action).
    pending: Option<(i64, u8, u8)>,
    /// (Required, maxNodes).
    avoidance: Option<(bool, i32)>,
    /// `failureMessage: Detailed`.
    detailed: bool,
    /// readyTimeout and attemptDeadline.
    timeouts: (Option<RawTimeout>, Option<RawTimeout>),
    /// terminatingTimeout: (seconds, onNodes Unhealthy, action, forceDelete).
    terminating: Option<(i64, bool, u8, bool)>,
}

fn arb_exit() -> impl Strategy<Value = RawExit> {
    (
        0..3u8,
        any::<bool>(),
        prop::collection::btree_set(0..=5i32, 0..3),
        prop::collection::vec(
            prop_oneof![Just((128, 255)), Just((1, 3)), Just((2, 2)), Just((0, 4))],
            0..2,
        ),
        0..8u8,
    )
        .prop_map(
            |(container, operator_in, values, ranges, signals)| RawExit {
                container,
                operator_in,
                values,
                ranges,
                signals,
            },
        )
}

fn arb_ext_rule() -> impl Strategy<Value = RawExtRule> {
    (
        prop::bool::weighted(0.7),
        0..4u8,
        prop::option::weighted(0.5, arb_exit()),
        prop::collection::vec((0..3u8, 0..3u8), 0..2),
        prop_oneof![2 => Just(0u8), 1 => 1..8u8],
        prop::option::weighted(0.3, (0..3u8, 1..16u8)),
        prop::option::weighted(0.2, 0..4u8),
        prop::option::weighted(0.5, (0..=3i32, any::<bool>())),
    )
        .prop_map(
            |(named, action, exit, conditions, pod_reasons, container_reasons, message, limit)| {
                RawExtRule {
                    named,
                    action,
                    exit,
                    conditions,
                    pod_reasons,
                    container_reasons,
                    message,
                    limit,
                }
            },
        )
}

/// Raw documents: every part optional, rules 0 to 3.
pub(super) fn arb_doc() -> impl Strategy<Value = RawDoc> {
    (
        prop::collection::vec(arb_ext_rule(), 0..4),
        prop::option::weighted(
            0.5,
            (
                1..=30i64,
                prop_oneof![Just(0i64), 1..900i64],
                prop_oneof![Just(1), Just(2), Just(3), Just(10)],
                prop_oneof![Just(0), 1..=100i32],
                any::<bool>(),
            ),
        ),
        prop::option::weighted(0.5, (1..=900i64, 0..64u8, 0..4u8)),
        prop::option::weighted(0.6, (any::<bool>(), prop_oneof![1..=3i32, Just(50)])),
        any::<bool>(),
        (
            prop::option::weighted(0.3, (1..=900i64, 0..4u8)),
            prop::option::weighted(0.3, (1..=1800i64, 0..4u8)),
        ),
        // Mostly shorter than the generated pods have been terminating.
        prop::option::weighted(
            0.4,
            (
                prop_oneof![2 => 1..=120i64, 1 => 121..=900i64],
                any::<bool>(),
                0..4u8,
                any::<bool>(),
            ),
        ),
    )
        .prop_map(
            |(rules, backoff, pending, avoidance, detailed, timeouts, terminating)| RawDoc {
                rules,
                backoff,
                pending,
                avoidance,
                detailed,
                timeouts,
                terminating,
            },
        )
}

/// An action valid for the Job: FailIndex only with backoffLimitPerIndex.
fn action(raw: u8, per_index: bool) -> ExtendedAction {
    match raw {
        0 => ExtendedAction::FailJob,
        1 if per_index => ExtendedAction::FailIndex,
        2 => ExtendedAction::Ignore,
        _ => ExtendedAction::Count,
    }
}

fn container_name(raw: u8, init_container: bool) -> Option<String> {
    match raw {
        1 => Some("main".into()),
        2 if init_container => Some("init".into()),
        _ => None,
    }
}

/// Sorted, disjoint, inclusive intervals of a set of codes.
fn intervals(mut codes: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    codes.sort_unstable();
    let mut out: Vec<(i32, i32)> = Vec::new();
    for (a, b) in codes {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn build_exit(raw: &RawExit, init_container: bool) -> ExitCodeMatcher {
    let mut codes: Vec<(i32, i32)> = raw.values.iter().map(|&v| (v, v)).collect();
    codes.extend(raw.ranges.iter().copied());
    for (bit, n) in SIGNALS.iter().enumerate() {
        if raw.signals & (1 << bit) != 0 {
            codes.push((128 + n, 128 + n));
        }
    }
    if raw.operator_in {
        // In may not hold 0: drop it, starting ranges at 1.
        codes = codes
            .into_iter()
            .filter(|&(_, b)| b >= 1)
            .map(|(a, b)| (a.max(1), b))
            .collect();
    }
    if codes.is_empty() {
        codes.push((1, 1));
    }
    ExitCodeMatcher {
        container_name: container_name(raw.container, init_container),
        operator: if raw.operator_in {
            ExitCodeOperator::In
        } else {
            ExitCodeOperator::NotIn
        },
        codes: intervals(codes),
    }
}

fn picked<const N: usize>(names: &[&str; N], bits: u8, skip_first: bool) -> Vec<String> {
    let from = usize::from(skip_first);
    names[from..]
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| n.to_string())
        .collect()
}

fn build_ext_rule(
    raw: &RawExtRule,
    position: usize,
    per_index: bool,
    init_container: bool,
) -> ExtendedRule {
    let action = action(raw.action, per_index);
    let mut rule = ExtendedRule {
        name: None,
        action,
        on_exit_codes: raw.exit.as_ref().map(|e| build_exit(e, init_container)),
        on_pod_conditions: raw
            .conditions
            .iter()
            .map(|&(ty, status)| ConditionMatcher {
                condition_type: ["DisruptionTarget", "ConfigIssue", PENDING_TIMEOUT_CONDITION]
                    [usize::from(ty)]
                .into(),
                status: condition_status(status),
            })
            .collect(),
        on_pod_reasons: picked(&POD_REASONS, raw.pod_reasons, true),
        on_container_reasons: raw.container_reasons.map(|(container, bits)| {
            ContainerReasonMatcher {
                container_name: container_name(container, init_container),
                reasons: picked(&CONTAINER_REASONS, bits, false),
            }
        }),
        on_message: raw.message.map(|p| {
            let source = PATTERNS[usize::from(p)];
            MessagePattern::new(source).expect("a fixed pattern compiles")
        }),
        retry_limit: None,
    };
    let has_matcher = rule.on_exit_codes.is_some()
        || !rule.on_pod_conditions.is_empty()
        || !rule.on_pod_reasons.is_empty()
        || rule.on_container_reasons.is_some()
        || rule.on_message.is_some();
    if !has_matcher {
        rule.on_container_reasons = Some(ContainerReasonMatcher {
            container_name: None,
            reasons: vec!["OOMKilled".into()],
        });
    }
    // A limit needs a name and a Count or Ignore rule.
    let limit = raw
        .limit
        .filter(|_| matches!(action, ExtendedAction::Count | ExtendedAction::Ignore));
    if raw.named || limit.is_some() {
        rule.name = Some(RULE_NAMES[position].into());
    }
    rule.retry_limit = limit.map(|(max_retries, fail_index)| RetryLimit {
        max_retries,
        then: if fail_index && per_index {
            ExtendedAction::FailIndex
        } else {
            ExtendedAction::FailJob
        },
    });
    rule
}

/// The document validation would accept for a Job with these properties.
pub(super) fn build_doc(
    raw: &RawDoc,
    per_index: bool,
    init_container: bool,
) -> ExtendedFailurePolicy {
    ExtendedFailurePolicy {
        terminating_timeout: raw
            .terminating
            .map(
                |(seconds, unhealthy, act, force_delete)| TerminatingTimeout {
                    seconds,
                    on_nodes: if unhealthy {
                        TerminatingNodes::Unhealthy
                    } else {
                        TerminatingNodes::Any
                    },
                    action: action(act, per_index),
                    force_delete,
                },
            ),
        rules: raw
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| build_ext_rule(r, i, per_index, init_container))
            .collect(),
        backoff: raw
            .backoff
            .map(|(base, extra, factor, jitter, immediate)| BackoffSettings {
                base_seconds: base,
                max_seconds: base + extra,
                factor,
                jitter_percent: jitter,
                after_ignored_failure: if immediate {
                    IgnoredFailureDelay::Immediate
                } else {
                    IgnoredFailureDelay::Delay
                },
            }),
        pending_timeout: raw.pending.map(|(seconds, bits, act)| PendingTimeout {
            seconds,
            reasons: if bits == 0 {
                TIMEOUT_REASONS[..4].iter().map(|r| r.to_string()).collect()
            } else {
                picked(&TIMEOUT_REASONS, bits, false)
            },
            action: action(act, per_index),
        }),
        ready_timeout: raw.timeouts.0.map(|(seconds, act)| ReadyTimeout {
            seconds,
            action: action(act, per_index),
        }),
        attempt_deadline: raw.timeouts.1.map(|(seconds, act)| AttemptDeadline {
            seconds,
            action: action(act, per_index),
        }),
        node_avoidance: raw.avoidance.map(|(required, max_nodes)| NodeAvoidance {
            mode: if required {
                NodeAvoidanceMode::Required
            } else {
                NodeAvoidanceMode::Preferred
            },
            max_nodes,
        }),
        failure_message: if raw.detailed {
            FailureMessage::Detailed
        } else {
            FailureMessage::Upstream
        },
    }
}

/// Raw choices of a pod's failure details.
#[derive(Clone, Debug)]
pub(super) struct RawDetails {
    reason: u8,
    message: u8,
    node: Option<u8>,
    /// (init container, index into WAITING_REASONS).
    waiting: Vec<(bool, u8)>,
    /// Termination (reason, message) of "main" and "init", when terminated.
    terminations: [(u8, u8); 2],
    /// (seconds before NOW, milliseconds more).
    scheduled: Option<(i64, i64)>,
    unschedulable: bool,
    /// (RULE_NAMES index, count); counts may exceed any limit.
    carried: Vec<(u8, i32)>,
    failed_nodes: Vec<u8>,
    /// A Failed pod carries the pending-timeout condition (we failed it earlier).
    pub(super) timed_out: bool,
    /// `status.startTime`, seconds before NOW.
    started: Option<i64>,
    /// The Ready condition's reason is set.
    ready_reason: bool,
}

/// Raw details from one random 128-bit number, digit by digit in mixed
/// radix: drawing a dozen strategies per pod doubled the generation time of
/// every snapshot; shrinking the number towards 0 still simplifies the details
/// (no reason, message, node, wait or carried annotation).
pub(super) fn arb_details() -> impl Strategy<Value = RawDetails> {
    any::<u128>().prop_map(|mut bits| {
        // The next digit in base n.
        let mut take = |n: u128| -> u8 {
            let d = bits % n;
            bits /= n;
            u8::try_from(d).unwrap_or(0)
        };
        let reason = take(8).saturating_sub(4);
        let message = take(8).saturating_sub(3);
        let node = Some(take(10)).filter(|&v| v >= 4).map(|v| (v - 4) % 5);
        let waiting_len = take(3);
        let waiting = (0..waiting_len).map(|_| (take(5) == 0, take(5))).collect();
        let terminations = [(take(4), take(5)), (take(4), take(5))];
        let scheduled = (take(2) == 0).then(|| {
            let secs = i64::from(take(40)) * 50 + i64::from(take(50));
            let millis = if take(4) == 0 {
                i64::from(take(250)) * 4
            } else {
                0
            };
            (secs, millis)
        });
        let unschedulable = take(5) == 0;
        let carried_len = take(3);
        let carried = (0..carried_len)
            .map(|_| (take(4), i32::from(take(4))))
            .collect();
        let nodes_len = take(3);
        let failed_nodes = (0..nodes_len).map(|_| take(5)).collect();
        let timed_out = take(10) < 3;
        let started = (take(4) != 0).then(|| i64::from(take(40)) * 50 + i64::from(take(50)));
        let ready_reason = take(2) == 0;
        RawDetails {
            reason,
            message,
            node,
            waiting,
            terminations,
            scheduled,
            unschedulable,
            carried,
            failed_nodes,
            timed_out,
            started,
            ready_reason,
        }
    })
}

/// The details the wire conversion would fill for `pod`: its terminated
/// containers get a reason and message; the annotations read leniently.
pub(super) fn build_details(raw: &RawDetails, pod: &Pod) -> PodFailureDetails {
    let terminations = pod
        .container_statuses
        .iter()
        .map(|c| (c, false, raw.terminations[0]))
        .chain(
            pod.init_container_statuses
                .iter()
                .map(|c| (c, true, raw.terminations[1])),
        )
        .filter(|(c, _, _)| c.terminated.is_some())
        .map(
            |(c, init_container, (reason, message))| ContainerTermination {
                container: c.name.clone(),
                init_container,
                reason: CONTAINER_REASONS[usize::from(reason)].into(),
                message: MESSAGES[usize::from(message)].into(),
            },
        )
        .collect();
    let counts: Vec<String> = raw
        .carried
        .iter()
        .map(|&(name, count)| format!("{}={count}", RULE_NAMES[usize::from(name)]))
        .collect();
    PodFailureDetails {
        reason: POD_REASONS[usize::from(raw.reason)].into(),
        message: MESSAGES[usize::from(raw.message)].into(),
        node_name: raw
            .node
            .map_or(String::new(), |n| NODES[usize::from(n)].into()),
        waiting_reasons: raw
            .waiting
            .iter()
            .map(|&(init, reason)| {
                (
                    Arc::from(if init { "init" } else { "main" }),
                    WAITING_REASONS[usize::from(reason)].to_string(),
                )
            })
            .collect(),
        terminations,
        scheduled_at: raw.scheduled.map(|(secs, millis)| {
            Time::from_unix_nanos((NOW - secs) * 1_000_000_000 - millis * 1_000_000)
        }),
        unschedulable: raw.unschedulable,
        start_time: raw
            .started
            .map(|secs| Time::from_unix_nanos((NOW - secs) * 1_000_000_000)),
        ready_reason: if raw.ready_reason {
            "ContainersNotReady".into()
        } else {
            String::new()
        },
        rule_match_counts: parse_rule_match_counts(&counts.join(",")),
        failed_nodes: raw
            .failed_nodes
            .iter()
            .map(|&n| NODES[usize::from(n)].to_string())
            .collect(),
    }
}

/// The details of a pod the simulated cluster creates from `c`: what the
/// conversion parses back from the annotations the plan put on it, and the
/// node the world placed it on (see [`place`]).
pub(super) fn created_details(c: &PodCreation, node: Option<&str>) -> PodFailureDetails {
    PodFailureDetails {
        node_name: node.unwrap_or_default().into(),
        rule_match_counts: c
            .annotations
            .get(RULE_MATCH_COUNTS_ANNOTATION)
            .map(|v| parse_rule_match_counts(v))
            .unwrap_or_default(),
        failed_nodes: c
            .annotations
            .get(FAILED_NODES_ANNOTATION)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        ..PodFailureDetails::default()
    }
}

/// The node the simulated scheduler picks for a creation: the `n`-th node of
/// the cluster that a Required avoid list allows (a Preferred list is
/// honoured when it can be), or none when a Required list covers them all.
pub(super) fn place(c: &PodCreation, n: usize) -> Option<&'static str> {
    let avoided = |node: &str| {
        c.avoid_nodes
            .as_ref()
            .is_some_and(|a| a.nodes.iter().any(|x| x == node))
    };
    let allowed: Vec<&'static str> = NODES.iter().copied().filter(|x| !avoided(x)).collect();
    match (&c.avoid_nodes, allowed.is_empty()) {
        (Some(a), true) if a.mode == NodeAvoidanceMode::Required => None,
        (_, true) => Some(NODES[n % NODES.len()]),
        (_, false) => Some(allowed[n % allowed.len()]),
    }
}

/// How the Job's policies handle a failed pod before any retry limit: the
/// document's first rule that holds, else `spec.podFailurePolicy`'s.
/// `Some(true)` when that handling is Ignore.
pub(super) fn document_ignores(job: &Job, pod: &Pod) -> Option<bool> {
    let policy = job.extended_failure_policy.as_deref()?;
    let rule = first_document_rule(policy, pod)?;
    Some(rule_action(policy, rule) == ExtendedAction::Ignore)
}

// ---------------------------------------------------------------------------------------------
// The plan checks of the extended features.

/// The checks of the features a plan carries for a Job with a document (and
/// that a plan of a Job without one carries none of them).
pub(super) fn check_extended_plan(s: &Snapshot, plan: &Plan) -> Result<(), TestCaseError> {
    let job = &s.job;
    let doc = job.extended_failure_policy.as_deref();
    let mut failed_uids = BTreeSet::new();
    for action in &plan.actions {
        match action {
            Action::FailPods(failures) => {
                let Some(doc) = doc else {
                    return Err(TestCaseError::fail("FailPods without a document"));
                };
                prop_assert!(
                    Timeout::ALL.iter().any(|t| t.in_force(doc)),
                    "FailPods without a timeout"
                );
                prop_assert!(
                    !job.status.is_finished() && !job.spec.suspend && !job.being_deleted,
                    "FailPods of a finished, suspended or deleted Job"
                );
                let active = claimed_active(s);
                let terminating = claimed_terminating(s);
                for f in failures {
                    prop_assert!(
                        failed_uids.insert(f.pod.uid.clone()),
                        "{} failed twice",
                        f.pod.uid
                    );
                    let by = Timeout::of_condition(&f.condition_type);
                    prop_assert!(by.is_some(), "FailPods condition {}", f.condition_type);
                    // The terminating timeout fails pods being deleted; the others active ones.
                    let (pods, which) = if by == Some(Timeout::Terminating) {
                        (&terminating, "a terminating")
                    } else {
                        (&active, "an active")
                    };
                    prop_assert!(
                        pods.contains(&f.pod.uid),
                        "FailPods names {}, not {} pod of the Job",
                        f.pod.uid,
                        which
                    );
                    let force = by == Some(Timeout::Terminating)
                        && doc.terminating_timeout.is_some_and(|t| t.force_delete);
                    prop_assert_eq!(
                        f.force_delete,
                        force,
                        "FailPods of {} force-deletes {}",
                        &f.pod.uid,
                        f.force_delete
                    );
                    let pod = s.pods.iter().find(|p| p.uid == f.pod.uid).unwrap();
                    // The timeout that fails it has passed, and came first of those passed.
                    let passed = deadlines_of(doc, pod, &s.nodes)
                        .into_iter()
                        .filter(|(d, _)| *d <= s.now)
                        .min();
                    prop_assert_eq!(
                        passed.map(|(_, t)| t),
                        by,
                        "FailPods names {} by the wrong timeout",
                        &f.pod.uid
                    );
                    if by == Some(Timeout::Pending) {
                        prop_assert_eq!(&f.condition_type, PENDING_TIMEOUT_CONDITION);
                    }
                }
            }
            Action::CreatePods(creations) => {
                for c in creations {
                    check_creation(s, c)?;
                }
            }
            _ => {}
        }
    }
    if doc.is_none() {
        prop_assert!(failed_uids.is_empty(), "FailPods without a document");
    }
    check_every_stuck_pod_handled(s, plan, &failed_uids)
}

/// Each timeout's deadline for the pod, read from its own module (`None`s
/// dropped), with the timeout: the order of the pairs is the spec's. A pod
/// being deleted can reach only its terminating timeout (on the `nodes` the
/// request reports); the other three are for active pods.
fn deadlines_of(
    doc: &ExtendedFailurePolicy,
    pod: &Pod,
    nodes: &[NodeReport],
) -> Vec<(DeadlineTime, Timeout)> {
    use job_decider_core::extended::{attempt_deadline, pending_timeout, ready_timeout};
    let mut out = Vec::new();
    if pod.deletion.is_some() {
        let deadline = doc
            .terminating_timeout
            .as_ref()
            .and_then(|t| terminating_deadline(t, pod, nodes));
        out.extend(deadline.map(|d| (d, Timeout::Terminating)));
        return out;
    }
    if let Some((p, st)) = doc
        .pending_timeout
        .as_ref()
        .and_then(|p| pending_timeout::stuck(p, pod).map(|st| (p, st)))
    {
        out.push((st.deadline(p), Timeout::Pending));
    }
    if let Some(d) = doc
        .ready_timeout
        .as_ref()
        .and_then(|r| ready_timeout::deadline(r, pod))
    {
        out.push((d, Timeout::Ready));
    }
    if let Some(d) = doc
        .attempt_deadline
        .as_ref()
        .and_then(|a| attempt_deadline::deadline(a, pod))
    {
        out.push((d, Timeout::Attempt));
    }
    out
}

/// The terminating timeout's deadline for a pod being deleted, written out
/// apart from the core: `seconds` after its deletionTimestamp while it is not
/// terminal; with `onNodes: Unhealthy` only on a reported node that is
/// missing, not Ready (False or Unknown), tainted unhealthy (the generated
/// reports carry only those taints) or in maintenance.
fn terminating_deadline(
    t: &TerminatingTimeout,
    pod: &Pod,
    nodes: &[NodeReport],
) -> Option<DeadlineTime> {
    let deletion = pod.deletion.as_ref()?;
    if matches!(pod.phase, PodPhase::Succeeded | PodPhase::Failed) {
        return None;
    }
    if t.on_nodes == TerminatingNodes::Unhealthy {
        let node = pod.failure_details.as_ref().map(|d| d.node_name.as_str())?;
        let report = nodes.iter().find(|n| n.name == node)?;
        let unhealthy = match &report.state {
            NodeState::Missing => true,
            NodeState::Present(n) => {
                matches!(
                    n.ready,
                    Some(ConditionStatus::False | ConditionStatus::Unknown)
                ) || !n.unhealthy_taints.is_empty()
                    || n.maintenance_in_progress == Some(ConditionStatus::True)
            }
        };
        if !unhealthy {
            return None;
        }
    }
    let seconds = u64::try_from(t.seconds).ok()?;
    Some(
        deletion
            .timestamp
            .saturating_add(Duration::from_secs(seconds)),
    )
}

/// Of a Job that keeps running through this sync, every active pod past one
/// of its timeouts (pending, ready, attempt), and every terminating pod past
/// its terminating timeout, is failed (unless the plan deletes it), and the
/// plan asks to decide again by the time the next pod reaches its earliest
/// deadline.
fn check_every_stuck_pod_handled(
    s: &Snapshot,
    plan: &Plan,
    failed_uids: &BTreeSet<String>,
) -> Result<(), TestCaseError> {
    let job = &s.job;
    let Some(doc) = job
        .extended_failure_policy
        .as_deref()
        .filter(|d| Timeout::ALL.iter().any(|t| t.in_force(d)))
    else {
        return Ok(());
    };
    let finishing = [
        JobConditionType::FailureTarget,
        JobConditionType::SuccessCriteriaMet,
    ]
    .into_iter()
    .any(|ty| has(&job.status, ty.clone()) || writes(plan, ty));
    if finishing
        || job.status.is_finished()
        || job.spec.suspend
        || job.being_deleted
        || job.spec.managed_by.is_some()
        || s.expectations.pod_changes_pending
    {
        return Ok(());
    }
    let deleted: BTreeSet<&str> = deletions(plan)
        .into_iter()
        .map(|d| d.pod.uid.as_str())
        .collect();
    let mut claimed = claimed_active(s);
    claimed.extend(claimed_terminating(s));
    for p in s.pods.iter().filter(|p| claimed.contains(&p.uid)) {
        let Some((deadline, _)) = deadlines_of(doc, p, &s.nodes).into_iter().min() else {
            continue;
        };
        if deadline <= s.now {
            prop_assert!(
                failed_uids.contains(&p.uid) || deleted.contains(p.uid.as_str()),
                "pod {} past its timeout is not failed",
                p.uid
            );
        } else {
            let wait = deadline.saturating_since(s.now);
            prop_assert!(
                plan.requeue_after
                    .is_some_and(|r| r <= wait.max(Duration::from_secs(1))),
                "pod {} times out in {:?}; requeue {:?}",
                p.uid,
                wait,
                plan.requeue_after
            );
        }
    }
    Ok(())
}

/// A creation's avoid list: only with nodeAvoidance, at most maxNodes distinct
/// nodes, each one where a pod of the scope failed (or that a pod of the scope
/// carries), the node of the scope's latest visible failure among them, the
/// annotation saying the same; the counts annotation only with a retry limit.
fn check_creation(s: &Snapshot, c: &PodCreation) -> Result<(), TestCaseError> {
    let job = &s.job;
    let doc = job.extended_failure_policy.as_deref();
    let settings = doc.and_then(|d| d.node_avoidance);
    let annotation = c.annotations.get(FAILED_NODES_ANNOTATION);
    let Some(settings) = settings else {
        prop_assert!(
            c.avoid_nodes.is_none() && annotation.is_none(),
            "avoid_nodes without nodeAvoidance"
        );
        if doc.is_none_or(|d| d.rules.iter().all(|r| r.retry_limit.is_none())) {
            prop_assert!(
                !c.annotations.contains_key(RULE_MATCH_COUNTS_ANNOTATION),
                "rule-match-counts without a retry limit"
            );
        }
        return Ok(());
    };
    let scope: Vec<&Pod> = s
        .pods
        .iter()
        .filter(|p| !job.spec.is_indexed() || p.completion_index == c.completion_index)
        .filter(|p| p.controller.as_ref().is_some_and(|o| o.uid == JOB_UID) && job_selects(job, p))
        .collect();
    let node_of = |p: &Pod| {
        p.failure_details
            .as_deref()
            .map(|d| d.node_name.clone())
            .filter(|n| !n.is_empty())
    };
    let latest_failure = scope
        .iter()
        .filter(|p| p.phase == PodPhase::Failed)
        .filter_map(|p| node_of(p).map(|n| ((finished_time(p), p.name.clone()), n)))
        .max();
    let nodes = c
        .avoid_nodes
        .as_ref()
        .map(|a| a.nodes.clone())
        .unwrap_or_default();
    prop_assert!(
        nodes.len() <= usize::try_from(settings.max_nodes).unwrap_or(0),
        "{} nodes avoided, maxNodes {}",
        nodes.len(),
        settings.max_nodes
    );
    let distinct: BTreeSet<&String> = nodes.iter().collect();
    prop_assert_eq!(
        distinct.len(),
        nodes.len(),
        "a node avoided twice: {:?}",
        nodes
    );
    if let Some(a) = &c.avoid_nodes {
        prop_assert_eq!(a.mode, settings.mode);
        prop_assert!(!a.nodes.is_empty(), "an empty avoid list");
        let joined = a.nodes.join(",");
        prop_assert_eq!(annotation.map(String::as_str), Some(joined.as_str()));
    } else {
        prop_assert!(
            annotation.is_none(),
            "failed-nodes annotation without avoid_nodes"
        );
    }
    // The claimed pods may include adopted orphans: their nodes may be listed too.
    let known = |n: &String| {
        s.pods.iter().any(|p| {
            p.failure_details
                .as_deref()
                .is_some_and(|d| d.node_name == *n || d.failed_nodes.contains(n))
        })
    };
    for n in &nodes {
        prop_assert!(
            known(n),
            "avoided node {} appears nowhere in the snapshot",
            n
        );
    }
    // Which failures the core sees (adopted orphans, terminating pods taken
    // for failed) is its business; when the scope names no more nodes than
    // maxNodes in all, every one of them is kept, the latest failure's too.
    let named: BTreeSet<String> = s
        .pods
        .iter()
        .filter(|p| !job.spec.is_indexed() || p.completion_index == c.completion_index)
        .filter_map(|p| p.failure_details.as_deref())
        .flat_map(|d| {
            d.failed_nodes
                .iter()
                .cloned()
                .chain(Some(d.node_name.clone()))
        })
        .filter(|n| !n.is_empty())
        .collect();
    let all_fit = named.len() <= usize::try_from(settings.max_nodes).unwrap_or(0);
    if let (Some((_, node)), true) = (latest_failure, all_fit) {
        prop_assert!(
            nodes.contains(&node),
            "the replacement of index {:?} may land on {}, where its scope last failed; avoids {:?}",
            c.completion_index,
            node,
            nodes
        );
    }
    Ok(())
}

/// The longest requeue the Job's settings allow: the backoff's cap with its
/// whole jitter, the active deadline, or a timeout.
pub(super) fn requeue_bound(job: &Job) -> Option<Duration> {
    let doc = job.extended_failure_policy.as_deref()?;
    let b = doc.backoff?;
    let jitter = u32::try_from(b.jitter_percent).unwrap_or(0);
    let cap = Duration::from_secs(u64::try_from(b.max_seconds).unwrap_or(0)) * (100 + jitter) / 100;
    let deadline = job
        .spec
        .active_deadline_seconds
        .map_or(Duration::ZERO, |d| {
            Duration::from_secs(u64::try_from(d).unwrap_or(0))
        });
    let secs = |s: i64| Duration::from_secs(u64::try_from(s).unwrap_or(0));
    let pending = doc
        .pending_timeout
        .as_ref()
        .map_or(Duration::ZERO, |p| secs(p.seconds));
    let ready = doc
        .ready_timeout
        .map_or(Duration::ZERO, |p| secs(p.seconds));
    let attempt = doc
        .attempt_deadline
        .map_or(Duration::ZERO, |p| secs(p.seconds));
    // Deletion timestamps are generated in the past, so a pod waits at most this.
    let terminating = doc
        .terminating_timeout
        .map_or(Duration::ZERO, |p| secs(p.seconds));
    Some(
        cap.max(deadline)
            .max(pending)
            .max(ready)
            .max(attempt)
            .max(terminating),
    )
}

/// For each limited rule of a Job with a document and each scope, the pods
/// that a sync counts now and whose match is past the rule's maxRetries among
/// the visible failed pods of the scope that matched it; each must make the
/// plan fail the Job (or its index, for whenRetriesExhausted FailIndex).
/// `None` when the snapshot is outside what this judges (see the property).
pub(super) fn exhausted_now(s: &Snapshot) -> Vec<(Option<i32>, RetryLimit, String)> {
    let job = &s.job;
    let Some(doc) = job.extended_failure_policy.as_deref() else {
        return vec![];
    };
    let owned =
        |p: &&Pod| p.controller.as_ref().is_some_and(|o| o.uid == JOB_UID) && job_selects(job, p);
    let mut by_scope: BTreeMap<(Option<i32>, usize), Vec<&Pod>> = BTreeMap::new();
    for p in s
        .pods
        .iter()
        .filter(owned)
        .filter(|p| p.phase == PodPhase::Failed)
    {
        let Some(DocumentRule::Rule(i)) = first_document_rule(doc, p) else {
            continue;
        };
        let i = usize::from(i);
        if doc.rules[i].retry_limit.is_none() {
            continue;
        }
        let scope = if job.spec.is_indexed() {
            match valid_index(job, p) {
                Some(ix) => Some(ix),
                None => continue,
            }
        } else {
            None
        };
        by_scope.entry((scope, i)).or_default().push(p);
    }
    let uncounted: BTreeSet<&String> = uncounted_uids(&job.status).collect();
    let mut out = Vec::new();
    for ((scope, i), mut pods) in by_scope {
        let rule = &doc.rules[i];
        let limit = rule.retry_limit.unwrap();
        let name = rule.name.as_deref().unwrap_or_default();
        pods.sort_by_key(|p| (finished_time(p), p.name.clone()));
        for (rank, p) in pods.iter().enumerate() {
            let ordinal = (rank as i64 + 1).max(i64::from(carried(p, name)) + 1);
            if ordinal > i64::from(limit.max_retries)
                && p.has_tracking_finalizer
                && p.deletion.is_none()
                && !uncounted.contains(&p.uid)
            {
                out.push((scope, limit, p.uid.clone()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The properties with a document.

/// Whether a plan writes a status with a true condition of this type.
fn writes(plan: &Plan, ty: JobConditionType) -> bool {
    plan.actions
        .iter()
        .any(|a| matches!(a, Action::UpdateStatus(st) if has(st, ty.clone())))
}

/// Raw choices of one of [`NODES`] in a request: (0 not reported, 1 missing,
/// else present; Ready 0 True, 1 False, 2 Unknown, 3 absent; bits over
/// `UNHEALTHY_TAINTS`; MaintenanceInProgress 0 absent, 1 True, 2 False).
type RawNode = (u8, u8, u8, u8);

/// The nodes a request reports: about a third present and healthy, so that
/// `onNodes: Unhealthy` both spares and fails pods.
pub(super) fn arb_nodes() -> impl Strategy<Value = Vec<NodeReport>> {
    prop::collection::vec(
        (
            prop_oneof![1 => Just(0u8), 1 => Just(1u8), 4 => Just(2u8)],
            prop_oneof![2 => Just(0u8), 1 => 1..4u8],
            prop_oneof![3 => Just(0u8), 1 => 1..8u8],
            prop_oneof![3 => Just(0u8), 1 => 1..3u8],
        ),
        NODES.len(),
    )
    .prop_map(|raw| build_nodes(&raw))
}

/// The reports of the raw nodes, sorted by name as the wire sorts them.
fn build_nodes(raw: &[RawNode]) -> Vec<NodeReport> {
    use job_decider_core::extended::node_health::UNHEALTHY_TAINTS;
    let status = |n: u8| match n {
        0 => Some(ConditionStatus::True),
        1 => Some(ConditionStatus::False),
        2 => Some(ConditionStatus::Unknown),
        _ => None,
    };
    NODES
        .iter()
        .zip(raw)
        .filter_map(|(name, &(kind, ready, taints, maintenance))| {
            let state = match kind {
                0 => return None,
                1 => NodeState::Missing,
                _ => NodeState::Present(NodeSignals {
                    ready: status(ready),
                    maintenance_in_progress: maintenance.checked_sub(1).and_then(status),
                    unhealthy_taints: UNHEALTHY_TAINTS
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| taints >> i & 1 == 1)
                        .map(|(_, k)| k.to_string())
                        .collect(),
                }),
            };
            Some(NodeReport {
                name: name.to_string(),
                state,
            })
        })
        .collect()
}

/// Snapshots whose Job always carries a document; half of them calmed down
/// (no backoff limit to pass, not suspended, no condition yet) so that
/// their pods' failures, timeouts and replacements are decided rather than
/// cut short by the Job finishing.
fn arb_doc_snapshot(max_pods: usize) -> impl Strategy<Value = Snapshot> {
    (arb_snapshot_with(max_pods, 1.0), any::<bool>(), arb_nodes()).prop_map(
        |(mut s, calm, nodes)| {
            s.nodes = nodes;
            if calm {
                s.job.spec.backoff_limit = i32::MAX;
                s.job.spec.suspend = false;
                s.job.spec.parallelism = s.job.spec.parallelism.max(4);
                s.job.status.conditions.clear();
                s.state.backoff = BackoffRecord::default();
            }
            s
        },
    )
}

/// The snapshot with a limited rule first in its document that matches most
/// failed pods (any container termination reason), so that scopes often
/// pass the limit: Count or Ignore, then FailJob or (with
/// backoffLimitPerIndex) FailIndex.
fn with_limited_rule(s: Snapshot, max_retries: i32, ignore: bool, fail_index: bool) -> Snapshot {
    let mut s = s;
    let per_index = s.job.spec.uses_backoff_limit_per_index();
    let mut doc = (**s.job.extended_failure_policy.as_ref().unwrap()).clone();
    doc.rules.insert(
        0,
        ExtendedRule {
            name: Some("limited".into()),
            action: if ignore {
                ExtendedAction::Ignore
            } else {
                ExtendedAction::Count
            },
            on_exit_codes: None,
            on_pod_conditions: vec![],
            on_pod_reasons: vec![],
            on_container_reasons: Some(ContainerReasonMatcher {
                container_name: None,
                reasons: CONTAINER_REASONS.iter().map(|r| r.to_string()).collect(),
            }),
            on_message: None,
            retry_limit: Some(RetryLimit {
                max_retries,
                then: if fail_index && per_index {
                    ExtendedAction::FailIndex
                } else {
                    ExtendedAction::FailJob
                },
            }),
        },
    );
    doc.rules.truncate(20);
    s.job.extended_failure_policy = Some(Arc::new(doc));
    s.job.spec.template.restart_policy = RestartPolicy::Never;
    s
}

proptest! {
    #![proptest_config(cases(64))]

    /// 1 and 2 with a document: no panic, every plan keeps the invariants and
    /// the extended checks (FailPods only for stuck pods, avoid lists).
    #[test]
    fn document_plans_keep_the_invariants(s in arb_doc_snapshot(8)) {
        let plan = decide(&s);
        check_plan(&s, &plan)?;
    }

    /// 1, fuzz-ish, with a document: wild pods (any times, counters,
    /// indexes) with wild details (any scheduling time, huge carried counts)
    /// never make `decide` panic.
    #[test]
    fn never_panics_on_wild_pods_with_a_document(
        s in arb_wild_snapshot(),
        raw in arb_doc(),
        details in prop::collection::vec((arb_details(), prop::option::of(any::<i64>()), any::<i32>()), 8),
        extreme in any::<bool>(),
    ) {
        let mut s = s;
        let per_index = s.job.spec.uses_backoff_limit_per_index();
        let init = !s.job.spec.template.init_containers.is_empty();
        let mut doc = build_doc(&raw, per_index, init);
        if extreme {
            // The largest values validation allows.
            doc.backoff = Some(BackoffSettings {
                base_seconds: 86_400,
                max_seconds: 86_400,
                factor: 10,
                jitter_percent: 100,
                after_ignored_failure: IgnoredFailureDelay::Immediate,
            });
            if let Some(p) = doc.pending_timeout.as_mut() {
                p.seconds = 604_800;
            }
            if let Some(p) = doc.ready_timeout.as_mut() {
                p.seconds = 604_800;
            }
            if let Some(p) = doc.attempt_deadline.as_mut() {
                p.seconds = 2_592_000;
            }
            if let Some(n) = doc.node_avoidance.as_mut() {
                n.max_nodes = 50;
            }
        }
        s.job.extended_failure_policy = Some(Arc::new(doc));
        if !s.job.extended_failure_policy.as_ref().unwrap().rules.is_empty() {
            s.job.spec.template.restart_policy = RestartPolicy::Never;
        }
        for (p, (d, at, count)) in s.pods.iter_mut().zip(&details) {
            let mut d = build_details(d, p);
            d.scheduled_at = at.map(Time::from_unix_nanos);
            d.rule_match_counts.push(("oom".into(), *count));
            p.failure_details = Some(Box::new(d));
        }
        let _ = decide(&s);
    }

    /// 5 with a document: the same snapshot gives the same plan (jitter included).
    #[test]
    fn document_plans_are_deterministic(s in arb_doc_snapshot(8)) {
        prop_assert_eq!(decide(&s), decide(&s));
    }

    /// `failureMessage` changes nothing but the messages of the FailureTarget
    /// and Failed conditions and of the finish event that repeats them: with
    /// `Detailed` each starts with the `Upstream` message (the default, which
    /// is upstream's byte for byte) and fits in 1024 bytes.
    #[test]
    fn detailed_messages_only_extend_upstreams(s in arb_doc_snapshot(8)) {
        let with = |mode| {
            let mut s = s.clone();
            let mut doc = (**s.job.extended_failure_policy.as_ref().unwrap()).clone();
            doc.failure_message = mode;
            s.job.extended_failure_policy = Some(Arc::new(doc));
            decide(&s)
        };
        let upstream = with(FailureMessage::Upstream);
        let mut detailed = with(FailureMessage::Detailed);
        prop_assert_eq!(upstream.actions.len(), detailed.actions.len());
        for (u, d) in upstream.actions.iter().zip(detailed.actions.iter_mut()) {
            let mut pairs: Vec<(&String, &mut String, bool)> = Vec::new();
            match (u, d) {
                (Action::UpdateStatus(su), Action::UpdateStatus(sd)) => {
                    for (cu, cd) in su.conditions.iter().zip(sd.conditions.iter_mut()) {
                        let explained = matches!(
                            cu.condition_type,
                            JobConditionType::FailureTarget | JobConditionType::Failed
                        );
                        pairs.push((&cu.message, &mut cd.message, explained));
                    }
                }
                (Action::RecordEvent(eu), Action::RecordEvent(ed)) => {
                    pairs.push((&eu.message, &mut ed.message, eu.event_type == EventType::Warning));
                }
                _ => {}
            }
            for (mu, md, explained) in pairs {
                if mu != md {
                    prop_assert!(explained, "{md:?} differs from {mu:?}");
                    prop_assert!(md.starts_with(mu.as_str()), "{md:?} extends {mu:?}");
                    prop_assert!(md.len() <= 1024, "{} bytes", md.len());
                    *md = mu.clone();
                }
            }
        }
        prop_assert_eq!(upstream, detailed);
    }

    /// Without a document the pods' failure details change nothing: the plan
    /// is the plan of the same snapshot with the details taken away.
    #[test]
    fn without_a_document_details_change_nothing(
        mut s in arb_snapshot_with(8, 0.0),
        nodes in arb_nodes(),
    ) {
        s.nodes = nodes;
        let mut bare = s.clone();
        bare.nodes.clear();
        for p in &mut bare.pods {
            p.failure_details = None;
        }
        prop_assert_eq!(decide(&s), decide(&bare));
    }

    /// Every delay of the schedule lies between the first delay (capped) and
    /// the cap with its whole jitter; without jitter it never shrinks.
    #[test]
    fn backoff_delays_stay_within_the_settings(
        raw in arb_doc().prop_filter("backoff settings", |d| d.backoff.is_some()),
        failures in prop_oneof![1..12i32, Just(i32::MAX)],
        index in prop::option::of(0..8i32),
    ) {
        let mut job = base_job();
        job.extended_failure_policy = Some(Arc::new(build_doc(&raw, false, false)));
        let b = job.extended_failure_policy.as_ref().unwrap().backoff.unwrap();
        let schedule = BackoffSchedule::for_job(&job);
        let delay = schedule.delay(failures, index);
        let secs = |s: i64| Duration::from_secs(u64::try_from(s).unwrap());
        let jitter = u32::try_from(b.jitter_percent).unwrap();
        prop_assert!(delay >= secs(b.base_seconds.min(b.max_seconds)), "{:?}", delay);
        prop_assert!(delay <= secs(b.max_seconds) * (100 + jitter) / 100, "{:?}", delay);
        if jitter == 0 && failures < i32::MAX {
            prop_assert!(schedule.delay(failures + 1, index) >= delay);
        }
    }

    /// Per-rule limits: when every failed pod of a scope is visible, a pod
    /// the sync counts now whose match of a limited rule is past maxRetries
    /// is not handled with the rule's own action: the plan fails the Job (or
    /// the index, for whenRetriesExhausted FailIndex).
    ///
    /// A limited rule that matches most failed pods (any container
    /// termination reason) goes first, so that scopes often pass the limit.
    #[test]
    fn retry_limits_are_never_exceeded(
        s in arb_doc_snapshot(8),
        max_retries in 0..=2i32,
        ignore in any::<bool>(),
        fail_index in any::<bool>(),
    ) {
        let s = with_limited_rule(s, max_retries, ignore, fail_index);
        let job = &s.job;
        let judged = !job.status.is_finished()
            && !job.being_deleted
            && job.spec.managed_by.is_none()
            && !job.spec.suspend
            && !s.expectations.pod_changes_pending
            && !has(&job.status, JobConditionType::SuccessCriteriaMet);
        let exhausted = exhausted_now(&s);
        if judged && !exhausted.is_empty() {
            let plan = decide(&s);
            let failing = has(&job.status, JobConditionType::FailureTarget)
                || writes(&plan, JobConditionType::FailureTarget);
            for (scope, limit, uid) in &exhausted {
                let index_failed = scope.is_some_and(|ix| {
                    failed_of(job, &job.status).contains(ix)
                        || completed_of(job, &job.status).contains(ix)
                        || plan.actions.iter().any(|a| {
                            matches!(a, Action::UpdateStatus(st) if failed_of(job, st).contains(ix))
                        })
                });
                let handled = match limit.then {
                    ExtendedAction::FailIndex => failing || index_failed,
                    _ => failing,
                };
                prop_assert!(
                    handled,
                    "pod {} is past maxRetries {} of its rule in scope {:?}, yet the plan neither fails the Job nor the index: {:?}",
                    uid, limit.max_retries, scope, plan.actions
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(cases(96))]

    /// The backoff requeue never exceeds maxSeconds·(1 + jitter/100) (nor the
    /// active deadline or a timeout, the other requeues).
    #[test]
    fn backoff_requeue_stays_under_the_cap(
        s in arb_doc_snapshot(8),
        settings in (1..=30i64, 0..900i64, 1..=10i32, 0..=100i32, any::<bool>()),
        recent in prop::option::of(1..=12i32),
    ) {
        // Documents without backoff settings get these (no rejected cases).
        let mut s = s;
        let mut doc = (**s.job.extended_failure_policy.as_ref().unwrap()).clone();
        let (base, extra, factor, jitter_percent, immediate) = settings;
        doc.backoff.get_or_insert(BackoffSettings {
            base_seconds: base,
            max_seconds: base + extra,
            factor,
            jitter_percent,
            after_ignored_failure: if immediate {
                IgnoredFailureDelay::Immediate
            } else {
                IgnoredFailureDelay::Delay
            },
        });
        // Without the other requeues (deadline, pending timeout) the bound
        // is the backoff's alone.
        doc.pending_timeout = None;
        doc.ready_timeout = None;
        doc.attempt_deadline = None;
        doc.terminating_timeout = None;
        s.job.spec.active_deadline_seconds = None;
        s.job.extended_failure_policy = Some(Arc::new(doc));
        // A failure just now, with no other failed pod to update the record
        // and pods to create, makes the backoff wait its whole delay.
        if let Some(failures) = recent {
            s.state.backoff = BackoffRecord {
                failures_after_last_success: failures,
                last_failure_time: Some(s.now),
            };
            s.pods.retain(|p| p.phase != PodPhase::Failed);
            s.job.spec.backoff_limit = i32::MAX;
            s.job.spec.suspend = false;
            s.job.spec.parallelism = s.job.spec.parallelism.max(4);
            s.job.status.conditions.clear();
        }
        let plan = decide(&s);
        let bound = requeue_bound(&s.job).unwrap();
        if let Some(after) = plan.requeue_after {
            prop_assert!(after <= bound, "requeue {:?} above {:?}", after, bound);
        }
    }
}

proptest! {
    #![proptest_config(cases(48))]

    /// 3 with a document: plans applied in full reach a steady state, never
    /// lose or double-count a pod; pods failed for their pending timeout are
    /// failed once and counted; created pods land off Required avoid lists.
    #[test]
    fn document_plans_converge(s in arb_doc_snapshot(6)) {
        Sim::new(s).run_to_steady_state()?;
    }

    /// 4 with a document: every prefix of the first plan ends with the counts
    /// of the uninterrupted run.
    #[test]
    fn document_plans_survive_every_prefix(s in arb_doc_snapshot(5)) {
        every_prefix_keeps_the_counts(s)?;
    }
}

/// The document generators reach every extended decision, so no property
/// above holds only because its case never comes up: among 200 snapshots of
/// Jobs with a document (a fixed seed) some plans fail stuck pods, create
/// pods avoiding nodes in both modes and carrying the counts and the nodes,
/// fail pods for each of the four timeouts (the terminating one on any node
/// and on unhealthy ones only, force-deleting some, sparing a pod on a
/// healthy node),
/// fail the Job by a named rule or the pending timeout, and scopes pass a
/// retry limit.
#[test]
fn generators_reach_every_extended_feature() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};

    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]),
    );
    let strategy = arb_doc_snapshot(8);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..500 {
        let s = strategy
            .new_tree(&mut runner)
            .expect("a snapshot")
            .current();
        let plan = decide(&s);
        let mut note =
            |what: &'static str, yes: bool| *seen.entry(what).or_default() += usize::from(yes);
        let any = |f: &dyn Fn(&Action) -> bool| plan.actions.iter().any(f);
        let writes = |ty: JobConditionType, reason: &dyn Fn(&str) -> bool| {
            plan.actions.iter().any(|a| match a {
                Action::UpdateStatus(st) => st
                    .conditions
                    .iter()
                    .any(|c| c.condition_type == ty && reason(&c.reason)),
                _ => false,
            })
        };
        let failed_by = |condition: &str| {
            any(
                &|a| matches!(a, Action::FailPods(f) if f.iter().any(|f| f.condition_type == condition)),
            )
        };
        note(
            "fail pods (pending timeout)",
            failed_by(PENDING_TIMEOUT_CONDITION),
        );
        note(
            "fail pods (ready timeout)",
            failed_by(job_decider_core::extended::READY_TIMEOUT_CONDITION),
        );
        note(
            "fail pods (attempt deadline)",
            failed_by(job_decider_core::extended::ATTEMPT_DEADLINE_CONDITION),
        );
        let terminating = s
            .job
            .extended_failure_policy
            .as_ref()
            .and_then(|d| d.terminating_timeout);
        let failed_terminating =
            failed_by(job_decider_core::extended::TERMINATING_TIMEOUT_CONDITION);
        for (what, on_nodes) in [
            (
                "fail pods (terminating timeout, any node)",
                TerminatingNodes::Any,
            ),
            (
                "fail pods (terminating timeout, unhealthy node)",
                TerminatingNodes::Unhealthy,
            ),
        ] {
            note(
                what,
                failed_terminating && terminating.is_some_and(|t| t.on_nodes == on_nodes),
            );
        }
        note(
            "force delete",
            any(&|a| matches!(a, Action::FailPods(f) if f.iter().any(|f| f.force_delete))),
        );
        // A terminating pod on a reported, healthy node: the checks hold the plan to spare it.
        note(
            "terminating timeout spares a pod on a healthy node",
            terminating.is_some_and(|t| {
                t.on_nodes == TerminatingNodes::Unhealthy
                    && s.pods.iter().any(|p| {
                        p.is_terminating()
                            && terminating_deadline(&t, p, &s.nodes).is_none()
                            && p.failure_details
                                .as_ref()
                                .is_some_and(|d| s.nodes.iter().any(|n| n.name == d.node_name))
                    })
            }),
        );
        let created = |f: &dyn Fn(&PodCreation) -> bool| {
            any(&|a| matches!(a, Action::CreatePods(c) if c.iter().any(f)))
        };
        for mode in [NodeAvoidanceMode::Required, NodeAvoidanceMode::Preferred] {
            note(
                mode.as_str(),
                created(&|c| c.avoid_nodes.as_ref().is_some_and(|a| a.mode == mode)),
            );
        }
        note(
            "rule-match-counts carried",
            created(&|c| c.annotations.contains_key(RULE_MATCH_COUNTS_ANNOTATION)),
        );
        note(
            "FailureTarget by a named rule",
            writes(JobConditionType::FailureTarget, &|r| {
                r.starts_with("PodFailurePolicy_") && r != "PodFailurePolicy_PendingTimeout"
            }),
        );
        note(
            "FailureTarget by the pending timeout",
            writes(JobConditionType::FailureTarget, &|r| {
                r == "PodFailurePolicy_PendingTimeout"
            }),
        );
        note(
            "a retry limit passed",
            !exhausted_now(&with_limited_rule(s.clone(), 1, false, false)).is_empty(),
        );
        note("create", created(&|_| true));
        note("backoff requeue", {
            s.job
                .extended_failure_policy
                .as_ref()
                .is_some_and(|d| d.backoff.is_some())
                && plan.requeue_after.is_some()
        });
    }
    let missing: Vec<_> = seen
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    assert!(
        missing.is_empty(),
        "never generated: {missing:?}; counts {seen:?}"
    );
}
