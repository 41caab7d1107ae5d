//! `job-decider serve`: the gRPC service with health, reflection, metrics,
//! limits, TLS and graceful shutdown around the shared decision pipeline.
//!
//! [`serve_on`] runs a server on listeners the caller bound (tests use
//! ephemeral ports or a socket in a temporary directory); [`run`] binds the
//! configured addresses (TCP, or a Unix socket: [`socket`]) and stops on
//! SIGTERM or SIGINT. [`stack`] puts every JobDecider RPC through the same
//! layers ([`layer`]); [`conn`] makes connections end.

pub mod conn;
pub mod layer;
pub mod metrics;
pub mod priority;
pub mod process;
pub mod service;
pub mod socket;
pub mod stack;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic_health::ServingStatus;
use tracing::{info, warn};

use crate::address::ListenAddr;
use conn::{ActivityLayer, ConnLimits, Phase, Tracked};
use job_decider_api::pb;
use job_decider_api::pb::job_decider_server::JobDeciderServer;
use service::DeciderService;
use socket::{SocketError, SocketFile};
use stack::StackLimits;

/// HTTP/2 streams a connection may have reset for its own errors before it is
/// closed (hyper's default, set here so an upgrade cannot change it silently).
pub const LOCAL_ERROR_RESET_STREAMS: usize = 1024;
/// HTTP/2 streams a client may open and reset before the server accepts them
/// (the rapid-reset guard; hyper's default, set explicitly for the same reason).
pub const PENDING_ACCEPT_RESET_STREAMS: usize = 20;

/// Everything `serve` can be told, with the defaults the CLI documents.
///
/// docs/operations.md ("Configuration", "Limits") explains each default and the
/// memory arithmetic behind the byte budget.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Decisions running at once, across all connections; more are shed with UNAVAILABLE.
    pub max_concurrent_requests: usize,
    /// How long a call whose body is in may wait for a decision slot before it is shed.
    pub queue_timeout: Duration,
    /// How long one decision may take before it is answered DEADLINE_EXCEEDED.
    pub request_timeout: Duration,
    /// The largest request accepted; larger ones get RESOURCE_EXHAUSTED.
    pub max_message_size: usize,
    /// Request bytes in flight across all calls; past it, RESOURCE_EXHAUSTED at once.
    pub max_request_bytes_in_flight: usize,
    /// How long a request body may take to arrive in full.
    pub body_read_timeout: Duration,
    /// HTTP/2 streams (calls) open at once on one connection.
    pub max_concurrent_streams: u32,
    /// HTTP/2 flow-control window of one call, in bytes: how much of a request
    /// a client may send ahead of the server reading it.
    pub http2_stream_window: u32,
    /// HTTP/2 flow-control window of one connection, in bytes (all its calls together).
    pub http2_connection_window: u32,
    /// Size the windows from the measured bandwidth-delay product instead (hyper's adaptive window).
    pub http2_adaptive_window: bool,
    /// Largest HTTP/2 frame the server accepts, in bytes (16 KiB to 16 MiB - 1).
    pub http2_max_frame_size: u32,
    /// HTTP/2 keepalive ping interval on an otherwise quiet connection (zero: none).
    pub http2_keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    pub http2_keepalive_timeout: Duration,
    /// TCP keepalive idle time (zero: the OS default, usually off).
    pub tcp_keepalive: Duration,
    /// How long a TLS handshake may take.
    pub tls_handshake_timeout: Duration,
    /// Close a connection after this long without a call in flight (zero: never).
    pub max_connection_idle: Duration,
    /// Ask a connection to go away (GOAWAY) after this long (zero: never).
    pub max_connection_age: Duration,
    /// Close a connection this long after its GOAWAY, calls in flight or not.
    pub max_connection_age_grace: Duration,
    /// How long a `/metrics` client may take to send its request headers.
    pub metrics_header_timeout: Duration,
    /// A plaintext port serving only gRPC health, for kubelet's probes under TLS.
    pub health_addr: Option<SocketAddr>,
    /// Serve TLS (and require client certificates when a client CA is given).
    pub tls: Option<TlsFiles>,
    /// After health flips to NOT_SERVING, keep serving this long so load balancers notice.
    pub shutdown_delay: Duration,
    /// After that, how long calls in flight may take before the server closes anyway.
    pub shutdown_grace: Duration,
    /// File mode of the gRPC socket when it is a Unix socket ([`run`] binds it).
    pub socket_mode: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_concurrent_requests: 64,
            queue_timeout: Duration::from_millis(100),
            request_timeout: Duration::from_secs(30),
            max_message_size: job_decider_api::DEFAULT_MAX_MESSAGE_SIZE,
            max_request_bytes_in_flight: DEFAULT_MAX_REQUEST_BYTES_IN_FLIGHT,
            body_read_timeout: Duration::from_secs(10),
            max_concurrent_streams: 100,
            http2_stream_window: DEFAULT_HTTP2_STREAM_WINDOW,
            http2_connection_window: DEFAULT_HTTP2_CONNECTION_WINDOW,
            http2_adaptive_window: false,
            http2_max_frame_size: DEFAULT_HTTP2_MAX_FRAME_SIZE,
            http2_keepalive_interval: Duration::from_secs(30),
            http2_keepalive_timeout: Duration::from_secs(10),
            tcp_keepalive: Duration::from_secs(60),
            tls_handshake_timeout: Duration::from_secs(10),
            max_connection_idle: Duration::from_secs(300),
            max_connection_age: Duration::from_secs(1800),
            max_connection_age_grace: Duration::from_secs(60),
            metrics_header_timeout: Duration::from_secs(5),
            health_addr: None,
            tls: None,
            shutdown_delay: Duration::ZERO,
            shutdown_grace: Duration::from_secs(20),
            socket_mode: socket::DEFAULT_SOCKET_MODE,
        }
    }
}

