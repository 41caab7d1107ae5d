//! The gRPC server on a Unix domain socket in a temporary directory, as the
//! sidecar layout runs it: health, decisions equal to TCP's, the layers, the
//! socket file's mode and life (stale one replaced, anything else refused,
//! removed at shutdown), in process and through the binary.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{SocketServer, TestServer, WAIT, example_request, small_request};
use job_decider::address;
use job_decider::server::ServerConfig;
use job_decider::server::socket::{SocketError, bind_unix};
use job_decider_api::pb;
use tonic::Code;

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("socket")
        .permissions()
        .mode()
        & 0o777
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[tokio::test]
async fn unix_socket_health_is_serving() {
    let server = SocketServer::start(ServerConfig::default()).await;
    crate::common::assert_health_serving(server.channel().await).await;
}

#[tokio::test]
async fn unix_socket_decision_equals_the_tcp_one() {
    let unix = SocketServer::start(ServerConfig::default()).await;
    let tcp = TestServer::start(ServerConfig::default()).await;
    for example in ["indexed-job-mid-run", "kep-3329-failjob-exit-code-42"] {
        let request = example_request(example);
        let over_socket = unix
            .client()
            .await
            .decide_job(request.clone())
            .await
            .expect("decided over the socket")
            .into_inner();
        let over_tcp = tcp
            .client()
            .await
            .decide_job(request)
            .await
            .expect("decided over TCP")
            .into_inner();
        assert_ne!(over_socket, pb::DecideJobResponse::default(), "{example}");
        assert_eq!(over_socket, over_tcp, "{example}");
    }
}

#[tokio::test]
async fn unix_socket_applies_the_size_limit() {
    let server = SocketServer::start(ServerConfig {
        max_message_size: 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    let status = client
        .decide_job(example_request("indexed-job-mid-run"))
        .await
        .expect_err("over 1 KiB");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    client
        .decide_job(small_request())
        .await
        .expect("a small request fits");
}

#[tokio::test]
async fn unix_socket_mode_is_0660_unless_told() {
    let server = SocketServer::start(ServerConfig::default()).await;
    assert_eq!(mode_of(&server.path), 0o660);
    server.stop().await;

    let server = SocketServer::start(ServerConfig {
        socket_mode: 0o600,
        ..ServerConfig::default()
    })
    .await;
    assert_eq!(mode_of(&server.path), 0o600);
    // The temporary name it was bound under is gone.
    let left: Vec<_> = std::fs::read_dir(server.dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("decider.sock")]);
}

#[tokio::test]
async fn graceful_shutdown_closes_idle_connections_and_removes_the_socket() {
    // A grace longer than the wait: the server must end on its own, closing
    // the idle connection (the connection tracking works on a socket), not be
    // cut off at the grace.
    let server = SocketServer::start(ServerConfig {
        shutdown_grace: Duration::from_secs(120),
        ..ServerConfig::default()
    })
    .await;
    let mut idle = server.client().await;
    idle.decide_job(small_request()).await.expect("decided");
    let url = address::unix_url(&server.path);
    assert!(is_socket(&server.path));
    let (_dir, path) = server.stop().await;
    assert!(!path.exists(), "the socket is removed");
    let refused = address::connect(&url).await.expect_err("nobody listens");
    assert!(
        matches!(refused, address::DialError::Transport(_)),
        "{refused}"
    );
}

#[tokio::test]
async fn a_stale_socket_is_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("decider.sock");
    // A socket nobody listens on, as a killed server leaves it.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
    assert!(is_socket(&path));
    let server = SocketServer::start_at(dir, path, ServerConfig::default()).await;
    server
        .client()
        .await
        .decide_job(small_request())
        .await
        .expect("served on the replaced socket");
    assert_eq!(mode_of(&server.path), 0o660);
}

#[tokio::test]
async fn a_socket_a_server_listens_on_is_not_taken() {
    let server = SocketServer::start(ServerConfig::default()).await;
    let err = bind_unix(&server.path, 0o660).expect_err("in use");
    assert!(matches!(err, SocketError::InUse { .. }), "{err}");
    // The first server is untouched.
    server
        .client()
        .await
        .decide_job(small_request())
        .await
        .expect("still serving");
}

#[tokio::test]
async fn a_regular_file_at_the_socket_path_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("decider.sock");
    std::fs::write(&path, "not a socket").expect("write");
    let err = bind_unix(&path, 0o660).expect_err("a regular file");
    assert!(matches!(err, SocketError::NotASocket { .. }), "{err}");
    assert!(err.is_bad_input());
    assert_eq!(
        std::fs::read_to_string(&path).expect("still there"),
        "not a socket"
    );
}

