//! The command line: `serve`, the offline `decide` and `validate` that read
//! Kubernetes YAML or JSON and run the same pipeline the server runs, and
//! `request`, which prints the DecideJobRequest those files make for callers
//! scripting grpcurl or ghz.
//!
//! Exit status: 0 when decided (or valid), 2 on bad input (clap's usage
//! errors are 2 as well; with `--from-cluster`, a bad kubeconfig or a Job
//! that does not exist), 1 when the program itself fails (with
//! `--from-cluster`, an API server that cannot be reached or refuses).

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::address::ListenAddr;
use crate::cluster::{self, ClusterArgs};
use crate::documents;
use crate::explain;
use crate::input::{
    self, CliError, Strictness, file_name, one_stdin, read_failure_policy, read_file, read_job,
    read_nodes, read_pods, warn,
};
use crate::server::{self, LogFormat, ServerConfig, TlsFiles};
use job_decider_api::safe_text::escaped;
use job_decider_api::{self as api, pb};

/// The Kubernetes Job controller's decisions, as a service and offline.
#[derive(Debug, Parser)]
#[command(name = "job-decider", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the JobDecider gRPC API.
    Serve(Box<ServeArgs>),
    /// Decide one sync of a Job and its pods, offline, and print the plan.
    Decide(DecideArgs),
    /// Validate a Job against the API rules decisions rely on.
    Validate(JobValidateArgs),
    /// Print the DecideJobRequest a Job and its pods make (for grpcurl `-d @`, ghz `-B`).
    Request(RequestArgs),
    /// JobSet failure-policy decisions, offline.
    #[command(subcommand)]
    Jobset(JobSetCommand),
    /// Play a Job's whole life under a failure script on a virtual clock and print the timeline.
    Simulate(crate::simulate::SimulateArgs),
}

/// `jobset` subcommands.
#[derive(Debug, Subcommand)]
pub enum JobSetCommand {
    /// Decide one reconcile of a JobSet's failure policy and print the plan.
    Decide(JobSetDecideArgs),
    /// Validate a JobSet's failure policy as JobSet's webhook does.
    Validate(ValidateArgs),
}

/// `jobset decide` flags.
#[derive(Debug, Args)]
pub struct JobSetDecideArgs {
    /// The JobSet (YAML or JSON; `-`: stdin).
    #[arg(long)]
    pub jobset: PathBuf,
    /// Its child Jobs: a JobList, a List, a Job, or several YAML documents (`-`: stdin).
    /// None when omitted.
    #[arg(long)]
    pub jobs: Option<PathBuf>,
    /// How fields the Kubernetes schema does not have are taken.
    #[command(flatten)]
    pub strictness: Strictness,
    /// The current time (RFC 3339); defaults to the clock.
    #[arg(long)]
    pub now: Option<String>,
    /// Output format; `text` explains which rule matched which Job and why.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Output,
}