/// The default budget of request bytes in flight: 256 MiB. With a call's
/// peak at most 3x its request bytes and a ~30 MB baseline, 3 x 256 MiB + 30 MB
/// = 798 MiB fits the Deployment's 1 GiB limit (docs/operations.md, "Limits").
pub const DEFAULT_MAX_REQUEST_BYTES_IN_FLIGHT: usize = 256 * 1024 * 1024;

/// The default HTTP/2 window of one call (docs/performance.md, "Small calls and large messages").
pub const DEFAULT_HTTP2_STREAM_WINDOW: u32 = 1 << 20;
/// The default HTTP/2 window of one connection.
pub const DEFAULT_HTTP2_CONNECTION_WINDOW: u32 = 1 << 20;
/// The default largest HTTP/2 frame the server accepts.
pub const DEFAULT_HTTP2_MAX_FRAME_SIZE: u32 = 1 << 20;
/// HTTP/2's bounds on a frame size (RFC 9113, SETTINGS_MAX_FRAME_SIZE).
const HTTP2_FRAME_SIZES: std::ops::RangeInclusive<u32> = (16 << 10)..=((1 << 24) - 1);
/// HTTP/2's largest flow-control window (RFC 9113, 2^31 - 1).
const HTTP2_MAX_WINDOW: u32 = (1 << 31) - 1;

/// PEM files for TLS.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The server's certificate chain.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
    /// CA bundle that client certificates must chain to; set for mTLS.
    pub client_ca: Option<PathBuf>,
}

/// The gRPC listener: TCP, or a Unix domain socket.
#[derive(Debug)]
pub enum GrpcListener {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix socket listener, with the file to remove once the server stops
    /// accepting (none: the caller keeps the file).
    Unix(UnixListener, Option<SocketFile>),
}

impl From<TcpListener> for GrpcListener {
    fn from(listener: TcpListener) -> Self {
        GrpcListener::Tcp(listener)
    }
}

impl GrpcListener {
    /// The address, for the log.
    fn describe(&self) -> String {
        match self {
            GrpcListener::Tcp(listener) => listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            GrpcListener::Unix(_, Some(file)) => crate::address::unix_url(file.path()),
            GrpcListener::Unix(listener, None) => listener
                .local_addr()
                .ok()
                .and_then(|a| a.as_pathname().map(crate::address::unix_url))
                .unwrap_or_default(),
        }
    }
}

