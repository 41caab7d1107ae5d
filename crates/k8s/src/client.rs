//! A connection to a job-decider server that behaves as every client of the
//! project does (issue 26; the table in `clients/README.md`): `host:port`,
//! `dns:///host:port` (round robin over every address), `unix:///abs/path` and
//! `unix:relative` targets; a default deadline sent as `grpc-timeout`; retries of
//! `UNAVAILABLE` with backoff, full jitter and the server's pushback; keepalive
//! while calls are open; a 64 MiB receive limit; TLS from a cert-manager Secret's
//! directory. The values are [`defaults`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use job_decider_k8s::client::Connect;
//!
//! let mut client = Connect::new("dns:///job-decider.jobs.svc:50051")
//!     .tls_dir("/etc/job-decider-tls")
//!     .connect()
//!     .await?;
//! # let request = job_decider_k8s::job_decider_api::pb::DecideJobRequest::default();
//! let plan = client.decide_job(request).await?;
//! # Ok(()) }
//! ```
//!
//! The retries follow gRPC's retry design (A6) as grpc-core applies a service
//! config's `retryPolicy`; tonic has no retry policy of its own, so [`Retrying`]
//! is a tower service around the channel.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use job_decider_api::pb::job_decider_client::JobDeciderClient;
use tokio::time::Instant;
use tonic::body::Body;
use tonic::transport::channel::Change;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Uri};

use tower::{BoxError, Service, ServiceExt};

/// Every value of the connection behaviour, in one place (`clients/README.md`'s table).
pub mod defaults {
    use std::time::Duration;

    /// The deadline of a call that sets none: shorter than the server's own
    /// 30 s request timeout, so the server's `DECISION_TIMEOUT` can surface.
    pub const DEADLINE: Duration = Duration::from_secs(10);
    /// Attempts of one call in all, the first included.
    pub const MAX_ATTEMPTS: u32 = 4;
    /// The backoff before the first retry; a retry waits a random time in [0, backoff].
    pub const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
    /// Each retry's backoff is the previous one times this.
    pub const BACKOFF_MULTIPLIER: u32 = 2;
    /// The backoff never grows past this.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
    /// An HTTP/2 ping every this long while calls are open (the server pings as often).
    pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
    /// A connection whose ping is not answered within this is closed.
    pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
    /// Pings only while calls are open, as the server permits.
    pub const KEEPALIVE_WITHOUT_CALLS: bool = false;
    /// The largest response accepted: a plan for a large Job.
    pub const MAX_RECEIVE_BYTES: usize = 64 * 1024 * 1024;
    /// How often a `dns:///` name is resolved again (replicas come and go).
    pub const RESOLVE_INTERVAL: Duration = Duration::from_secs(30);
    /// The trailer in which the server says how many milliseconds to wait.
    pub const PUSHBACK_TRAILER: &str = "grpc-retry-pushback-ms";
}

