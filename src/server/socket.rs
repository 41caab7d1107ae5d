//! The gRPC listener on a Unix domain socket: the file's life around the server's.
//!
//! [`bind_unix`] refuses a path held by something that is not a socket, or by
//! a socket a live server listens on; it removes a socket nobody listens on
//! (left by a run that was killed). The socket is bound under a temporary
//! name, given its mode, and only then renamed to the path, so no client can
//! ever connect to it with the permissions the umask gave. [`SocketFile`]
//! removes the file when the server stops accepting.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;
use tracing::{info, warn};

/// The default mode of the socket file: owner and group may connect, no one
/// else (connecting needs write permission on the file).
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

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
            SocketError::NotASocket { .. } | SocketError::Mode { .. } => true,
            SocketError::InUse { .. } => false,
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

/// The temporary name a socket is bound under before it has its mode: short
/// (socket paths are limited to about 100 bytes), beside the final path (a
/// rename stays on one file system), and per process.
fn temporary(path: &Path) -> PathBuf {
    path.with_file_name(format!(".jd-{}.sock", std::process::id()))
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
    clear(path)?;
    let temp = temporary(path);
    // A socket of this process's id left by a killed run with the same id
    // (a restarted container is pid 1 again).
    clear(&temp).map_err(|err| match err {
        SocketError::Io { source, .. } => io_error(path)(source),
        other => other,
    })?;
    let listener = std::os::unix::net::UnixListener::bind(&temp).map_err(io_error(path))?;
    let placed = std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::fs::rename(&temp, path))
        .and_then(|()| std::fs::symlink_metadata(path));
    let metadata = match placed {
        Ok(metadata) => metadata,
        Err(err) => {
            let _ = std::fs::remove_file(&temp);
            return Err(io_error(path)(err));
        }
    };
    let file = SocketFile {
        path: path.to_path_buf(),
        dev: metadata.dev(),
        ino: metadata.ino(),
    };
    listener.set_nonblocking(true).map_err(io_error(path))?;
    let listener = UnixListener::from_std(listener).map_err(io_error(path))?;
    Ok((listener, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_beyond_rwx_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = bind_unix(&dir.path().join("s"), 0o4770).expect_err("setuid bit");
        assert!(matches!(err, SocketError::Mode { .. }), "{err}");
        assert!(err.is_bad_input());
    }

    #[test]
    fn what_is_at_the_path_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = clear(dir.path()).expect_err("a directory");
        assert!(err.to_string().contains("is a directory"), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").expect("write");
        let err = clear(&file).expect_err("a file");
        assert!(err.to_string().contains("is a regular file"), "{err}");
        assert!(file.exists(), "the file is left alone");
    }
}
