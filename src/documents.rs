//! Kubernetes documents (YAML or JSON, as `kubectl get -o yaml|json` prints
//! them) into wire messages, and wire messages back into JSON or YAML.
//!
//! No hand mapping: YAML becomes a JSON value, and the proto3 JSON mapping
//! (pbjson, unknown fields ignored) reads it, so a field the contract names is
//! read exactly as a gRPC client's JSON would be.
//!
//! Strict, as `kubectl --validate=strict`: before that, every field of a Job,
//! Pod, list or JobSet is checked against the Kubernetes schema of its kind
//! ([`crate::schema`]), so a typo (`spec.backofLimit`) is an error naming its
//! path instead of a field silently left at its default; real fields that no
//! decision reads pass. [`UnknownFields::Warn`] (the CLI's `--lenient`) makes
//! them warnings. `apiVersion` and `kind` may be left out (the reader knows
//! what it expects); when given, they must be the schema's.

use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde_json::Value;

use crate::schema::{self, MAX_LISTED_UNKNOWN_FIELDS, Schema};
use job_decider_api::{pb, yaml_bounds};

/// Why a document could not be read; every variant names where.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// Not parseable as YAML or JSON at all.
    #[error("{what}: not valid YAML or JSON: {detail}")]
    Syntax {
        /// Which document.
        what: String,
        /// The parser's message (with line and column).
        detail: String,
    },
    /// Parseable, but a field does not fit the contract.
    #[error("{what}: {field}: {detail}")]
    Field {
        /// Which document.
        what: String,
        /// The field's path in the document, e.g. `items[2].status.phase`.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The document is not the kind of object expected.
    #[error("{what}: {detail}")]
    Shape {
        /// Which document.
        what: String,
        /// What was expected and found.
        detail: String,
    },
    /// Fields that the Kubernetes schema of the object's kind does not have.
    #[error("{what}: {}", unknown_fields_text(fields, *total))]
    UnknownFields {
        /// Which document.
        what: String,
        /// The first few paths, e.g. `spec.backofLimit`.
        fields: Vec<String>,
        /// How many unknown fields in all (more than listed for a large file).
        total: usize,
    },
    /// Too large or too deeply nested to parse (checked before any parser runs).
    #[error("{what}: {detail}")]
    Limit {
        /// Which document.
        what: String,
        /// The limit and how it was passed.
        detail: String,
    },
    /// The embedded schema is unreadable: a defect of the build, not of the input.
    #[error(transparent)]
    Schema(#[from] schema::SchemaError),
}

/// `spec.backofLimit: unknown field`, or one such line per field, capped.
fn unknown_fields_text(fields: &[String], total: usize) -> String {
    let hint = "(not in the schema of its kind; --lenient reads on with a warning)";
    match fields {
        [one] if total == 1 => format!("{one}: unknown field {hint}"),
        _ => {
            let mut text = format!("{total} unknown fields {hint}:");
            for field in fields {
                text.push_str(&format!("\n  {field}: unknown field"));
            }
            if total > fields.len() {
                text.push_str(&format!("\n  ... and {} more", total - fields.len()));
            }
            text
        }
    }
}

/// What to do with fields the Kubernetes schema does not have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownFields {
    /// Reject the document, naming them (kubectl's `--validate=strict`).
    #[default]
    Reject,
    /// Read on, and say which were ignored (`--lenient`).
    Warn,
}

/// What a reader read, with the warnings to show a person (unknown fields
/// ignored under [`UnknownFields::Warn`]).
#[derive(Debug)]
pub struct Parsed<T> {
    /// The objects read.
    pub value: T,
    /// One line each, without a `warning:` prefix; bounded however large the file.
    pub warnings: Vec<String>,
}

