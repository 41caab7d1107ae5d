//! Prometheus metrics: names, buckets, what a decision records, and the
//! `/metrics` endpoint on its own port.
//!
//! Every metric of the project is named `job_decider_*` (the shim's
//! `job_decider_shim_*`); beside them, each JobDecider call is counted under
//! the names gRPC server dashboards read (`grpc_server_*`, as
//! go-grpc-prometheus names them), and [`crate::server::process`] adds the
//! standard `process_*` figures.
//!
//! Every number comes from something that happened: a request and its code,
//! a decision's duration, the actions a plan holds, the pods a request sent,
//! the pod failure policy outcome of each failure a plan records, and the
//! Complete/Failed conditions a plan's status updates add.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram,
    gauge, histogram,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::server::layer::RPCS;
use job_decider_api::Decision;
use job_decider_core::extended::NAMED_RULE_REASON_PREFIX;
use job_decider_core::model::{ConditionStatus, JobConditionType, Snapshot};
use job_decider_core::plan::{Action, Plan};

/// gRPC requests handled, by `method` and `code` (e.g. `DecideJob`, `INVALID_ARGUMENT`).
pub const REQUESTS_TOTAL: &str = "job_decider_grpc_requests_total";
/// Time from request headers to response headers, by `method`.
pub const REQUEST_SECONDS: &str = "job_decider_grpc_request_duration_seconds";
/// Requests currently holding a decision slot.
pub const IN_FLIGHT: &str = "job_decider_requests_in_flight";
/// JobDecider calls in progress, from their headers to their last response frame.
pub const CALLS_IN_FLIGHT: &str = "job_decider_grpc_calls_in_flight";
/// Request bytes currently taken from the budget (`--max-request-bytes-in-flight`).
pub const REQUEST_BYTES_IN_FLIGHT: &str = "job_decider_request_bytes_in_flight";
/// Time to convert, validate and decide one JobSet reconcile.
pub const JOBSET_DECISION_SECONDS: &str = "job_decider_jobset_decision_duration_seconds";
/// Child Jobs per DecideJobSet request.
pub const JOBS_PER_JOBSET_REQUEST: &str = "job_decider_jobs_per_jobset_request";
/// Time to convert, validate and decide one snapshot.
pub const DECISION_SECONDS: &str = "job_decider_decision_duration_seconds";
/// Actions emitted, by `kind` (`createPods`, `deletePods`, ...).
pub const ACTIONS_TOTAL: &str = "job_decider_actions_total";
/// Pods per DecideJob request.
pub const PODS_PER_REQUEST: &str = "job_decider_pods_per_request";
/// Pod failures a plan records, by the pod failure policy `action` that decided them.
pub const POD_FAILURE_POLICY_TOTAL: &str = "job_decider_pod_failure_policy_actions_total";
/// Jobs a plan finishes, by `condition` (Complete/Failed) and `reason`.
pub const JOBS_FINISHED_TOTAL: &str = "job_decider_jobs_finished_total";
/// 1, labelled with the `version`, git `revision` and `rustc` of the build.
pub const BUILD_INFO: &str = "job_decider_build_info";
/// JobDecider calls begun, by `grpc_type`, `grpc_service` and `grpc_method`.
pub const GRPC_STARTED_TOTAL: &str = "grpc_server_started_total";
/// JobDecider calls finished, by `grpc_type`, `grpc_service`, `grpc_method` and `grpc_code`.
pub const GRPC_HANDLED_TOTAL: &str = "grpc_server_handled_total";
/// Time to answer a JobDecider call, by `grpc_type`, `grpc_service` and `grpc_method`.
pub const GRPC_HANDLING_SECONDS: &str = "grpc_server_handling_seconds";

/// Every family the recorder renders (the process figures are in
/// [`crate::server::process::NAMES`]); tests and the dashboard's check read it.
pub const NAMES: [&str; 16] = [
    REQUESTS_TOTAL,
    REQUEST_SECONDS,
    IN_FLIGHT,
    CALLS_IN_FLIGHT,
    REQUEST_BYTES_IN_FLIGHT,
    JOBSET_DECISION_SECONDS,
    JOBS_PER_JOBSET_REQUEST,
    DECISION_SECONDS,
    ACTIONS_TOTAL,
    PODS_PER_REQUEST,
    POD_FAILURE_POLICY_TOTAL,
    JOBS_FINISHED_TOTAL,
    BUILD_INFO,
    GRPC_STARTED_TOTAL,
    GRPC_HANDLED_TOTAL,
    GRPC_HANDLING_SECONDS,
];