#[tokio::test]
async fn unix_socket_serves_mutual_tls_when_configured() {
    let pki = crate::tls::pki();
    let server = SocketServer::start(ServerConfig {
        tls: Some(pki.server_tls(true)),
        ..ServerConfig::default()
    })
    .await;
    let dial = |identity: Option<tonic::transport::Identity>| {
        let path = server.path.clone();
        let mut tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(&pki.ca));
        if let Some(identity) = identity {
            tls = tls.identity(identity);
        }
        async move {
            let endpoint = tonic::transport::Endpoint::from_static("https://localhost")
                .tls_config(tls)
                .expect("tls config");
            let channel = endpoint
                .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                    let path = path.clone();
                    async move {
                        tokio::net::UnixStream::connect(path)
                            .await
                            .map(hyper_util::rt::TokioIo::new)
                    }
                }))
                .await?;
            pb::job_decider_client::JobDeciderClient::new(channel)
                .decide_job(small_request())
                .await
                .map_err(|status| Box::new(status) as Box<dyn std::error::Error + Send + Sync>)
        }
    };
    let answer = dial(Some(pki.client.clone()))
        .await
        .expect("decided over mTLS");
    assert!(!answer.into_inner().actions.is_empty());
    // Plaintext, or TLS without a client certificate, gets nothing.
    dial(None).await.expect_err("no client certificate");
    pb::job_decider_client::JobDeciderClient::new(
        address::connect(&address::unix_url(&server.path))
            .await
            .expect("the socket connects"),
    )
    .decide_job(small_request())
    .await
    .expect_err("plaintext to a TLS server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_decides_over_a_unix_socket_as_in_process() {
    let server = SocketServer::start(ServerConfig::default()).await;
    let addr = address::unix_url(&server.path);
    let dir = crate::common::examples().join("simulate/kep-3850-story2");
    let (job, script) = (dir.join("job.yaml"), dir.join("script.yaml"));
    let run = move |remote: Option<&str>| {
        let mut command = Command::new(BIN);
        command
            .args(["simulate", "--job"])
            .arg(&job)
            .arg("--script")
            .arg(&script)
            .args(["-o", "json"]);
        if let Some(addr) = remote {
            command.args(["--decider-addr", addr]);
        }
        command.output().expect("run simulate")
    };
    let (local, remote) = tokio::task::spawn_blocking(move || (run(None), run(Some(&addr))))
        .await
        .expect("join");
    let stderr = String::from_utf8_lossy(&remote.stderr);
    assert!(remote.status.success(), "{stderr}");
    assert!(!local.stdout.is_empty());
    assert_eq!(local.stdout, remote.stdout);
}

#[test]
fn simulate_names_the_flag_for_a_unix_address_with_a_host() {
    let dir = crate::common::examples().join("simulate/kep-3850-story2");
    let out = Command::new(BIN)
        .args(["simulate", "--job"])
        .arg(dir.join("job.yaml"))
        .arg("--script")
        .arg(dir.join("script.yaml"))
        .args(["--decider-addr", "unix://host/d.sock"])
        .output()
        .expect("run simulate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--decider-addr unix://host/d.sock"),
        "{stderr}"
    );
}

/// `serve` with these arguments (metrics on an ephemeral loopback port).
fn serve(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .args(["--metrics-addr", "127.0.0.1:0", "--log-level", "info"])
        .args(args);
    command
}

#[test]
fn serve_refuses_a_regular_file_at_the_socket_path_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("decider.sock");
    std::fs::write(&path, "keep me").expect("write");
    let addr = format!("unix://{}", path.display());
    let out = serve(&["--addr", &addr]).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--addr"), "{stderr}");
    assert!(
        stderr.contains("is a regular file, not a socket"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), "keep me");
}

