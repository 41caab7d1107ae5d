//! `job-decider simulate`: a Job's whole life under a failure script, on a
//! virtual clock (the `job-decider-sim` crate), decided in process or by any
//! server speaking the contract (`--decider-addr`), printed for people or as
//! JSON, and optionally side by side with another Job's policy (`--compare`).

use std::path::{Path, PathBuf};

mod monte_carlo;

use clap::{Args, ValueEnum};

use crate::cluster::{self, ClusterArgs};
use crate::documents;
use crate::input::{self, CliError, Strictness};
use job_decider_api::safe_text::escaped;
use job_decider_api::{self as api, ApiError, pb};
use job_decider_sim::{
    ContainerRestart, ContainerRestartRule, DecideError, Decider, Limits, Options, RunningPods,
    Script, ScriptErrors, ScriptWarning, SimError, Timeline,
};

/// Output formats of `simulate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SimulateOutput {
    /// The timeline for people: events with relative and absolute times, attempts, summary.
    Text,
    /// The timeline as JSON, for programs (the same fields, byte-stable for one script).
    Json,
}

/// `simulate` flags.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The Job (YAML or JSON), as the API server stores it (`-`: stdin, for any one file).
    // Not a clap conflict with --from-cluster, as for decide: simulate refuses both itself.
    #[arg(long, required_unless_present = "from_cluster")]
    pub job: Option<PathBuf>,
    /// With --from-cluster: the Job's name (its pods are read with it).
    #[arg(
        value_name = "NAME",
        requires = "from_cluster",
        required_if_eq("from_cluster", "true")
    )]
    pub name: Option<String>,
    /// The cluster to read the Job and its pods from, instead of --job and --pods: the
    /// future is played from the Job's current state, starting now.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The failure script (YAML; examples/simulate/README.md describes it). Every error
    /// in it is printed at once (exit 2); lines that do nothing are warnings. A run stops
    /// when the Job is finished, at the horizon, when idle, after maxSyncs syncs
    /// (syncLimit), or after 1000 acting syncs at one instant (decisionLoop).
    #[arg(long)]
    pub script: PathBuf,
    /// The Job's current pods, if it has any (a PodList, a List, or YAML documents).
    #[arg(long)]
    pub pods: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: SimulateOutput,
    /// Play the same script under this other Job too, and show both side by side.
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Print only the summary (the answer, `Result:` last), not the events and
    /// attempts; with --compare, each Job's summary in turn; with `-o json`, the
    /// `summary` object (with --compare, `left` and `right` summaries).
    #[arg(long)]
    pub summary: bool,
    /// Ask this gRPC server (HOST:PORT or unix:///PATH, plaintext) for every decision instead of
    /// deciding in process.
    #[arg(long)]
    pub decider_addr: Option<String>,
    /// When the simulation starts (RFC 3339); default the Job's creationTimestamp, else
    /// 2025-01-01T00:00:00Z (a Job written without a uid is taken as created then);
    /// with --from-cluster, now.
    #[arg(long)]
    pub start: Option<String>,
    /// An extended failure policy document for the Job (YAML or JSON; `-`: stdin;
    /// docs/failure-policy.md), sent as every decision's failurePolicy. Not for the
    /// --compare Job: compare a script with and without it.
    #[arg(long, value_name = "FILE")]
    pub failure_policy: Option<PathBuf>,
    /// Unknown fields in the Job and pods: errors unless `--lenient`.
    #[command(flatten)]
    pub strictness: Strictness,
    /// Also write the report as one self-contained HTML page (summary, chart, events) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the Gantt chart as an SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Leave out the note about a Job written without a uid (taken as the API server
    /// would create it); warnings and errors are still printed.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Monte Carlo: play N lives of the Job (life i with a seed drawn from --seed and
    /// i) and print the odds and costs: P(Complete), P(Failed) by reason, time to
    /// finish, pods, failures, backoff, pod- and resource-hours. With --compare, both
    /// Jobs over the same lives.
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    /// The seed: of the one run (instead of the script's `seed`), or that the lives'
    /// seeds are drawn from (default the script's `seed`).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Play life I (from 1) of a Monte Carlo run exactly, as a single simulation
    /// (text, JSON, --html), to look at a life the report counts.
    #[arg(long, value_name = "I", conflicts_with = "runs")]
    pub replay: Option<u64>,
    /// Threads to play lives on (default: every core); the report is the same whatever it is.
    #[arg(long, value_name = "N", requires = "runs")]
    pub jobs: Option<usize>,
    /// With --runs: also write one CSV row per life to FILE (docs/cli.md lists the columns).
    #[arg(long, value_name = "FILE", requires = "runs")]
    pub csv: Option<PathBuf>,
    /// Carry every pod in every sync's request, as an informer lists them, instead of
    /// leaving out the counted pods no decision reads: slower, and the same timeline.
    #[arg(long)]
    pub carry_all_pods: bool,
}