/// Every non-empty document of a YAML stream (or the one value of a JSON text),
/// bounded before parsing ([`yaml_bounds`]) and read strictly ([`Strict`]).
fn documents(text: &str, what: &str) -> Result<Vec<Value>, DocumentError> {
    yaml_bounds::check(text, yaml_bounds::MAX_WHOLE_FILE_BYTES).map_err(|e| {
        let hint = match e {
            yaml_bounds::BoundsError::TooLarge { .. } => {
                " (YAML, and JSON that is not a list, is read whole; write a large pods file as a JSON PodList or array, which is read item by item)"
            }
            yaml_bounds::BoundsError::TooDeep { .. } => "",
        };
        DocumentError::Limit {
            what: what.to_string(),
            detail: format!("{e}{hint}"),
        }
    })?;
    let mut tracker = Tracker::default();
    // JSON is read by the JSON parser: exact numbers and JSON's own error positions.
    if text.trim_start().starts_with('{') || text.trim_start().starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Strict(&mut tracker)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| tracker.error(what, e))?;
        return Ok(vec![value]);
    }
    let mut values = Vec::new();
    for (d, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        tracker.prefix = if d == 0 {
            String::new()
        } else {
            format!("[document {d}]")
        };
        let value = Strict(&mut tracker)
            .deserialize(document)
            .map_err(|e| tracker.error(what, e))?;
        if !value.is_null() {
            values.push(value);
        }
    }
    Ok(values)
}

/// One step of a path: a field or a list index.
enum Step {
    Key(String),
    Index(usize),
}

/// Where a strict read is, and what it found wrong: the problem is kept
/// beside the parser's error, so it can be reported as a field error by path.
#[derive(Default)]
struct Tracker {
    /// The path of the value being read within the file (`items[3]`), or empty.
    prefix: String,
    steps: Vec<Step>,
    /// The first problem: its path and what is wrong.
    problem: Option<(String, String)>,
}

impl Tracker {
    fn path(&self) -> String {
        let mut path = self.prefix.clone();
        for step in &self.steps {
            match step {
                Step::Key(key) if path.is_empty() => path.push_str(key),
                Step::Key(key) => {
                    path.push('.');
                    path.push_str(key);
                }
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        path
    }

    /// Records a problem at the current path and returns the parser's error for it.
    fn fail<E: serde::de::Error>(&mut self, detail: String) -> E {
        let err = E::custom(&detail);
        self.problem.get_or_insert((self.path(), detail));
        err
    }

    /// The read's error: the problem by its path, or the parser's syntax error.
    fn error(&mut self, what: &str, err: impl std::fmt::Display) -> DocumentError {
        match self.problem.take() {
            Some((field, detail)) if field.is_empty() => DocumentError::Shape {
                what: what.to_string(),
                detail,
            },
            Some((field, detail)) => DocumentError::Field {
                what: what.to_string(),
                field,
                detail,
            },
            None => DocumentError::Syntax {
                what: what.to_string(),
                detail: err.to_string(),
            },
        }
    }
}

/// Reads a JSON value strictly, as docs/cli.md ("Strict input") promises: a key given twice is an
/// error (serde_json and a YAML mapping read into JSON keep the last), and so
/// is a number that is not finite (YAML's `.nan`, `.inf`, `1e400`), which a
/// JSON value cannot hold and would otherwise drop, leaving the field unset.
struct Strict<'t>(&'t mut Tracker);

impl<'de> serde::de::DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(self.0.fail(format!(
                "{v} is not a number a field can hold (a finite number is required)"
            ))),
        }
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.0.steps.push(Step::Index(items.len()));
            let item = seq.next_element_seed(Strict(&mut *self.0));
            self.0.steps.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                return Err(self.0.fail(format!(
                    "the key {:?} is given twice (a later one would silently win)",
                    job_decider_core::violation::truncated(&key, 200)
                )));
            }
            self.0.steps.push(Step::Key(key));
            let value = map.next_value_seed(Strict(&mut *self.0));
            if let Some(Step::Key(key)) = self.0.steps.pop() {
                fields.insert(key, value?);
            }
        }
        Ok(Value::Object(fields))
    }
}

/// Reads one message from a JSON value, naming the failing field's path.
fn message<T: DeserializeOwned>(
    value: Value,
    what: &str,
    prefix: &str,
) -> Result<T, DocumentError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match (prefix.is_empty(), path.as_str()) {
            (true, p) => p.to_string(),
            (false, ".") => prefix.to_string(),
            (false, p) => format!("{prefix}.{p}"),
        };
        DocumentError::Field {
            what: what.to_string(),
            field,
            detail: e.into_inner().to_string(),
        }
    })
}