/// The service the `grpc_server_*` metrics name (the only one they count).
const GRPC_SERVICE: &str = job_decider_api::pb::job_decider_server::SERVICE_NAME;
/// Every JobDecider RPC is unary.
const GRPC_TYPE: &str = "unary";

/// The `pods` label of [`DECISION_SECONDS`]: the pod count's decade, so a
/// dashboard can show latency by request size with seven series at most.
pub const POD_RANGES: [&str; 7] = [
    "0",
    "1-10",
    "11-100",
    "101-1000",
    "1001-10000",
    "10001-100000",
    "100001+",
];

/// The index in [`POD_RANGES`] of a request with `pods` pods.
pub fn pod_range(pods: usize) -> usize {
    match pods {
        0 => 0,
        1..=10 => 1,
        11..=100 => 2,
        101..=1_000 => 3,
        1_001..=10_000 => 4,
        10_001..=100_000 => 5,
        _ => 6,
    }
}

const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
const POD_BUCKETS: &[f64] = &[
    0.0,
    1.0,
    10.0,
    100.0,
    1_000.0,
    10_000.0,
    100_000.0,
    1_000_000.0,
];
const ACTION_KINDS: [&str; 8] = [
    "adoptPods",
    "releasePods",
    "createPods",
    "deletePods",
    "removeFinalizers",
    "updateStatus",
    "recordEvent",
    "failPods",
];
const POLICY_ACTIONS: [&str; 4] = ["FailJob", "FailIndex", "Ignore", "Count"];
/// The reasons upstream writes on Complete and Failed, pre-registered at zero for dashboards.
const FINISH_REASONS: [(&str, &str); 7] = [
    ("Complete", "CompletionsReached"),
    ("Complete", "SuccessPolicy"),
    ("Failed", "BackoffLimitExceeded"),
    ("Failed", "DeadlineExceeded"),
    ("Failed", "PodFailurePolicy"),
    ("Failed", "FailedIndexes"),
    ("Failed", "MaxFailedIndexesExceeded"),
];

/// The `reason` label of every FailJob rule of an extended policy document
/// (`PodFailurePolicy_{name}`): the rule names are the caller's, so one bucket.
pub const NAMED_RULE_REASON_LABEL: &str = "PodFailurePolicy_*";

/// The `reason` label of a reason the service never writes itself (one a
/// request's own FailureTarget or SuccessCriteriaMet condition carried).
pub const OTHER_REASON_LABEL: &str = "other";

/// A condition's reason as a `reason` label: one of a fixed set, whatever the
/// request said, so no request adds a series (issue 22: 10,000 reasons took
/// `/metrics` to 157 MiB).
pub fn finish_reason_label(reason: &str) -> &'static str {
    if let Some((_, known)) = FINISH_REASONS.iter().find(|(_, r)| *r == reason) {
        return known;
    }
    if reason.starts_with(NAMED_RULE_REASON_PREFIX) {
        NAMED_RULE_REASON_LABEL
    } else {
        OTHER_REASON_LABEL
    }
}

/// gRPC codes, in the order of their numbers (0 to 16).
const CODES: [tonic::Code; 17] = [
    tonic::Code::Ok,
    tonic::Code::Cancelled,
    tonic::Code::Unknown,
    tonic::Code::InvalidArgument,
    tonic::Code::DeadlineExceeded,
    tonic::Code::NotFound,
    tonic::Code::AlreadyExists,
    tonic::Code::PermissionDenied,
    tonic::Code::ResourceExhausted,
    tonic::Code::FailedPrecondition,
    tonic::Code::Aborted,
    tonic::Code::OutOfRange,
    tonic::Code::Unimplemented,
    tonic::Code::Internal,
    tonic::Code::Unavailable,
    tonic::Code::DataLoss,
    tonic::Code::Unauthenticated,
];

