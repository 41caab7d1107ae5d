//! The Kubernetes field schema that documents are checked against: every field
//! name, at every depth, of the kinds the CLI reads, as the API of the version
//! we follow defines them (`schema/kubernetes.json`, written by
//! `tools/schemagen` from k8s.io/api and JobSet's Go types; a Go test there
//! fails when the committed file is stale).
//!
//! Names are checked, as `kubectl --validate=strict` reports unknown fields,
//! and one type: an integer field (int32 or int64) must hold a number, as the
//! API server's JSON decoder demands; the proto3 JSON reader behind would take
//! a quoted one (`"5"`), which the API server refuses. Other types are the wire
//! conversion's to judge for the fields decisions read, and nobody's for the
//! rest. Maps (labels, annotations,
//! nodeSelector, resource lists) take any key; types that decode themselves
//! (times, quantities, IntOrString, RawExtension, managed fields) take any value.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use job_decider_core::validate::truncated;

/// The generated schema, embedded so the binary needs no file at run time.
const SCHEMA_JSON: &str = include_str!("schema/kubernetes.json");

/// How many unknown fields an error or a warning lists; the rest are counted,
/// so a huge file with a typo in every pod still gets a short message.
pub const MAX_LISTED_UNKNOWN_FIELDS: usize = 20;

/// Longest path an error repeats (a key can be as long as the file).
const MAX_PATH_BYTES: usize = 256;

/// What a field holds, as far as field names go.
#[derive(Debug)]
enum Ty {
    /// A string, number or boolean: nothing below it.
    Scalar,
    /// An integer (int32 or int64): a JSON number, never a quoted one.
    Integer,
    /// A type that decodes itself, or a raw object: anything below it.
    Any,
    /// A list of the element type.
    List(Box<Ty>),
    /// A map with any keys and values of the type.
    Map(Box<Ty>),
    /// An object with named fields (an index into `Schema::objects`).
    Object(usize),
}

/// One object type: its fields by JSON name.
#[derive(Debug)]
struct Object {
    fields: HashMap<String, Ty>,
}

/// A kind the schema holds, as `Schema::kind` found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind(usize);

/// The field schema of every kind the CLI reads.
#[derive(Debug)]
pub struct Schema {
    /// `(apiVersion, kind)` to the kind's object type.
    kinds: BTreeMap<(String, String), usize>,
    objects: Vec<Object>,
    /// The Go modules (and versions) the schema was generated from.
    modules: BTreeMap<String, String>,
}

/// The embedded schema could not be read: a build defect, never the user's input.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the embedded Kubernetes field schema is unreadable: {0}")]
pub struct SchemaError(String);

impl SchemaError {
    /// The schema has no entry for a kind a reader expects.
    pub fn missing_kind(kind: &str) -> Self {
        SchemaError(format!("no kind {kind}"))
    }
}

/// The file as `tools/schemagen` writes it.
#[derive(Deserialize)]
struct File {
    modules: BTreeMap<String, String>,
    kinds: BTreeMap<String, String>,
    types: BTreeMap<String, BTreeMap<String, String>>,
}

/// The embedded schema, read once.
pub fn schema() -> Result<&'static Schema, SchemaError> {
    static SCHEMA: OnceLock<Result<Schema, SchemaError>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| Schema::parse(SCHEMA_JSON))
        .as_ref()
        .map_err(Clone::clone)
}