fn kind_of(value: &Value) -> Option<&str> {
    value.get("kind").and_then(Value::as_str)
}

/// `prefix.name`, or `name` at the top.
fn join_path(prefix: &str, name: &str) -> String {
    match (prefix.is_empty(), name.is_empty()) {
        (true, _) => name.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}.{name}"),
    }
}

/// What every object of a file goes through before it is read: its
/// `apiVersion` and `kind`, then its field names, with the unknown ones of
/// the whole file gathered (and capped) in one place.
struct Checker<'a> {
    schema: &'static Schema,
    what: &'a str,
    unknown: schema::UnknownFields,
}

impl<'a> Checker<'a> {
    fn new(what: &'a str) -> Result<Self, DocumentError> {
        Ok(Checker::with_schema(schema::schema()?, what))
    }

    fn with_schema(schema: &'static Schema, what: &'a str) -> Self {
        Checker {
            schema,
            what,
            unknown: schema::UnknownFields::default(),
        }
    }

    fn field_error(&self, field: String, detail: String) -> DocumentError {
        DocumentError::Field {
            what: self.what.to_string(),
            field,
            detail,
        }
    }

    /// Checks an object that should be a `kind` at `path` (fields in `skip`
    /// are checked by the caller). Its `kind` and `apiVersion` may be absent;
    /// when present they must be the schema's.
    fn object(
        &mut self,
        value: &Value,
        kind: &str,
        path: &str,
        skip: &[&str],
    ) -> Result<(), DocumentError> {
        if !value.is_object() {
            // Not an object at all: the message reader says so, by path.
            return Ok(());
        }
        match value.get("kind") {
            None | Some(Value::Null) => {}
            Some(Value::String(k)) if k == kind => {}
            Some(Value::String(k)) => {
                return Err(self.field_error(
                    join_path(path, "kind"),
                    format!("expected {kind}, found {k}"),
                ));
            }
            Some(other) => {
                return Err(self.field_error(
                    join_path(path, "kind"),
                    format!("expected {kind}, found {other}"),
                ));
            }
        }
        let versions: Vec<&str> = self.schema.api_versions(kind).collect();
        let version = match value.get("apiVersion") {
            None | Some(Value::Null) => versions.first().copied(),
            Some(Value::String(v)) if versions.contains(&v.as_str()) => Some(v.as_str()),
            Some(other) => {
                let found = match other {
                    Value::String(v) => v.clone(),
                    other => other.to_string(),
                };
                return Err(self.field_error(
                    join_path(path, "apiVersion"),
                    format!(
                        "expected {} for kind {kind}, found {found}",
                        versions.join(" or ")
                    ),
                ));
            }
        };
        let Some(schema_kind) = version.and_then(|v| self.schema.kind(v, kind)) else {
            return Err(DocumentError::Schema(schema::SchemaError::missing_kind(
                kind,
            )));
        };
        self.schema
            .check(schema_kind, value, path, skip, &mut self.unknown);
        Ok(())
    }

    /// The file's unknown fields as an error (`Reject`) or as warnings
    /// (`Warn`); a mistyped integer is an error either way, after them.
    fn finish(self, policy: UnknownFields) -> Result<Vec<String>, DocumentError> {
        let unknown = self.unknown;
        let mistyped = |unknown: &schema::UnknownFields| match unknown.mistyped() {
            Some((field, detail)) => Err(DocumentError::Field {
                what: self.what.to_string(),
                field: field.to_string(),
                detail: detail.to_string(),
            }),
            None => Ok(()),
        };
        if unknown.is_empty() {
            mistyped(&unknown)?;
            return Ok(Vec::new());
        }
        if policy == UnknownFields::Warn {
            mistyped(&unknown)?;
        }
        match policy {
            UnknownFields::Reject => Err(DocumentError::UnknownFields {
                what: self.what.to_string(),
                fields: unknown.listed().to_vec(),
                total: unknown.total(),
            }),
            UnknownFields::Warn => {
                let mut warnings: Vec<String> = unknown
                    .listed()
                    .iter()
                    .map(|field| format!("{}: {field}: unknown field, ignored", self.what))
                    .collect();
                if unknown.more() > 0 {
                    warnings.push(format!(
                        "{}: ... and {} more unknown fields, ignored (the first {MAX_LISTED_UNKNOWN_FIELDS} are listed)",
                        self.what,
                        unknown.more()
                    ));
                }
                Ok(warnings)
            }
        }
    }
}

