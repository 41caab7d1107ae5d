//! The gRPC listener on a Unix domain socket: the file's life around the server's.
//!
//! [`bind_unix`] refuses a path held by something that is not a socket, or by
//! a socket a live server listens on; it removes a socket nobody listens on
//! (left by a run that was killed). The socket is bound inside a private
//! directory made for it beside the path (mode 0700, a random name), given its
//! mode there, and only then renamed to the path, so no client can ever connect
//! to it with the permissions the umask gave, and no other user can swap
//! something else in for the chmod to land on: the directory is reached
//! through its open descriptor (`/proc/self/fd/N` on Linux), not its name, and
//! the path is checked to hold the bound socket after the rename.
//! [`SocketFile`] removes the file when the server stops accepting.
//!
//! A directory others may write to without the sticky bit (a Kubernetes
//! `emptyDir` is 0777) is served with a warning, not refused: the private
//! directory keeps the bind and the chmod safe there, but another user could
//! still replace the socket once it is in place.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;
use tracing::{info, warn};

/// The default mode of the socket file: owner and group may connect, no one
/// else (connecting needs write permission on the file).
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

/// The longest socket path clients can connect to, in bytes: `sun_path` holds
/// 108 bytes on Linux and 104 on the BSDs and macOS, a NUL included.
#[cfg(target_os = "linux")]
pub const MAX_SOCKET_PATH: usize = 107;
/// The longest socket path clients can connect to, in bytes: `sun_path` holds
/// 108 bytes on Linux and 104 on the BSDs and macOS, a NUL included.
#[cfg(not(target_os = "linux"))]
pub const MAX_SOCKET_PATH: usize = 103;

/// Why a Unix socket could not be listened on.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Something other than a socket is at the path; it is not ours to remove.
    #[error("{path} exists and is {kind}, not a socket; refusing to replace it")]
    NotASocket {
        /// The path.
        path: PathBuf,
        /// What is there.
        kind: &'static str,
    },
    /// A server is listening on the socket already.
    #[error("{path}: another server is listening on this socket")]
    InUse {
        /// The path.
        path: PathBuf,
    },
    /// The mode has bits outside rwx for owner, group and others.
    #[error("socket mode {mode:#o} is not a file mode (0 to 0777)")]
    Mode {
        /// The mode given.
        mode: u32,
    },
    /// The path is longer than a client can connect to.
    #[error(
        "{path}: a socket path is at most {MAX_SOCKET_PATH} bytes, this one has {len}; use a shorter path (a relative one counts from the working directory)"
    )]
    TooLong {
        /// The path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// Something else took the path between the rename and the check.
    #[error("{path}: the socket was replaced as it was put in place; refusing to serve there")]
    Replaced {
        /// The path.
        path: PathBuf,
    },
    /// The OS refused (no such directory, no permission, a path too long).
    #[error("cannot listen on {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl SocketError {
    /// True when the address itself is wrong (what is at the path, the
    /// directory, the mode), as opposed to a server already running there.
    pub fn is_bad_input(&self) -> bool {
        match self {
            SocketError::NotASocket { .. }
            | SocketError::Mode { .. }
            | SocketError::TooLong { .. } => true,
            SocketError::InUse { .. } | SocketError::Replaced { .. } => false,
            SocketError::Io { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::NotFound
                    | io::ErrorKind::NotADirectory
                    | io::ErrorKind::InvalidInput
                    | io::ErrorKind::PermissionDenied
            ),
        }
    }
}

/// The socket file of a listener; removed when dropped, unless another has
/// taken the path since (the file there is then not this one).
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_socket() && m.dev() == self.dev && m.ino() == self.ino);
        if !ours {
            return;
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => info!(path = %self.path.display(), "removed the socket"),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                warn!(path = %self.path.display(), error = %err, "cannot remove the socket")
            }
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SocketError + '_ {
    move |source| SocketError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a file type is called in an error.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else {
        "a device or other special file"
    }
}

/// Clears `path` for a new socket: nothing there, or a socket nobody listens on
/// (removed); anything else is an error.
fn clear(path: &Path) -> Result<(), SocketError> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(io_error(path)(err)),
    };
    if !metadata.file_type().is_socket() {
        return Err(SocketError::NotASocket {
            path: path.to_path_buf(),
            kind: kind_of(metadata.file_type()),
        });
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(SocketError::InUse {
            path: path.to_path_buf(),
        }),
        Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
            match std::fs::remove_file(path) {
                Ok(()) => {
                    info!(path = %path.display(), "removed a stale socket nobody listened on");
                    Ok(())
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(err) => Err(io_error(path)(err)),
            }
        }
        Err(err) => Err(io_error(path)(err)),
    }
}

/// A private directory beside the socket's path, made for binding it: only
/// this process's user can enter it, and it is used through its open
/// descriptor, so renaming it or putting another in its place changes nothing.
struct PrivateDir {
    /// Where it was made (removed at the end if it is still there).
    path: PathBuf,
    /// Open, so that the directory itself is used whatever its name becomes.
    handle: std::fs::File,
    /// Its identity, to tell it from one put in its place.
    dev: u64,
    ino: u64,
}

