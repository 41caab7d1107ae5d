//! The scan itself: a request's wire bytes read forward once, each field charged
//! by the rules of the parent module against the schema read from the contract.

use super::{
    ALLOCATION_SLACK, Field, Kind, MAP_ENTRY_EXTRA, MAP_ENTRY_FACTOR, MAX_DEPTH, RequestType,
    SHARED_BYTES_INLINE, Schema, map_node_bytes,
};

/// One field's share of an estimate: where it was first seen and what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldCharge {
    /// The field's path from the request, in JSON names (`job.spec.template.spec.containers`).
    pub path: String,
    /// How many times it occurred (list elements, map entries).
    pub count: u64,
    /// What the estimate charged for it (not counting what its messages hold).
    pub bytes: usize,
}

/// What a request may take decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The bound, in bytes (up to where the scan stopped).
    pub bytes: usize,
    /// The scan stopped once `bytes` passed the limit it was given.
    pub exceeded: bool,
    /// The field that cost the most, when any did.
    pub largest: Option<FieldCharge>,
}

/// The scan's running tally of one field.
#[derive(Clone, Debug, Default)]
struct Tally {
    count: u64,
    bytes: usize,
    /// The field ids from the request down to this field, at its first occurrence.
    first_path: Option<Vec<usize>>,
}

/// The body's bytes, in the pieces it arrived in, read forward.
struct Cursor<'a> {
    pieces: &'a [&'a [u8]],
    piece: usize,
    at: usize,
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn new(pieces: &'a [&'a [u8]]) -> Self {
        let end = pieces.iter().map(|p| p.len()).sum();
        Cursor {
            pieces,
            piece: 0,
            at: 0,
            pos: 0,
            end,
        }
    }

    fn byte(&mut self) -> Option<u8> {
        if self.pos >= self.end {
            return None;
        }
        while let Some(piece) = self.pieces.get(self.piece) {
            if let Some(&b) = piece.get(self.at) {
                self.at += 1;
                self.pos += 1;
                return Some(b);
            }
            self.piece += 1;
            self.at = 0;
        }
        None
    }

    /// Skips `n` bytes; false when fewer are left.
    fn skip(&mut self, n: usize) -> bool {
        if n > self.end - self.pos {
            return false;
        }
        self.pos += n;
        let mut n = n;
        while n > 0 {
            let Some(piece) = self.pieces.get(self.piece) else {
                return false;
            };
            let left = piece.len() - self.at;
            if n < left {
                self.at += n;
                return true;
            }
            n -= left;
            self.piece += 1;
            self.at = 0;
        }
        true
    }

    /// A varint of at most 10 bytes, as prost reads it.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(value);
            }
        }
        None
    }
}

/// What the scan is inside of.
struct Frame {
    /// The message type, or `None` inside an unknown group (whose fields cost nothing).
    message: Option<usize>,
    /// Where it ends (the whole message for a group, closed by its end tag).
    end: usize,
    /// For a group: its field number.
    group: Option<u32>,
    /// The field it came in (none for the request).
    via: Option<usize>,
    /// The map fields (by position) that already hold a node in this message.
    maps: u64,
    /// Where this message's list lengths start in [`Scan::lengths`].
    base: usize,
}

/// The scan's state: the tallies and the running total.
struct Scan<'s> {
    schema: &'s Schema,
    tallies: Vec<Tally>,
    total: usize,
    limit: usize,
    /// The length of each list field of each message being scanned, a stack
    /// beside the frames' (each frame's fields from its `base`).
    lengths: Vec<usize>,
    /// The largest buffer a growing list has let go of: while a `Vec` grows,
    /// its old buffer and its new one are both held (one list at a time).
    transient: usize,
}

/// A list's smallest buffer: a first push takes room for 4 elements (8 of one byte).
fn min_capacity(element: usize) -> usize {
    if element == 1 { 8 } else { 4 }
}

/// The capacity of a `Vec` after `len` pushes, and the capacity it had before its last growth.
fn capacity(len: usize, element: usize) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let min = min_capacity(element);
    let cap = len
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX)
        .max(min);
    (cap, if cap > min { cap / 2 } else { 0 })
}

