//! A protobuf reader over borrowed bytes, for the messages the server decodes
//! by hand (`lean_decode`): fields come out as slices of the input, so a
//! decoder allocates only what it keeps. It accepts and rejects what prost
//! does for the field types it serves (proto3 scalars, strings, messages).

/// Why bytes are not a valid message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ends inside a field.
    #[error("buffer underflow")]
    Truncated,
    /// A varint runs over ten bytes.
    #[error("invalid varint")]
    Varint,
    /// A field key with tag 0 or a tag beyond 2^29 - 1.
    #[error("invalid tag value: {0}")]
    Tag(u64),
    /// A wire type the format does not define, or an end-group without its start.
    #[error("invalid wire type value: {0}")]
    WireType(u64),
    /// A known field in a wire type its declared type cannot have.
    #[error("{field}: invalid wire type")]
    UnexpectedWireType {
        /// The field, as `Message.field`.
        field: &'static str,
    },
    /// A string field that is not UTF-8.
    #[error("{field}: invalid string value: data is not UTF-8 encoded")]
    Utf8 {
        /// The field, as `Message.field`.
        field: &'static str,
    },
    /// An embedded message decoded by prost failed.
    #[error("{field}: not a valid message")]
    Message {
        /// The field, as `Message.field`.
        field: &'static str,
    },
    /// Groups nested deeper than prost's recursion limit.
    #[error("recursion limit reached")]
    TooDeep,
}

/// prost's nesting limit, which skipped groups count against.
const RECURSION_LIMIT: u32 = 100;

/// One field's value as it is on the wire.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2: a string, bytes, a message or a packed list.
    Bytes(&'a [u8]),
    /// Wire types 1 and 5, and groups: no field read by hand has them.
    Other,
}

impl<'a> Value<'a> {
    /// The value of a varint field (bool, enum, int32, int64).
    #[inline]
    pub fn varint(self, field: &'static str) -> Result<u64, WireError> {
        match self {
            Value::Varint(v) => Ok(v),
            _ => Err(WireError::UnexpectedWireType { field }),
        }
    }

    /// An `int32` or enum field: the low 32 bits, as protobuf defines the conversion.
    #[inline]
    pub fn int32(self, field: &'static str) -> Result<i32, WireError> {
        // Truncation is the encoding's rule: negative int32s are sign-extended to 64 bits.
        self.varint(field).map(|v| v as i32)
    }

    /// An `int64` field.
    #[inline]
    pub fn int64(self, field: &'static str) -> Result<i64, WireError> {
        self.varint(field).map(|v| v as i64)
    }

    /// A `bool` field.
    #[inline]
    pub fn bool(self, field: &'static str) -> Result<bool, WireError> {
        self.varint(field).map(|v| v != 0)
    }

    /// A length-delimited field's bytes (an embedded message).
    #[inline]
    pub fn bytes(self, field: &'static str) -> Result<&'a [u8], WireError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(WireError::UnexpectedWireType { field }),
        }
    }

    /// A `string` field.
    #[inline]
    pub fn str(self, field: &'static str) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.bytes(field)?).map_err(|_| WireError::Utf8 { field })
    }

    /// A `string` field decisions do not keep: its bytes, once they are known to be UTF-8.
    #[inline]
    pub fn checked_bytes(self, field: &'static str) -> Result<&'a [u8], WireError> {
        let bytes = self.bytes(field)?;
        checked(bytes, field)?;
        Ok(bytes)
    }
}

