//! How much memory prost may take to decode a request, read from its wire
//! bytes before it is decoded: a linear, schema-driven pre-scan.
//!
//! Why: a message's decoded size is not bounded by its wire size. An empty
//! `Container` is 2 bytes on the wire and a 48-byte struct decoded (plus the
//! growth of its list): a 44 MiB DecideJob of 22 million of them decodes to
//! more than 2 GiB. The server's byte budget charges wire bytes; the body
//! layer charges this estimate too, before the request is decoded, and
//! refuses a request whose estimate the budget cannot give.
//!
//! The estimate is an upper bound of what prost allocates, inline and on the
//! heap, while it decodes (each rule is one constant or function below):
//!
//! - the request's own struct once ([`Schema`] computes a bound of each
//!   generated struct's `size_of` from the descriptor: [`MessageType::inline`]);
//! - a repeated field: the buffer its `Vec` ends with after as many pushes
//!   as it has elements (a power of two, at least 4), and once, for the
//!   largest list alone, the old buffer a `Vec` holds while it grows
//!   ([`capacity`]; one list grows at a time);
//! - a singular message field: nothing (it lives inside its parent), unless
//!   prost boxes it (a recursive type): its inline size;
//! - a non-empty string or bytes: its length (at least 8, what a first
//!   `reserve` takes) plus [`ALLOCATION_SLACK`];
//! - a packed scalar run: as a list of one element per wire byte (or per
//!   fixed-width element), the most it can hold;
//! - a map entry: its key and value ([`MAP_ENTRY_FACTOR`] times, for the
//!   map's nodes) and, once per map, a whole node ([`map_node_bytes`]);
//! - a DecideJob's pods (`pods`, `leanPods`): kept encoded as slices of the
//!   body ([`crate::LazyDecideJobRequest`]), each is skipped by its length and
//!   costs only its `Bytes` handle; the handler charges their model.
//!
//! Unknown fields cost nothing (prost drops them). The scan goes no deeper
//! than prost does ([`MAX_DEPTH`]) and stops where prost would fail to parse
//! (a truncated length, a bad varint, a wire type 6 or 7): prost allocates no
//! more than the scan has counted up to that point, and reports the error as
//! before. The scan is O(wire bytes): a string, bytes or pod is skipped by
//! its length, never read.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};

use crate::pb::FILE_DESCRIPTOR_SET;

/// prost's recursion limit: a message nested deeper fails to decode.
pub const MAX_DEPTH: usize = 100;

/// What the allocator adds to each heap allocation of a string or bytes.
pub const ALLOCATION_SLACK: usize = 16;

/// What one map entry costs beyond its key's and value's contents, as a
/// multiple of their inline sizes: a B-tree node holds 11 entries and every
/// node but the root holds at least 5 (2.2 times, plus its header and edges).
pub const MAP_ENTRY_FACTOR: usize = 3;

/// Per map entry, beyond [`MAP_ENTRY_FACTOR`]: a node's header and edges shared out.
const MAP_ENTRY_EXTRA: usize = 32;

/// The inline size of a kept-encoded pod: a `bytes::Bytes` handle.
const SHARED_BYTES_INLINE: usize = 32;

/// DecideJob's fields kept encoded by [`crate::LazyDecideJobRequest`] (`pods`
/// and `leanPods`): slices of the body, decoded one at a time by the handler.
pub const DECIDE_JOB_KEPT_ENCODED: [u32; 2] = [2, 7];

/// A B-tree node of `entry_inline`-byte entries: 11 of them, a header, 12 edges.
pub fn map_node_bytes(entry_inline: usize) -> usize {
    11 * entry_inline + 16 + 12 * 8
}

/// Why the contract's descriptor set cannot serve as a schema (a build defect).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The embedded descriptor set does not decode.
    #[error("the contract's descriptor set does not decode: {0}")]
    Undecodable(String),
    /// A field names a message type the set does not hold.
    #[error("field {field} names the unknown type {type_name}")]
    UnknownType {
        /// The field, as `Message.field`.
        field: String,
        /// The type it names.
        type_name: String,
    },
}