/// `serve` flags; each also reads `JOB_DECIDER_<FLAG>` from the environment.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address of the gRPC server: HOST:PORT, or a Unix socket `unix:///PATH` (also
    /// `unix:/PATH`, `unix:RELATIVE`): made with --socket-mode, a stale one (nobody
    /// listening) replaced, anything else at the path refused, removed at shutdown.
    #[arg(long, env = "JOB_DECIDER_ADDR", default_value = "127.0.0.1:50051")]
    pub addr: ListenAddr,
    /// File mode of the --addr Unix socket, in octal (default 0660: its owner and group
    /// may connect, no one else).
    #[arg(long, env = "JOB_DECIDER_SOCKET_MODE", value_parser = parse_mode)]
    pub socket_mode: Option<u32>,
    /// Address of the Prometheus endpoint (`/metrics`).
    #[arg(
        long,
        env = "JOB_DECIDER_METRICS_ADDR",
        default_value = "127.0.0.1:9090"
    )]
    pub metrics_addr: SocketAddr,
    /// Log format.
    #[arg(
        long,
        env = "JOB_DECIDER_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Log filter, e.g. `info` or `job_decider=debug,info`.
    #[arg(long, env = "JOB_DECIDER_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    /// Decisions running at once across all connections; further calls get UNAVAILABLE at once.
    #[arg(
        long,
        env = "JOB_DECIDER_MAX_CONCURRENT_REQUESTS",
        default_value_t = 64
    )]
    pub max_concurrent_requests: usize,
    /// Longest wait for a decision slot once the body is in; then UNAVAILABLE (0s: never wait).
    #[arg(long, env = "JOB_DECIDER_QUEUE_TIMEOUT", default_value = "100ms", value_parser = parse_duration)]
    pub queue_timeout: Duration,
    /// Per-decision timeout (e.g. `30s`, `500ms`), from the slot on; expired calls get DEADLINE_EXCEEDED.
    #[arg(long, env = "JOB_DECIDER_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Largest request accepted (e.g. `256MiB`, `4194304`); larger get RESOURCE_EXHAUSTED.
    #[arg(long, env = "JOB_DECIDER_MAX_MESSAGE_SIZE", default_value = "256MiB", value_parser = parse_size)]
    pub max_message_size: usize,
    /// Request bytes in flight across all calls, and the pods' models (400 bytes a pod);
    /// a call past it gets RESOURCE_EXHAUSTED at once.
    #[arg(long, env = "JOB_DECIDER_MAX_REQUEST_BYTES_IN_FLIGHT", default_value = "256MiB", value_parser = parse_size)]
    pub max_request_bytes_in_flight: usize,
    /// Longest time for a request body to arrive in full; then DEADLINE_EXCEEDED (REQUEST_BODY_TIMEOUT).
    #[arg(long, env = "JOB_DECIDER_BODY_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub body_read_timeout: Duration,
    /// Calls (HTTP/2 streams) open at once on one connection.
    #[arg(
        long,
        env = "JOB_DECIDER_MAX_CONCURRENT_STREAMS",
        default_value_t = 100
    )]
    pub max_concurrent_streams: u32,
    /// HTTP/2 flow-control window of one call: request bytes a client may send ahead of the server reading them.
    #[arg(long, env = "JOB_DECIDER_HTTP2_STREAM_WINDOW", default_value = "1MiB", value_parser = parse_size)]
    pub http2_stream_window: usize,
    /// HTTP/2 flow-control window of one connection, all its calls together.
    #[arg(long, env = "JOB_DECIDER_HTTP2_CONNECTION_WINDOW", default_value = "1MiB", value_parser = parse_size)]
    pub http2_connection_window: usize,
    /// Size the HTTP/2 windows from the measured bandwidth-delay product (overrides the two windows).
    #[arg(long, env = "JOB_DECIDER_HTTP2_ADAPTIVE_WINDOW", default_value_t = false, action = clap::ArgAction::Set)]
    pub http2_adaptive_window: bool,
    /// Largest HTTP/2 frame the server accepts (16KiB to 16MiB - 1).
    #[arg(long, env = "JOB_DECIDER_HTTP2_MAX_FRAME_SIZE", default_value = "1MiB", value_parser = parse_size)]
    pub http2_max_frame_size: usize,
    /// HTTP/2 keepalive ping interval (0s: no pings).
    #[arg(long, env = "JOB_DECIDER_HTTP2_KEEPALIVE_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    pub http2_keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    #[arg(long, env = "JOB_DECIDER_HTTP2_KEEPALIVE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub http2_keepalive_timeout: Duration,
    /// TCP keepalive idle time (0s: the OS default).
    #[arg(long, env = "JOB_DECIDER_TCP_KEEPALIVE", default_value = "60s", value_parser = parse_duration)]
    pub tcp_keepalive: Duration,
    /// Longest TLS handshake.
    #[arg(long, env = "JOB_DECIDER_TLS_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub tls_handshake_timeout: Duration,
    /// Close a connection after this long with no call in flight (0s: never).
    #[arg(long, env = "JOB_DECIDER_MAX_CONNECTION_IDLE", default_value = "5m", value_parser = parse_duration)]
    pub max_connection_idle: Duration,
    /// Send a connection GOAWAY after this long, so clients spread over new replicas (0s: never).
    #[arg(long, env = "JOB_DECIDER_MAX_CONNECTION_AGE", default_value = "30m", value_parser = parse_duration)]
    pub max_connection_age: Duration,
    /// Close a connection this long after its GOAWAY, calls in flight or not.
    #[arg(long, env = "JOB_DECIDER_MAX_CONNECTION_AGE_GRACE", default_value = "60s", value_parser = parse_duration)]
    pub max_connection_age_grace: Duration,
    /// How long a `/metrics` client may take to send its request headers.
    #[arg(long, env = "JOB_DECIDER_METRICS_HEADER_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub metrics_header_timeout: Duration,
    /// A plaintext gRPC port serving only health (for kubelet's probes when TLS is on); off when unset.
    #[arg(long, env = "JOB_DECIDER_HEALTH_ADDR")]
    pub health_addr: Option<SocketAddr>,
    /// PEM certificate chain; serves TLS when set (with --tls-key).
    #[arg(long, env = "JOB_DECIDER_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "JOB_DECIDER_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA bundle; when set, clients must present a certificate it signed (mTLS).
    #[arg(long, env = "JOB_DECIDER_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// After SIGTERM, keep serving this long with health NOT_SERVING (endpoint propagation).
    #[arg(long, env = "JOB_DECIDER_SHUTDOWN_DELAY", default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,
    /// Then wait at most this long for calls in flight.
    #[arg(long, env = "JOB_DECIDER_SHUTDOWN_GRACE", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// Async worker threads (default: one per core).
    #[arg(long, env = "JOB_DECIDER_WORKER_THREADS")]
    pub worker_threads: Option<usize>,
}