/// The fields of one message, in wire order.
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// The fields of `message`.
    pub fn of(message: &'a [u8]) -> Self {
        Fields { rest: message }
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, WireError> {
        // Keys and most values are one byte.
        if let Some((&byte, rest)) = self.rest.split_first()
            && byte < 0x80
        {
            self.rest = rest;
            return Ok(u64::from(byte));
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for (i, &byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                // The tenth byte may only carry the top bit of a u64.
                if i == 9 && byte > 1 {
                    return Err(WireError::Varint);
                }
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err(if self.rest.len() < 10 {
            WireError::Truncated
        } else {
            WireError::Varint
        })
    }

    #[inline(always)]
    fn take(&mut self, len: u64) -> Result<&'a [u8], WireError> {
        let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
        if len > self.rest.len() {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    #[inline(always)]
    fn key(&mut self) -> Result<(u32, u64), WireError> {
        let key = self.varint()?;
        if key > u64::from(u32::MAX) {
            return Err(WireError::Tag(key));
        }
        let tag = key >> 3;
        if tag == 0 {
            return Err(WireError::Tag(tag));
        }
        // key fits u32, so tag does too.
        Ok((tag as u32, key & 7))
    }

    /// Skips a group whose start-group key was just read, as prost skips unknown groups.
    fn skip_group(&mut self, tag: u32, depth: u32) -> Result<(), WireError> {
        if depth >= RECURSION_LIMIT {
            return Err(WireError::TooDeep);
        }
        loop {
            let (inner, wire_type) = self.key()?;
            match wire_type {
                4 if inner == tag => return Ok(()),
                4 => return Err(WireError::WireType(4)),
                3 => self.skip_group(inner, depth + 1)?,
                _ => {
                    self.value(wire_type)?;
                }
            }
        }
    }

    #[inline(always)]
    fn value(&mut self, wire_type: u64) -> Result<Value<'a>, WireError> {
        Ok(match wire_type {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Other
            }
            2 => {
                let len = self.varint()?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Other
            }
            other => return Err(WireError::WireType(other)),
        })
    }

    /// The next field's number and value; `None` at the end of the message.
    #[inline(always)]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, WireError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let (tag, wire_type) = self.key()?;
        if wire_type == 3 {
            self.skip_group(tag, 1)?;
            return Ok(Some((tag, Value::Other)));
        }
        Ok(Some((tag, self.value(wire_type)?)))
    }
}

/// A wire timestamp, merged as protobuf merges repeated occurrences of a message field.
pub fn merge_timestamp(
    into: &mut Option<pbjson_types::Timestamp>,
    bytes: &[u8],
) -> Result<(), WireError> {
    let ts = into.get_or_insert_with(pbjson_types::Timestamp::default);
    let mut fields = Fields::of(bytes);
    while let Some((tag, value)) = fields.next_field()? {
        match tag {
            1 => ts.seconds = value.int64("Timestamp.seconds")?,
            2 => ts.nanos = value.int32("Timestamp.nanos")?,
            _ => {}
        }
    }
    Ok(())
}

/// An entry of a `map<string, string>`, as bytes: whether it is kept is
/// decided before it is validated ([`known`], [`checked`]).
pub fn map_entry<'a>(
    bytes: &'a [u8],
    field: &'static str,
) -> Result<(&'a [u8], &'a [u8]), WireError> {
    let (mut key, mut value): (&[u8], &[u8]) = (b"", b"");
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => key = v.bytes(field)?,
            2 => value = v.bytes(field)?,
            _ => {}
        }
    }
    Ok((key, value))
}

/// The entry of `names` spelled as `bytes`: a name decisions read is valid UTF-8 by construction.
pub fn known<'n>(names: &std::collections::BTreeSet<&'n str>, bytes: &[u8]) -> Option<&'n str> {
    names.iter().copied().find(|n| n.as_bytes() == bytes)
}

/// A string field decisions do not keep: checked all the same, as prost would check it.
#[inline]
pub fn checked(bytes: &[u8], field: &'static str) -> Result<(), WireError> {
    // Kubernetes strings are nearly all ASCII, which is checked a word at a time.
    if bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
        Ok(())
    } else {
        Err(WireError::Utf8 { field })
    }
}

/// The declared type of a field, for [`check`].
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A string: length-delimited, UTF-8.
    Str,
    /// A bool, enum or integer.
    Varint,
    /// An embedded message of this schema.
    Message(&'static Schema),
}