/// What a field holds, as far as decoding it costs memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A message of the given type (an index into [`Schema::messages`]).
    Message(usize),
    /// A map, whose entries are messages of the given type.
    Map(usize),
    /// A string or bytes.
    Text,
    /// A scalar `width` bytes wide decoded; `fixed`: its wire width when fixed (4 or 8).
    Scalar { width: usize, fixed: Option<usize> },
}

/// One field of a message type.
#[derive(Clone, Copy, Debug)]
struct Field {
    number: u32,
    /// An index into [`Schema::field_names`] and the scan's tallies.
    id: usize,
    kind: Kind,
    repeated: bool,
    /// A singular message field prost boxes (its type contains its parent).
    boxed: bool,
    /// The field's inline size in its parent (a list's element size when repeated).
    inline: usize,
}

/// One message type: its fields by number and a bound of its struct's size.
#[derive(Clone, Debug)]
pub struct MessageType {
    name: String,
    fields: Vec<Field>,
    inline: usize,
}

impl MessageType {
    /// An upper bound of `size_of` of the struct prost generates for this type.
    pub fn inline(&self) -> usize {
        self.inline
    }

    fn field(&self, number: u32) -> Option<(usize, &Field)> {
        let at = self
            .fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()?;
        Some((at, &self.fields[at]))
    }
}

/// The contract's messages as a table the scan reads: message → field number → kind.
#[derive(Debug)]
pub struct Schema {
    messages: Vec<MessageType>,
    by_name: HashMap<String, usize>,
    /// Each field's JSON name, by field id.
    field_names: Vec<String>,
    /// gRPC method paths (`/pkg.Service/Method`) and their request types.
    methods: HashMap<String, usize>,
}

/// The request type of one RPC, and the fields of it kept encoded.
#[derive(Clone, Copy, Debug)]
pub struct RequestType<'s> {
    schema: &'s Schema,
    root: usize,
    kept_encoded: &'static [u32],
}

/// The contract's schema, decoded once from [`FILE_DESCRIPTOR_SET`].
pub fn contract() -> Result<&'static Schema, &'static SchemaError> {
    static SCHEMA: OnceLock<Result<Schema, SchemaError>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let set = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET)
                .map_err(|e| SchemaError::Undecodable(e.to_string()))?;
            Schema::new(&set)
        })
        .as_ref()
}

fn scalar(kind: Type) -> Kind {
    match kind {
        Type::Bool => Kind::Scalar {
            width: 1,
            fixed: None,
        },
        Type::Int32 | Type::Uint32 | Type::Sint32 | Type::Enum => Kind::Scalar {
            width: 4,
            fixed: None,
        },
        Type::Fixed32 | Type::Sfixed32 | Type::Float => Kind::Scalar {
            width: 4,
            fixed: Some(4),
        },
        Type::Fixed64 | Type::Sfixed64 | Type::Double => Kind::Scalar {
            width: 8,
            fixed: Some(8),
        },
        // Int64, Uint64, Sint64.
        _ => Kind::Scalar {
            width: 8,
            fixed: None,
        },
    }
}

fn round8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// A field's descriptor, before the types it names are resolved.
struct RawField<'d> {
    proto: &'d FieldDescriptorProto,
}

