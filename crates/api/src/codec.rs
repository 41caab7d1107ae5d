//! The gRPC codec: prost, except that a large request is decoded off the
//! async reactor. A 100,000-pod snapshot takes tens of milliseconds to decode;
//! on a reactor thread that would stall every small call sharing it.

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder};

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

impl<U: Message + Default> Decoder for OffReactorDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use bytes::Buf;
        let large = buf.remaining() >= OFF_REACTOR_DECODE_BYTES;
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if large && multi_thread {
            tokio::task::block_in_place(|| self.inner.decode(buf))
        } else {
            self.inner.decode(buf)
        }
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}