/// Reads a Job (one YAML or JSON document; `kind` Job or absent), strictly.
pub fn parse_job(text: &str, what: &str) -> Result<pb::Job, DocumentError> {
    parse_job_with(text, what, UnknownFields::Reject).map(|p| p.value)
}

/// Reads a Job, with unknown fields treated as `unknown` says.
pub fn parse_job_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<pb::Job>, DocumentError> {
    parse_one(text, what, "Job", unknown)
}

/// Reads pods: a PodList, a List of Pods, a JSON array of Pods (`jq .items`), a single
/// Pod, or several YAML documents of those; strictly.
pub fn parse_pods(text: &str, what: &str) -> Result<Vec<pb::Pod>, DocumentError> {
    parse_pods_with(text, what, UnknownFields::Reject).map(|p| p.value)
}

/// Reads pods, with unknown fields treated as `unknown` says.
pub fn parse_pods_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<Vec<pb::Pod>>, DocumentError> {
    parse_objects(text, what, "Pod", unknown)
}

/// Reads nodes: a NodeList, a List of Nodes, an array of Nodes, a single Node, or
/// several YAML documents of those (`kubectl get nodes -o yaml`), each reduced to
/// what the extended failure policy's terminatingTimeout reads (`pb::Node`).
/// Field names are checked against the Node schema as for pods.
pub fn parse_nodes_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<Vec<pb::Node>>, DocumentError> {
    let parsed = parse_objects::<KubeNode>(text, what, "Node", unknown)?;
    Ok(Parsed {
        value: parsed.value.into_iter().map(KubeNode::reduced).collect(),
        warnings: parsed.warnings,
    })
}