/// Why a connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The target is not one of the forms this client dials.
    #[error("target {target:?}: {reason}")]
    BadTarget {
        /// The target as given.
        target: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file of the TLS directory could not be read.
    #[error("TLS file {path}: {source}")]
    TlsFile {
        /// The file.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// A `dns:///` name resolved to no address.
    #[error("{name}: resolving: {source}")]
    Resolve {
        /// The name and port.
        name: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The transport refused the settings or could not connect.
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Put in a request's extensions, the call has no deadline at all (not even
/// [`defaults::DEADLINE`]): `request.extensions_mut().insert(NoDeadline)`.
#[derive(Clone, Copy, Debug)]
pub struct NoDeadline;

/// A target, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// `host:port`: one endpoint, the name dialled as given.
    Host(String),
    /// `dns:///host:port`: every address, round robin.
    Dns(String),
    /// `unix:`: a socket path.
    Unix(PathBuf),
}

fn parse_target(target: &str) -> Result<Target, ConnectError> {
    let bad = |reason: &str| ConnectError::BadTarget {
        target: target.to_string(),
        reason: reason.to_string(),
    };
    if let Some(rest) = target.strip_prefix("unix:") {
        let path = match rest.strip_prefix("//") {
            Some(after) if after.starts_with('/') => after,
            Some(_) => return Err(bad("write unix:///ABSOLUTE/PATH or unix:RELATIVE/PATH")),
            None => rest,
        };
        if path.is_empty() {
            return Err(bad("no socket path after unix:"));
        }
        return Ok(Target::Unix(PathBuf::from(path)));
    }
    if let Some(rest) = target.strip_prefix("dns:") {
        // dns:///host:port (no DNS server named) or dns:host:port.
        let name = rest.strip_prefix("///").unwrap_or(rest);
        if name.starts_with('/') {
            return Err(bad(
                "naming a DNS server is not supported; write dns:///HOST:PORT",
            ));
        }
        return split_host_port(name)
            .map(|_| Target::Dns(name.to_string()))
            .ok_or_else(|| bad("write dns:///HOST:PORT"));
    }
    if target.contains("://") {
        return Err(bad("write HOST:PORT, dns:///HOST:PORT or unix:///PATH"));
    }
    split_host_port(target)
        .map(|_| Target::Host(target.to_string()))
        .ok_or_else(|| bad("write HOST:PORT, dns:///HOST:PORT or unix:///PATH"))
}

/// The host (brackets of an IPv6 literal removed) and port of `host:port`.
fn split_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let port = port.parse().ok()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    (!host.is_empty()).then(|| (host.to_string(), port))
}

/// Builds a [`JobDeciderClient`] with the project's connection behaviour.
#[derive(Clone, Debug)]
pub struct Connect {
    target: String,
    deadline: Option<Duration>,
    tls_dir: Option<PathBuf>,
    server_name: Option<String>,
    max_attempts: u32,
    endpoint: Option<fn(Endpoint) -> Endpoint>,
}

impl Connect {
    /// A connection to `target`: `host:port`, `dns:///host:port`, `unix:///abs/path` or `unix:relative`.
    pub fn new(target: impl Into<String>) -> Self {
        Connect {
            target: target.into(),
            deadline: Some(defaults::DEADLINE),
            tls_dir: None,
            server_name: None,
            max_attempts: defaults::MAX_ATTEMPTS,
            endpoint: None,
        }
    }

    /// The deadline of a call that sets none (`request.set_timeout` sets one per
    /// call); `None`: no default deadline.
    pub fn timeout(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// TLS from a directory laid out as a cert-manager Secret: `ca.crt` (the CA to
    /// trust) and, when both are present, `tls.crt` and `tls.key` (a client certificate).
    pub fn tls_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.tls_dir = Some(dir.into());
        self
    }

    /// The name the server's certificate must carry, when not the target's host.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// Attempts per call in all (1: no retries); [`defaults::MAX_ATTEMPTS`] unless set.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Changes every endpoint after the defaults are set (any of tonic's
    /// `Endpoint` options: they win over the defaults).
    pub fn endpoint(mut self, options: fn(Endpoint) -> Endpoint) -> Self {
        self.endpoint = Some(options);
        self
    }

    /// The channel alone, with retries and deadlines, for a client of one's own.
    pub async fn channel(&self) -> Result<Retrying, ConnectError> {
        let target = parse_target(&self.target)?;
        let tls = match &self.tls_dir {
            Some(dir) => Some(self.tls_config(dir, &target)?),
            None => None,
        };
        let channel = match target {
            Target::Unix(path) => {
                // The authority grpc-go sends for a socket; grpc-core sends the path.
                let endpoint = self.configure(Endpoint::from_static("http://localhost"), &tls)?;
                endpoint.connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        tokio::net::UnixStream::connect(path)
                            .await
                            .map(TokioIo::new)
                    }
                }))
            }
            Target::Host(name) => {
                let scheme = if tls.is_some() { "https" } else { "http" };
                let endpoint = Endpoint::from_shared(format!("{scheme}://{name}"))?;
                self.configure(endpoint, &tls)?.connect_lazy()
            }
            Target::Dns(name) => self.balanced(name, tls).await?,
        };
        Ok(Retrying {
            channel,
            deadline: self.deadline,
            max_attempts: self.max_attempts,
        })
    }

    /// Connects (lazily: the first call dials) and returns the generated client.
    pub async fn connect(&self) -> Result<JobDeciderClient<Retrying>, ConnectError> {
        Ok(JobDeciderClient::new(self.channel().await?)
            .max_decoding_message_size(defaults::MAX_RECEIVE_BYTES)
            .max_encoding_message_size(usize::MAX))
    }

    fn configure(
        &self,
        endpoint: Endpoint,
        tls: &Option<ClientTlsConfig>,
    ) -> Result<Endpoint, ConnectError> {
        let mut endpoint = endpoint
            .http2_keep_alive_interval(defaults::KEEPALIVE_INTERVAL)
            .keep_alive_timeout(defaults::KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(defaults::KEEPALIVE_WITHOUT_CALLS);
        if let Some(tls) = tls {
            endpoint = endpoint.tls_config(tls.clone())?;
        }
        Ok(match self.endpoint {
            Some(options) => options(endpoint),
            None => endpoint,
        })
    }

    fn tls_config(&self, dir: &Path, target: &Target) -> Result<ClientTlsConfig, ConnectError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| ConnectError::TlsFile { path, source })
        };
        let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read("ca.crt")?));
        if dir.join("tls.crt").exists() && dir.join("tls.key").exists() {
            tls = tls.identity(Identity::from_pem(read("tls.crt")?, read("tls.key")?));
        }
        let host = match target {
            Target::Host(name) | Target::Dns(name) => split_host_port(name).map(|(h, _)| h),
            Target::Unix(_) => Some("localhost".to_string()),
        };
        if let Some(name) = self.server_name.clone().or(host) {
            tls = tls.domain_name(name);
        }
        Ok(tls)
    }

    /// Round robin over every address `name` resolves to, resolved again every
    /// [`defaults::RESOLVE_INTERVAL`] while the channel lives.
    async fn balanced(
        &self,
        name: String,
        tls: Option<ClientTlsConfig>,
    ) -> Result<Channel, ConnectError> {
        let first = resolve(&name).await?;
        let (channel, changes) = Channel::balance_channel::<SocketAddr>(first.len().max(16));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let make = {
            let this = self.clone();
            move |addr: SocketAddr| -> Result<Endpoint, ConnectError> {
                let endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))?;
                this.configure(endpoint, &tls)
            }
        };
        let mut known = HashSet::new();
        for addr in first {
            let _ = changes.send(Change::Insert(addr, make(addr)?)).await;
            known.insert(addr);
        }
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(defaults::RESOLVE_INTERVAL).await;
                // A failed lookup keeps the addresses known so far.
                let Ok(now) = resolve(&name).await else {
                    continue;
                };
                let now: HashSet<_> = now.into_iter().collect();
                for gone in known.difference(&now) {
                    if changes.send(Change::Remove(*gone)).await.is_err() {
                        return; // the channel is gone
                    }
                }
                for new in now.difference(&known) {
                    let Ok(endpoint) = make(*new) else { continue };
                    if changes.send(Change::Insert(*new, endpoint)).await.is_err() {
                        return;
                    }
                }
                known = now;
            }
        });
        Ok(channel)
    }
}