impl Scan<'_> {
    /// Charges `bytes` to field `id`, once more of it; false once the total passes the limit.
    fn charge(&mut self, stack: &[Frame], id: usize, bytes: usize) -> bool {
        let tally = &mut self.tallies[id];
        tally.count += 1;
        if tally.first_path.is_none() {
            let mut path: Vec<usize> = stack.iter().filter_map(|f| f.via).collect();
            path.push(id);
            tally.first_path = Some(path);
        }
        self.add(id, bytes)
    }

    /// Adds `bytes` to field `id`'s charge and the total; false once the total passes the limit.
    fn add(&mut self, id: usize, bytes: usize) -> bool {
        let tally = &mut self.tallies[id];
        tally.bytes = tally.bytes.saturating_add(bytes);
        self.total = self.total.saturating_add(bytes);
        self.total <= self.limit
    }

    /// A frame of message `message` (none: a group), its list lengths at zero.
    fn frame(
        &mut self,
        message: Option<usize>,
        end: usize,
        group: Option<u32>,
        via: Option<usize>,
    ) -> Frame {
        let base = self.lengths.len();
        let fields = message.map_or(0, |m| self.schema.messages[m].fields.len());
        self.lengths.resize(base + fields, 0);
        Frame {
            message,
            end,
            group,
            via,
            maps: 0,
            base,
        }
    }

    /// Closes a frame: each list's unused capacity is charged (its elements were,
    /// as they came), and its last growth's old buffer is remembered. False once
    /// the total passes the limit.
    fn close(&mut self, frame: &Frame, kept_encoded: &[u32]) -> bool {
        let schema = self.schema;
        let mut within = true;
        if let Some(m) = frame.message {
            let at_root = frame.via.is_none();
            for (i, f) in schema.messages[m].fields.iter().enumerate() {
                let len = self.lengths[frame.base + i];
                if len == 0 {
                    continue;
                }
                let element = list_element(f, at_root && kept_encoded.contains(&f.number));
                let (cap, before) = capacity(len, element);
                self.transient = self.transient.max(before.saturating_mul(element));
                within &= self.add(f.id, (cap - len).saturating_mul(element));
            }
        }
        self.lengths.truncate(frame.base);
        within
    }
}

/// The size of one element of list field `f` (`kept`: a pod kept encoded, a `Bytes`).
fn list_element(f: &Field, kept: bool) -> usize {
    if kept { SHARED_BYTES_INLINE } else { f.inline }
}

/// Heap bytes of one decoded string or bytes of `len` bytes.
fn text_heap(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        len.max(8) + ALLOCATION_SLACK
    }
}

