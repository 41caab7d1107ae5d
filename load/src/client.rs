//! A client that sends a request file's bytes as they are: ghz turns a binary
//! request into a dynamic message and encodes it again for every call (seconds
//! at 100,000 pods), so its latency is mostly its own. This one measures the
//! round trip alone: request bytes out, response bytes in.

use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes};
use serde::{Deserialize, Serialize};
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use crate::Error;

/// The unary method every request file is for.
const DECIDE_JOB: &str = "/jobdecider.v1.JobDecider/DecideJob";

/// Passes message bytes through untouched, both ways.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// What `job-decider-load client` prints: latencies of calls made one at a time.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Latencies {
    /// Calls made (all answered OK).
    pub calls: u64,
    /// Median, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// The run's wall time, nanoseconds.
    pub total_ns: u64,
}

/// The value at `q` (0..=1) of sorted durations.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Sends `body` to DecideJob at `addr` (host:port, or `unix:///path` for a
/// server on a Unix socket) `calls` times, one at a time, on one connection;
/// any answer but OK stops the run with its status.
pub fn run(addr: &str, body: Bytes, calls: u64) -> Result<Latencies, Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::tool("client", e.to_string()))?;
    rt.block_on(async {
        let connected = match addr.strip_prefix("unix://") {
            Some(path) => {
                let path = path.to_string();
                tonic::transport::Endpoint::from_static("http://localhost")
                    .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                        let path = path.clone();
                        async move {
                            tokio::net::UnixStream::connect(path)
                                .await
                                .map(hyper_util::rt::TokioIo::new)
                        }
                    }))
                    .await
            }
            None => {
                tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                    .map_err(|e| Error::tool("client", e.to_string()))?
                    .connect()
                    .await
            }
        };
        let channel = connected.map_err(|e| Error::tool("client", format!("{addr}: {e}")))?;
        let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(256 << 20);
        let path = http::uri::PathAndQuery::from_static(DECIDE_JOB);
        let mut took = Vec::new();
        let start = Instant::now();
        for _ in 0..calls {
            grpc.ready()
                .await
                .map_err(|e| Error::tool("client", e.to_string()))?;
            let t = Instant::now();
            grpc.unary(tonic::Request::new(body.clone()), path.clone(), Raw)
                .await
                .map_err(|s| Error::Failed {
                    what: "DecideJob".into(),
                    detail: format!("{:?}: {}", s.code(), s.message()),
                })?;
            took.push(t.elapsed());
        }
        let total = start.elapsed();
        took.sort();
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Ok(Latencies {
            calls,
            p50_ns: ns(quantile(&took, 0.5)),
            p99_ns: ns(quantile(&took, 0.99)),
            total_ns: ns(total),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_from_the_sorted_run() {
        let ms = |v| Duration::from_millis(v);
        let sorted: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(quantile(&sorted, 0.5), ms(51));
        assert_eq!(quantile(&sorted, 0.99), ms(99));
        assert_eq!(quantile(&[ms(7)], 0.99), ms(7));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
    }
}