#[test]
fn serve_refuses_bad_socket_flags_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = format!("unix://{}/no/such/dir/d.sock", dir.path().display());
    let cases: [(&[&str], &str); 4] = [
        (&["--addr", "unix://host/d.sock"], "--addr"),
        (&["--addr", &missing], "--addr"),
        (
            &["--addr", "127.0.0.1:0", "--socket-mode", "0600"],
            "--socket-mode",
        ),
        (
            &["--addr", "unix:d.sock", "--socket-mode", "0681"],
            "--socket-mode",
        ),
    ];
    for (args, flag) in cases {
        let out = serve(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn serve_on_a_socket_answers_and_removes_it_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("decider.sock");
    let addr = format!("unix://{}", path.display());
    let mut child = serve(&["--addr", &addr, "--socket-mode", "0600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start serve");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let deadline = std::time::Instant::now() + WAIT;
    let response = loop {
        let answer = runtime.block_on(async {
            let channel = address::connect(&addr).await.ok()?;
            pb::job_decider_client::JobDeciderClient::new(channel)
                .decide_job(small_request())
                .await
                .ok()
        });
        if let Some(answer) = answer {
            break answer.into_inner();
        }
        if std::time::Instant::now() > deadline || child.try_wait().expect("wait").is_some() {
            let _ = child.kill();
            panic!("serve never answered on {addr}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!response.actions.is_empty(), "{response:?}");
    assert_eq!(mode_of(&path), 0o600);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = std::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the socket is removed at shutdown");
}

// Issue 22, items 8 and 10: the socket is bound where no other user can reach
// it, and any path a client can connect to is accepted.

/// `base/ddd…/s`, with the directory made and the whole path `len` bytes long.
fn path_of_length(base: &Path, len: usize) -> PathBuf {
    let pad = len - base.as_os_str().len() - "/".len() - "/s".len();
    let dir = base.join("d".repeat(pad));
    std::fs::create_dir(&dir).expect("mkdir");
    let path = dir.join("s");
    assert_eq!(path.as_os_str().len(), len);
    path
}

#[tokio::test]
async fn a_socket_path_of_107_bytes_is_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A short name in a long directory: a temporary name beside it would be longer.
    let path = path_of_length(dir.path(), 107);
    let server = SocketServer::start_at(dir, path.clone(), ServerConfig::default()).await;
    crate::common::assert_health_serving(server.channel().await).await;
    assert_eq!(mode_of(&path), 0o660);
    let (_dir, path) = server.stop().await;
    assert!(!path.exists(), "removed at shutdown");
}

#[tokio::test]
async fn a_socket_path_of_108_bytes_is_refused_naming_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = path_of_length(dir.path(), 108);
    let err = bind_unix(&path, 0o660).expect_err("one byte too long");
    assert!(
        matches!(err, SocketError::TooLong { len: 108, .. }),
        "{err}"
    );
    assert!(err.is_bad_input());
    assert!(
        err.to_string().contains("at most 107 bytes"),
        "names the limit: {err}"
    );
    assert_eq!(
        std::fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .count(),
        0,
        "nothing left behind"
    );
}

#[tokio::test]
async fn a_link_planted_at_a_guessable_temporary_name_is_never_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "secret").expect("write");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // The name the socket used to be bound under, known to anyone who knows the pid.
    let guess = dir.path().join(format!(".jd-{}.sock", std::process::id()));
    std::os::unix::fs::symlink(&victim, &guess).expect("symlink");
    let path = dir.path().join("decider.sock");
    let server = SocketServer::start_at(dir, path.clone(), ServerConfig::default()).await;
    crate::common::assert_health_serving(server.channel().await).await;
    assert_eq!(
        mode_of(&victim),
        0o600,
        "the planted link's target kept its mode"
    );
    assert!(
        std::fs::symlink_metadata(&guess).is_ok_and(|m| m.file_type().is_symlink()),
        "the planted link is left alone"
    );
    let entries: Vec<String> = std::fs::read_dir(server.dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(".jd-")
                && n != guess
                    .file_name()
                    .and_then(|f| f.to_str())
                    .unwrap_or_default()
        })
        .collect();
    assert!(
        entries.is_empty(),
        "the private directory is removed: {entries:?}"
    );
    server.stop().await;
}

/// Whether this process runs as root (a file it makes is root's).
fn running_as_root() -> bool {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::os::unix::fs::MetadataExt::uid(&file.as_file().metadata().expect("stat")) == 0
}

/// Another user (nobody, through `setpriv`), in a directory anyone may write to
/// without the sticky bit, keeps replacing whatever the server makes there with
/// links to a root-owned 0600 file; the file's mode never changes.
#[tokio::test]
async fn another_user_racing_in_an_open_directory_cannot_redirect_the_mode() {
    let setpriv = Path::new("/usr/bin/setpriv");
    if !running_as_root() || !setpriv.exists() {
        eprintln!("skipped: playing another user needs root and setpriv");
        return;
    }
    let open = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let private = tempfile::tempdir().expect("tempdir");
    let victim = private.path().join("victim");
    std::fs::write(&victim, "secret").expect("write");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let guess = open.path().join(format!(".jd-{}.sock", std::process::id()));
    // Plants a link at the guessable name; swaps any directory that appears for its own
    // with a link inside; replaces any socket with a link.
    let attack = r#"d=$1; v=$2; g=$3
        while :; do
          rm -f "$g"; ln -s "$v" "$g" 2>/dev/null
          for e in "$d"/.jd-*; do
            [ "$e" = "$g" ] && continue
            if [ -d "$e" ] && [ ! -L "$e" ]; then
              mv "$e" "$d/taken.$$.$RANDOM" 2>/dev/null && mkdir -m 777 "$e" 2>/dev/null && ln -s "$v" "$e/s" 2>/dev/null
            elif [ -S "$e" ]; then
              rm -f "$e"; ln -s "$v" "$e" 2>/dev/null
            fi
          done
        done"#;
    let mut attacker = Command::new(setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            attack,
            "sh",
        ])
        .arg(open.path())
        .arg(&victim)
        .arg(&guess)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the attacker");
    std::thread::sleep(Duration::from_millis(200));
    let path = open.path().join("decider.sock");
    let mut served = 0;
    for _ in 0..100 {
        if let Ok((listener, file)) = bind_unix(&path, 0o660) {
            served += 1;
            drop(listener);
            drop(file);
        }
        let _ = std::fs::remove_file(&path);
    }
    attacker.kill().expect("stop the attacker");
    let _ = attacker.wait();
    assert_eq!(mode_of(&victim), 0o600, "the root-owned file kept its mode");
    assert!(served > 0, "the server could still listen");
}