impl Schema {
    /// Builds the table from a descriptor set.
    pub fn new(set: &FileDescriptorSet) -> Result<Schema, SchemaError> {
        // Every message type, nested ones included, by full name.
        let mut raw: Vec<(String, &DescriptorProto)> = Vec::new();
        fn collect<'d>(
            prefix: &str,
            message: &'d DescriptorProto,
            out: &mut Vec<(String, &'d DescriptorProto)>,
        ) {
            let name = format!("{prefix}.{}", message.name());
            for nested in &message.nested_type {
                collect(&name, nested, out);
            }
            out.push((name, message));
        }
        for file in &set.file {
            let prefix = if file.package().is_empty() {
                String::new()
            } else {
                format!(".{}", file.package())
            };
            for message in &file.message_type {
                collect(&prefix, message, &mut raw);
            }
        }
        let by_name: HashMap<String, usize> = raw
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.trim_start_matches('.').to_string(), i))
            .collect();
        let is_map: Vec<bool> = raw
            .iter()
            .map(|(_, m)| m.options.as_ref().is_some_and(|o| o.map_entry()))
            .collect();

        // Fields with their types resolved; inline sizes come after.
        let mut field_names = Vec::new();
        let mut messages: Vec<MessageType> = Vec::with_capacity(raw.len());
        let mut raw_fields: Vec<Vec<RawField<'_>>> = Vec::with_capacity(raw.len());
        for (name, message) in &raw {
            let mut fields = Vec::new();
            let mut raws = Vec::new();
            for proto in &message.field {
                let repeated = proto.label() == Label::Repeated;
                let type_name = proto
                    .type_name
                    .as_deref()
                    .map(|t| t.trim_start_matches('.'));
                let kind = match proto.r#type() {
                    Type::Message | Type::Group => {
                        let type_name = type_name.unwrap_or_default();
                        let Some(&index) = by_name.get(type_name) else {
                            return Err(SchemaError::UnknownType {
                                field: format!("{name}.{}", proto.name()),
                                type_name: type_name.to_string(),
                            });
                        };
                        if repeated && is_map[index] {
                            Kind::Map(index)
                        } else {
                            Kind::Message(index)
                        }
                    }
                    Type::String | Type::Bytes => Kind::Text,
                    other => scalar(other),
                };
                let id = field_names.len();
                field_names.push(if proto.json_name().is_empty() {
                    proto.name().to_string()
                } else {
                    proto.json_name().to_string()
                });
                fields.push(Field {
                    number: u32::try_from(proto.number()).unwrap_or(0),
                    id,
                    kind,
                    repeated,
                    boxed: false,
                    inline: 0,
                });
                raws.push(RawField { proto });
            }
            // By number, for the scan's binary search.
            let mut order: Vec<usize> = (0..fields.len()).collect();
            order.sort_by_key(|&i| fields[i].number);
            let fields: Vec<Field> = order.iter().map(|&i| fields[i]).collect();
            let raws: Vec<RawField<'_>> = order
                .iter()
                .map(|&i| RawField {
                    proto: raws[i].proto,
                })
                .collect();
            messages.push(MessageType {
                name: name.trim_start_matches('.').to_string(),
                fields,
                inline: 0,
            });
            raw_fields.push(raws);
        }

        // Boxed: a singular message field whose type reaches its parent (prost's rule).
        let reaches = |from: usize, to: usize| -> bool {
            let mut seen = vec![false; messages.len()];
            let mut todo = vec![from];
            while let Some(at) = todo.pop() {
                if at == to {
                    return true;
                }
                if std::mem::replace(&mut seen[at], true) {
                    continue;
                }
                for f in &messages[at].fields {
                    if let Kind::Message(t) | Kind::Map(t) = f.kind {
                        todo.push(t);
                    }
                }
            }
            false
        };
        let mut boxed = Vec::new();
        for (m, message) in messages.iter().enumerate() {
            for (i, f) in message.fields.iter().enumerate() {
                if let Kind::Message(t) = f.kind
                    && !f.repeated
                    && reaches(t, m)
                {
                    boxed.push((m, i));
                }
            }
        }
        for (m, i) in boxed {
            messages[m].fields[i].boxed = true;
        }

        // Inline sizes, children first (no cycle goes through an unboxed field).
        // A struct with a String or a Vec has a niche: `Option` of it takes no tag.
        let niche: Vec<bool> = messages
            .iter()
            .map(|m| {
                m.fields.iter().any(|f| {
                    (f.repeated && !matches!(f.kind, Kind::Map(_)))
                        || (!f.repeated && f.kind == Kind::Text)
                })
            })
            .collect();
        let mut inline: Vec<Option<usize>> = vec![None; messages.len()];
        for m in 0..messages.len() {
            inline_size(m, &messages, &raw_fields, &niche, &mut inline, 0);
        }
        for (m, message) in messages.iter_mut().enumerate() {
            message.inline = inline[m].unwrap_or(0);
            for f in &mut message.fields {
                f.inline = element_inline(f, &inline);
            }
        }

        let mut methods = HashMap::new();
        for file in &set.file {
            for service in &file.service {
                let service_name = if file.package().is_empty() {
                    service.name().to_string()
                } else {
                    format!("{}.{}", file.package(), service.name())
                };
                for method in &service.method {
                    let input = method.input_type().trim_start_matches('.');
                    if let Some(&index) = by_name.get(input) {
                        methods.insert(format!("/{service_name}/{}", method.name()), index);
                    }
                }
            }
        }
        Ok(Schema {
            messages,
            by_name,
            field_names,
            methods,
        })
    }

    /// A message type by its full name (`jobdecider.v1.Container`).
    pub fn message(&self, name: &str) -> Option<&MessageType> {
        self.by_name.get(name).map(|&i| &self.messages[i])
    }

    /// The request type of the RPC at `path` (`/jobdecider.v1.JobDecider/DecideJob`).
    pub fn request_for_path(&self, path: &str) -> Option<RequestType<'_>> {
        let root = *self.methods.get(path)?;
        let kept_encoded: &'static [u32] =
            if self.messages[root].name == "jobdecider.v1.DecideJobRequest" {
                &DECIDE_JOB_KEPT_ENCODED
            } else {
                &[]
            };
        Some(RequestType {
            schema: self,
            root,
            kept_encoded,
        })
    }

    /// The request type named `name`, decoded whole (no field kept encoded).
    pub fn request_named(&self, name: &str) -> Option<RequestType<'_>> {
        Some(RequestType {
            schema: self,
            root: *self.by_name.get(name)?,
            kept_encoded: &[],
        })
    }
}