/// Output formats of `decide`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// The proto3 JSON of DecideJobResponse, exactly.
    Json,
    /// The same, as YAML.
    Yaml,
    /// A summary for people: each pod, whether it counts and why, then the actions.
    Text,
}

/// The snapshot `decide` and `request` read: a Job, its pods, the time and the state.
/// A file given as `-` is read from stdin (one of them at most).
#[derive(Debug, Default, Args)]
pub struct SnapshotArgs {
    /// The Job (YAML or JSON, as `kubectl get job -o yaml|json` prints it; `-`: stdin).
    // Not a clap conflict with --from-cluster: clap would then stop requiring
    // --from-cluster of -n and --context whenever --job is given (load_request refuses both).
    #[arg(long, required_unless_present = "from_cluster")]
    pub job: Option<PathBuf>,
    /// The pods: a PodList, a List, a Pod, an array of Pods, or several YAML documents
    /// (`-`: stdin). None when omitted.
    #[arg(long)]
    pub pods: Option<PathBuf>,
    /// With --from-cluster: the Job's name (its pods are read with it).
    #[arg(
        value_name = "NAME",
        requires = "from_cluster",
        required_if_eq("from_cluster", "true")
    )]
    pub name: Option<String>,
    /// The cluster to read the Job from, instead of --job and --pods.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The current time (RFC 3339); defaults to the clock.
    #[arg(long)]
    pub now: Option<String>,
    /// The controller state a previous decision printed (its `state`, or the whole response).
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The controller to decide for (a spec.managedBy value); empty means the built-in one.
    #[arg(long, default_value = "")]
    pub controller_name: String,
    /// An extended failure policy document (YAML or JSON; `-`: stdin), sent as the request's
    /// failurePolicy; docs/failure-policy.md. A Job's job-decider.dev/failure-policy
    /// annotation needs no flag.
    #[arg(long, value_name = "FILE")]
    pub failure_policy: Option<PathBuf>,
    /// The nodes (a NodeList, a List, a Node, an array of Nodes, or several YAML
    /// documents; `-`: stdin), sent as the request's nodes: what the failure policy's
    /// terminatingTimeout with onNodes: Unhealthy reads of the terminating pods' nodes.
    #[arg(long, value_name = "FILE")]
    pub nodes: Option<PathBuf>,
    /// Names of nodes the caller's node cache no longer holds (comma-separated or
    /// repeated), sent as the request's missingNodes: terminatingTimeout takes them as
    /// unhealthy (the node was deleted).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub missing_nodes: Vec<String>,
    /// How fields the Kubernetes schema does not have are taken.
    #[command(flatten)]
    pub strictness: Strictness,
}