/// The sockets a server serves on, bound by the caller.
#[derive(Debug)]
pub struct Listeners {
    /// The gRPC API (TLS when configured), with health and reflection.
    pub grpc: GrpcListener,
    /// `/metrics`.
    pub metrics: Option<TcpListener>,
    /// Plaintext gRPC health only.
    pub health: Option<TcpListener>,
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The Unix socket could not be listened on.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// A TLS file could not be read or used.
    #[error("TLS: cannot read {path}: {source}")]
    TlsFile {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The transport rejected the configuration or failed.
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// Reflection could not read the descriptors.
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The metrics recorder could not be installed.
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
    /// A setting is out of range.
    #[error("configuration: {0}")]
    Config(String),
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ServeError> {
    std::fs::read(path).map_err(|source| ServeError::TlsFile {
        path: path.clone(),
        source,
    })
}

fn tls_config(
    files: &TlsFiles,
    handshake_timeout: Duration,
) -> Result<ServerTlsConfig, ServeError> {
    let identity = Identity::from_pem(read(&files.cert)?, read(&files.key)?);
    let mut config = ServerTlsConfig::new()
        .identity(identity)
        .timeout(handshake_timeout);
    if let Some(ca) = &files.client_ca {
        config = config.client_ca_root(Certificate::from_pem(read(ca)?));
    }
    Ok(config)
}

fn check(config: &ServerConfig) -> Result<(), ServeError> {
    let fail = |what: &str| Err(ServeError::Config(what.to_string()));
    if config.max_concurrent_requests == 0 {
        return fail("max concurrent requests must be at least 1");
    }
    if config.max_concurrent_streams == 0 {
        return fail("max concurrent streams must be at least 1");
    }
    if config.max_request_bytes_in_flight < config.max_message_size {
        return fail(
            "max request bytes in flight must be at least max message size, or the largest request could never be taken",
        );
    }
    if !HTTP2_FRAME_SIZES.contains(&config.http2_max_frame_size) {
        return fail("HTTP/2 max frame size must be from 16 KiB to 16 MiB - 1");
    }
    for (name, window) in [
        ("HTTP/2 stream window", config.http2_stream_window),
        ("HTTP/2 connection window", config.http2_connection_window),
    ] {
        if window == 0 || window > HTTP2_MAX_WINDOW {
            return fail(&format!("{name} must be from 1 byte to 2 GiB - 1"));
        }
    }
    if u32::try_from(config.max_message_size.saturating_add(5)).is_err() {
        return fail("max message size must be under 4 GiB");
    }
    for (name, value) in [
        ("request timeout", config.request_timeout),
        ("body read timeout", config.body_read_timeout),
        ("TLS handshake timeout", config.tls_handshake_timeout),
        ("metrics header timeout", config.metrics_header_timeout),
        ("HTTP/2 keepalive timeout", config.http2_keepalive_timeout),
    ] {
        if value.is_zero() {
            return fail(&format!("{name} must be above zero"));
        }
    }
    Ok(())
}

fn nonzero(value: Duration) -> Option<Duration> {
    (!value.is_zero()).then_some(value)
}

/// The transport settings both gRPC ports share.
fn transport(config: &ServerConfig) -> Server {
    let mut builder = Server::builder()
        .max_concurrent_streams(config.max_concurrent_streams)
        .http2_keepalive_interval(nonzero(config.http2_keepalive_interval))
        .http2_keepalive_timeout(Some(config.http2_keepalive_timeout))
        .http2_max_local_error_reset_streams(Some(LOCAL_ERROR_RESET_STREAMS))
        .http2_max_pending_accept_reset_streams(Some(PENDING_ACCEPT_RESET_STREAMS))
        .initial_stream_window_size(config.http2_stream_window)
        .initial_connection_window_size(config.http2_connection_window)
        .http2_adaptive_window(Some(config.http2_adaptive_window))
        .max_frame_size(config.http2_max_frame_size)
        .tcp_nodelay(true);
    if let Some(age) = nonzero(config.max_connection_age) {
        // A GOAWAY at the age; calls in flight finish. The hard close after the
        // grace is conn.rs's (tonic's own grace skips the GOAWAY).
        builder = builder.max_connection_age(age);
    }
    builder
}

/// Accepted sockets (TCP ones with keepalive), each wrapped to end when its limits say.
///
/// A Unix socket's file goes with the stream: tonic drops the stream when it
/// stops accepting, and the file is removed then.
fn accepted(
    listener: impl Into<GrpcListener>,
    config: &ServerConfig,
    phase: &watch::Receiver<Phase>,
) -> std::pin::Pin<Box<dyn Stream<Item = std::io::Result<Tracked>> + Send>> {
    let limits = ConnLimits {
        max_idle: nonzero(config.max_connection_idle),
        max_lifetime: nonzero(config.max_connection_age)
            .map(|age| age.saturating_add(config.max_connection_age_grace)),
    };
    let phase = phase.clone();
    match listener.into() {
        GrpcListener::Tcp(listener) => Box::pin(
            TcpIncoming::from(listener)
                .with_nodelay(Some(true))
                .with_keepalive(nonzero(config.tcp_keepalive))
                .map(move |socket| socket.map(|s| Tracked::new(s, limits, phase.clone()))),
        ),
        GrpcListener::Unix(listener, file) => {
            Box::pin(UnixListenerStream::new(listener).map(move |socket| {
                let _remove_when_dropped = &file;
                socket.map(|s| Tracked::new(s, limits, phase.clone()))
            }))
        }
    }
}

/// Completes once `stop` turns true (or its sender is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Serves on `grpc` (and `/metrics` on `metrics_listener`) until `shutdown` completes.
///
/// See [`serve_on`]; this is it without a health-only port.
pub async fn serve_with(
    grpc: impl Into<GrpcListener>,
    metrics_listener: Option<TcpListener>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let listeners = Listeners {
        grpc: grpc.into(),
        metrics: metrics_listener,
        health: None,
    };
    serve_on(listeners, config, shutdown).await
}

/// Reflection over every file a call may need: the contract, health, and the
/// `google.rpc` error details (`BadRequest`, `ErrorInfo` in a status's details),
/// so a tool like grpcurl can decode an error's field violations with no proto files.
fn reflection(
    google_rpc: prost_types::FileDescriptorSet,
) -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_file_descriptor_set(google_rpc)
}

/// `google/rpc/status.proto` and `google/rpc/error_details.proto` with their imports.
/// tonic-types names the two files without their directory; clients import them
/// by the full path, and one holding the canonical file (Python's
/// googleapis-common-protos) would see the same types defined twice otherwise.
fn google_rpc_files() -> Result<prost_types::FileDescriptorSet, tonic_reflection::server::Error> {
    use prost::Message as _;
    let mut set = prost_types::FileDescriptorSet::decode(tonic_types::pb::FILE_DESCRIPTOR_SET)
        .map_err(tonic_reflection::server::Error::DecodeError)?;
    let full = |name: &str| {
        if name.contains('/') {
            name.to_string()
        } else {
            format!("google/rpc/{name}")
        }
    };
    let renamed: Vec<String> = set
        .file
        .iter()
        .filter(|f| f.package() == "google.rpc" && !f.name().contains('/'))
        .map(|f| f.name().to_string())
        .collect();
    for file in &mut set.file {
        if renamed.iter().any(|r| r == file.name()) {
            file.name = Some(full(file.name()));
        }
        for import in &mut file.dependency {
            if renamed.contains(import) {
                *import = full(import);
            }
        }
    }
    Ok(set)
}

/// Serves on `listeners` until `shutdown` completes.
///
/// Shutdown: health turns NOT_SERVING, the server keeps serving for
/// `shutdown_delay`, then takes no new calls, closes idle connections and
/// lets the calls in flight finish, for at most `shutdown_grace`; then every
/// connection is closed. The metrics server never delays it.
pub async fn serve_on(
    listeners: Listeners,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    check(&config)?;
    let handle = metrics::install()?;
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<JobDeciderServer<DeciderService>>()
        .await;

    let google_rpc = google_rpc_files()?;
    let reflection_v1 = reflection(google_rpc.clone()).build_v1()?;
    let reflection_v1alpha = reflection(google_rpc).build_v1alpha()?;

    let draining = Arc::new(AtomicBool::new(false));
    let decider = stack::decider(&StackLimits {
        max_concurrent: config.max_concurrent_requests,
        queue_timeout: config.queue_timeout,
        request_bytes_budget: config.max_request_bytes_in_flight,
        max_message_size: config.max_message_size,
        body_read_timeout: config.body_read_timeout,
        request_timeout: config.request_timeout,
        draining: draining.clone(),
    });

    let (phase_tx, phase_rx) = watch::channel(Phase::Running);
    let (stop_tx, stop_rx) = watch::channel(false);

    let mut builder = transport(&config);
    if let Some(files) = &config.tls {
        builder = builder.tls_config(tls_config(files, config.tls_handshake_timeout)?)?;
    }
    let local = listeners.grpc.describe();
    let main = builder
        .layer(layer::around(ActivityLayer))
        .add_service(health.clone())
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(decider)
        .serve_with_incoming_shutdown(
            accepted(listeners.grpc, &config, &phase_rx),
            stopped(stop_rx.clone()),
        );
    let health_only = listeners.health.map(|listener| {
        info!(addr = %local_addr(&listener), "plaintext health listening");
        transport(&config)
            .layer(layer::around(ActivityLayer))
            .add_service(health)
            .serve_with_incoming_shutdown(
                accepted(listener, &config, &phase_rx),
                stopped(stop_rx.clone()),
            )
    });
    let servers = async move {
        match health_only {
            Some(health_only) => tokio::try_join!(main, health_only).map(|_| ()),
            None => main.await,
        }
    };
    tokio::pin!(servers);

    let (metrics_stop_tx, metrics_stop_rx) = watch::channel(false);
    let metrics_task = listeners.metrics.map(|listener| {
        info!(addr = %local_addr(&listener), "metrics listening");
        tokio::spawn(metrics::serve(
            listener,
            handle,
            config.metrics_header_timeout,
            stopped(metrics_stop_rx),
        ))
    });
    info!(addr = %local, tls = config.tls.is_some(), "serving");

    let shutdown_requested = tokio::select! {
        result = &mut servers => { result?; false }
        () = shutdown => true,
    };
    if shutdown_requested {
        info!("shutting down: health NOT_SERVING");
        reporter
            .set_not_serving::<JobDeciderServer<DeciderService>>()
            .await;
        reporter
            .set_service_status("", ServingStatus::NotServing)
            .await;
        // Still serving: callers that have not seen NOT_SERVING yet get answers.
        match tokio::time::timeout(config.shutdown_delay, &mut servers).await {
            Ok(result) => result?,
            Err(_) => {
                draining.store(true, Ordering::Release);
                let _ = phase_tx.send(Phase::Draining);
                let _ = stop_tx.send(true);
                match tokio::time::timeout(config.shutdown_grace, &mut servers).await {
                    Ok(result) => result?,
                    Err(_) => {
                        warn!(
                            grace_seconds = config.shutdown_grace.as_secs_f64(),
                            "calls still in flight at the shutdown deadline; closing"
                        );
                        let _ = phase_tx.send(Phase::Closing);
                    }
                }
            }
        }
    }
    let _ = metrics_stop_tx.send(true);
    if let Some(task) = metrics_task {
        // The metrics server cuts its connections at once; a failure there is only logged.
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => warn!(error = %err, "metrics server failed"),
            Err(err) => warn!(error = %err, "metrics task failed"),
        }
    }
    info!("stopped");
    Ok(())
}

