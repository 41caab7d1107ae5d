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
//! The API server is not trusted for size or length: one read has a
//! deadline for all of it (`--request-timeout`, not per socket read), each
//! answer and all answers together a byte bound, the pod list a page bound,
//! and a continue token seen before ends the list as an error.
//!
//! Built without the `cluster` feature, the flags still parse and every read
//! fails with [`ClusterError::NotBuilt`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

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
    /// How long the whole read from the cluster may take, every call and page
    /// together (90s, 5m) [default: 2m].
    #[arg(long, value_name = "DURATION", requires = "from_cluster", value_parser = parse_timeout)]
    pub request_timeout: Option<Duration>,
}

/// The whole read's deadline when `--request-timeout` is not given.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The most bytes one answer of the API server may have: a page of
/// [`PAGE_SIZE`] pods is a few megabytes, a Job far less.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024 * 1024;

/// The most bytes all the answers of one read may have together.
pub const MAX_READ_BYTES: u64 = 1024 * 1024 * 1024;

/// Pods asked for per page: a namespace of 100,000 pods is listed in
/// bounded pieces, and only the Job's are kept.
pub const PAGE_SIZE: u32 = 500;

/// The most pages of pods one read follows (half a million pods).
pub const MAX_PAGES: usize = 1000;

/// `--request-timeout`: a duration such as `90s` or `5m`, more than zero.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let span = job_decider_sim::duration::parse_span(text)?;
    let nanos = u64::try_from(span.nanos()).unwrap_or(0);
    if nanos == 0 {
        return Err(format!("{text:?}: give a duration above zero, such as 90s"));
    }
    Ok(Duration::from_nanos(nanos))
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
    /// The API server's answers went past a bound: too many bytes or pages,
    /// a continue token repeated, or the whole read past its deadline.
    #[error("{0}")]
    Unbounded(String),
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

