//! `--from-cluster`: a Job and the pods its controller would consider, read
//! from a live cluster through kubeconfig (kube-rs), in the contract's terms;
//! and the binary as a kubectl plugin (`kubectl job-decider …`).
//!
//! Reading is all this module does: the objects go through
//! `job_decider_k8s`'s field-by-field copy onto the contract's messages and
//! then the server's own conversion, validation and decision, as files do.
//! [`read`] is the one entry point, for `decide`, `validate`, `request` and
//! any other command that plays a Job from its current state.
//!
//! The pods are those upstream's Job controller lists: the pods of the Job's
//! namespace whose controller is the Job (by uid), and the orphans its
//! selector matches (candidates for adoption). A pod another owner controls
//! is left out, as the controller's claim leaves it (the service rejects one).
//!
//! Built without the `cluster` feature, the flags still parse and every read
//! fails with [`ClusterError::NotBuilt`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, FromArgMatches};

use crate::cli::Cli;
use job_decider_api::pb;

/// The name kubectl runs for `kubectl job-decider …`: kubectl looks up
/// `kubectl-<name>` on PATH, with each `-` of the command written as `_`.
pub const PLUGIN_NAME: &str = "kubectl-job_decider";

/// Where a live Job is read from: `--from-cluster` and kubectl's own flags
/// for choosing a cluster and namespace.
#[derive(Clone, Debug, Default, Args)]
pub struct ClusterArgs {
    /// Read the Job (and its pods) from a cluster through kubeconfig instead of files.
    #[arg(long)]
    pub from_cluster: bool,
    /// The Job's namespace [default: the context's namespace, else `default`].
    #[arg(short = 'n', long, requires = "from_cluster")]
    pub namespace: Option<String>,
    /// The kubeconfig context [default: the current context].
    #[arg(long, requires = "from_cluster")]
    pub context: Option<String>,
    /// The kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else the pod's service account].
    #[arg(long, requires = "from_cluster")]
    pub kubeconfig: Option<PathBuf>,
}

/// Why a Job could not be read from a cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable kubeconfig, context or credentials file: the user's configuration.
    #[error("{0}")]
    Config(String),
    /// The Job does not exist (as a missing file: the input names nothing).
    #[error("job {name:?} not found in namespace {namespace:?}")]
    NotFound {
        /// The namespace looked in.
        namespace: String,
        /// The Job's name.
        name: String,
    },
    /// The API server refused the credentials (401) or the access (403).
    #[error("{0}")]
    Denied(String),
    /// The API server could not be reached, or failed to answer.
    #[error("{0}")]
    Unreachable(String),
    /// This binary was built without the `cluster` feature.
    #[error(
        "this job-decider was built without the `cluster` feature: --from-cluster is not available"
    )]
    NotBuilt,
}

impl ClusterError {
    /// Whether the error lies in what the user gave (flags, kubeconfig, a
    /// Job name): exit 2, as bad files are. Otherwise the cluster or the
    /// program failed: exit 1.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ClusterError::Config(_) | ClusterError::NotFound { .. } | ClusterError::NotBuilt
        )
    }
}

/// A Job as its cluster stores it (status included) and the pods its
/// controller would consider, as the contract's messages.
#[derive(Clone, Debug)]
pub struct LiveJob {
    /// The namespace the Job was read from.
    pub namespace: String,
    /// The Job.
    pub job: pb::Job,
    /// Its pods and the orphans its selector matches (empty when not asked for).
    pub pods: Vec<pb::Pod>,
}

/// What to read besides the Job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The Job alone (`validate`).
    JobOnly,
    /// The Job and the pods its controller would consider.
    JobAndPods,
}

/// Reads the Job `name` (and, if asked, its pods) from the cluster the flags name.
pub fn read(args: &ClusterArgs, name: &str, what: Read) -> Result<LiveJob, ClusterError> {
    #[cfg(feature = "cluster")]
    {
        live::read(args, name, what)
    }
    #[cfg(not(feature = "cluster"))]
    {
        let _ = (args, name, what);
        Err(ClusterError::NotBuilt)
    }
}

/// Whether the program runs as the kubectl plugin (`argv[0]` is
/// [`PLUGIN_NAME`], or a link of that name).
pub fn is_plugin(argv0: &Path) -> bool {
    argv0
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name == PLUGIN_NAME || name == format!("{PLUGIN_NAME}.exe"))
}

/// The command line as clap should see it. As a plugin, `decide`,
/// `validate`, `request` and `simulate` read from the cluster unless a file is
/// named (`--job`): `kubectl job-decider decide JOB` is `job-decider decide
/// --from-cluster JOB`. Anything else passes unchanged.
pub fn plugin_args(args: Vec<OsString>) -> Vec<OsString> {
    let Some(argv0) = args.first() else {
        return args;
    };
    if !is_plugin(Path::new(argv0)) {
        return args;
    }
    let Some(command) = args.get(1).and_then(|a| a.to_str()) else {
        return args;
    };
    if !matches!(command, "decide" | "validate" | "request" | "simulate") {
        return args;
    }
    let names_a_file_or_the_flag = args[2..].iter().any(|a| {
        let a = a.to_string_lossy();
        a == "--job" || a.starts_with("--job=") || a == "--from-cluster"
    });
    if names_a_file_or_the_flag {
        return args;
    }
    let mut out = args;
    out.insert(2, OsString::from("--from-cluster"));
    out
}