async fn resolve(name: &str) -> Result<Vec<SocketAddr>, ConnectError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(name)
        .await
        .map_err(|source| ConnectError::Resolve {
            name: name.to_string(),
            source,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(ConnectError::Resolve {
            name: name.to_string(),
            source: std::io::Error::other("no address"),
        });
    }
    Ok(addrs)
}

/// The channel with deadlines and retries: what [`Connect`] hands to [`JobDeciderClient`].
#[derive(Clone, Debug)]
pub struct Retrying {
    channel: Channel,
    deadline: Option<Duration>,
    max_attempts: u32,
}

/// The future of one call through [`Retrying`].
pub type RetryingFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Body>, BoxError>> + Send>>;

impl Service<http::Request<Body>> for Retrying {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = RetryingFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each call waits for a ready clone of the channel itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.call_with_retries(request).await })
    }
}

impl Retrying {
    async fn call_with_retries(
        self,
        request: http::Request<Body>,
    ) -> Result<http::Response<Body>, BoxError> {
        let (mut parts, body) = request.into_parts();
        // A unary request is one small message: kept, it can be sent again.
        let body: Bytes = body.collect().await?.to_bytes();
        let timeout = if parts.extensions.get::<NoDeadline>().is_some() {
            None
        } else {
            parts
                .headers
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_grpc_timeout)
                .or(self.deadline)
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut backoff = defaults::INITIAL_BACKOFF;
        let mut attempt = 1;
        loop {
            let mut request = http::Request::from_parts(
                parts.clone(),
                Body::new(http_body_util::Full::new(body.clone())),
            );
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(deadline_exceeded());
                }
                request
                    .headers_mut()
                    .insert("grpc-timeout", grpc_timeout(left));
            }
            let mut channel = self.channel.clone();
            let sent = async {
                let ready = channel.ready().await?;
                ready.call(request).await
            };
            let outcome = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, sent).await {
                    Ok(outcome) => outcome,
                    Err(_) => return Ok(deadline_exceeded()),
                },
                None => sent.await,
            };
            // What to wait before the next attempt; None: this outcome is the answer.
            let wait = match &outcome {
                Ok(response) => retry_wait(response, backoff),
                // The connection failed (refused, reset): the call is idempotent, retry.
                Err(_) => Some(full_jitter(backoff)),
            };
            let Some(wait) = wait.filter(|_| attempt < self.max_attempts) else {
                return outcome.map_err(BoxError::from);
            };
            if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                return outcome.map_err(BoxError::from);
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
            backoff = (backoff * defaults::BACKOFF_MULTIPLIER).min(defaults::MAX_BACKOFF);
            parts.headers.remove("grpc-timeout");
        }
    }
}