/// `decide` flags.
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The Job, its pods, the time and the state.
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Output,
    /// With -o json or yaml, include the response's explanation (text always explains).
    #[arg(long)]
    pub explain: bool,
}

/// Encodings `request` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RequestOutput {
    /// Proto3 JSON, as grpcurl `-d @` and ghz `-D` read it.
    Json,
    /// The binary protobuf encoding, as ghz `--binary-file` (`-B`) reads it.
    #[value(alias = "binpb")]
    Binary,
}

/// `request` flags.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// The Job, its pods, the time and the state.
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    /// Send the pods as `leanPods` (only what decisions read; docs/api.md, "Two encodings of a pod").
    #[arg(long)]
    pub lean: bool,
    /// Encoding (`binpb` is `binary`).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "format",
        value_enum,
        default_value = "json"
    )]
    pub output: RequestOutput,
}

/// `validate` arguments: a Job file, or with --from-cluster the name of a Job in a cluster.
#[derive(Debug, Args)]
pub struct JobValidateArgs {
    /// The file, or the Job's name with --from-cluster.
    #[command(flatten)]
    pub file: ValidateArgs,
    /// An extended failure policy document to check with the Job (YAML or JSON; `-`: stdin),
    /// as DecideJob's failurePolicy; docs/failure-policy.md.
    #[arg(long, value_name = "FILE")]
    pub failure_policy: Option<PathBuf>,
    /// The cluster to read the Job from.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `validate` and `jobset validate` arguments.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The file (YAML or JSON; `-`: stdin); for `validate --from-cluster`, the Job's name.
    pub job: PathBuf,
    /// How fields the Kubernetes schema does not have are taken.
    #[command(flatten)]
    pub strictness: Strictness,
}

/// Parses the process's command line, as the plugin when run under
/// [`cluster::PLUGIN_NAME`] (usage then reads `kubectl job-decider …`). Usage errors
/// exit 2, as clap's do.
pub fn parse_command_line() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    let plugin = args
        .first()
        .is_some_and(|a| cluster::is_plugin(Path::new(a)));
    let mut command = Cli::command();
    if plugin {
        command = command.bin_name("kubectl job-decider");
    }
    let matches = command.get_matches_from(cluster::plugin_args(args));
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

/// Runs the parsed command line and returns the process's exit status.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Decide(args) => decide(&args).map(|out| print!("{out}")),
        Command::Validate(args) if args.cluster.from_cluster => {
            validate_from_cluster(&args).map(|out| print!("{}", escaped(&out)))
        }
        Command::Validate(args) => validate_file_with(&args.file, args.failure_policy.as_deref())
            .map(|out| print!("{}", escaped(&out))),
        Command::Request(args) => request(&args).and_then(|bytes| write_stdout(&bytes)),
        Command::Jobset(JobSetCommand::Decide(args)) => {
            decide_jobset(&args).map(|out| print!("{out}"))
        }
        Command::Jobset(JobSetCommand::Validate(args)) => {
            validate_jobset_file(&args).map(|out| print!("{}", escaped(&out)))
        }
        Command::Simulate(args) => crate::simulate::simulate(&args).map(|out| print!("{out}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Error messages quote the input (names, paths, values): escaped for the terminal.
            eprintln!("error: {}", escaped(&err.to_string()));
            err.exit_code()
        }
    }
}

