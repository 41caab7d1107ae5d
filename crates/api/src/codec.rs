//! The gRPC codec: prost, except that a large request is decoded off the
//! async reactor, and from the received bytes themselves. A 100,000-pod
//! snapshot takes milliseconds to decode; on a reactor thread that would stall
//! every small call sharing it. Decoding from a `Bytes` of the body lets the
//! `bytes` fields of [`crate::LazyDecideJobRequest`] share the body instead of
//! copying each pod.

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder};

/// The default limit on a decoded request: 256 MiB.
///
/// A 100,000-pod snapshot of realistic pods encodes to about 69 MB (674 bytes a pod)
/// (see `convert::tests::hundred_thousand_pod_request_fits_default_limit`);
/// the limit leaves room for pods that carry more conditions and containers.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 256 * 1024 * 1024;

/// Messages at least this large are decoded with `block_in_place`.
pub const OFF_REACTOR_DECODE_BYTES: usize = 1 << 20;

/// prost's codec with [`OffReactorDecoder`] for requests.
#[derive(Debug)]
pub struct OffReactorProstCodec<T, U> {
    inner: ProstCodec<T, U>,
}

impl<T, U> Default for OffReactorProstCodec<T, U> {
    fn default() -> Self {
        OffReactorProstCodec {
            inner: ProstCodec::default(),
        }
    }
}

impl<T, U> Codec for OffReactorProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = OffReactorDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        OffReactorDecoder {
            inner: self.inner.decoder(),
        }
    }
}

/// Decodes with prost; a large message on a multi-threaded runtime is decoded
/// in `block_in_place`, which hands this worker's other tasks to another thread first.
#[derive(Debug)]
pub struct OffReactorDecoder<U> {
    inner: ProstDecoder<U>,
}

/// prost's decode of the body as one `Bytes` (tonic's buffer split off, not copied).
fn decode_shared<U: Message + Default>(buf: &mut DecodeBuf<'_>) -> Result<U, Status> {
    use bytes::Buf;
    let body = buf.copy_to_bytes(buf.remaining());
    // tonic maps a malformed message to INTERNAL; so does this.
    U::decode(body).map_err(|e| Status::internal(e.to_string()))
}

impl<U: Message + Default> Decoder for OffReactorDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use bytes::Buf;
        let large = buf.remaining() >= OFF_REACTOR_DECODE_BYTES;
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let decoded = if large && multi_thread {
            tokio::task::block_in_place(|| decode_shared(buf))
        } else {
            decode_shared(buf)
        };
        decoded.map(Some)
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}