/// The start when neither `--start` nor the Job says: fixed, so that a timeline
/// never depends on the day it was played.
const DEFAULT_START: &str = "2025-01-01T00:00:00Z";

/// job-decider's own decision, as a [`Decider`] that takes the world's encoded pods
/// as they are (the server's own reading of a request).
struct InProcess;

impl Decider for InProcess {
    fn decide(
        &mut self,
        request: pb::DecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        in_process(request)
    }

    fn decide_encoded(
        &mut self,
        request: api::LazyDecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        api::decide(request)
            .map(|d| d.response())
            .map_err(|e| DecideError {
                bad_input: matches!(e, ApiError::BadRequest { .. }),
                message: CliError::from(e).to_string(),
            })
    }
}

/// job-decider's own decision, as a [`Decider`].
fn in_process(request: pb::DecideJobRequest) -> Result<pb::DecideJobResponse, DecideError> {
    api::decide(request)
        .map(|d| d.response())
        .map_err(|e| DecideError {
            bad_input: matches!(e, ApiError::BadRequest { .. }),
            message: CliError::from(e).to_string(),
        })
}

/// A gRPC client for `--decider-addr`, driven on a runtime of its own.
struct Remote {
    runtime: tokio::runtime::Runtime,
    client: pb::job_decider_client::JobDeciderClient<tonic::transport::Channel>,
}

impl Remote {
    fn connect(addr: &str) -> Result<Remote, CliError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
        let channel = runtime
            .block_on(crate::address::connect(addr))
            .map_err(|e| match e {
                crate::address::DialError::BadAddress(e) => {
                    CliError::BadInput(format!("--decider-addr {addr}: {e}"))
                }
                e => CliError::Failed(format!("--decider-addr {addr}: {e}")),
            })?;
        let client = pb::job_decider_client::JobDeciderClient::new(channel)
            .max_decoding_message_size(api::DEFAULT_MAX_MESSAGE_SIZE)
            .max_encoding_message_size(api::DEFAULT_MAX_MESSAGE_SIZE);
        Ok(Remote { runtime, client })
    }
}

impl Decider for Remote {
    fn decide(
        &mut self,
        request: pb::DecideJobRequest,
    ) -> Result<pb::DecideJobResponse, DecideError> {
        let client = &mut self.client;
        self.runtime
            .block_on(client.decide_job(request))
            .map(tonic::Response::into_inner)
            .map_err(|s| DecideError {
                bad_input: s.code() == tonic::Code::InvalidArgument,
                message: format!("{:?}: {}", s.code(), s.message()),
            })
    }
}

/// Every script error, each on a line of its own naming its field, the script's file first.
fn script_errors(script: &Path, errors: &ScriptErrors) -> CliError {
    let name = input::file_name(script);
    match errors.0.as_slice() {
        [one] => CliError::BadInput(format!("{name}: {one}")),
        all => {
            let lines: Vec<String> = all.iter().map(|e| format!("  {e}")).collect();
            CliError::BadInput(format!(
                "{name}: {} script errors:\n{}",
                all.len(),
                lines.join("\n")
            ))
        }
    }
}

/// The script's warnings on stderr, the script's file (and the Job's, for
/// `--compare`'s) first; a warning already printed is not printed again.
fn script_warnings(
    script: &Path,
    job: Option<&Path>,
    warnings: &[ScriptWarning],
    printed: &mut Vec<String>,
) {
    let name = match job {
        Some(job) => format!(
            "{} (with {})",
            input::file_name(script),
            input::file_name(job)
        ),
        None => input::file_name(script),
    };
    let mut lines = Vec::new();
    for w in warnings {
        let text = w.to_string();
        if !printed.contains(&text) {
            lines.push(format!("{name}: {text}"));
            printed.push(text);
        }
    }
    input::warn(&lines);
}

fn sim_error(script: &Path, err: SimError) -> CliError {
    match err {
        SimError::Script(e) => script_errors(script, &e),
        SimError::Start(m) => CliError::BadInput(m),
        SimError::Decide { source, sync, at } if source.bad_input => {
            CliError::BadInput(format!("sync {sync} at {at}: {}", source.message))
        }
        other => CliError::Failed(other.to_string()),
    }
}

