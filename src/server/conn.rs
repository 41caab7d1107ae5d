//! Connections that end.
//!
//! tonic's `Server` gives the TLS handshake timeout, HTTP/2 keepalive pings,
//! TCP keepalive, the per-connection stream limit and a graceful close
//! (GOAWAY) at the maximum connection age. What it lacks is here:
//!
//! - **maximum idle time**: a connection with no call in flight for
//!   `--max-connection-idle` is closed;
//! - **the grace after the maximum age**: a connection still open
//!   `--max-connection-age-grace` after its GOAWAY is closed, calls or not;
//! - **shutdown that never waits on idle connections**: once shutdown begins,
//!   a connection closes as soon as it has no call in flight, and every
//!   connection closes when the shutdown grace runs out.
//!
//! [`Tracked`] wraps each accepted socket, TCP or Unix (under TLS, so it counts the
//! handshake too) and [`ActivityLayer`], outside every service, counts the
//! calls in flight on the connection that carries them. Closing is an end of
//! stream on the socket's read side: hyper then ends the connection. An idle
//! connection is closed only once its last response has had [`DRAIN_SETTLE`]
//! (or the idle time) to be written out.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tonic::transport::server::{Connected, TcpConnectInfo, TlsConnectInfo, UdsConnectInfo};

use crate::server::layer::{Holding, HttpRequest, Next, ResponseFuture, Step};

/// Where the server is in its life, as connections see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Serving.
    Running,
    /// Shutting down: idle connections close now, busy ones when their calls end.
    Draining,
    /// Past the shutdown grace: every connection closes.
    Closing,
}

/// Limits on a connection's life.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnLimits {
    /// Close after this long without a call in flight.
    pub max_idle: Option<Duration>,
    /// Close this long after accept, calls or not (the age plus its grace).
    pub max_lifetime: Option<Duration>,
}

/// What a connection and its calls share.
#[derive(Debug)]
pub struct ConnState {
    active: AtomicUsize,
    idle_since: Mutex<Instant>,
    changed: Notify,
}

impl ConnState {
    fn new() -> Self {
        ConnState {
            active: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    fn idle_since(&self) -> Instant {
        match self.idle_since.lock() {
            Ok(at) => *at,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn call_started(self: &Arc<Self>) -> CallOnConn {
        self.active.fetch_add(1, Ordering::AcqRel);
        CallOnConn(self.clone())
    }
}

/// One call in flight on a connection; dropping it ends the call.
#[derive(Debug)]
pub struct CallOnConn(Arc<ConnState>);

impl Drop for CallOnConn {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            match self.0.idle_since.lock() {
                Ok(mut at) => *at = Instant::now(),
                Err(poisoned) => *poisoned.into_inner() = Instant::now(),
            }
            self.0.changed.notify_one();
        }
    }
}

/// The connection info tonic puts in each request's extensions.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// The peer, as tonic reports it for the socket's kind.
    pub peer: Peer,
    state: Arc<ConnState>,
}

/// Who is at the other end of a connection.
#[derive(Clone, Debug)]
pub enum Peer {
    /// A TCP connection's addresses.
    Tcp(TcpConnectInfo),
    /// A Unix socket connection's peer (its credentials, when the OS gives them).
    Unix(UdsConnectInfo),
}

/// An accepted socket of either kind; one type, so one server (and so one set
/// of layers) serves both.
#[derive(Debug)]
pub enum Socket {
    /// Accepted on a TCP listener.
    Tcp(TcpStream),
    /// Accepted on a Unix domain socket.
    Unix(UnixStream),
}

impl From<TcpStream> for Socket {
    fn from(stream: TcpStream) -> Self {
        Socket::Tcp(stream)
    }
}

impl From<UnixStream> for Socket {
    fn from(stream: UnixStream) -> Self {
        Socket::Unix(stream)
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl Socket {
    fn peer(&self) -> Peer {
        match self {
            Socket::Tcp(s) => Peer::Tcp(s.connect_info()),
            Socket::Unix(s) => Peer::Unix(s.connect_info()),
        }
    }
}

type Closer = Pin<Box<dyn Future<Output = ()> + Send>>;

/// An accepted socket that ends itself when [`ConnLimits`] or the [`Phase`] say so.
pub struct Tracked {
    io: Socket,
    state: Arc<ConnState>,
    closer: Closer,
    closed: bool,
}

impl Tracked {
    /// Wraps an accepted socket (a `TcpStream` or a `UnixStream`).
    pub fn new(io: impl Into<Socket>, limits: ConnLimits, phase: watch::Receiver<Phase>) -> Self {
        let io = io.into();
        let state = Arc::new(ConnState::new());
        let closer = Box::pin(close_when_due(state.clone(), limits, phase));
        Tracked {
            io,
            state,
            closer,
            closed: false,
        }
    }
}

/// How long a draining connection must have been without a call before it is
/// closed: time for the last response's final frames to be written out.
pub const DRAIN_SETTLE: Duration = Duration::from_millis(500);

/// Completes when the connection should close.
async fn close_when_due(
    state: Arc<ConnState>,
    limits: ConnLimits,
    mut phase: watch::Receiver<Phase>,
) {
    let far = Duration::from_secs(86_400 * 365);
    let hard = Instant::now() + limits.max_lifetime.unwrap_or(far);
    loop {
        let now_phase = *phase.borrow_and_update();
        if now_phase == Phase::Closing {
            return;
        }
        let mut deadline = hard;
        if state.active.load(Ordering::Acquire) == 0 {
            let since = state.idle_since();
            if let Some(max_idle) = limits.max_idle {
                deadline = deadline.min(since + max_idle);
            }
            if now_phase == Phase::Draining {
                deadline = deadline.min(since + DRAIN_SETTLE);
            }
        }
        if Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            () = state.changed.notified() => {}
            changed = phase.changed() => {
                if changed.is_err() {
                    // The server is gone: nothing will serve this connection.
                    return;
                }
            }
        }
    }
}

impl Tracked {
    fn poll_closed(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.closed && self.closer.as_mut().poll(cx).is_ready() {
            self.closed = true;
        }
        self.closed
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.poll_closed(cx) {
            // End of stream: hyper ends the connection (TLS sees a truncated stream).
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // Writes go on after the close: hyper may still flush what it has queued.
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl Connected for Tracked {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo {
            peer: self.io.peer(),
            state: self.state.clone(),
        }
    }
}

/// Counts each call on the connection that carries it, until its response ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActivityLayer;

/// The connection a call arrived on (plain or TLS), when the transport says.
fn connection_of(request: &HttpRequest) -> Option<Arc<ConnState>> {
    let extensions = request.extensions();
    extensions
        .get::<ConnInfo>()
        .or_else(|| {
            extensions
                .get::<TlsConnectInfo<ConnInfo>>()
                .map(|i| i.get_ref())
        })
        .map(|info| info.state.clone())
}

impl Step for ActivityLayer {
    fn call<N: Next>(&self, next: N, request: HttpRequest) -> ResponseFuture {
        let call = connection_of(&request).map(|state| state.call_started());
        let mut next = next;
        let answer = next.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(match call {
                Some(call) => Holding::response(response, call),
                None => response,
            })
        })
    }
}