/// Builds the DecideJobRequest the server would get for these files (or, with
/// `--from-cluster`, for the Job and pods read from the cluster); a Job
/// without a uid is taken as created at `--now` (a note on stderr says so),
/// unknown fields are errors or, with `--lenient`, warnings on stderr.
pub fn load_request(args: &SnapshotArgs) -> Result<pb::DecideJobRequest, CliError> {
    if args.cluster.from_cluster && (args.job.is_some() || args.pods.is_some()) {
        return Err(CliError::BadInput(
            "--from-cluster reads the Job and its pods from the cluster: it cannot be used with --job or --pods"
                .to_string(),
        ));
    }
    one_stdin(&[
        ("--job", args.job.as_deref()),
        ("--pods", args.pods.as_deref()),
        ("--state", args.state.as_deref()),
        ("--failure-policy", args.failure_policy.as_deref()),
        ("--nodes", args.nodes.as_deref()),
    ])?;
    let now = match &args.now {
        Some(text) => documents::parse_time(text, "--now")?,
        None => documents::now(),
    };
    let (job, pods) = match (&args.job, &args.name) {
        (Some(path), _) => {
            let job = read_job(path, args.strictness, &now, args.pods.is_some())?;
            let pods = match &args.pods {
                Some(path) => read_pods(path, args.strictness)?,
                None => Vec::new(),
            };
            (job, pods)
        }
        (None, Some(name)) => {
            let live = cluster::read(&args.cluster, name, cluster::Read::JobAndPods)?;
            (live.job, live.pods)
        }
        (None, None) => return Err(CliError::BadInput("--job is required".to_string())),
    };
    let state = match &args.state {
        Some(path) => {
            let read = documents::parse_state_with(
                &read_file(path)?,
                &file_name(path),
                args.strictness.unknown_fields(),
            )?;
            warn(&read.warnings);
            Some(read.value)
        }
        None => None,
    };
    Ok(pb::DecideJobRequest {
        job: Some(job),
        pods,
        now: Some(now),
        state,
        controller_name: args.controller_name.clone(),
        expectations: None,
        lean_pods: Vec::new(),
        explain: false,
        failure_policy: read_failure_policy(args.failure_policy.as_deref())?,
        nodes: match &args.nodes {
            Some(path) => read_nodes(path, args.strictness)?,
            None => Vec::new(),
        },
        missing_nodes: args.missing_nodes.clone(),
    })
}

/// The request these files make, encoded as asked. It is not judged here:
/// the server's answer names any field it rejects.
pub fn request(args: &RequestArgs) -> Result<Vec<u8>, CliError> {
    let mut request = load_request(&args.snapshot)?;
    if args.lean {
        request = api::lean::lean_request(request).map_err(|(i, e)| {
            CliError::BadInput(format!(
                "--lean: pods[{i}].{e}; such a pod has no lean form, send it without --lean"
            ))
        })?;
    }
    match args.output {
        RequestOutput::Json => documents::to_json(&request)
            .map(|s| (s + "\n").into_bytes())
            .map_err(|e| CliError::Failed(format!("cannot print: {e}"))),
        RequestOutput::Binary => {
            if std::io::stdout().is_terminal() {
                return Err(CliError::BadInput(
                    "-o binary writes protobuf bytes: redirect stdout to a file or a pipe"
                        .to_string(),
                ));
            }
            Ok(prost::Message::encode_to_vec(&request))
        }
    }
}

/// Writes raw bytes (a binary request has no text form) and flushes them.
fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Failed(format!("cannot write stdout: {e}")))
}

/// Decides offline and renders the plan in the requested format.
pub fn decide(args: &DecideArgs) -> Result<String, CliError> {
    let mut request = load_request(&args.snapshot)?;
    // The text is rendered from the explanation, so it always asks for one.
    request.explain = args.explain || args.output == Output::Text;
    let decision = api::decide(request)?;
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("cannot print: {e}"));
    match args.output {
        Output::Json => documents::to_json(&decision.response())
            .map(|s| s + "\n")
            .map_err(|e| failed(&e)),
        Output::Yaml => documents::to_yaml(&decision.response()).map_err(|e| failed(&e)),
        Output::Text => Ok(ended(escaped(&explain::explain(&decision)).into_owned())),
    }
}