impl Schema {
    fn parse(text: &str) -> Result<Schema, SchemaError> {
        let file: File = serde_json::from_str(text).map_err(|e| SchemaError(e.to_string()))?;
        let index: HashMap<&str, usize> = file
            .types
            .keys()
            .enumerate()
            .map(|(i, name)| (name.as_str(), i))
            .collect();
        let ty = |expr: &str| -> Result<Ty, SchemaError> { parse_ty(expr, &index) };
        let mut objects = Vec::with_capacity(file.types.len());
        for fields in file.types.values() {
            let fields = fields
                .iter()
                .map(|(name, expr)| Ok((name.clone(), ty(expr)?)))
                .collect::<Result<_, SchemaError>>()?;
            objects.push(Object { fields });
        }
        let mut kinds = BTreeMap::new();
        for (key, name) in &file.kinds {
            let (api_version, kind) = key
                .split_once(' ')
                .ok_or_else(|| SchemaError(format!("kind {key:?} is not \"apiVersion kind\"")))?;
            let Ty::Object(object) = ty(name)? else {
                return Err(SchemaError(format!("kind {key:?} is not an object")));
            };
            kinds.insert((api_version.to_string(), kind.to_string()), object);
        }
        Ok(Schema {
            kinds,
            objects,
            modules: file.modules,
        })
    }

    /// The kind for this apiVersion and kind, if the schema has it.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<Kind> {
        self.kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .map(|&i| Kind(i))
    }

    /// The apiVersions the schema has for a kind (`batch/v1` for `Job`).
    pub fn api_versions<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.kinds
            .keys()
            .filter(move |(_, k)| k == kind)
            .map(|(v, _)| v.as_str())
    }

    /// The Go modules and versions the schema was generated from.
    pub fn modules(&self) -> &BTreeMap<String, String> {
        &self.modules
    }

    /// Records every field of `value`, an object of `kind` found at `path`,
    /// that the schema does not have; top-level fields named in `skip` (a
    /// list's items, checked one by one as their own kind) are left out.
    pub fn check(
        &self,
        kind: Kind,
        value: &Value,
        path: &str,
        skip: &[&str],
        unknown: &mut UnknownFields,
    ) {
        let Value::Object(map) = value else {
            return;
        };
        let mut walk = Walk {
            schema: self,
            prefix: path,
            segments: Vec::new(),
            unknown,
        };
        for (name, field) in map {
            if skip.contains(&name.as_str()) {
                continue;
            }
            walk.field(kind.0, name, field);
        }
    }
}

/// One step of a path: its segments are kept borrowed and rendered only for
/// an unknown field that is listed, so a large, clean file costs no strings.
enum Segment<'v> {
    Field(&'v str),
    Index(usize),
    Key(&'v str),
}

/// A walk over one object, with the path to where it is.
struct Walk<'s, 'v, 'u> {
    schema: &'s Schema,
    prefix: &'v str,
    segments: Vec<Segment<'v>>,
    unknown: &'u mut UnknownFields,
}

impl<'v> Walk<'_, 'v, '_> {
    /// The path to the current place, as Kubernetes writes field paths.
    fn path(&self) -> String {
        let mut path = self.prefix.to_string();
        for segment in &self.segments {
            match segment {
                Segment::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
                Segment::Key(key) => path.push_str(&format!("[{key}]")),
            }
        }
        path
    }

    /// One field of an object: unknown, or checked below.
    fn field(&mut self, object: usize, name: &'v str, value: &'v Value) {
        self.segments.push(Segment::Field(name));
        match self
            .schema
            .objects
            .get(object)
            .and_then(|o| o.fields.get(name))
        {
            Some(ty) => self.value(ty, value),
            None => {
                if self.unknown.wants_path() {
                    let path = self.path();
                    self.unknown.add(&path);
                } else {
                    self.unknown.count();
                }
            }
        }
        self.segments.pop();
    }