impl RequestType<'_> {
    /// Estimates what the message in `pieces` (the bytes of one protobuf
    /// message, split anywhere) takes decoded. The scan stops early, with
    /// `exceeded` set, once the estimate passes `limit`.
    pub fn estimate(&self, pieces: &[&[u8]], limit: usize) -> Estimate {
        let schema = self.schema;
        let mut scan = Scan {
            schema,
            tallies: vec![Tally::default(); schema.field_names.len()],
            total: schema.messages[self.root].inline,
            limit,
            lengths: Vec::new(),
            transient: 0,
        };
        let exceeded = scan.total > limit || !self.walk(&mut scan, pieces);
        let bytes = scan.total.saturating_add(scan.transient);
        let largest = scan
            .tallies
            .iter()
            .filter(|t| t.bytes > 0)
            .max_by_key(|t| t.bytes)
            .map(|t| FieldCharge {
                path: t
                    .first_path
                    .iter()
                    .flatten()
                    .map(|&id| scan.schema.field_names[id].as_str())
                    .collect::<Vec<_>>()
                    .join("."),
                count: t.count,
                bytes: t.bytes,
            });
        Estimate {
            bytes,
            exceeded: exceeded || bytes > limit,
            largest,
        }
    }

    /// Walks the message; false when it stopped because the estimate passed the limit.
    fn walk(&self, scan: &mut Scan<'_>, pieces: &[&[u8]]) -> bool {
        let mut cursor = Cursor::new(pieces);
        let mut stack = vec![scan.frame(Some(self.root), cursor.end, None, None)];
        if !self.walk_frames(scan, &mut cursor, &mut stack) {
            return false;
        }
        // Stopped where prost fails: what it decoded so far holds its lists as they are.
        while let Some(frame) = stack.pop() {
            if !scan.close(&frame, self.kept_encoded) {
                return false;
            }
        }
        true
    }

    /// The scan's loop over fields; false once the estimate passes the limit, true
    /// at the message's end or where prost would stop with an error.
    fn walk_frames(
        &self,
        scan: &mut Scan<'_>,
        cursor: &mut Cursor<'_>,
        stack: &mut Vec<Frame>,
    ) -> bool {
        let schema = self.schema;
        loop {
            let Some(top) = stack.last() else {
                return true;
            };
            if cursor.pos == top.end && top.group.is_none() {
                if let Some(frame) = stack.pop()
                    && !scan.close(&frame, self.kept_encoded)
                {
                    return false;
                }
                continue;
            }
            if cursor.pos >= top.end {
                // A group not closed before its message ends: prost fails here.
                return true;
            }
            let Some(tag) = cursor.varint() else {
                return true;
            };
            let Ok(number) = u32::try_from(tag >> 3) else {
                return true;
            };
            if number == 0 || cursor.pos > top.end {
                return true;
            }
            let wire = tag & 7;
            let at_root = stack.len() == 1;
            let (base, maps, end_of_top, group_of_top) = (top.base, top.maps, top.end, top.group);
            let field = top
                .message
                .and_then(|m| schema.messages[m].field(number))
                .map(|(at, f)| (at, *f));
            match wire {
                // Varint, 64-bit, 32-bit: a scalar costs only as a list's element.
                0 | 1 | 5 => {
                    let read = match wire {
                        0 => cursor.varint().is_some(),
                        1 => cursor.skip(8),
                        _ => cursor.skip(4),
                    };
                    if !read {
                        return true;
                    }
                    if let Some((at, f)) = field
                        && f.repeated
                        && let Kind::Scalar { width, .. } = f.kind
                    {
                        scan.lengths[base + at] += 1;
                        if !scan.charge(stack, f.id, width) {
                            return false;
                        }
                    }
                }
                2 => {
                    let Some(len) = cursor.varint().and_then(|l| usize::try_from(l).ok()) else {
                        return true;
                    };
                    if len > end_of_top.saturating_sub(cursor.pos) {
                        return true;
                    }
                    let end = cursor.pos + len;
                    let Some((at, f)) = field else {
                        cursor.skip(len);
                        continue;
                    };
                    let kept = at_root && self.kept_encoded.contains(&f.number);
                    // Elements this occurrence adds to a list, what it costs now, what to enter.
                    let (elements, cost, enter) = match f.kind {
                        // A pod kept encoded: its `Bytes` handle in a list.
                        _ if kept => (1, SHARED_BYTES_INLINE, None),
                        Kind::Message(t) if f.repeated => (1, f.inline, Some(t)),
                        Kind::Message(t) if f.boxed => (0, f.inline, Some(t)),
                        Kind::Message(t) => (0, 0, Some(t)),
                        Kind::Map(t) => {
                            let entry = f.inline;
                            let mut cost = MAP_ENTRY_FACTOR * entry + MAP_ENTRY_EXTRA;
                            let bit = 1u64.checked_shl(u32::try_from(at).unwrap_or(64));
                            if bit.is_none_or(|b| maps & b == 0) {
                                cost += map_node_bytes(entry);
                                if let (Some(b), Some(top)) = (bit, stack.last_mut()) {
                                    top.maps |= b;
                                }
                            }
                            (0, cost, Some(t))
                        }
                        Kind::Text if f.repeated => (1, f.inline + text_heap(len), None),
                        Kind::Text => (0, text_heap(len), None),
                        Kind::Scalar { width, fixed } => {
                            // A packed run: at most one element per wire byte (or fixed width).
                            let elements = fixed.map_or(len, |w| len / w);
                            (elements, width.saturating_mul(elements), None)
                        }
                    };
                    if elements > 0 {
                        scan.lengths[base + at] += elements;
                    }
                    if !scan.charge(stack, f.id, cost) {
                        return false;
                    }
                    match enter {
                        Some(t) if !kept => {
                            if stack.len() > MAX_DEPTH {
                                return true;
                            }
                            let frame = scan.frame(Some(t), end, None, Some(f.id));
                            stack.push(frame);
                        }
                        _ => {
                            cursor.skip(len);
                        }
                    }
                }
                // A group: prost skips an unknown one, field by field; a known field fails.
                3 => {
                    if field.is_some() || stack.len() > MAX_DEPTH {
                        return true;
                    }
                    let frame = scan.frame(None, end_of_top, Some(number), None);
                    stack.push(frame);
                }
                4 => {
                    if group_of_top != Some(number) {
                        return true;
                    }
                    if let Some(frame) = stack.pop() {
                        scan.close(&frame, self.kept_encoded);
                    }
                }
                _ => return true,
            }
        }
    }
}

/// gRPC's length prefix: a compression flag and a big-endian u32 length.
pub const GRPC_PREFIX_BYTES: usize = 5;

/// [`RequestType::estimate`] of the message in a gRPC request body (its
/// 5-byte prefix first), in the pieces it arrived in. `None` when the body
/// holds no uncompressed message to scan (tonic refuses it before decoding).
pub fn estimate_grpc_body(
    request: &RequestType<'_>,
    body: &[&[u8]],
    limit: usize,
) -> Option<Estimate> {
    let mut prefix = [0u8; GRPC_PREFIX_BYTES];
    let mut cursor = Cursor::new(body);
    for b in &mut prefix {
        *b = cursor.byte()?;
    }
    if prefix[0] != 0 {
        return None;
    }
    let len = usize::try_from(u32::from_be_bytes([
        prefix[1], prefix[2], prefix[3], prefix[4],
    ]))
    .unwrap_or(usize::MAX);
    // The message's pieces: the body after the prefix, cut at the declared length.
    let mut pieces = Vec::with_capacity(body.len());
    let (mut skip, mut left) = (GRPC_PREFIX_BYTES, len);
    for piece in body {
        let cut = skip.min(piece.len());
        skip -= cut;
        let piece = &piece[cut..];
        let take = piece.len().min(left);
        if take > 0 {
            pieces.push(&piece[..take]);
        }
        left -= take;
    }
    Some(request.estimate(&pieces, limit))
}