/// The parts of a core/v1 Node that `pb::Node` keeps, in the Kubernetes shape;
/// the schema check has already judged every other field's name.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeNode {
    metadata: KubeNodeMeta,
    spec: KubeNodeSpec,
    status: KubeNodeStatus,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeNodeMeta {
    name: String,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeNodeSpec {
    taints: Vec<KubeTaint>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeTaint {
    key: String,
    effect: String,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeNodeStatus {
    conditions: Vec<KubeNodeCondition>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct KubeNodeCondition {
    #[serde(rename = "type")]
    condition_type: String,
    status: String,
}

impl KubeNode {
    fn reduced(self) -> pb::Node {
        pb::Node {
            name: self.metadata.name,
            taints: self
                .spec
                .taints
                .into_iter()
                .map(|t| pb::Taint {
                    key: t.key,
                    effect: t.effect,
                })
                .collect(),
            conditions: self
                .status
                .conditions
                .into_iter()
                .map(|c| pb::NodeCondition {
                    r#type: c.condition_type,
                    status: c.status,
                })
                .collect(),
        }
    }
}

/// Reads Jobs: a JobList, a List of Jobs, a single Job, or several YAML documents of
/// those; strictly.
pub fn parse_jobs(text: &str, what: &str) -> Result<Vec<pb::Job>, DocumentError> {
    parse_jobs_with(text, what, UnknownFields::Reject).map(|p| p.value)
}

/// Reads Jobs, with unknown fields treated as `unknown` says.
pub fn parse_jobs_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<Vec<pb::Job>>, DocumentError> {
    parse_objects(text, what, "Job", unknown)
}

/// Reads a JobSet (one YAML or JSON document; `kind` JobSet or absent), strictly.
pub fn parse_jobset(text: &str, what: &str) -> Result<pb::JobSet, DocumentError> {
    parse_jobset_with(text, what, UnknownFields::Reject).map(|p| p.value)
}

/// Reads a JobSet, with unknown fields treated as `unknown` says.
pub fn parse_jobset_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<pb::JobSet>, DocumentError> {
    parse_one(text, what, "JobSet", unknown)
}

/// Reads one object of `kind` (or with no kind) from a single document.
fn parse_one<T: DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &str,
    unknown: UnknownFields,
) -> Result<Parsed<T>, DocumentError> {
    let mut docs = documents(text, what)?;
    if docs.len() != 1 {
        return Err(DocumentError::Shape {
            what: what.to_string(),
            detail: format!("expected one {kind}, found {} documents", docs.len()),
        });
    }
    let doc = docs.remove(0);
    let mut checker = Checker::new(what)?;
    checker.object(&doc, kind, "", &[])?;
    let warnings = checker.finish(unknown)?;
    Ok(Parsed {
        value: message(doc, what, "")?,
        warnings,
    })
}

/// Reads objects of `kind`: a `<kind>List`, a List, an array, a single object, or several
/// YAML documents of those.
fn parse_objects<T: DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &str,
    unknown: UnknownFields,
) -> Result<Parsed<Vec<T>>, DocumentError> {
    match stream_json_list(text, what, kind, unknown)? {
        Some(parsed) => Ok(parsed),
        None => parse_objects_whole(text, what, kind, unknown),
    }
}

/// Reads objects of `kind` from the whole text at once (YAML, or JSON that is
/// not a list): every document as one value, then its objects.
fn parse_objects_whole<T: DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &str,
    unknown: UnknownFields,
) -> Result<Parsed<Vec<T>>, DocumentError> {
    let list_kind = format!("{kind}List");
    let docs = documents(text, what)?;
    let several = docs.len() > 1;
    let mut checker = Checker::new(what)?;
    // Every object with its path, checked first, so that unknown fields are
    // reported before any value the conversion would reject.
    let mut found: Vec<(String, Value)> = Vec::new();
    for (d, mut doc) in docs.into_iter().enumerate() {
        // With several documents, paths say which one.
        let doc_prefix = if several {
            format!("[document {d}]")
        } else {
            String::new()
        };
        let envelope = match (&doc, kind_of(&doc)) {
            (Value::Array(_), _) => Some(None),
            (_, Some(k)) if k == list_kind || k == "List" => Some(Some(k.to_string())),
            _ => None,
        };
        let Some(envelope) = envelope else {
            if let Some(k) = kind_of(&doc)
                && k != kind
            {
                return Err(checker.field_error(
                    join_path(&doc_prefix, "kind"),
                    format!("expected a {kind}, {list_kind} or List, found {k}"),
                ));
            }
            checker.object(&doc, kind, &doc_prefix, &[])?;
            found.push((doc_prefix, doc));
            continue;
        };
        // A list's items, and where they sit in the document ("items" or the top).
        let (items, items_path) = match envelope {
            None => match doc {
                Value::Array(items) => (items, doc_prefix.clone()),
                _ => (Vec::new(), doc_prefix.clone()),
            },
            Some(list) => {
                checker.object(&doc, &list, &doc_prefix, &["items"])?;
                let items_path = join_path(&doc_prefix, "items");
                match doc.get_mut("items").map(Value::take) {
                    Some(Value::Array(items)) => (items, items_path),
                    Some(Value::Null) | None => (Vec::new(), items_path),
                    Some(_) => {
                        return Err(
                            checker.field_error(items_path, format!("must be a list of {kind}s"))
                        );
                    }
                }
            }
        };
        for (i, item) in items.into_iter().enumerate() {
            let prefix = format!("{items_path}[{i}]");
            checker.object(&item, kind, &prefix, &[])?;
            found.push((prefix, item));
        }
    }
    let warnings = checker.finish(unknown)?;
    let objects = found
        .into_iter()
        .map(|(prefix, item)| message(item, what, &prefix))
        .collect::<Result<_, _>>()?;
    Ok(Parsed {
        value: objects,
        warnings,
    })
}

/// How a JSON list's `items` looked on the first pass, which skips their content.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ItemsShape {
    /// An array: read item by item on the second pass.
    Array,
    /// `null`: no items.
    Null,
    /// Anything else: an error naming `items`.
    Other,
}