/// Where the first Job comes from.
enum Source<'a> {
    /// A file (`--job`), with `--pods` if given.
    File(&'a Path),
    /// A live cluster (`--from-cluster NAME`): the Job and its pods as they are now.
    Cluster(Box<cluster::LiveJob>),
}

/// What the simulated kubelet needs from the Job's pod template that the contract's
/// template does not carry (it carries only what decisions read), read from the
/// manifest: `terminationGracePeriodSeconds` (`None` when not written: the API
/// server's default) and each container's own `restartPolicy` and
/// `restartPolicyRules` (KEP-5307). A text the Job's reader refuses never gets here.
#[derive(Default)]
struct KubeletFields {
    grace: Option<i64>,
    container_restarts: Vec<ContainerRestart>,
    /// A pod's resource requests, for Monte Carlo's resource-hours.
    requests: job_decider_sim::monte_carlo::Requests,
}

fn kubelet_fields(text: &str) -> KubeletFields {
    let Ok(value) = serde_yaml::from_str::<serde_json::Value>(text) else {
        return KubeletFields::default();
    };
    let Some(spec) = value.pointer("/spec/template/spec") else {
        return KubeletFields::default();
    };
    KubeletFields {
        grace: spec
            .get("terminationGracePeriodSeconds")
            .and_then(serde_json::Value::as_i64),
        container_restarts: items(spec, "containers")
            .iter()
            .map(container_restart)
            .collect(),
        requests: monte_carlo::requests(spec),
    }
}