/// The methods requests are counted by: each RPC, then "other".
const METHODS: usize = RPCS.len() + 1;

/// The handles of what every call records, each looked up once: every
/// `counter!`/`gauge!`/`histogram!` call hashes its name and labels and
/// searches the registry again, a dozen times a call. Handles count into the
/// same series the macros name; those a scrape shows only once they happen
/// (a method's codes, the histograms) are looked up on their first use.
struct Handles {
    calls_in_flight: Gauge,
    in_flight: Gauge,
    request_bytes_in_flight: Gauge,
    /// By method (as [`method_index`]) and code (its number).
    requests: [[OnceLock<Counter>; CODES.len()]; METHODS],
    request_seconds: [OnceLock<Histogram>; METHODS],
    /// `grpc_server_started_total`, by method.
    grpc_started: [Counter; METHODS],
    /// `grpc_server_handled_total`, by method and code.
    grpc_handled: [[OnceLock<Counter>; CODES.len()]; METHODS],
    /// `grpc_server_handling_seconds`, by method.
    grpc_handling: [OnceLock<Histogram>; METHODS],
    /// By [`pod_range`].
    decision_seconds: [OnceLock<Histogram>; POD_RANGES.len()],
    pods_per_request: OnceLock<Histogram>,
    actions: [Counter; ACTION_KINDS.len()],
}

static HANDLES: OnceLock<Handles> = OnceLock::new();

fn method_name(index: usize) -> &'static str {
    RPCS.get(index)
        .map_or(crate::server::layer::UNKNOWN_RPC.method, |rpc| rpc.method)
}

/// The index of `method` in [`Handles::requests`]: its RPC's, or the last ("other").
fn method_index(method: &str) -> usize {
    RPCS.iter()
        .position(|rpc| rpc.method == method)
        .unwrap_or(RPCS.len())
}

impl Handles {
    /// The handles; series a scrape shows from the start (the gauges and action
    /// counters `describe` sets to zero) at once, the others on first use.
    fn register() -> Handles {
        Handles {
            calls_in_flight: gauge!(CALLS_IN_FLIGHT),
            in_flight: gauge!(IN_FLIGHT),
            request_bytes_in_flight: gauge!(REQUEST_BYTES_IN_FLIGHT),
            requests: std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new())),
            request_seconds: std::array::from_fn(|_| OnceLock::new()),
            grpc_started: std::array::from_fn(|m| grpc_counter(GRPC_STARTED_TOTAL, method_name(m))),
            grpc_handled: std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new())),
            grpc_handling: std::array::from_fn(|_| OnceLock::new()),
            decision_seconds: std::array::from_fn(|_| OnceLock::new()),
            pods_per_request: OnceLock::new(),
            actions: std::array::from_fn(|k| counter!(ACTIONS_TOTAL, "kind" => ACTION_KINDS[k])),
        }
    }
}

fn handles() -> Option<&'static Handles> {
    HANDLES.get()
}

/// A `grpc_server_*` counter of one method, without a code.
fn grpc_counter(name: &'static str, method: &'static str) -> Counter {
    counter!(name, "grpc_type" => GRPC_TYPE, "grpc_service" => GRPC_SERVICE, "grpc_method" => method)
}

/// `grpc_server_handled_total` of one method and code.
fn grpc_handled(method: &'static str, code: tonic::Code) -> Counter {
    counter!(
        GRPC_HANDLED_TOTAL,
        "grpc_type" => GRPC_TYPE,
        "grpc_service" => GRPC_SERVICE,
        "grpc_method" => method,
        "grpc_code" => code_name(code)
    )
}

/// `grpc_server_handling_seconds` of one method.
fn grpc_handling(method: &'static str) -> Histogram {
    histogram!(
        GRPC_HANDLING_SECONDS,
        "grpc_type" => GRPC_TYPE,
        "grpc_service" => GRPC_SERVICE,
        "grpc_method" => method
    )
}