impl<'de> Deserialize<'de> for ItemsShape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

/// Tells an array, a null and anything else apart without keeping any of it.
struct ShapeVisitor;

impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
    type Value = ItemsShape;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Null)
    }
    fn visit_none<E>(self) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<ItemsShape, E> {
        Ok(ItemsShape::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ItemsShape, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(ItemsShape::Array)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ItemsShape, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(ItemsShape::Other)
    }
}

/// A JSON object's fields other than `items`, and how often `items` came and
/// in what shape; `repeated` when a field other than `items` came twice.
struct Envelope {
    fields: serde_json::Map<String, Value>,
    items: Vec<ItemsShape>,
    repeated: bool,
}

impl<'de> DeserializeSeed<'de> for EnvelopeVisitor<'_> {
    type Value = Envelope;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Envelope, D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// Keeps every field of the top object but `items`, whose content it skips;
/// the fields are read strictly ([`Strict`]).
struct EnvelopeVisitor<'t>(&'t mut Tracker);

impl<'de> serde::de::Visitor<'de> for EnvelopeVisitor<'_> {
    type Value = Envelope;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope {
            fields: serde_json::Map::new(),
            items: Vec::new(),
            repeated: false,
        };
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                envelope.items.push(map.next_value()?);
            } else {
                self.0.steps = vec![Step::Key(key.clone())];
                let value = map.next_value_seed(Strict(&mut *self.0))?;
                envelope.repeated |= envelope.fields.insert(key, value).is_some();
            }
        }
        Ok(envelope)
    }
}

/// The second pass over a JSON list: each item is read into a value, checked,
/// converted and dropped before the next, so a large file never exists as one
/// value tree. The first conversion error waits until every item is checked,
/// as unknown fields (and kind errors) come before conversion errors.
struct ItemReader<'c, 'a, T> {
    checker: &'c mut Checker<'a>,
    kind: &'c str,
    items_path: &'c str,
    unknown: UnknownFields,
    objects: Vec<T>,
    first_error: Option<DocumentError>,
    /// A kind or apiVersion error: it ends the read, reported as it is.
    fatal: Option<DocumentError>,
    /// Each item is read strictly ([`Strict`]), its problems named by path.
    tracker: Tracker,
}

impl<T: DeserializeOwned> ItemReader<'_, '_, T> {
    /// Checks and converts one item; `false` once the read must stop.
    fn item(&mut self, index: usize, item: Value) -> bool {
        let prefix = format!("{}[{index}]", self.items_path);
        if let Err(err) = self.checker.object(&item, self.kind, &prefix, &[]) {
            self.fatal = Some(err);
            return false;
        }
        // Converting is wasted once the answer is an error anyway.
        let doomed = self.first_error.is_some()
            || self.checker.unknown.mistyped().is_some()
            || (self.unknown == UnknownFields::Reject && !self.checker.unknown.is_empty());
        if !doomed {
            match message(item, self.checker.what, &prefix) {
                Ok(object) => self.objects.push(object),
                Err(err) => {
                    self.first_error = Some(err);
                    // Nothing converted is needed any more.
                    self.objects = Vec::new();
                }
            }
        }
        true
    }
}

/// Deserializes the `items` array (or the top-level array) through an [`ItemReader`].
struct Items<'r, 'c, 'a, T>(&'r mut ItemReader<'c, 'a, T>);

impl<'de, T: DeserializeOwned> serde::de::DeserializeSeed<'de> for Items<'_, '_, '_, T> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for Items<'_, '_, '_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        let mut reading = true;
        loop {
            self.0.tracker.prefix = format!("{}[{index}]", self.0.items_path);
            self.0.tracker.steps.clear();
            let Some(item) = seq.next_element_seed(Strict(&mut self.0.tracker))? else {
                return Ok(());
            };
            // After a fatal error the rest is still read as values, dropped: a
            // number the value reader rejects (which the first pass skipped)
            // is a syntax error, and that comes first, as in the whole read.
            if reading && !self.0.item(index, item) {
                reading = false;
            }
            index += 1;
        }
    }
}

