//! `job-decider serve`: the gRPC service with health, reflection, metrics,
//! limits, TLS and graceful shutdown around the shared decision pipeline.
//!
//! [`serve_with`] runs a server on listeners the caller bound (tests use
//! ephemeral ports); [`run`] binds the configured addresses and stops on
//! SIGTERM or SIGINT.

pub mod guard;
pub mod metrics;
pub mod service;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic_health::ServingStatus;
use tracing::{info, warn};

use guard::{Guard, Limits};
use job_decider_api::pb;
use job_decider_api::pb::job_decider_server::JobDeciderServer;
use service::DeciderService;

/// Everything `serve` can be told, with the defaults the CLI documents.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Decisions running at once, across all connections; more are shed with UNAVAILABLE.
    pub max_concurrent_requests: usize,
    /// How long one call may take before it is answered DEADLINE_EXCEEDED.
    pub request_timeout: Duration,
    /// The largest request accepted; larger ones get RESOURCE_EXHAUSTED.
    pub max_message_size: usize,
    /// Serve TLS (and require client certificates when a client CA is given).
    pub tls: Option<TlsFiles>,
    /// After health flips to NOT_SERVING, keep serving this long so load balancers notice.
    pub shutdown_delay: Duration,
    /// After that, how long calls in flight may take before the server closes anyway.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_concurrent_requests: 64,
            request_timeout: Duration::from_secs(30),
            max_message_size: job_decider_api::DEFAULT_MAX_MESSAGE_SIZE,
            tls: None,
            shutdown_delay: Duration::ZERO,
            shutdown_grace: Duration::from_secs(20),
        }
    }
}

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

fn tls_config(files: &TlsFiles) -> Result<ServerTlsConfig, ServeError> {
    let identity = Identity::from_pem(read(&files.cert)?, read(&files.key)?);
    let mut config = ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &files.client_ca {
        config = config.client_ca_root(Certificate::from_pem(read(ca)?));
    }
    Ok(config)
}

/// Serves on `grpc` (and `/metrics` on `metrics_listener`) until `shutdown` completes.
///
/// Shutdown: health turns NOT_SERVING, the server keeps serving for
/// `shutdown_delay`, then takes no new calls and lets the calls in flight
/// finish, for at most `shutdown_grace`.
pub async fn serve_with(
    grpc: TcpListener,
    metrics_listener: Option<TcpListener>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    if config.max_concurrent_requests == 0 {
        return Err(ServeError::Config(
            "max concurrent requests must be at least 1".into(),
        ));
    }
    let handle = metrics::install()?;
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<JobDeciderServer<DeciderService>>()
        .await;

    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let draining = Arc::new(AtomicBool::new(false));
    let decider = JobDeciderServer::new(DeciderService)
        .max_decoding_message_size(config.max_message_size)
        .max_encoding_message_size(usize::MAX);
    let guarded = Guard::new(
        decider,
        Limits {
            slots: Arc::new(Semaphore::new(config.max_concurrent_requests)),
            max_concurrent: config.max_concurrent_requests,
            timeout: config.request_timeout,
            draining: draining.clone(),
        },
    );

    let mut builder = Server::builder();
    if let Some(files) = &config.tls {
        builder = builder.tls_config(tls_config(files)?)?;
    }
    let local = grpc.local_addr().ok();
    let incoming = TcpIncoming::from(grpc).with_nodelay(Some(true));
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let serve = builder
        .add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(guarded)
        .serve_with_incoming_shutdown(incoming, async {
            // A dropped sender also stops the server.
            let _ = stop_rx.await;
        });
    tokio::pin!(serve);

    let (metrics_stop_tx, metrics_stop_rx) = oneshot::channel::<()>();
    let metrics_task = metrics_listener.map(|listener| {
        info!(addr = ?listener.local_addr().ok(), "metrics listening");
        tokio::spawn(metrics::serve(listener, handle, async {
            let _ = metrics_stop_rx.await;
        }))
    });
    info!(addr = ?local, tls = config.tls.is_some(), "serving");

    let shutdown_requested = tokio::select! {
        result = &mut serve => { result?; false }
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
        let finished_early = tokio::time::timeout(config.shutdown_delay, &mut serve).await;
        if finished_early.is_err() {
            draining.store(true, Ordering::Release);
            let _ = stop_tx.send(());
            match tokio::time::timeout(config.shutdown_grace, &mut serve).await {
                Ok(result) => result?,
                Err(_) => warn!(
                    grace = ?config.shutdown_grace,
                    "calls still in flight at the shutdown deadline; closing"
                ),
            }
        }
    }
    let _ = metrics_stop_tx.send(());
    if let Some(task) = metrics_task {
        // The metrics server ends with its shutdown signal; a failure there is only logged.
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => warn!(error = %err, "metrics server failed"),
            Err(err) => warn!(error = %err, "metrics task failed"),
        }
    }
    info!("stopped");
    Ok(())
}

/// Binds `addr` and `metrics_addr` and serves until SIGTERM or SIGINT.
pub async fn run(
    addr: SocketAddr,
    metrics_addr: SocketAddr,
    config: ServerConfig,
) -> Result<(), ServeError> {
    let bind = |addr| async move {
        TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let grpc = bind(addr).await?;
    let metrics_listener = bind(metrics_addr).await?;
    serve_with(grpc, Some(metrics_listener), config, termination()).await
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

/// Installs the tracing subscriber (once per process; later calls are no-ops).
///
/// `filter` is an `EnvFilter` directive such as `info` or `job_decider=debug`.
pub fn init_tracing(format: LogFormat, filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
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