/// The name of the socket inside the private directory.
const INNER_NAME: &str = "s";

impl PrivateDir {
    /// Makes a directory of a random name in `parent`, mode 0700.
    fn create(parent: &Path) -> io::Result<PrivateDir> {
        let mut last = None;
        for attempt in 0..16u32 {
            let path = parent.join(format!(".jd-{:016x}", random(attempt)));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let (handle, metadata) = match Self::own(&path) {
                        Ok(owned) => owned,
                        Err(err) => {
                            let _ = std::fs::remove_dir(&path);
                            return Err(err);
                        }
                    };
                    return Ok(PrivateDir {
                        path,
                        handle,
                        dev: metadata.dev(),
                        ino: metadata.ino(),
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free name for a private directory")))
    }

    /// Opens the directory just made and makes sure it is a 0700 directory
    /// this user owns: another user may have put one of theirs in its place
    /// between the two calls, and root's chmod would not fail on it.
    fn own(path: &Path) -> io::Result<(std::fs::File, std::fs::Metadata)> {
        let handle = std::fs::File::open(path)?;
        handle.set_permissions(std::fs::Permissions::from_mode(0o700))?;
        let metadata = handle.metadata()?;
        // Linux shows the process's effective user as the owner of /proc/self.
        let foreign = std::fs::metadata("/proc/self").is_ok_and(|me| me.uid() != metadata.uid());
        if foreign || !metadata.is_dir() || metadata.mode() & 0o7777 != 0o700 {
            return Err(io::Error::other(format!(
                "{} was replaced while it was made",
                path.display()
            )));
        }
        Ok((handle, metadata))
    }

    /// The socket's path inside the directory as the OS reaches it: through
    /// the descriptor where `/proc` shows it (short, whatever the final path's
    /// length), else through the directory's name.
    fn inner(&self) -> PathBuf {
        let by_fd = PathBuf::from(format!("/proc/self/fd/{}", self.handle.as_raw_fd()));
        let dir = match std::fs::metadata(&by_fd) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => by_fd,
            _ => self.path.clone(),
        };
        dir.join(INNER_NAME)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.inner());
        // Only the directory made here: one put in its place is not ours.
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.is_dir() && m.dev() == self.dev && m.ino() == self.ino);
        if ours && let Err(err) = std::fs::remove_dir(&self.path) {
            warn!(path = %self.path.display(), error = %err, "cannot remove the socket's private directory");
        }
    }
}

/// 64 random bits for a name: the standard library's hasher keys come from
/// the OS's random source.
fn random(attempt: u32) -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(attempt);
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Warns when others may write to the directory of the socket without the
/// sticky bit: they could replace the socket once it is in place.
fn warn_if_open(parent: &Path, path: &Path) {
    let Ok(metadata) = std::fs::metadata(parent) else {
        return;
    };
    let mode = metadata.mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        warn!(
            addr = %crate::address::unix_url(path),
            directory = %parent.display(),
            mode = format!("{:#o}", mode & 0o7777),
            "--addr: others may write to the socket's directory and it has no sticky bit: \
             another user could replace the socket; prefer a directory only this user \
             (and the clients' group) can write to"
        );
    }
}

/// Listens on a Unix socket at `path` with file mode `mode`.
///
/// Must run inside a Tokio runtime (the listener registers with it).
pub fn bind_unix(path: &Path, mode: u32) -> Result<(UnixListener, SocketFile), SocketError> {
    if mode > 0o777 {
        return Err(SocketError::Mode { mode });
    }
    if path.file_name().is_none() {
        return Err(SocketError::NotASocket {
            path: path.to_path_buf(),
            kind: "a directory",
        });
    }
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(SocketError::TooLong {
            path: path.to_path_buf(),
            len,
        });
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    warn_if_open(parent, path);
    clear(path)?;
    let private = PrivateDir::create(parent).map_err(io_error(path))?;
    let inner = private.inner();
    let inner_len = inner.as_os_str().len();
    if inner_len > MAX_SOCKET_PATH {
        // Only without /proc: the directory's name is then part of the bound path.
        return Err(SocketError::TooLong {
            path: inner,
            len: inner_len,
        });
    }
    let listener = std::os::unix::net::UnixListener::bind(&inner).map_err(io_error(path))?;
    // Nobody else can enter the private directory, so the mode lands on this socket.
    let bound = std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::fs::symlink_metadata(&inner))
        .map_err(io_error(path))?;
    std::fs::rename(&inner, path).map_err(io_error(path))?;
    let placed = std::fs::symlink_metadata(path).map_err(io_error(path))?;
    if !placed.file_type().is_socket() || placed.dev() != bound.dev() || placed.ino() != bound.ino()
    {
        return Err(SocketError::Replaced {
            path: path.to_path_buf(),
        });
    }
    drop(private);
    let file = SocketFile {
        path: path.to_path_buf(),
        dev: placed.dev(),
        ino: placed.ino(),
    };
    listener.set_nonblocking(true).map_err(io_error(path))?;
    let listener = UnixListener::from_std(listener).map_err(io_error(path))?;
    Ok((listener, file))
}

#[cfg(test)]
mod tests;