/// Only the `items` of the top object, through an [`ItemReader`]; other fields are skipped.
struct ItemsField<'r, 'c, 'a, T>(&'r mut ItemReader<'c, 'a, T>);

impl<'de, T: DeserializeOwned> serde::de::DeserializeSeed<'de> for ItemsField<'_, '_, '_, T> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for ItemsField<'_, '_, '_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                map.next_value_seed(Items(&mut *self.0))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Reads a JSON list of `kind` (a `<kind>List`, a List or an array) item by
/// item, with the same checks, paths and errors as reading it whole; `None`
/// when the text is not such a list (YAML, a single object), to be read whole.
///
/// Two passes over the text: the first checks its syntax and keeps the list's
/// own fields (skipping the items), so a syntax error anywhere and the
/// envelope's errors come first, as when the file is read whole; the second
/// reads the items.
fn stream_json_list<T: DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &str,
    unknown: UnknownFields,
) -> Result<Option<Parsed<Vec<T>>>, DocumentError> {
    let start = text.trim_start();
    let syntax = |e: serde_json::Error| DocumentError::Syntax {
        what: what.to_string(),
        detail: e.to_string(),
    };
    let mut checker = Checker::new(what)?;
    let items_path = if start.starts_with('[') {
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(syntax)?;
        String::new()
    } else if start.starts_with('{') {
        let mut tracker = Tracker::default();
        let mut de = serde_json::Deserializer::from_str(text);
        let envelope = EnvelopeVisitor(&mut tracker)
            .deserialize(&mut de)
            .and_then(|envelope| de.end().map(|()| envelope))
            .map_err(|e| tracker.error(what, e))?;
        let list_kind = format!("{kind}List");
        let doc = Value::Object(envelope.fields);
        let list = match kind_of(&doc) {
            Some(k) if k == list_kind || k == "List" => k.to_string(),
            // A single object, or a field given twice (the last one counts): read whole.
            _ => return Ok(None),
        };
        if envelope.items.len() > 1 || envelope.repeated {
            // Read whole, which names the key given twice.
            return Ok(None);
        }
        checker.object(&doc, &list, "", &["items"])?;
        match envelope.items.first() {
            Some(ItemsShape::Array) => {}
            Some(ItemsShape::Null) | None => {
                let warnings = checker.finish(unknown)?;
                return Ok(Some(Parsed {
                    value: Vec::new(),
                    warnings,
                }));
            }
            Some(ItemsShape::Other) => {
                return Err(
                    checker.field_error("items".to_string(), format!("must be a list of {kind}s"))
                );
            }
        }
        "items".to_string()
    } else {
        return Ok(None);
    };
    let mut reader = ItemReader {
        checker: &mut checker,
        kind,
        items_path: &items_path,
        unknown,
        objects: Vec::new(),
        first_error: None,
        fatal: None,
        tracker: Tracker::default(),
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    if items_path.is_empty() {
        serde::de::DeserializeSeed::deserialize(Items(&mut reader), &mut deserializer)
    } else {
        serde::de::DeserializeSeed::deserialize(ItemsField(&mut reader), &mut deserializer)
    }
    .map_err(|e| reader.tracker.error(what, e))?;
    let ItemReader {
        objects,
        first_error,
        fatal,
        ..
    } = reader;
    if let Some(err) = fatal {
        return Err(err);
    }
    let warnings = checker.finish(unknown)?;
    if let Some(err) = first_error {
        return Err(err);
    }
    Ok(Some(Parsed {
        value: objects,
        warnings,
    }))
}

/// Reads controller state as a DecideJobResponse prints it (`state`), or the whole response.
/// Strictly: its field names are checked against the contract (a typo in
/// `failuresAfterLastSuccess` would otherwise be a silent zero).
pub fn parse_state(text: &str, what: &str) -> Result<pb::ControllerState, DocumentError> {
    parse_state_with(text, what, UnknownFields::Reject).map(|p| p.value)
}

/// Reads controller state, with unknown fields treated as `unknown` says.
pub fn parse_state_with(
    text: &str,
    what: &str,
    unknown: UnknownFields,
) -> Result<Parsed<pb::ControllerState>, DocumentError> {
    let mut docs = documents(text, what)?;
    if docs.len() != 1 {
        return Err(DocumentError::Shape {
            what: what.to_string(),
            detail: format!("expected one document, found {}", docs.len()),
        });
    }
    let mut doc = docs.remove(0);
    // A saved response holds the state under "state" (none when nothing waits on
    // time); the state alone holds "backoff". Accept either.
    let saved_response = doc.get("backoff").is_none();
    let message_name = if saved_response {
        "DecideJobResponse"
    } else {
        "ControllerState"
    };
    let contract = schema::contract()?;
    let mut checker = Checker::with_schema(contract, what);
    let Some(kind) = contract.kind(schema::CONTRACT_PACKAGE, message_name) else {
        return Err(DocumentError::Schema(schema::SchemaError::missing_kind(
            message_name,
        )));
    };
    contract.check(kind, &doc, "", &[], &mut checker.unknown);
    let warnings = checker.finish(unknown)?;
    let value = if saved_response {
        match doc.get_mut("state") {
            Some(state) => message(state.take(), what, "state")?,
            None => pb::ControllerState::default(),
        }
    } else {
        message(doc, what, "")?
    };
    Ok(Parsed { value, warnings })
}

/// An RFC 3339 time as a wire timestamp.
pub fn parse_time(text: &str, what: &str) -> Result<pbjson_types::Timestamp, DocumentError> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text).map_err(|e| DocumentError::Shape {
        what: what.to_string(),
        detail: format!("{text:?} is not an RFC 3339 time: {e}"),
    })?;
    Ok(pbjson_types::Timestamp {
        seconds: parsed.timestamp(),
        // Always below 2e9 (leap seconds), so it fits.
        nanos: i32::try_from(parsed.timestamp_subsec_nanos()).unwrap_or(0),
    })
}