/// Parses the process's command line, as the plugin when run under
/// [`PLUGIN_NAME`] (usage then reads `kubectl job-decider …`). Usage errors
/// exit 2, as clap's do.
pub fn parse_command_line() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    let plugin = args.first().is_some_and(|a| is_plugin(Path::new(a)));
    let mut command = Cli::command();
    if plugin {
        command = command.bin_name("kubectl job-decider");
    }
    let matches = command.get_matches_from(plugin_args(args));
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

/// The kube-rs half, present with the `cluster` feature.
#[cfg(feature = "cluster")]
mod live {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use job_decider_api::pb;
    use job_decider_core::model::{LabelSelector, SelectorOperator, SelectorRequirement};
    use job_decider_core::selector;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    use kube::api::{Api, ListParams};
    use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
    use kube::{Client, Config};

    use super::{ClusterArgs, ClusterError, LiveJob, Read};

    /// Pods asked for per page: a namespace of 100,000 pods is listed in
    /// bounded pieces, and only the Job's are kept.
    const PAGE: u32 = 500;

    /// How long to wait for a connection; an unreachable server fails in this time.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// How long one answer may take.
    const READ_TIMEOUT: Duration = Duration::from_secs(60);

    pub(super) fn read(
        args: &ClusterArgs,
        name: &str,
        what: Read,
    ) -> Result<LiveJob, ClusterError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Unreachable(format!("cannot start the runtime: {e}")))?;
        runtime.block_on(read_async(args, name, what))
    }

    async fn read_async(
        args: &ClusterArgs,
        name: &str,
        what: Read,
    ) -> Result<LiveJob, ClusterError> {
        let mut config = config(args).await?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let server = config.cluster_url.to_string();
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config).map_err(|e| {
            ClusterError::Config(format!("cannot use the kubeconfig: {}", chain(&e)))
        })?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
        let job = jobs.get(name).await.map_err(|e| match status_code(&e) {
            Some(404) => ClusterError::NotFound {
                namespace: namespace.clone(),
                name: name.to_string(),
            },
            _ => api_error(&e, &server),
        })?;
        let pods = match what {
            Read::JobOnly => Vec::new(),
            Read::JobAndPods => {
                let pods: Api<Pod> = Api::namespaced(client, &namespace);
                controller_pods(&pods, &job)
                    .await
                    .map_err(|e| api_error(&e, &server))?
            }
        };
        Ok(LiveJob {
            namespace,
            job: job_decider_k8s::job_to_pb(&job),
            pods,
        })
    }

    /// The client configuration the flags name: a kubeconfig file, a
    /// context of the default kubeconfig, or what kubectl would use
    /// (`$KUBECONFIG`, `~/.kube/config`, then the pod's service account).
    async fn config(args: &ClusterArgs) -> Result<Config, ClusterError> {
        let options = KubeConfigOptions {
            context: args.context.clone(),
            cluster: None,
            user: None,
        };
        let bad = |e: KubeconfigError| match (e, &args.context) {
            (KubeconfigError::LoadContext(name), Some(_)) => ClusterError::Config(format!(
                "--context {name}: no such context in the kubeconfig"
            )),
            (e, _) => ClusterError::Config(kubeconfig_text(&e)),
        };
        match (&args.kubeconfig, &args.context) {
            (Some(path), _) => {
                let file = Kubeconfig::read_from(path).map_err(|e| {
                    let why = match e {
                        KubeconfigError::ReadConfig(io, _) => io.to_string(),
                        other => kubeconfig_text(&other),
                    };
                    ClusterError::Config(format!("--kubeconfig {}: {why}", path.display()))
                })?;
                Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(bad)
            }
            (None, Some(_)) => Config::from_kubeconfig(&options).await.map_err(bad),
            (None, None) => Config::infer().await.map_err(|e| {
                // The kubeconfig's failure is the useful half; in-cluster is the fallback.
                let kubeconfig = match std::error::Error::source(&e) {
                    Some(cause) => match cause.downcast_ref::<KubeconfigError>() {
                        Some(k) => kubeconfig_text(k),
                        None => chain(cause),
                    },
                    None => e.to_string(),
                };
                ClusterError::Config(format!(
                    "no cluster to read from: {kubeconfig} (set KUBECONFIG or pass --kubeconfig)"
                ))
            }),
        }
    }

    /// A kubeconfig's failure in a few words: the file that cannot be read
    /// said once (kube's own text quotes the path twice).
    fn kubeconfig_text(err: &KubeconfigError) -> String {
        match err {
            KubeconfigError::ReadConfig(io, path) => {
                format!("cannot read {}: {io}", path.display())
            }
            other => chain(other),
        }
    }

    /// The pods the Job controller would consider: those the Job controls and
    /// the orphans its selector matches, page by page, each kept in the
    /// contract's form only (a page's objects are dropped with the page).
    async fn controller_pods(api: &Api<Pod>, job: &Job) -> Result<Vec<pb::Pod>, kube::Error> {
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let selector = job
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .map(domain_selector);
        let no_labels = BTreeMap::new();
        let mut kept = Vec::new();
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = api.list(&params).await?;
            for pod in page.items {
                let controller = pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|r| r.controller == Some(true));
                let keep = match controller {
                    Some(owner) => !uid.is_empty() && owner.uid == uid,
                    None => selector.as_ref().is_some_and(|s| {
                        let labels = pod.metadata.labels.as_ref().unwrap_or(&no_labels);
                        selector::matches(s, labels)
                    }),
                };
                if keep {
                    kept.push(job_decider_k8s::pod_to_pb(&pod));
                }
            }
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(kept),
            }
        }
    }

    /// The Job's selector as the core matches it (the same function its claim uses).
    fn domain_selector(s: &meta::LabelSelector) -> LabelSelector {
        LabelSelector {
            match_labels: s.match_labels.clone().unwrap_or_default(),
            match_expressions: s
                .match_expressions
                .iter()
                .flatten()
                .map(|r| SelectorRequirement {
                    key: r.key.clone(),
                    operator: SelectorOperator::from(r.operator.clone()),
                    values: r.values.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// The HTTP status of an answer the API server gave, if it gave one.
    fn status_code(err: &kube::Error) -> Option<u16> {
        match err {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }

    /// A failed call as a short sentence: refused credentials or access, or a
    /// server that could not be reached or failed.
    fn api_error(err: &kube::Error, server: &str) -> ClusterError {
        match err {
            kube::Error::Api(status) if status.code == 401 => ClusterError::Denied(format!(
                "{server} did not accept the credentials (401 Unauthorized): check the kubeconfig's user"
            )),
            // `jobs.batch "pi" is forbidden: User "u" cannot get resource "jobs" …` says it all.
            kube::Error::Api(status) if status.code == 403 => {
                ClusterError::Denied(status.message.clone())
            }
            kube::Error::Api(status) => ClusterError::Unreachable(format!(
                "{server} answered {} {}: {}",
                status.code, status.reason, status.message
            )),
            other => ClusterError::Unreachable(format!("cannot reach {server}: {}", chain(other))),
        }
    }

    /// An error and its causes on one line, each said once: kube's own text
    /// ("ServiceError: client error (Connect)") hides the cause that matters.
    fn chain(err: &dyn std::error::Error) -> String {
        let mut text = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            let line = cause.to_string();
            if !text.contains(&line) {
                text.push_str(": ");
                text.push_str(&line);
            }
            source = cause.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_plugin_reads_from_the_cluster_unless_a_file_is_named() {
        let plugin = "/usr/local/bin/kubectl-job_decider";
        assert_eq!(
            plugin_args(os(&[plugin, "decide", "-n", "ns", "pi"])),
            os(&[plugin, "decide", "--from-cluster", "-n", "ns", "pi"])
        );
        assert_eq!(
            plugin_args(os(&[plugin, "validate", "pi"])),
            os(&[plugin, "validate", "--from-cluster", "pi"])
        );
        for unchanged in [
            vec![plugin, "decide", "--job", "job.yaml"],
            vec![plugin, "request", "--job=job.yaml"],
            vec![plugin, "decide", "--from-cluster", "pi"],
            vec![plugin, "serve"],
            vec![plugin, "jobset", "validate", "js.yaml"],
            vec![plugin],
        ] {
            assert_eq!(plugin_args(os(&unchanged)), os(&unchanged), "{unchanged:?}");
        }
    }

    #[test]
    fn only_the_plugin_name_changes_the_command_line() {
        for argv0 in [
            "job-decider",
            "/bin/job-decider",
            "kubectl-job-decider",
            "kubectl",
        ] {
            let args = os(&[argv0, "decide", "pi"]);
            assert_eq!(plugin_args(args.clone()), args, "{argv0}");
        }
        assert!(is_plugin(Path::new("./kubectl-job_decider")));
        assert!(!is_plugin(Path::new("kubectl-job_decider-old")));
    }

    #[test]
    fn bad_input_and_cluster_failures_exit_differently() {
        let not_found = ClusterError::NotFound {
            namespace: "ns".into(),
            name: "pi".into(),
        };
        assert!(not_found.is_bad_input());
        assert_eq!(
            not_found.to_string(),
            r#"job "pi" not found in namespace "ns""#
        );
        assert!(ClusterError::Config("no kubeconfig".into()).is_bad_input());
        assert!(!ClusterError::Denied("forbidden".into()).is_bad_input());
        assert!(!ClusterError::Unreachable("refused".into()).is_bad_input());
    }
}