/// Decides a JobSet offline and renders the plan in the requested format.
pub fn decide_jobset(args: &JobSetDecideArgs) -> Result<String, CliError> {
    one_stdin(&[
        ("--jobset", Some(&args.jobset)),
        ("--jobs", args.jobs.as_deref()),
    ])?;
    let unknown = args.strictness.unknown_fields();
    let read =
        documents::parse_jobset_with(&read_file(&args.jobset)?, &file_name(&args.jobset), unknown)?;
    warn(&read.warnings);
    let jobset = read.value;
    let jobs = match &args.jobs {
        Some(path) => {
            let read = documents::parse_jobs_with(&read_file(path)?, &file_name(path), unknown)?;
            warn(&read.warnings);
            read.value
        }
        None => Vec::new(),
    };
    let now = match &args.now {
        Some(text) => documents::parse_time(text, "--now")?,
        None => documents::now(),
    };
    let request = pb::DecideJobSetRequest {
        job_set: Some(jobset),
        jobs,
        now: Some(now),
        explain: args.output == Output::Text,
    };
    let response = api::decide_jobset(request)?;
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("cannot print: {e}"));
    match args.output {
        Output::Json => documents::to_json(&response)
            .map(|s| s + "\n")
            .map_err(|e| failed(&e)),
        Output::Yaml => documents::to_yaml(&response).map_err(|e| failed(&e)),
        Output::Text => Ok(ended(
            escaped(&explain::explain_jobset(&response)).into_owned(),
        )),
    }
}

/// Validates a JobSet file's failure policy: every violation; bad input when there is any.
pub fn validate_jobset(path: &Path) -> Result<String, CliError> {
    validate_jobset_file(&ValidateArgs {
        job: path.to_path_buf(),
        strictness: Strictness::default(),
    })
}

/// `jobset validate`: the JobSet file (or stdin), strictly unless `--lenient`.
pub fn validate_jobset_file(args: &ValidateArgs) -> Result<String, CliError> {
    let path = &args.job;
    let read = documents::parse_jobset_with(
        &read_file(path)?,
        &file_name(path),
        args.strictness.unknown_fields(),
    )?;
    warn(&read.warnings);
    let response = api::validate_jobset_request(pb::ValidateJobSetRequest {
        job_set: Some(read.value),
    })?;
    input::violations_report(path, &response.violations)
}

/// Validates a Job file: every violation, one per line; bad input when there is any.
pub fn validate(path: &Path) -> Result<String, CliError> {
    validate_file(&ValidateArgs {
        job: path.to_path_buf(),
        strictness: Strictness::default(),
    })
}

/// `validate`: the Job file (or stdin), strictly unless `--lenient`; a Job
/// without a uid is validated as the API server would create it now.
pub fn validate_file(args: &ValidateArgs) -> Result<String, CliError> {
    validate_file_with(args, None)
}

/// `validate --failure-policy FILE`: the Job file with an extended failure
/// policy document beside it (its violations are named under `failurePolicy`).
pub fn validate_file_with(
    args: &ValidateArgs,
    failure_policy: Option<&Path>,
) -> Result<String, CliError> {
    let path = &args.job;
    one_stdin(&[("JOB", Some(path)), ("--failure-policy", failure_policy)])?;
    let job = read_job(path, args.strictness, &documents::now(), false)?;
    input::validate_job(path, job, read_failure_policy(failure_policy)?)
}