/// The size of one field in its parent struct. Each size is a multiple of
/// its alignment, and rustc orders a struct's fields by alignment, so a
/// struct is the sum of its fields rounded up to 8 (the test against
/// `size_of` of every generated struct keeps this honest).
fn field_slot(
    f: &Field,
    proto: &FieldDescriptorProto,
    inline: &[Option<usize>],
    niche: &[bool],
) -> usize {
    if f.repeated {
        // A Vec is 24 bytes; a map, BTreeMap 24 or HashMap 48.
        return if matches!(f.kind, Kind::Map(_)) {
            48
        } else {
            24
        };
    }
    let optional = proto.proto3_optional();
    match f.kind {
        Kind::Message(_) if f.boxed => 8,
        // An `Option<T>`: no larger than T when T has a niche (a String's or Vec's capacity).
        Kind::Message(t) | Kind::Map(t) => inline[t].unwrap_or(0) + if niche[t] { 0 } else { 8 },
        // String and Vec<u8>; `Option<String>` uses the capacity's niche.
        Kind::Text => 24,
        // `Option<i32>` is 8 bytes, `Option<i64>` 16, `Option<bool>` 1.
        Kind::Scalar { width, .. } if optional => 2 * width,
        Kind::Scalar { width, .. } => width,
    }
}

