//! Addresses the server listens on and clients dial: TCP (`host:port`), or a
//! Unix domain socket written as gRPC names one (`unix:///abs/path`,
//! `unix:/abs/path`, `unix:relative/path`), so the same text works for this
//! binary, grpc-go (the shim), grpcurl and the other clients.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

/// The scheme that marks a Unix domain socket.
pub const UNIX_SCHEME: &str = "unix:";

/// Where the gRPC server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (`127.0.0.1:50051`, `[::]:50051`).
    Tcp(SocketAddr),
    /// A Unix domain socket's path.
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(path) = unix_path(text) {
            return path.map(ListenAddr::Unix);
        }
        text.parse::<SocketAddr>()
            .map(ListenAddr::Tcp)
            .map_err(|e| {
                format!("{text:?}: {e}; write HOST:PORT (an IP address and a port) or unix:///PATH")
            })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "{}", unix_url(path)),
        }
    }
}

/// `unix:` followed by the path, as gRPC writes it (`unix:///abs` for an absolute one).
pub fn unix_url(path: &Path) -> String {
    if path.is_absolute() {
        format!("unix://{}", path.display())
    } else {
        format!("unix:{}", path.display())
    }
}

/// The path of a `unix:` address; `None` when `text` is not one.
///
/// `unix:///abs` and `unix:/abs` are absolute paths, `unix:rel` a relative
/// one; `unix://host/...` is refused, as gRPC refuses it (a socket has no host).
pub fn unix_path(text: &str) -> Option<Result<PathBuf, String>> {
    let rest = text.strip_prefix(UNIX_SCHEME)?;
    let path = match rest.strip_prefix("//") {
        Some(after) => {
            if !after.is_empty() && !after.starts_with('/') {
                return Some(Err(format!(
                    "{text:?}: a Unix socket has no host; write unix:///ABSOLUTE/PATH or unix:RELATIVE/PATH"
                )));
            }
            after
        }
        None => rest,
    };
    if path.is_empty() {
        return Some(Err(format!("{text:?}: no socket path after unix:")));
    }
    if path.contains('\0') {
        return Some(Err(format!(
            "{text:?}: a socket path cannot hold a NUL byte"
        )));
    }
    Some(Ok(PathBuf::from(path)))
}

/// Why a client could not reach a server.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The address cannot be read.
    #[error("{0}")]
    BadAddress(String),
    /// The connection failed.
    #[error("{0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Connects to a server at `addr`: `unix:` addresses over their socket, any
/// other text as a URI (`host:port` taken as `http://host:port`).
pub async fn connect(addr: &str) -> Result<Channel, DialError> {
    match unix_path(addr) {
        Some(path) => connect_unix(path.map_err(DialError::BadAddress)?).await,
        None => {
            let uri = if addr.contains("://") {
                addr.to_string()
            } else {
                format!("http://{addr}")
            };
            let endpoint = Endpoint::from_shared(uri)
                .map_err(|e| DialError::BadAddress(format!("{addr:?}: {e}")))?;
            Ok(endpoint.connect().await?)
        }
    }
}

/// Connects over the Unix socket at `path` (HTTP/2 in plaintext; the
/// `:authority` is `localhost`, as grpc-go sends for a socket).
pub async fn connect_unix(path: PathBuf) -> Result<Channel, DialError> {
    let endpoint = Endpoint::from_static("http://localhost");
    let channel = endpoint
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await?;
    Ok(channel)
}

#[cfg(test)]
mod tests;