/// The current wall-clock time; only the CLI, the shell, reads a clock.
pub fn now() -> pbjson_types::Timestamp {
    let now = chrono::Utc::now();
    pbjson_types::Timestamp {
        seconds: now.timestamp(),
        nanos: i32::try_from(now.timestamp_subsec_nanos()).unwrap_or(0),
    }
}

/// A response as pretty proto3 JSON.
pub fn to_json<T: serde::Serialize>(message: &T) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(message)?;
    zulu_timestamps(&mut value);
    serde_json::to_string_pretty(&value)
}

/// Timestamp fields of the contract, by their JSON names.
const TIMESTAMP_FIELDS: &[&str] = &[
    "now",
    "creationTimestamp",
    "deletionTimestamp",
    "startTime",
    "completionTime",
    "lastProbeTime",
    "lastTransitionTime",
    "lastFailureTime",
    "startedAt",
    "finishedAt",
];

/// Writes UTC timestamps with `Z`, as proto3 JSON and Kubernetes do (the
/// pbjson serializer writes `+00:00`, which parsers accept but people trip on).
fn zulu_timestamps(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if TIMESTAMP_FIELDS.contains(&key.as_str())
                    && let Value::String(text) = field
                    && let Some(stripped) = text.strip_suffix("+00:00")
                {
                    *text = format!("{stripped}Z");
                } else {
                    zulu_timestamps(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(zulu_timestamps),
        _ => {}
    }
}

/// A response as YAML (the proto3 JSON form, rendered as YAML).
pub fn to_yaml<T: serde::Serialize>(message: &T) -> Result<String, serde_yaml::Error> {
    let mut value =
        serde_json::to_value(message).map_err(<serde_yaml::Error as serde::ser::Error>::custom)?;
    zulu_timestamps(&mut value);
    serde_yaml::to_string(&value)
}

#[cfg(test)]
mod tests;