/// Computes message `m`'s inline bound (memoized), its unboxed message fields first.
fn inline_size(
    m: usize,
    messages: &[MessageType],
    raw_fields: &[Vec<RawField<'_>>],
    niche: &[bool],
    inline: &mut Vec<Option<usize>>,
    depth: usize,
) -> usize {
    if let Some(known) = inline[m] {
        return known;
    }
    // Unboxed message fields form no cycle; the depth guard only protects against a bad set.
    if depth > messages.len() {
        return 0;
    }
    for f in &messages[m].fields {
        if let Kind::Message(t) = f.kind
            && !f.boxed
            && !f.repeated
        {
            inline_size(t, messages, raw_fields, niche, inline, depth + 1);
        }
    }
    // Fields of one real oneof share one enum: its largest variant and a tag.
    let mut oneofs: HashMap<i32, usize> = HashMap::new();
    let mut total = 0;
    for (f, rf) in messages[m].fields.iter().zip(&raw_fields[m]) {
        let proto = rf.proto;
        let slot = field_slot(f, proto, inline, niche);
        match proto.oneof_index {
            Some(o) if !proto.proto3_optional() => {
                let widest = oneofs.entry(o).or_insert(0);
                *widest = (*widest).max(slot);
            }
            _ => total += slot,
        }
    }
    total += oneofs.values().map(|&w| round8(w) + 8).sum::<usize>();
    let total = round8(total);
    inline[m] = Some(total);
    total
}

/// A field's inline size as the scan charges it: a list's element, or the box of a boxed field.
fn element_inline(f: &Field, inline: &[Option<usize>]) -> usize {
    match f.kind {
        Kind::Message(t) | Kind::Map(t) => inline[t].unwrap_or(0),
        // A String or Vec<u8> (24 bytes), or a bytes::Bytes (32).
        Kind::Text => SHARED_BYTES_INLINE,
        Kind::Scalar { width, .. } => width,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{realistic_job, realistic_request};
    use crate::pb;
    use std::mem::size_of;

    fn schema() -> &'static Schema {
        contract().unwrap_or_else(|e| panic!("{e}"))
    }

    fn request(name: &str) -> RequestType<'static> {
        schema()
            .request_for_path(&format!("/jobdecider.v1.JobDecider/{name}"))
            .unwrap_or_else(|| panic!("no RPC {name}"))
    }

    fn estimate(rpc: &str, message: &[u8]) -> Estimate {
        request(rpc).estimate(&[message], usize::MAX)
    }

    /// The inline bound is honest: at least `size_of` of every generated struct a request reaches.
    #[test]
    fn inline_bound_is_at_least_the_size_of_every_generated_struct() {
        macro_rules! at_least {
            ($($name:literal => $ty:ty),* $(,)?) => {$(
                let bound = schema().message($name).map(MessageType::inline);
                assert!(
                    bound.is_some_and(|b| b >= size_of::<$ty>()),
                    "{}: bound {bound:?}, size_of {}", $name, size_of::<$ty>()
                );
            )*};
        }
        at_least! {
            "google.protobuf.Timestamp" => pbjson_types::Timestamp,
            "jobdecider.v1.DecideJobRequest" => pb::DecideJobRequest,
            "jobdecider.v1.DecideJobRequest" => crate::LazyDecideJobRequest,
            "jobdecider.v1.ValidateJobRequest" => pb::ValidateJobRequest,
            "jobdecider.v1.DecideJobSetRequest" => pb::DecideJobSetRequest,
            "jobdecider.v1.ValidateJobSetRequest" => pb::ValidateJobSetRequest,
            "jobdecider.v1.Job" => pb::Job,
            "jobdecider.v1.JobSpec" => pb::JobSpec,
            "jobdecider.v1.JobStatus" => pb::JobStatus,
            "jobdecider.v1.JobCondition" => pb::JobCondition,
            "jobdecider.v1.UncountedTerminatedPods" => pb::UncountedTerminatedPods,
            "jobdecider.v1.ObjectMeta" => pb::ObjectMeta,
            "jobdecider.v1.OwnerReference" => pb::OwnerReference,
            "jobdecider.v1.LabelSelector" => pb::LabelSelector,
            "jobdecider.v1.LabelSelectorRequirement" => pb::LabelSelectorRequirement,
            "jobdecider.v1.PodFailurePolicy" => pb::PodFailurePolicy,
            "jobdecider.v1.PodFailurePolicyRule" => pb::PodFailurePolicyRule,
            "jobdecider.v1.PodFailurePolicyOnExitCodesRequirement" => pb::PodFailurePolicyOnExitCodesRequirement,
            "jobdecider.v1.PodFailurePolicyOnPodConditionsPattern" => pb::PodFailurePolicyOnPodConditionsPattern,
            "jobdecider.v1.SuccessPolicy" => pb::SuccessPolicy,
            "jobdecider.v1.SuccessPolicyRule" => pb::SuccessPolicyRule,
            "jobdecider.v1.PodTemplateSpec" => pb::PodTemplateSpec,
            "jobdecider.v1.PodSpec" => pb::PodSpec,
            "jobdecider.v1.Container" => pb::Container,
            "jobdecider.v1.EnvVar" => pb::EnvVar,
            "jobdecider.v1.EnvVarSource" => pb::EnvVarSource,
            "jobdecider.v1.ObjectFieldSelector" => pb::ObjectFieldSelector,
            "jobdecider.v1.Pod" => pb::Pod,
            "jobdecider.v1.PodStatus" => pb::PodStatus,
            "jobdecider.v1.ContainerStatus" => pb::ContainerStatus,
            "jobdecider.v1.ContainerState" => pb::ContainerState,
            "jobdecider.v1.ContainerStateTerminated" => pb::ContainerStateTerminated,
            "jobdecider.v1.LeanPod" => pb::LeanPod,
            "jobdecider.v1.LeanContainerStatus" => pb::LeanContainerStatus,
            "jobdecider.v1.Expectations" => pb::Expectations,
            "jobdecider.v1.ControllerState" => pb::ControllerState,
            "jobdecider.v1.BackoffRecord" => pb::BackoffRecord,
            "jobdecider.v1.JobSet" => pb::JobSet,
            "jobdecider.v1.JobSetSpec" => pb::JobSetSpec,
            "jobdecider.v1.ReplicatedJob" => pb::ReplicatedJob,
            "jobdecider.v1.JobSetFailurePolicy" => pb::JobSetFailurePolicy,
            "jobdecider.v1.JobSetFailurePolicyRule" => pb::JobSetFailurePolicyRule,
            "jobdecider.v1.JobSetStatus" => pb::JobSetStatus,
            "jobdecider.v1.Condition" => pb::Condition,
            "jobdecider.v1.ReplicatedJobStatus" => pb::ReplicatedJobStatus,
            "jobdecider.v1.Action" => pb::Action,
            "jobdecider.v1.DecideJobResponse" => pb::DecideJobResponse,
            "jobdecider.v1.PodCreation" => pb::PodCreation,
        }
    }

    #[test]
    fn every_rpc_of_the_contract_has_its_request_type() {
        for rpc in ["DecideJob", "ValidateJob", "DecideJobSet", "ValidateJobSet"] {
            let _ = request(rpc);
        }
        assert!(
            schema()
                .request_for_path("/grpc.health.v1.Health/Check")
                .is_none()
        );
    }

    fn job_with_empty_containers(n: usize) -> pb::Job {
        let mut job = realistic_job(1);
        if let Some(spec) = job
            .spec
            .as_mut()
            .and_then(|s| s.template.as_mut())
            .and_then(|t| t.spec.as_mut())
        {
            spec.containers = vec![pb::Container::default(); n];
        }
        job
    }

    /// Issue 22, e2: empty containers, 2 wire bytes each, are charged as
    /// the structs they decode to, and the field is named with its count.
    #[test]
    fn empty_containers_are_charged_as_decoded_structs_and_named() {
        let n = 100_000;
        let wire = pb::ValidateJobRequest {
            job: Some(job_with_empty_containers(n)),
            ..Default::default()
        }
        .encode_to_vec();
        let got = estimate("ValidateJob", &wire);
        // The list's buffer (a power of two) and, while it grew, its previous half.
        let buffer = n.next_power_of_two() * size_of::<pb::Container>();
        assert!(got.bytes >= buffer + buffer / 2, "{got:?}");
        let largest = got.largest.unwrap_or_else(|| panic!("no field charged"));
        assert_eq!(largest.path, "job.spec.template.spec.containers");
        assert!(largest.count >= n as u64, "{largest:?}");
        // With a limit, the scan stops once past it.
        let limited = request("ValidateJob").estimate(&[&wire], 1 << 20);
        assert!(limited.exceeded);
        assert!(limited.bytes < got.bytes);
        assert_eq!(
            limited.largest.map(|l| l.path).as_deref(),
            Some("job.spec.template.spec.containers")
        );
        assert!(!got.exceeded);
    }

    /// DecideJob's pods are skipped by their length: each costs its handle, whatever its size.
    #[test]
    fn decide_job_pods_cost_only_their_handle() {
        let bare = realistic_request(0);
        let with_pods = realistic_request(1_000);
        let bare_estimate = estimate("DecideJob", &bare.encode_to_vec()).bytes;
        let wire = with_pods.encode_to_vec();
        let got = estimate("DecideJob", &wire);
        // The list of 1,000 handles takes a buffer of 1,024, and 512 while it grew.
        let handles = 1_024 * SHARED_BYTES_INLINE;
        assert!(got.bytes >= bare_estimate + handles, "{got:?}");
        assert!(
            got.bytes <= bare_estimate + handles * 3 / 2,
            "{got:?} {bare_estimate}"
        );
        assert!(wire.len() > 100 * 1_000, "pods of realistic size");
        // Decoded whole (ValidateJob's type has no pods field): a different count.
        assert_eq!(got.largest.map(|l| l.path).as_deref(), Some("pods"));
    }

    /// Every prefix of a realistic request (a truncated body), and bytes that are no
    /// message at all, are scanned without a panic; prost reports them as before.
    #[test]
    fn truncated_or_garbage_input_does_not_panic() {
        let wire = pb::DecideJobSetRequest {
            jobs: vec![realistic_job(3)],
            ..Default::default()
        }
        .encode_to_vec();
        for cut in 0..wire.len() {
            let _ = estimate("DecideJobSet", &wire[..cut]);
            let _ = estimate("DecideJob", &wire[..cut]);
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2_000 {
            let garbage: Vec<u8> = (0..64)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[0]
                })
                .collect();
            for rpc in ["DecideJob", "ValidateJob", "DecideJobSet", "ValidateJobSet"] {
                let _ = estimate(rpc, &garbage);
            }
        }
    }

    /// Groups nested 100,000 deep (an unknown field) stop the scan at prost's limit;
    /// prost refuses the message too.
    #[test]
    fn deep_nesting_stops_at_prosts_recursion_limit() {
        let depth = 100_000;
        // Field 15, wire type 3 (start group): 0x7b.
        let wire = vec![0x7bu8; depth];
        let got = estimate("ValidateJob", &wire);
        assert!(!got.exceeded);
        assert!(pb::ValidateJobRequest::decode(wire.as_slice()).is_err());
    }

    /// A body split anywhere into pieces gives the estimate of the whole.
    #[test]
    fn a_grpc_body_in_pieces_gives_the_estimate_of_the_whole() {
        let message = pb::ValidateJobRequest {
            job: Some(job_with_empty_containers(20)),
            ..Default::default()
        }
        .encode_to_vec();
        let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
        let mut body = vec![0u8];
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(&message);
        let rpc = request("ValidateJob");
        let whole = rpc.estimate(&[&message], usize::MAX);
        for a in 0..body.len() {
            for b in a..body.len() {
                let pieces = [&body[..a], &body[a..b], &body[b..]];
                assert_eq!(
                    estimate_grpc_body(&rpc, &pieces, usize::MAX),
                    Some(whole.clone())
                );
            }
        }
        body[0] = 1;
        assert_eq!(
            estimate_grpc_body(&rpc, &[&body], usize::MAX),
            None,
            "compressed"
        );
    }

    /// Map entries are charged their node: labels cost at least what a B-tree of them takes.
    #[test]
    fn map_entries_are_charged_their_node() {
        let mut job = pb::Job::default();
        let meta = job.metadata.get_or_insert_with(Default::default);
        for i in 0..100 {
            meta.labels.insert(format!("key-{i}"), format!("value-{i}"));
        }
        let wire = pb::ValidateJobRequest {
            job: Some(job),
            ..Default::default()
        }
        .encode_to_vec();
        let got = estimate("ValidateJob", &wire);
        let entry = 2 * size_of::<String>();
        assert!(got.bytes >= map_node_bytes(entry) + 100 * MAP_ENTRY_FACTOR * entry);
        assert_eq!(
            got.largest.map(|l| l.path).as_deref(),
            Some("job.metadata.labels")
        );
    }
}