/// The kube-rs half, present with the `cluster` feature.
#[cfg(feature = "cluster")]
mod live {
    use std::collections::{BTreeMap, BTreeSet};
    use std::pin::Pin;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};
    use std::time::Duration;

    use bytes::Bytes;
    use http_body::{Body, Frame, SizeHint};
    use kube::client::{ClientBuilder, DynBody};

    use job_decider_api::pb;
    use job_decider_core::model::{LabelSelector, SelectorOperator, SelectorRequirement};
    use job_decider_core::selector;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    use kube::api::{Api, ListParams};
    use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
    use kube::{Client, Config};

    use super::{
        ClusterArgs, ClusterError, DEFAULT_REQUEST_TIMEOUT, LiveJob, MAX_ANSWER_BYTES, MAX_PAGES,
        MAX_READ_BYTES, PAGE_SIZE, Read,
    };

    /// How long to wait for a connection; an unreachable server fails in this time.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// How long one socket read may wait (the whole read has its own deadline).
    const READ_TIMEOUT: Duration = Duration::from_secs(60);

    /// The bytes the answers of one read have brought, and the first bound
    /// they went past (the client's own error then says little).
    #[derive(Debug, Default)]
    struct Budget {
        read: AtomicU64,
        exceeded: Mutex<Option<String>>,
    }

    impl Budget {
        /// Notes a bound gone past; the first one is what the read says.
        fn exceed(&self, why: String) {
            if let Ok(mut slot) = self.exceeded.lock()
                && slot.is_none()
            {
                *slot = Some(why);
            }
        }

        fn exceeded(&self) -> Option<String> {
            self.exceeded.lock().ok().and_then(|slot| slot.clone())
        }
    }

    /// An answer's body that fails once it, or the read's answers together,
    /// have more bytes than their bound.
    struct Capped {
        inner: Box<DynBody>,
        read: u64,
        budget: Arc<Budget>,
    }

    impl Body for Capped {
        type Data = Bytes;
        type Error = tower::BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            let this = &mut *self;
            let polled = Pin::new(&mut this.inner).poll_frame(cx);
            if let Poll::Ready(Some(Ok(frame))) = &polled
                && let Some(data) = frame.data_ref()
            {
                let n = data.len() as u64;
                this.read = this.read.saturating_add(n);
                let total = this
                    .budget
                    .read
                    .fetch_add(n, Ordering::Relaxed)
                    .saturating_add(n);
                let why = if this.read > MAX_ANSWER_BYTES {
                    Some(format!("an answer of more than {MAX_ANSWER_BYTES} bytes"))
                } else if total > MAX_READ_BYTES {
                    Some(format!(
                        "answers of more than {MAX_READ_BYTES} bytes in all"
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    this.budget.exceed(why.clone());
                    return Poll::Ready(Some(Err(why.into())));
                }
            }
            polled
        }

        fn is_end_stream(&self) -> bool {
            self.inner.is_end_stream()
        }

        fn size_hint(&self) -> SizeHint {
            self.inner.size_hint()
        }
    }

    pub(super) fn read(
        args: &ClusterArgs,
        name: &str,
        what: Read,
    ) -> Result<LiveJob, ClusterError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Unreachable(format!("cannot start the runtime: {e}")))?;
        let deadline = args.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        let budget = Arc::new(Budget::default());
        let answer = runtime.block_on(async {
            tokio::time::timeout(deadline, read_async(args, name, what, Arc::clone(&budget))).await
        });
        match answer {
            Ok(Ok(live)) => Ok(live),
            // The body's own error says less than the bound it went past.
            Ok(Err(err)) => match budget.exceeded() {
                Some(why) => Err(ClusterError::Unbounded(format!(
                    "the API server sent {why}; refusing to read further"
                ))),
                None => Err(err),
            },
            Err(_) => Err(ClusterError::Unbounded(format!(
                "the API server did not answer in {} (--request-timeout, for the whole read)",
                humantime(deadline)
            ))),
        }
    }

    /// A deadline for people: whole seconds, or milliseconds below one.
    fn humantime(d: Duration) -> String {
        if d.as_secs() > 0 && d.subsec_millis() == 0 {
            format!("{}s", d.as_secs())
        } else {
            format!("{}ms", d.as_millis())
        }
    }

    async fn read_async(
        args: &ClusterArgs,
        name: &str,
        what: Read,
        budget: Arc<Budget>,
    ) -> Result<LiveJob, ClusterError> {
        let mut config = config(args).await?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let server = config.cluster_url.to_string();
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let builder = ClientBuilder::try_from(config).map_err(|e| {
            ClusterError::Config(format!("cannot use the kubeconfig: {}", chain(&e)))
        })?;
        let capped =
            tower::util::MapResponseLayer::new(move |response: http::Response<Box<DynBody>>| {
                let budget = Arc::clone(&budget);
                response.map(|inner| Capped {
                    inner,
                    read: 0,
                    budget,
                })
            });
        let client: Client = builder.with_layer(&capped).build();
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
                controller_pods(&pods, &job).await.map_err(|e| match e {
                    Listing::Api(e) => api_error(&e, &server),
                    Listing::Unbounded(why) => ClusterError::Unbounded(why),
                })?
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
    async fn controller_pods(api: &Api<Pod>, job: &Job) -> Result<Vec<pb::Pod>, Listing> {
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let selector = job
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .map(domain_selector);
        let no_labels = BTreeMap::new();
        let mut kept = Vec::new();
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let mut tokens = BTreeSet::new();
        let mut pages = 0usize;
        loop {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(Listing::Unbounded(format!(
                    "the API server listed more than {MAX_PAGES} pages of {PAGE_SIZE} pods; refusing to read further"
                )));
            }
            let page = api.list(&params).await.map_err(Listing::Api)?;
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
                Some(token) => {
                    if !tokens.insert(token.clone()) {
                        return Err(Listing::Unbounded(format!(
                            "the API server sent the continue token {token:?} a second time (page {pages}): the list would never end"
                        )));
                    }
                    params = params.continue_token(&token);
                }
                None => return Ok(kept),
            }
        }
    }

    /// Why listing the pods stopped.
    enum Listing {
        /// A call failed.
        Api(kube::Error),
        /// The list went past a bound.
        Unbounded(String),
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
mod tests;