/// The array at `key` of `v`, or none.
fn items<'v>(v: &'v serde_json::Value, key: &str) -> &'v [serde_json::Value] {
    v.get(key)
        .and_then(serde_json::Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `key` of `v`, or empty.
fn text_at(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn container_restart(c: &serde_json::Value) -> ContainerRestart {
    ContainerRestart {
        container: text_at(c, "name"),
        policy: text_at(c, "restartPolicy"),
        rules: items(c, "restartPolicyRules")
            .iter()
            .map(|r| {
                let codes = r.get("exitCodes").cloned().unwrap_or_default();
                ContainerRestartRule {
                    action: text_at(r, "action"),
                    operator: text_at(&codes, "operator"),
                    values: items(&codes, "values")
                        .iter()
                        .filter_map(serde_json::Value::as_i64)
                        .filter_map(|v| i32::try_from(v).ok())
                        .collect(),
                }
            })
            .collect(),
    }
}

/// Refuses the flags that cannot go together (beyond what clap checks).
fn check_flags(args: &SimulateArgs) -> Result<(), CliError> {
    if args.cluster.from_cluster {
        if args.job.is_some() || args.pods.is_some() {
            return Err(CliError::BadInput(
                "--from-cluster reads the Job and its pods from the cluster: it cannot be used with --job or --pods"
                    .to_string(),
            ));
        }
        if args.compare.is_some() {
            return Err(CliError::BadInput(
                "--compare cannot be used with --from-cluster: the live pods belong to the first Job"
                    .to_string(),
            ));
        }
    }
    if args.runs.is_some() {
        let refused = [
            ("--decider-addr", args.decider_addr.is_some()),
            ("--svg", args.svg.is_some()),
            ("--summary", args.summary),
        ];
        if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
            return Err(CliError::BadInput(format!(
                "{flag} cannot be used with --runs: a Monte Carlo run plays its lives in process and prints their report (--replay I plays one life)"
            )));
        }
    }
    if let Some(n) = args.runs
        && !(1..=monte_carlo::MAX_RUNS).contains(&n)
    {
        return Err(CliError::BadInput(format!(
            "--runs {n}: give 1 to {} lives",
            monte_carlo::MAX_RUNS
        )));
    }
    if args.replay == Some(0) {
        return Err(CliError::BadInput(
            "--replay 0: lives are numbered from 1".to_string(),
        ));
    }
    if args.jobs == Some(0) {
        return Err(CliError::BadInput(
            "--jobs 0: give at least 1 thread".to_string(),
        ));
    }
    if args.pods.is_some() && args.compare.is_some() {
        return Err(CliError::BadInput(
            "--compare cannot be used with --pods: the pods belong to the first Job".to_string(),
        ));
    }
    Ok(())
}

/// Plays the script and renders the timeline (or the comparison).
pub fn simulate(args: &SimulateArgs) -> Result<String, CliError> {
    check_flags(args)?;
    input::one_stdin(&[
        ("--job", args.job.as_deref()),
        ("--script", Some(&args.script)),
        ("--pods", args.pods.as_deref()),
        ("--compare", args.compare.as_deref()),
        ("--failure-policy", args.failure_policy.as_deref()),
    ])?;
    let failure_policy = input::read_failure_policy(args.failure_policy.as_deref())?;
    // Checked with the Job below: every error of the script at once.
    let base = Script::parse(&input::read_file(&args.script)?)
        .map_err(|e| script_errors(&args.script, &e.into()))?;
    let seed = args.seed.unwrap_or(base.seed);
    // The one run plays the seed's life; --replay I, life I of a Monte Carlo run.
    let script = match args.replay {
        Some(life) => base.life(Script::life_seed(seed, life)),
        None => base.life(seed),
    };
    let source = match (&args.job, &args.name) {
        (Some(path), _) => Source::File(path),
        (None, Some(name)) => Source::Cluster(Box::new(cluster::read(
            &args.cluster,
            name,
            cluster::Read::JobAndPods,
        )?)),
        (None, None) => return Err(CliError::BadInput("--job is required".to_string())),
    };
    let pods = match (&source, &args.pods) {
        // Attempts are numbered in creation order, not the order the API lists pods.
        (Source::Cluster(live), _) => {
            let mut pods = live.pods.clone();
            pods.sort_by_key(|p| {
                let m = p.metadata.as_ref();
                (
                    m.and_then(|m| m.creation_timestamp.as_ref())
                        .map(|t| (t.seconds, t.nanos)),
                    m.map(|m| m.name.clone()),
                )
            });
            pods
        }
        (Source::File(_), Some(path)) => input::read_pods(path, args.strictness)?,
        (Source::File(_), None) => Vec::new(),
    };
    let start = match (&args.start, &source) {
        (Some(text), _) => Some(documents::parse_time(text, "--start")?),
        // A live Job's future starts now.
        (None, Source::Cluster(_)) => Some(documents::now()),
        (None, Source::File(_)) => None,
    };
    // A manifest written without a uid is created at the start.
    let created = match &start {
        Some(t) => *t,
        None => documents::parse_time(DEFAULT_START, "the default start")?,
    };
    let options = Options {
        start_nanos: start.map(|t| {
            t.seconds
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::from(t.nanos))
        }),
        controller_name: String::new(),
        // Nobody knows how long a live pod has left: the script's run time, from now.
        running_pods: match source {
            Source::Cluster(_) => RunningPods::FromNow,
            Source::File(_) => RunningPods::FromTheirStart,
        },
        // A Job's own annotation rides with it; --failure-policy rides every request as its field.
        failure_policy,
        limits: Limits::default(),
        // Read with each Job below (the contract's template does not carry them).
        termination_grace_period_seconds: None,
        container_restarts: Vec::new(),
        carry_all_pods: args.carry_all_pods,
    };
    // The --compare Job is played without --failure-policy: the same script with and without it.
    let compare_options = Options {
        failure_policy: String::new(),
        ..options.clone()
    };
    let mut remote = match &args.decider_addr {
        Some(addr) => Some(Remote::connect(addr)?),
        None => None,
    };
    let mut printed = Vec::new();
    let mut play = |job: pb::Job,
                    pods: Vec<pb::Pod>,
                    options: &Options,
                    compared: Option<&Path>|
     -> Result<Timeline, CliError> {
        let result = match remote.as_mut() {
            Some(r) => job_decider_sim::play(job, pods, &script, options, r),
            None => job_decider_sim::play(job, pods, &script, options, &mut InProcess),
        };
        let played = result.map_err(|e| sim_error(&args.script, e))?;
        script_warnings(&args.script, compared, &played.warnings, &mut printed);
        Ok(played.timeline)
    };
    let read_job = |path: &Path| -> Result<(pb::Job, KubeletFields), CliError> {
        let text = input::read_file(path)?;
        let job = input::read_job_text(
            &text,
            path,
            args.strictness,
            &created,
            args.pods.is_some(),
            args.quiet,
        )?;
        Ok((job, kubelet_fields(&text)))
    };
    let (left_job, left_fields, left_path, left_name) = match source {
        Source::File(path) => {
            let (job, fields) = read_job(path)?;
            (job, fields, path, path.to_path_buf())
        }
        // The live Job as the contract carries it: the default grace period, the
        // pod's restart policy for every container.
        Source::Cluster(live) => {
            let name = args.name.as_deref().unwrap_or_default();
            let what = PathBuf::from(format!("job {}/{name}", live.namespace));
            (live.job, KubeletFields::default(), Path::new(""), what)
        }
    };
    let left_requests = left_fields.requests;
    let options = Options {
        termination_grace_period_seconds: left_fields.grace,
        container_restarts: left_fields.container_restarts,
        ..options
    };
    // Nothing is played until every Job passes the API server's validation (as
    // `validate` checks it) and the script fits each.
    input::validate_job(&left_name, left_job.clone(), options.failure_policy.clone())?;
    let right = match &args.compare {
        Some(other) => {
            let (job, fields) = read_job(other)?;
            input::validate_job(other, job.clone(), String::new())?;
            let options = Options {
                termination_grace_period_seconds: fields.grace,
                container_restarts: fields.container_restarts,
                ..compare_options
            };
            Some((other, job, options, fields.requests))
        }
        None => None,
    };
    // The script as written is checked (a life's draws would hide a bad distribution).
    let warnings = job_decider_sim::check(left_job.clone(), pods.clone(), &base, &options)
        .map_err(|e| sim_error(&args.script, e))?;
    if let Some((_, job, options, _)) = &right {
        job_decider_sim::check(job.clone(), pods.clone(), &base, options)
            .map_err(|e| sim_error(&args.script, e))?;
    }
    if let Some(runs) = args.runs {
        // The script's own warnings, once: each life plays the same lines.
        script_warnings(&args.script, None, &warnings, &mut Vec::new());
        let same_name = right.as_ref().is_some_and(|(_, job, _, _)| {
            job.metadata.as_ref().map(|m| (&m.namespace, &m.name))
                == left_job.metadata.as_ref().map(|m| (&m.namespace, &m.name))
        });
        let job_name = |job: &pb::Job, path: &Path| {
            if same_name {
                return path.display().to_string();
            }
            job.metadata
                .as_ref()
                .map_or_else(String::new, |m| format!("{}/{}", m.namespace, m.name))
        };
        let left = monte_carlo::Subject {
            name: job_name(&left_job, left_path),
            job: left_job,
            options: &options,
            requests: left_requests,
        };
        let right = right
            .map(|(path, job, options, requests)| (job_name(&job, path), job, options, requests));
        let right_subject =
            right
                .as_ref()
                .map(|(name, job, options, requests)| monte_carlo::Subject {
                    name: name.clone(),
                    job: job.clone(),
                    options,
                    requests: requests.clone(),
                });
        return monte_carlo::run(
            args,
            &base,
            seed,
            runs,
            &left,
            right_subject.as_ref(),
            &pods,
        );
    }
    let left = play(left_job, pods.clone(), &options, None)?;
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(format!("cannot print: {e}"));
    let Some((other, right_job, compare_options, _)) = right else {
        crate::report::write_pictures(args.html.as_deref(), args.svg.as_deref(), &left, None)?;
        return match (args.output, args.summary) {
            (SimulateOutput::Text, false) => Ok(left.text()),
            (SimulateOutput::Text, true) => Ok(left.summary_text()),
            (SimulateOutput::Json, false) => serde_json::to_string_pretty(&left)
                .map(|s| s + "\n")
                .map_err(|e| failed(&e)),
            (SimulateOutput::Json, true) => serde_json::to_string_pretty(&left.summary)
                .map(|s| s + "\n")
                .map_err(|e| failed(&e)),
        };
    };
    let right = play(right_job, pods, &compare_options, Some(other))?;
    // Columns are named by the Jobs (by the files when the Jobs share a name).
    let (left_name, right_name) = if left.job == right.job {
        (left_path.display().to_string(), other.display().to_string())
    } else {
        (left.job.clone(), right.job.clone())
    };
    crate::report::write_pictures(
        args.html.as_deref(),
        args.svg.as_deref(),
        &left,
        Some((&left_name, &right_name, &right)),
    )?;
    if args.summary {
        return match args.output {
            // Each Job's own summary, named, so each ends with its Result.
            SimulateOutput::Text => Ok(format!(
                "{}:\n{}\n{}:\n{}",
                escaped(&left_name),
                left.summary_text(),
                escaped(&right_name),
                right.summary_text()
            )),
            SimulateOutput::Json => serde_json::to_string_pretty(&serde_json::json!({
                "left": left.summary,
                "right": right.summary,
            }))
            .map(|s| s + "\n")
            .map_err(|e| failed(&e)),
        };
    }
    match args.output {
        SimulateOutput::Text => Ok(format!(
            "{}\n{}",
            job_decider_sim::compare_text(&left_name, &left, &right_name, &right),
            "(each timeline alone: run without --compare)\n"
        )),
        SimulateOutput::Json => {
            let value = serde_json::json!({
                "left": left,
                "right": right,
                "divergence": job_decider_sim::diverge(&left, &right),
            });
            serde_json::to_string_pretty(&value)
                .map(|s| s + "\n")
                .map_err(|e| failed(&e))
        }
    }
}