/// A message's declared fields, by number; fields not listed are skipped as unknown.
pub type Schema = [(u32, Kind)];

/// `google.protobuf.Timestamp`.
pub const TIMESTAMP: &Schema = &[(1, Kind::Varint), (2, Kind::Varint)];

/// Checks a message decisions do not read, as prost would decode it: every
/// declared field in its wire type, every string UTF-8.
pub fn check(bytes: &[u8], schema: &Schema, name: &'static str) -> Result<(), WireError> {
    let mut fields = Fields::of(bytes);
    while let Some((tag, value)) = fields.next_field()? {
        match schema.iter().find(|(t, _)| *t == tag).map(|(_, kind)| kind) {
            Some(Kind::Str) => {
                value.checked_bytes(name)?;
            }
            Some(Kind::Varint) => {
                value.varint(name)?;
            }
            Some(Kind::Message(inner)) => check(value.bytes(name)?, inner, name)?,
            None => {}
        }
    }
    Ok(())
}

/// Test support: bytes with one field of a chosen wire type, nested at a path.
#[cfg(test)]
pub(crate) mod craft {
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A message holding only field `tag` in wire type `wire_type`, with a payload of that type.
    pub(crate) fn field(tag: u32, wire_type: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint((u64::from(tag) << 3) | wire_type, &mut out);
        match wire_type {
            0 => out.push(1),
            1 => out.extend([0; 8]),
            2 => out.extend([1, b'a']),
            3 => varint((u64::from(tag) << 3) | 4, &mut out),
            _ => out.extend([0; 4]),
        }
        out
    }

    /// `inner` as the message at `path` (field numbers from the outside in) of an otherwise empty message.
    pub(crate) fn nest(path: &[u32], inner: Vec<u8>) -> Vec<u8> {
        path.iter().rev().fold(inner, |inner, &tag| {
            let mut out = Vec::new();
            varint((u64::from(tag) << 3) | 2, &mut out);
            varint(inner.len() as u64, &mut out);
            out.extend(inner);
            out
        })
    }

    /// Every truncation of `bytes`, and every one-byte change of it: flips of
    /// the low bits change a key's wire type; the rest, lengths and values.
    pub(crate) fn one_byte_changes(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut variants: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
        for (i, &b) in bytes.iter().enumerate() {
            for value in [
                b ^ 0x01,
                b ^ 0x02,
                b ^ 0x04,
                b ^ 0x05,
                b ^ 0x07,
                b.wrapping_add(1),
                b.wrapping_sub(1),
                0x00,
                0x7f,
                0x80,
                0xff,
            ] {
                let mut changed = bytes.to_vec();
                changed[i] = value;
                variants.push(changed);
            }
        }
        variants
    }

    /// That `ours` reads `bytes` as prost reads them as an `M`: rejected exactly
    /// when prost rejects them, and read as prost's decoding encoded again.
    pub(crate) fn assert_reads_as_prost<M, T, E>(bytes: &[u8], ours: impl Fn(&[u8]) -> Result<T, E>)
    where
        M: prost::Message + Default,
        T: PartialEq + std::fmt::Debug,
        E: PartialEq + std::fmt::Debug,
    {
        let got = ours(bytes);
        match M::decode(bytes) {
            Ok(theirs) => assert_eq!(got, ours(&theirs.encode_to_vec()), "{bytes:?}"),
            Err(err) => assert!(got.is_err(), "prost rejects {bytes:?}: {err}"),
        }
    }

    /// Every declared field of every message at `paths` (path, field numbers),
    /// in every wire type: the bytes to try.
    pub(crate) fn every_wire_type(paths: &[(&[u32], &[u32])]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (path, tags) in paths {
            for &tag in tags.iter() {
                for wire_type in [0, 1, 2, 3, 5] {
                    out.push(nest(path, field(tag, wire_type)));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