/// The wait before retrying `response`, or `None` when it is not retried: only a
/// trailers-only `UNAVAILABLE` (the server answered before any message) is.
fn retry_wait(response: &http::Response<Body>, backoff: Duration) -> Option<Duration> {
    let status = tonic::Status::from_header_map(response.headers())?;
    if status.code() != tonic::Code::Unavailable {
        return None;
    }
    // The server's word wins: the trailer (gRPC A6), else the RetryInfo detail.
    if let Some(value) = response.headers().get(defaults::PUSHBACK_TRAILER) {
        // A6: a pushback that is not a non-negative integer means "do not retry".
        return value
            .to_str()
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_millis);
    }
    use tonic_types::StatusExt;
    if let Some(delay) = status.get_details_retry_info().and_then(|r| r.retry_delay) {
        return Some(delay);
    }
    Some(full_jitter(backoff))
}

/// A random wait in [0, `backoff`] (full jitter).
fn full_jitter(backoff: Duration) -> Duration {
    let nanos = u64::try_from(backoff.as_nanos()).unwrap_or(u64::MAX);
    // A freshly keyed RandomState is random enough for jitter, with no new dependency.
    let random = RandomState::new().hash_one(std::time::Instant::now());
    Duration::from_nanos(random % nanos.saturating_add(1))
}

/// A trailers-only DEADLINE_EXCEEDED answer, as gRPC gives when the deadline
/// passes before the server answered.
fn deadline_exceeded() -> http::Response<Body> {
    tonic::Status::deadline_exceeded("deadline exceeded (job-decider client, every attempt)")
        .into_http()
}

/// `grpc-timeout`'s value for `left`: at most eight digits, in the finest unit that fits.
fn grpc_timeout(left: Duration) -> http::HeaderValue {
    let micros = left.as_micros();
    let text = if micros < 100_000_000 {
        format!("{}u", micros.max(1))
    } else {
        format!("{}m", left.as_millis().min(99_999_999))
    };
    http::HeaderValue::from_str(&text).unwrap_or(http::HeaderValue::from_static("1m"))
}

/// A `grpc-timeout` value (`10S`, `250m`, …) as a duration.
fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
