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
//!   (`scan::capacity`; one list grows at a time);
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

mod scan;
pub use scan::{Estimate, FieldCharge, GRPC_PREFIX_BYTES, estimate_grpc_body};

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

#[cfg(test)]
mod tests;