    fn value(&mut self, ty: &Ty, value: &'v Value) {
        match (ty, value) {
            (Ty::Object(object), Value::Object(map)) => {
                for (name, field) in map {
                    self.field(*object, name, field);
                }
            }
            // Null is an unset field; any number is the conversion's to judge.
            (Ty::Integer, Value::Null | Value::Number(_)) => {}
            // Only the first is named; the rest are left to be found once it is fixed.
            (Ty::Integer, other) if self.unknown.mistyped.is_none() => {
                let found = match other {
                    Value::String(s) => format!("the string {:?}", truncated(s, 64)),
                    Value::Array(_) => "a list".to_string(),
                    Value::Object(_) => "an object".to_string(),
                    other => other.to_string(),
                };
                let path = truncated(&self.path(), MAX_PATH_BYTES).into_owned();
                self.unknown.mistyped = Some((
                    path,
                    format!(
                        "expected an integer, found {found} (the API server reads integers only as numbers, unquoted)"
                    ),
                ));
            }
            // Lists and maps of scalars (args, labels, annotations): no names below.
            (Ty::List(elem) | Ty::Map(elem), _) if matches!(**elem, Ty::Scalar | Ty::Any) => {}
            (Ty::List(elem), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    self.segments.push(Segment::Index(i));
                    self.value(elem, item);
                    self.segments.pop();
                }
            }
            (Ty::Map(elem), Value::Object(map)) => {
                for (key, item) in map {
                    self.segments.push(Segment::Key(key));
                    self.value(elem, item);
                    self.segments.pop();
                }
            }
            // Scalars, opaque values, nulls, and values of the wrong JSON type
            // (the conversion names those it reads): no field names below.
            _ => {}
        }
    }
}

/// The contract's own JSON (the `--state` file: a ControllerState or a whole
/// DecideJobResponse) has no Kubernetes schema; its schema is the contract's
/// descriptor set, read the same way: messages are objects whose fields are
/// their JSON names (and, as the proto3 JSON reader also takes them, their
/// proto names), map entries are maps, well-known types take any value.
pub fn contract() -> Result<&'static Schema, SchemaError> {
    static CONTRACT: OnceLock<Result<Schema, SchemaError>> = OnceLock::new();
    CONTRACT
        .get_or_init(|| Schema::from_descriptors(job_decider_api::pb::FILE_DESCRIPTOR_SET))
        .as_ref()
        .map_err(Clone::clone)
}

/// The package of the contract's messages, the "apiVersion" of [`contract`]'s kinds.
pub const CONTRACT_PACKAGE: &str = "jobdecider.v1";

impl Schema {
    fn from_descriptors(bytes: &[u8]) -> Result<Schema, SchemaError> {
        let set = <prost_types::FileDescriptorSet as prost::Message>::decode(bytes)
            .map_err(|e| SchemaError(format!("the contract's descriptor set: {e}")))?;
        // Every message by its full name (".pkg.Outer.Inner"), nested ones included.
        let mut messages: Vec<(String, &prost_types::DescriptorProto)> = Vec::new();
        fn collect<'a>(
            prefix: &str,
            list: &'a [prost_types::DescriptorProto],
            out: &mut Vec<(String, &'a prost_types::DescriptorProto)>,
        ) {
            for m in list {
                let name = format!("{prefix}.{}", m.name());
                collect(&name, &m.nested_type, out);
                out.push((name, m));
            }
        }
        for file in &set.file {
            let prefix = if file.package().is_empty() {
                String::new()
            } else {
                format!(".{}", file.package())
            };
            collect(&prefix, &file.message_type, &mut messages);
        }
        let index: HashMap<&str, usize> = messages
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.as_str(), i))
            .collect();
        let mut objects = Vec::with_capacity(messages.len());
        for (_, message) in &messages {
            let mut fields = HashMap::new();
            for f in &message.field {
                let json = if f.json_name().is_empty() {
                    lower_camel(f.name())
                } else {
                    f.json_name().to_string()
                };
                fields.insert(f.name().to_string(), proto_ty(f, &messages, &index)?);
                if json != f.name() {
                    fields.insert(json, proto_ty(f, &messages, &index)?);
                }
            }
            objects.push(Object { fields });
        }
        let kinds = messages
            .iter()
            .enumerate()
            .filter_map(|(i, (name, _))| {
                let name = name.strip_prefix(&format!(".{CONTRACT_PACKAGE}."))?;
                Some(((CONTRACT_PACKAGE.to_string(), name.to_string()), i))
            })
            .collect();
        Ok(Schema {
            kinds,
            objects,
            modules: BTreeMap::new(),
        })
    }
}