/// A call of `method` has begun (it is in progress until [`call_ended`]).
pub fn call_began(method: &'static str) {
    match handles() {
        Some(h) => {
            h.calls_in_flight.increment(1.0);
            h.grpc_started[method_index(method)].increment(1);
        }
        None => {
            gauge!(CALLS_IN_FLIGHT).increment(1.0);
            grpc_counter(GRPC_STARTED_TOTAL, method).increment(1);
        }
    }
}

/// A call has ended.
pub fn call_ended() {
    match handles() {
        Some(h) => h.calls_in_flight.decrement(1.0),
        None => gauge!(CALLS_IN_FLIGHT).decrement(1.0),
    }
}

/// Decision slots taken (positive) or given back (negative).
pub fn slots_held(change: f64) {
    match handles() {
        Some(h) => h.in_flight.increment(change),
        None => gauge!(IN_FLIGHT).increment(change),
    }
}

/// Budget bytes taken (positive) or given back (negative).
pub fn request_bytes_held(change: f64) {
    match handles() {
        Some(h) => h.request_bytes_in_flight.increment(change),
        None => gauge!(REQUEST_BYTES_IN_FLIGHT).increment(change),
    }
}

/// The metrics recorder could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("cannot install the metrics recorder: {0}")]
pub struct MetricsError(String);

/// Installs the process-wide recorder once and returns its handle.
///
/// A process has one recorder; servers started later in the same process
/// (tests) share it.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(DECISION_SECONDS.into()), LATENCY_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(REQUEST_SECONDS.into()), LATENCY_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(GRPC_HANDLING_SECONDS.into()),
                        LATENCY_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(PODS_PER_REQUEST.into()), POD_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(JOBSET_DECISION_SECONDS.into()),
                        LATENCY_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(JOBS_PER_JOBSET_REQUEST.into()),
                        POD_BUCKETS,
                    )
                })
                .and_then(|b| b.install_recorder())
                .map_err(|e| e.to_string())?;
            describe();
            // Installed once per process, so the handles are registered once too.
            let _ = HANDLES.set(Handles::register());
            Ok(handle)
        })
        .clone()
        .map_err(MetricsError)
}

fn describe() {
    describe_gauge!(
        BUILD_INFO,
        "1, labelled with the version, git revision and rustc version of the build"
    );
    gauge!(
        BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "revision" => env!("JOB_DECIDER_REVISION"),
        "rustc" => env!("JOB_DECIDER_RUSTC")
    )
    .set(1.0);
    describe_counter!(
        GRPC_STARTED_TOTAL,
        "JobDecider calls begun, by gRPC type, service and method"
    );
    describe_counter!(
        GRPC_HANDLED_TOTAL,
        "JobDecider calls finished, by gRPC type, service, method and code"
    );
    describe_histogram!(
        GRPC_HANDLING_SECONDS,
        Unit::Seconds,
        "time to answer a JobDecider call, by gRPC type, service and method"
    );
    describe_counter!(REQUESTS_TOTAL, "gRPC requests handled, by method and code");
    describe_histogram!(REQUEST_SECONDS, Unit::Seconds, "gRPC request duration");
    describe_gauge!(IN_FLIGHT, "requests holding a decision slot");
    describe_gauge!(
        REQUEST_BYTES_IN_FLIGHT,
        Unit::Bytes,
        "request bytes taken from the in-flight budget"
    );
    describe_histogram!(
        JOBSET_DECISION_SECONDS,
        Unit::Seconds,
        "time to convert, validate and decide one JobSet reconcile"
    );
    describe_histogram!(
        JOBS_PER_JOBSET_REQUEST,
        "child Jobs per DecideJobSet request"
    );
    describe_gauge!(
        CALLS_IN_FLIGHT,
        "JobDecider calls in progress, with or without a decision slot"
    );
    gauge!(IN_FLIGHT).set(0.0);
    gauge!(CALLS_IN_FLIGHT).set(0.0);
    gauge!(REQUEST_BYTES_IN_FLIGHT).set(0.0);
    describe_histogram!(
        DECISION_SECONDS,
        Unit::Seconds,
        "time to convert, validate and decide one snapshot"
    );
    describe_counter!(ACTIONS_TOTAL, "plan actions emitted, by kind");
    describe_histogram!(PODS_PER_REQUEST, "pods per DecideJob request");
    describe_counter!(
        POD_FAILURE_POLICY_TOTAL,
        "pod failures recorded by a plan, by the pod failure policy action that matched"
    );
    describe_counter!(
        JOBS_FINISHED_TOTAL,
        "jobs a plan finished, by terminal condition and reason"
    );
    for kind in ACTION_KINDS {
        counter!(ACTIONS_TOTAL, "kind" => kind).absolute(0);
    }
    for action in POLICY_ACTIONS {
        counter!(POD_FAILURE_POLICY_TOTAL, "action" => action).absolute(0);
    }
    for (condition, reason) in FINISH_REASONS {
        counter!(JOBS_FINISHED_TOTAL, "condition" => condition, "reason" => reason).absolute(0);
    }
    counter!(JOBS_FINISHED_TOTAL, "condition" => "Failed", "reason" => NAMED_RULE_REASON_LABEL)
        .absolute(0);
    for condition in ["Complete", "Failed"] {
        counter!(JOBS_FINISHED_TOTAL, "condition" => condition, "reason" => OTHER_REASON_LABEL)
            .absolute(0);
    }
}