/// A listener's address for a log line: `127.0.0.1:9090`, or "unknown" (never `Some(…)`).
fn local_addr(listener: &TcpListener) -> String {
    listener
        .local_addr()
        .map_or_else(|_| "unknown".to_string(), |addr| addr.to_string())
}

/// Binds the configured addresses and serves until SIGTERM or SIGINT.
///
/// A Unix socket is made with `config.socket_mode` and removed at shutdown
/// ([`socket::bind_unix`]).
pub async fn run(
    addr: ListenAddr,
    metrics_addr: SocketAddr,
    config: ServerConfig,
) -> Result<(), ServeError> {
    let bind = |addr| async move {
        TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let grpc = match addr {
        ListenAddr::Tcp(addr) => GrpcListener::Tcp(bind(addr).await?),
        ListenAddr::Unix(path) => {
            let (listener, file) = socket::bind_unix(&path, config.socket_mode)?;
            GrpcListener::Unix(listener, Some(file))
        }
    };
    let metrics_listener = bind(metrics_addr).await?;
    let health = match config.health_addr {
        Some(addr) => Some(bind(addr).await?),
        None => None,
    };
    let listeners = Listeners {
        grpc,
        metrics: Some(metrics_listener),
        health,
    };
    serve_on(listeners, config, termination()).await
}

/// Completes on the first SIGTERM or SIGINT.
pub async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => info!("SIGTERM"),
                    _ = int.recv() => info!("SIGINT"),
                }
            }
            _ => {
                warn!("cannot install signal handlers; stopping on ctrl-c only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, span fields included.
    Json,
}

/// Whether text logs are coloured: only on a terminal, and never with
/// `NO_COLOR` set (no-color.org), so files and log collectors get plain text.
pub fn log_colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the tracing subscriber (once per process; later calls are no-ops).
///
/// `filter` is an `EnvFilter` directive such as `info` or `job_decider=debug`.
/// Logs go to stderr, coloured only when [`log_colour`] says so.
pub fn init_tracing(format: LogFormat, filter: &str) -> Result<(), String> {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))?;
    let colour = log_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    // An already installed subscriber (tests) is fine.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    Ok(())
}

#[cfg(test)]
mod tests;
