//! Issue 26, defect 1: grpc-core clients (Python, C++, Ruby, PHP) dialling a
//! `unix:` target send the socket path, percent-encoded, as `:authority`
//! (`tmp%2Fcl%2Fjd.sock`). The `http` crate cannot hold such an authority, so
//! neither the `h2` client nor tonic can send one: these tests write the
//! HTTP/2 frames themselves (HPACK literals, no Huffman) over TCP and over a
//! Unix socket, and require the server's gRPC answer, where h2 0.4.20 alone
//! reset the stream with PROTOCOL_ERROR (third_party/h2/PATCHED.md).

use std::path::Path;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use job_decider::server::ServerConfig;
use job_decider_api::pb;
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use crate::common::{SocketServer, TestServer, WAIT, framed, small_request};

/// A plain host first (the frames written here are right when it answers),
/// then what grpc-core sends for `unix:///tmp/cl/jd.sock`, and an authority
/// with a raw `/` (a client that sends the path unencoded).
const AUTHORITIES: [&str; 3] = ["localhost", "tmp%2Fcl%2Fjd.sock", "/tmp/cl/jd.sock"];

const DECIDE_JOB: &str = "/jobdecider.v1.JobDecider/DecideJob";
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

fn frame(out: &mut BytesMut, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("frame length");
    out.put_slice(&len.to_be_bytes()[1..]);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
    out.put_slice(payload);
}

/// An HPACK "literal without indexing, new name" field; short strings only.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    for s in [name, value] {
        assert!(s.len() < 127, "one-byte HPACK length");
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }
}

/// One unary gRPC call on stream 1 with `authority` as `:authority`: the
/// response message when the server answered with one, or what it did instead.
async fn call_with_authority<S>(
    mut io: S,
    authority: &str,
    path: &str,
    message: &[u8],
) -> Result<Bytes, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut block = Vec::new();
    literal(&mut block, ":method", "POST");
    literal(&mut block, ":scheme", "http");
    literal(&mut block, ":path", path);
    literal(&mut block, ":authority", authority);
    literal(&mut block, "content-type", "application/grpc");
    literal(&mut block, "te", "trailers");
    let mut out = BytesMut::new();
    out.put_slice(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    frame(&mut out, SETTINGS, 0, 0, &[]);
    frame(&mut out, HEADERS, END_HEADERS, 1, &block);
    frame(&mut out, DATA, END_STREAM, 1, &framed(message));
    io.write_all(&out).await.expect("write");

    let mut data = BytesMut::new();
    loop {
        let mut head = [0u8; 9];
        io.read_exact(&mut head)
            .await
            .map_err(|e| format!("connection ended before the answer: {e}"))?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        io.read_exact(&mut payload).await.expect("frame payload");
        match kind {
            SETTINGS if flags & ACK == 0 => {
                let mut ack = BytesMut::new();
                frame(&mut ack, SETTINGS, ACK, 0, &[]);
                io.write_all(&ack).await.expect("settings ack");
            }
            RST_STREAM if stream == 1 => {
                return Err(format!("stream reset, error code {payload:?}"));
            }
            GOAWAY => return Err(format!("GOAWAY {payload:?}")),
            DATA if stream == 1 => data.put_slice(&payload),
            HEADERS if stream == 1 && flags & END_STREAM != 0 => break,
            _ => {}
        }
        if kind == DATA && stream == 1 && flags & END_STREAM != 0 {
            break;
        }
    }
    // One length-prefixed gRPC message: a trailers-only answer (an error) has none.
    if data.len() < 5 {
        return Err(format!("no response message (data {data:?})"));
    }
    let mut data = data.freeze();
    let compressed = data.get_u8();
    let len = data.get_u32() as usize;
    assert_eq!(
        (compressed, data.len()),
        (0, len),
        "one uncompressed message"
    );
    Ok(data)
}

/// The health answer a serving server gives: `status: SERVING`.
fn serving(message: &Bytes) -> bool {
    tonic_health::pb::HealthCheckResponse::decode(message.clone())
        .map(|r| r.status() == tonic_health::pb::health_check_response::ServingStatus::Serving)
        .unwrap_or(false)
}

/// A DecideJob answer with a plan for the small request.
fn decided(message: &Bytes) -> bool {
    pb::DecideJobResponse::decode(message.clone())
        .map(|r| !r.actions.is_empty())
        .unwrap_or(false)
}

#[tokio::test]
async fn a_percent_encoded_authority_from_a_grpc_core_client_was_reset_over_tcp() {
    let server = TestServer::start(ServerConfig::default()).await;
    let request = small_request().encode_to_vec();
    for authority in AUTHORITIES {
        let tcp = TcpStream::connect(server.addr).await.expect("connect");
        let answer = tokio::time::timeout(
            WAIT,
            call_with_authority(tcp, authority, DECIDE_JOB, &request),
        )
        .await
        .expect("answered in time");
        let message = answer.unwrap_or_else(|e| panic!(":authority {authority:?}: {e}"));
        assert!(decided(&message), ":authority {authority:?}: {message:?}");

        let tcp = TcpStream::connect(server.addr).await.expect("connect");
        let answer =
            tokio::time::timeout(WAIT, call_with_authority(tcp, authority, HEALTH_CHECK, &[]))
                .await
                .expect("answered in time");
        let message = answer.unwrap_or_else(|e| panic!(":authority {authority:?}: {e}"));
        assert!(serving(&message), ":authority {authority:?}: {message:?}");
    }
}

#[tokio::test]
async fn a_percent_encoded_authority_from_a_grpc_core_unix_client_was_reset() {
    let server = SocketServer::start(ServerConfig::default()).await;
    let path = server.path.clone();
    let request = small_request().encode_to_vec();
    for authority in AUTHORITIES {
        let answer = tokio::time::timeout(WAIT, async {
            let unix = connect_unix(&path).await;
            call_with_authority(unix, authority, HEALTH_CHECK, &[]).await
        })
        .await
        .expect("answered in time");
        let message = answer.unwrap_or_else(|e| panic!(":authority {authority:?}: {e}"));
        assert!(serving(&message), ":authority {authority:?}: {message:?}");

        let answer = tokio::time::timeout(WAIT, async {
            let unix = connect_unix(&path).await;
            call_with_authority(unix, authority, DECIDE_JOB, &request).await
        })
        .await
        .expect("answered in time");
        let message = answer.unwrap_or_else(|e| panic!(":authority {authority:?}: {e}"));
        assert!(decided(&message), ":authority {authority:?}: {message:?}");
    }
    server.stop().await;
}

async fn connect_unix(path: &Path) -> UnixStream {
    UnixStream::connect(path).await.expect("connect the socket")
}
