//! TLS and mTLS with certificates generated for the test.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{TestServer, small_request};
use job_decider::server::{ServerConfig, TlsFiles};
use job_decider_api::pb;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// A CA, a server certificate for localhost and a client certificate, as PEM files.
pub(crate) struct Pki {
    _dir: tempfile::TempDir,
    pub(crate) ca: String,
    ca_path: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    pub(crate) client: Identity,
}

impl Pki {
    /// The server's TLS files; with `mtls`, client certificates must chain to the CA.
    pub(crate) fn server_tls(&self, mtls: bool) -> TlsFiles {
        TlsFiles {
            cert: self.server_cert.clone(),
            key: self.server_key.clone(),
            client_ca: mtls.then(|| self.ca_path.clone()),
        }
    }
}

pub(crate) fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "job-decider test CA");
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("ca key")).expect("ca");

    let server_key = KeyPair::generate().expect("server key");
    let server = CertificateParams::new(vec!["localhost".to_string()])
        .expect("server params")
        .signed_by(&server_key, &ca)
        .expect("server cert");
    let client_key = KeyPair::generate().expect("client key");
    let mut client_params =
        CertificateParams::new(vec!["shim.example".to_string()]).expect("client params");
    client_params
        .distinguished_name
        .push(DnType::CommonName, "shim");
    let client = client_params
        .signed_by(&client_key, &ca)
        .expect("client cert");

    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write pem");
        path
    };
    Pki {
        ca: ca.pem(),
        ca_path: write("ca.pem", &ca.pem()),
        server_cert: write("server.pem", &server.pem()),
        server_key: write("server-key.pem", &server_key.serialize_pem()),
        client: Identity::from_pem(client.pem(), client_key.serialize_pem()),
        _dir: dir,
    }
}

async fn connect(
    server: &TestServer,
    tls: ClientTlsConfig,
) -> Result<
    pb::job_decider_client::JobDeciderClient<tonic::transport::Channel>,
    tonic::transport::Error,
> {
    let channel = Endpoint::from_shared(format!("https://localhost:{}", server.addr.port()))?
        .connect_timeout(Duration::from_secs(5))
        .tls_config(tls)?
        .connect()
        .await?;
    Ok(pb::job_decider_client::JobDeciderClient::new(channel))
}

#[tokio::test]
async fn tls_serves_clients_that_trust_the_ca() {
    let pki = pki();
    let server = TestServer::start(ServerConfig {
        tls: Some(pki.server_tls(false)),
        ..ServerConfig::default()
    })
    .await;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pki.ca))
        .domain_name("localhost");
    let mut client = connect(&server, tls).await.expect("TLS connect");
    client
        .decide_job(small_request())
        .await
        .expect("decided over TLS");

    // Plaintext to a TLS port does not get an answer.
    let plain = Endpoint::from_shared(format!("http://{}", server.addr))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await;
    let refused = match plain {
        Ok(channel) => pb::job_decider_client::JobDeciderClient::new(channel)
            .decide_job(small_request())
            .await
            .is_err(),
        Err(_) => true,
    };
    assert!(refused, "plaintext was served on the TLS port");
}

#[tokio::test]
async fn mtls_requires_a_client_certificate() {
    let pki = pki();
    let server = TestServer::start(ServerConfig {
        tls: Some(pki.server_tls(true)),
        ..ServerConfig::default()
    })
    .await;
    let trust = || {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&pki.ca))
            .domain_name("localhost")
    };
    let mut client = connect(&server, trust().identity(pki.client.clone()))
        .await
        .expect("mTLS connect");
    client
        .decide_job(small_request())
        .await
        .expect("decided over mTLS");

    // Without a client certificate the handshake or the call fails.
    let anonymous = match connect(&server, trust()).await {
        Ok(mut client) => client.decide_job(small_request()).await.is_err(),
        Err(_) => true,
    };
    assert!(anonymous, "a client without a certificate was served");
}

/// Hole 9: with mTLS on the main port, the plaintext health-only port answers
/// kubelet-style gRPC probes (SERVING, overall and for the service), serves
/// nothing else, and the main port still requires TLS.
#[tokio::test]
async fn the_health_port_answers_plaintext_probes_while_the_main_port_requires_tls() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

    let pki = pki();
    let server = TestServer::start_with_health(ServerConfig {
        tls: Some(pki.server_tls(true)),
        ..ServerConfig::default()
    })
    .await;
    let Some(health_addr) = server.health_addr else {
        panic!("no health port");
    };
    let channel = Endpoint::from_shared(format!("http://{health_addr}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("plaintext connect to the health port");
    let mut health = HealthClient::new(channel.clone());
    for service in ["", "jobdecider.v1.JobDecider"] {
        let check = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health over plaintext")
            .into_inner();
        assert_eq!(check.status(), ServingStatus::Serving, "{service:?}");
    }
    // Only health: the API is not reachable around TLS through this port.
    let status = pb::job_decider_client::JobDeciderClient::new(channel)
        .decide_job(small_request())
        .await
        .expect_err("the health port serves no decisions");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");

    // The main port still refuses plaintext.
    let plain = Endpoint::from_shared(format!("http://{}", server.addr))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await;
    let refused = match plain {
        Ok(channel) => HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .is_err(),
        Err(_) => true,
    };
    assert!(refused, "plaintext was served on the TLS port");
}

/// Hole 5: a client that opens a TCP connection to the TLS port and never
/// starts the handshake is dropped after the handshake timeout.
#[tokio::test]
async fn a_stalled_tls_handshake_is_dropped_after_the_timeout() {
    use tokio::io::AsyncReadExt;

    let pki = pki();
    let server = TestServer::start(ServerConfig {
        tls: Some(pki.server_tls(false)),
        tls_handshake_timeout: Duration::from_millis(300),
        // Far away: only the handshake timeout can close the connection in time.
        max_connection_idle: Duration::from_secs(600),
        ..ServerConfig::default()
    })
    .await;
    let mut silent = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "a stalled handshake kept its connection");
}