/// Records a finished request.
pub fn record_request(method: &'static str, code: tonic::Code, elapsed: Duration) {
    let Some(h) = handles() else {
        counter!(REQUESTS_TOTAL, "method" => method, "code" => code_name(code)).increment(1);
        histogram!(REQUEST_SECONDS, "method" => method).record(elapsed.as_secs_f64());
        grpc_handled(method, code).increment(1);
        grpc_handling(method).record(elapsed.as_secs_f64());
        return;
    };
    let m = method_index(method);
    // Code numbers are 0 to 16; anything else would be a tonic we do not know.
    let c = usize::try_from(code as i32).unwrap_or(usize::MAX);
    match h.requests[m].get(c) {
        Some(counter) => counter
            .get_or_init(|| {
                counter!(REQUESTS_TOTAL, "method" => method_name(m), "code" => code_name(CODES[c]))
            })
            .increment(1),
        None => {
            counter!(REQUESTS_TOTAL, "method" => method, "code" => code_name(code)).increment(1)
        }
    }
    match h.grpc_handled[m].get(c) {
        Some(counter) => counter
            .get_or_init(|| grpc_handled(method_name(m), CODES[c]))
            .increment(1),
        None => grpc_handled(method, code).increment(1),
    }
    h.request_seconds[m]
        .get_or_init(|| histogram!(REQUEST_SECONDS, "method" => method_name(m)))
        .record(elapsed.as_secs_f64());
    h.grpc_handling[m]
        .get_or_init(|| grpc_handling(method_name(m)))
        .record(elapsed.as_secs_f64());
}

/// Records one JobSet decision: its duration and the child Jobs it was given.
pub fn record_jobset_decision(jobs: usize, elapsed: Duration) {
    histogram!(JOBSET_DECISION_SECONDS).record(elapsed.as_secs_f64());
    // Precision loss only above 2^52 jobs.
    #[allow(clippy::cast_precision_loss)]
    histogram!(JOBS_PER_JOBSET_REQUEST).record(jobs as f64);
}

/// Records what one decision decided.
pub fn record_decision(decision: &Decision, elapsed: Duration) {
    let range = pod_range(decision.snapshot.pods.len());
    // Precision loss only above 2^52 pods.
    #[allow(clippy::cast_precision_loss)]
    let pods = decision.snapshot.pods.len() as f64;
    if let Some(h) = handles() {
        h.decision_seconds[range]
            .get_or_init(|| histogram!(DECISION_SECONDS, "pods" => POD_RANGES[range]))
            .record(elapsed.as_secs_f64());
        h.pods_per_request
            .get_or_init(|| histogram!(PODS_PER_REQUEST))
            .record(pods);
        for action in &decision.plan.actions {
            h.actions[action_index(action)].increment(1);
        }
    } else {
        histogram!(DECISION_SECONDS, "pods" => POD_RANGES[range]).record(elapsed.as_secs_f64());
        histogram!(PODS_PER_REQUEST).record(pods);
        for action in &decision.plan.actions {
            counter!(ACTIONS_TOTAL, "kind" => action_kind(action)).increment(1);
        }
    }
    // The core counts failed pods per policy action as upstream's metric does.
    let counts = decision.plan.failure_policy_actions;
    for (action, n) in [
        ("FailJob", counts.fail_job),
        ("FailIndex", counts.fail_index),
        ("Ignore", counts.ignore),
        ("Count", counts.count),
    ] {
        if n > 0 {
            counter!(POD_FAILURE_POLICY_TOTAL, "action" => action).increment(u64::from(n));
        }
    }
    for (condition, reason) in finished_jobs(&decision.snapshot, &decision.plan) {
        counter!(JOBS_FINISHED_TOTAL, "condition" => condition, "reason" => reason).increment(1);
    }
}