/// What a field of the contract holds: a message is an object (a map entry
/// makes the field a map of the entry's value; a well-known type is opaque),
/// anything else a scalar; repeated fields are lists.
fn proto_ty(
    f: &prost_types::FieldDescriptorProto,
    messages: &[(String, &prost_types::DescriptorProto)],
    index: &HashMap<&str, usize>,
) -> Result<Ty, SchemaError> {
    use prost_types::field_descriptor_proto::{Label, Type};
    let elem = match f.r#type() {
        Type::Message | Type::Group => {
            let name = f.type_name();
            if name.starts_with(".google.protobuf.") {
                Ty::Any
            } else {
                let i = *index.get(name).ok_or_else(|| {
                    SchemaError(format!("message {name:?} is not in the descriptor set"))
                })?;
                let message = messages[i].1;
                if message.options.as_ref().is_some_and(|o| o.map_entry()) {
                    let value =
                        message
                            .field
                            .iter()
                            .find(|f| f.number() == 2)
                            .ok_or_else(|| {
                                SchemaError(format!("map entry {name} has no value field"))
                            })?;
                    return Ok(Ty::Map(Box::new(proto_ty(value, messages, index)?)));
                }
                Ty::Object(i)
            }
        }
        _ => Ty::Scalar,
    };
    Ok(if f.label() == Label::Repeated {
        Ty::List(Box::new(elem))
    } else {
        elem
    })
}

/// protoc's JSON name of a field: `failures_after_last_success` → `failuresAfterLastSuccess`.
fn lower_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A type expression of the file: a scalar, `any`, `[]T`, `{}T` or a type name.
fn parse_ty(expr: &str, index: &HashMap<&str, usize>) -> Result<Ty, SchemaError> {
    if let Some(elem) = expr.strip_prefix("[]") {
        return Ok(Ty::List(Box::new(parse_ty(elem, index)?)));
    }
    if let Some(elem) = expr.strip_prefix("{}") {
        return Ok(Ty::Map(Box::new(parse_ty(elem, index)?)));
    }
    match expr {
        "integer" => Ok(Ty::Integer),
        "string" | "number" | "boolean" => Ok(Ty::Scalar),
        "any" => Ok(Ty::Any),
        name => index
            .get(name)
            .map(|&i| Ty::Object(i))
            .ok_or_else(|| SchemaError(format!("type {name:?} is not defined"))),
    }
}

/// The unknown fields of a file: the first few paths, and how many in all;
/// and the first integer field holding something else (an error even where
/// unknown fields are only warned about).
#[derive(Debug, Default)]
pub struct UnknownFields {
    listed: Vec<String>,
    total: usize,
    /// The path and what is wrong.
    mistyped: Option<(String, String)>,
}

impl UnknownFields {
    /// Whether the next unknown field is listed (its path is worth rendering).
    fn wants_path(&self) -> bool {
        self.listed.len() < MAX_LISTED_UNKNOWN_FIELDS
    }

    fn add(&mut self, path: &str) {
        self.total += 1;
        if self.wants_path() {
            self.listed
                .push(truncated(path, MAX_PATH_BYTES).into_owned());
        }
    }

    /// One more unknown field past the listed ones.
    fn count(&mut self) {
        self.total += 1;
    }

    /// Whether every field was known.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The paths listed, in document order (at most [`MAX_LISTED_UNKNOWN_FIELDS`]).
    pub fn listed(&self) -> &[String] {
        &self.listed
    }

    /// How many unknown fields there are in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The first integer field that holds something other than a number:
    /// its path and what is wrong.
    pub fn mistyped(&self) -> Option<(&str, &str)> {
        self.mistyped
            .as_ref()
            .map(|(path, detail)| (path.as_str(), detail.as_str()))
    }

    /// How many are counted but not listed.
    pub fn more(&self) -> usize {
        self.total - self.listed.len()
    }
}

#[cfg(test)]
mod tests;