/// Validates a Job read from a cluster, as [`validate`] does a file.
pub fn validate_from_cluster(args: &JobValidateArgs) -> Result<String, CliError> {
    let name = args.file.job.to_string_lossy();
    let live = cluster::read(&args.cluster, &name, cluster::Read::JobOnly)?;
    let what = format!("job {}/{name}", live.namespace);
    input::validate_job(
        Path::new(&what),
        live.job,
        read_failure_policy(args.failure_policy.as_deref())?,
    )
}

fn serve(args: ServeArgs) -> Result<(), CliError> {
    server::init_tracing(args.log_format, &args.log_level).map_err(CliError::BadInput)?;
    let socket_mode = match (&args.addr, args.socket_mode) {
        (ListenAddr::Tcp(_), Some(_)) => {
            return Err(CliError::BadInput(
                "--socket-mode applies to a unix: --addr only".to_string(),
            ));
        }
        (_, mode) => mode.unwrap_or(server::socket::DEFAULT_SOCKET_MODE),
    };
    let config = ServerConfig {
        max_concurrent_requests: args.max_concurrent_requests,
        queue_timeout: args.queue_timeout,
        request_timeout: args.request_timeout,
        max_message_size: args.max_message_size,
        max_request_bytes_in_flight: args.max_request_bytes_in_flight,
        body_read_timeout: args.body_read_timeout,
        max_concurrent_streams: args.max_concurrent_streams,
        http2_stream_window: window(args.http2_stream_window, "--http2-stream-window")?,
        http2_connection_window: window(args.http2_connection_window, "--http2-connection-window")?,
        http2_adaptive_window: args.http2_adaptive_window,
        http2_max_frame_size: window(args.http2_max_frame_size, "--http2-max-frame-size")?,
        http2_keepalive_interval: args.http2_keepalive_interval,
        http2_keepalive_timeout: args.http2_keepalive_timeout,
        tcp_keepalive: args.tcp_keepalive,
        tls_handshake_timeout: args.tls_handshake_timeout,
        max_connection_idle: args.max_connection_idle,
        max_connection_age: args.max_connection_age,
        max_connection_age_grace: args.max_connection_age_grace,
        metrics_header_timeout: args.metrics_header_timeout,
        health_addr: args.health_addr,
        tls: match (args.tls_cert, args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert,
                key,
                client_ca: args.tls_client_ca,
            }),
            _ => None,
        },
        shutdown_delay: args.shutdown_delay,
        shutdown_grace: args.shutdown_grace,
        socket_mode,
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(threads) = args.worker_threads {
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    let addr = args.addr.clone();
    runtime
        .block_on(server::run(args.addr, args.metrics_addr, config))
        .map_err(|e| match e {
            // What is at a socket's path is the flag's fault; say which flag.
            server::ServeError::Socket(e) if e.is_bad_input() => {
                CliError::BadInput(format!("--addr {addr}: {e}"))
            }
            server::ServeError::Socket(e) => CliError::Failed(format!("--addr {addr}: {e}")),
            e => CliError::Failed(e.to_string()),
        })
}

/// Parses a file mode in octal: `0660`, `660`, `0o660`.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0o").unwrap_or(digits);
    match u32::from_str_radix(digits, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(format!(
            "{text:?} is not a file mode: octal digits from 0 to 0777, like 0660"
        )),
    }
}

/// An HTTP/2 size setting: it must fit HTTP/2's 32 bits (the server checks the exact range).
fn window(bytes: usize, flag: &str) -> Result<u32, CliError> {
    u32::try_from(bytes)
        .map_err(|_| CliError::BadInput(format!("{flag}: {bytes} bytes is too large")))
}

/// Parses `500ms`, `30s`, `2m`, `1h` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30s or 500ms"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use ms, s, m or h)"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

/// Parses a byte size: `4194304`, `64KiB`, `256MiB`, `1GiB` (also KB/MB/GB as powers of 1000).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: usize = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 256MiB"))?;
    let factor: usize = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(format!("{text:?}: unknown unit {unit:?}")),
    };
    value
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Text for a terminal ends with a newline, so a shell prompt or a note on stderr starts on
/// a line of its own.
fn ended(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests;