/// The wire name of an action's kind.
pub fn action_kind(action: &Action) -> &'static str {
    ACTION_KINDS[action_index(action)]
}

/// The position of an action's kind in [`ACTION_KINDS`].
fn action_index(action: &Action) -> usize {
    match action {
        Action::AdoptPods(_) => 0,
        Action::ReleasePods(_) => 1,
        Action::CreatePods(_) => 2,
        Action::DeletePods(_) => 3,
        Action::RemoveFinalizers(_) => 4,
        Action::UpdateStatus(_) => 5,
        Action::RecordEvent(_) => 6,
        Action::FailPods(_) => 7,
    }
}

/// The terminal conditions (type, reason) that this plan's status updates add.
/// Each reason is its label ([`finish_reason_label`]), never the request's own text.
pub fn finished_jobs(snapshot: &Snapshot, plan: &Plan) -> Vec<(&'static str, &'static str)> {
    let before = &snapshot.job.status;
    let mut finished = Vec::new();
    for action in &plan.actions {
        let Action::UpdateStatus(status) = action else {
            continue;
        };
        for (condition_type, name) in [
            (JobConditionType::Complete, "Complete"),
            (JobConditionType::Failed, "Failed"),
        ] {
            let added = status
                .conditions
                .iter()
                .find(|c| c.condition_type == condition_type && c.status == ConditionStatus::True);
            if let Some(condition) = added
                && !before.has_true_condition(&condition_type)
                && !finished.iter().any(|(n, _)| *n == name)
            {
                finished.push((name, finish_reason_label(&condition.reason)));
            }
        }
    }
    finished
}

/// The canonical name of a gRPC code, as grpc-go and Prometheus conventions spell it.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Serves `GET /metrics` in the Prometheus text format until `shutdown` completes.
///
/// A client must send its request headers within `header_timeout` or the
/// connection is closed; each connection serves one request. Shutdown never waits on a client: once `shutdown`
/// completes, connections still open (a scrape in progress, an idle
/// keep-alive, a half-sent request) are cut.
pub async fn serve(
    listener: TcpListener,
    handle: PrometheusHandle,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(err) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %err, "metrics: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                connections.spawn(serve_connection(stream, handle.clone(), header_timeout));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
    Ok(())
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    handle: PrometheusHandle,
    header_timeout: Duration,
) {
    let service = hyper::service::service_fn(move |request: http::Request<_>| {
        let handle = handle.clone();
        async move { Ok::<_, std::convert::Infallible>(respond(&handle, &request)) }
    });
    // One request per connection: with the header timeout, no connection
    // outlives a slow or silent client for long (scrapers reconnect cheaply).
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(false)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
    if let Err(err) = served {
        tracing::debug!(error = %err, "metrics connection ended");
    }
}

fn respond<B>(handle: &PrometheusHandle, request: &http::Request<B>) -> http::Response<String> {
    let (status, body) = match (request.method(), request.uri().path()) {
        (&http::Method::GET, "/metrics") => {
            // Upkeep drains histogram buffers; doing it per scrape needs no timer task.
            handle.run_upkeep();
            let mut text = handle.render();
            text.push_str(&crate::server::process::render(
                &crate::server::process::sample(),
            ));
            (http::StatusCode::OK, text)
        }
        (_, "/metrics") => (http::StatusCode::METHOD_NOT_ALLOWED, String::new()),
        _ => (http::StatusCode::NOT_FOUND, String::new()),
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

#[cfg(test)]
mod tests;
