//! Kubernetes documents (YAML or JSON, as `kubectl get -o yaml|json` prints
//! them) into wire messages, and wire messages back into JSON or YAML.
//!
//! No hand mapping: YAML becomes a JSON value, and the proto3 JSON mapping
//! (pbjson, unknown fields ignored) reads it, so a field the contract names is
//! read exactly as a gRPC client's JSON would be.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use job_decider_api::pb;

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
}

/// Every non-empty document of a YAML stream (or the one value of a JSON text).
fn documents(text: &str, what: &str) -> Result<Vec<Value>, DocumentError> {
    let syntax = |detail: String| DocumentError::Syntax {
        what: what.to_string(),
        detail,
    };
    // JSON is read by the JSON parser: exact numbers and JSON's own error positions.
    if text.trim_start().starts_with('{') || text.trim_start().starts_with('[') {
        let value: Value = serde_json::from_str(text).map_err(|e| syntax(e.to_string()))?;
        return Ok(vec![value]);
    }
    let mut values = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| syntax(e.to_string()))?;
        if !value.is_null() {
            values.push(value);
        }
    }
    Ok(values)
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

/// Reads a Job (one YAML or JSON document; `kind` Job or absent).
pub fn parse_job(text: &str, what: &str) -> Result<pb::Job, DocumentError> {
    parse_one(text, what, "Job")
}

/// Reads pods: a PodList, a List of Pods, a JSON array of Pods (`jq .items`), a single
/// Pod, or several YAML documents of those.
pub fn parse_pods(text: &str, what: &str) -> Result<Vec<pb::Pod>, DocumentError> {
    parse_objects(text, what, "Pod")
}

/// Reads Jobs: a JobList, a List of Jobs, a single Job, or several YAML documents of those.
pub fn parse_jobs(text: &str, what: &str) -> Result<Vec<pb::Job>, DocumentError> {
    parse_objects(text, what, "Job")
}

/// Reads a JobSet (one YAML or JSON document; `kind` JobSet or absent).
pub fn parse_jobset(text: &str, what: &str) -> Result<pb::JobSet, DocumentError> {
    parse_one(text, what, "JobSet")
}

/// Reads one object of `kind` (or with no kind) from a single document.
fn parse_one<T: DeserializeOwned>(text: &str, what: &str, kind: &str) -> Result<T, DocumentError> {
    let mut docs = documents(text, what)?;
    let shape = |detail: String| DocumentError::Shape {
        what: what.to_string(),
        detail,
    };
    if docs.len() != 1 {
        return Err(shape(format!(
            "expected one {kind}, found {} documents",
            docs.len()
        )));
    }
    let doc = docs.remove(0);
    match kind_of(&doc) {
        Some(k) if k != kind => Err(shape(format!("expected kind {kind}, found kind {k}"))),
        _ => message(doc, what, ""),
    }
}

/// Reads objects of `kind`: a `<kind>List`, a List, an array, a single object, or several
/// YAML documents of those.
fn parse_objects<T: DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &str,
) -> Result<Vec<T>, DocumentError> {
    let list_kind = format!("{kind}List");
    let mut objects = Vec::new();
    let docs = documents(text, what)?;
    let several = docs.len() > 1;
    for (d, doc) in docs.into_iter().enumerate() {
        // With several documents, paths say which one.
        let doc_prefix = if several {
            format!("[document {d}]")
        } else {
            String::new()
        };
        let join = |rest: &str| match (doc_prefix.is_empty(), rest.is_empty()) {
            (true, _) => rest.to_string(),
            (false, true) => doc_prefix.clone(),
            (false, false) => format!("{doc_prefix}.{rest}"),
        };
        // A list's items, and where they sit in the document ("items" or the top).
        let list = match (&doc, kind_of(&doc)) {
            (Value::Array(items), _) => Some((items.clone(), "")),
            (_, Some(k)) if k == list_kind || k == "List" => match doc.get("items") {
                Some(Value::Array(items)) => Some((items.clone(), "items")),
                Some(Value::Null) | None => Some((Vec::new(), "items")),
                Some(_) => {
                    return Err(DocumentError::Field {
                        what: what.to_string(),
                        field: join("items"),
                        detail: format!("must be a list of {kind}s"),
                    });
                }
            },
            _ => None,
        };
        if let Some((items, items_path)) = list {
            for (i, item) in items.into_iter().enumerate() {
                let prefix = join(&format!("{items_path}[{i}]"));
                match kind_of(&item) {
                    Some(k) if k != kind => {
                        return Err(DocumentError::Field {
                            what: what.to_string(),
                            field: format!("{prefix}.kind"),
                            detail: format!("expected {kind}, found {k}"),
                        });
                    }
                    _ => objects.push(message(item, what, &prefix)?),
                }
            }
            continue;
        }
        match kind_of(&doc) {
            Some(k) if k != kind => {
                return Err(DocumentError::Shape {
                    what: what.to_string(),
                    detail: format!("expected a {kind}, {list_kind} or List, found kind {k}"),
                });
            }
            _ => objects.push(message(doc, what, &join(""))?),
        }
    }
    Ok(objects)
}

/// Reads controller state as a DecideJobResponse prints it (`state`), or the whole response.
pub fn parse_state(text: &str, what: &str) -> Result<pb::ControllerState, DocumentError> {
    let mut docs = documents(text, what)?;
    if docs.len() != 1 {
        return Err(DocumentError::Shape {
            what: what.to_string(),
            detail: format!("expected one document, found {}", docs.len()),
        });
    }
    let doc = docs.remove(0);
    // A saved response holds the state under "state"; accept either.
    match doc.get("state") {
        Some(state) => message(state.clone(), what, "state"),
        None => message(doc, what, ""),
    }
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
mod tests {
    use super::*;

    #[test]
    fn pods_from_every_shape() {
        let list = r#"{"kind":"PodList","items":[{"metadata":{"name":"a","uid":"1"}},{"metadata":{"name":"b"}}]}"#;
        assert_eq!(parse_pods(list, "pods").map(|p| p.len()).ok(), Some(2));
        let docs = "kind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: b}\n";
        let pods = parse_pods(docs, "pods").expect("parsed");
        let names: Vec<_> = pods
            .iter()
            .map(|p| p.metadata.as_ref().map(|m| m.name.as_str()))
            .collect();
        assert_eq!(names, [Some("a"), Some("b")]);
        assert_eq!(parse_pods("", "pods").map(|p| p.len()).ok(), Some(0));
        // `jq .items` of a PodList: a bare array.
        let array = r#"[{"kind":"Pod","metadata":{"name":"a"}},{"metadata":{"name":"b"}}]"#;
        let pods = parse_pods(array, "pods").expect("an array");
        let names: Vec<_> = pods
            .iter()
            .map(|p| p.metadata.as_ref().map(|m| m.name.as_str()))
            .collect();
        assert_eq!(names, [Some("a"), Some("b")]);
        let err = parse_pods(r#"[{}, {"metadata":{"name":3}}]"#, "pods").expect_err("bad name");
        assert!(err.to_string().contains("pods: [1].metadata.name"), "{err}");
        let err = parse_pods(r#"[{"kind":"Job"}]"#, "pods").expect_err("a Job");
        assert!(err.to_string().contains("[0].kind: expected Pod"), "{err}");
    }

    #[test]
    fn field_errors_name_the_path() {
        let list = r#"{"kind":"PodList","items":[{},{"status":{"containerStatuses":[{"restartCount":"many"}]}}]}"#;
        let err = parse_pods(list, "pods.json").expect_err("bad restartCount");
        let DocumentError::Field { field, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(field, "items[1].status.containerStatuses[0].restartCount");
        let err = parse_job("kind: Service\n", "job.yaml").expect_err("wrong kind");
        assert!(err.to_string().contains("found kind Service"), "{err}");
        let err = parse_pods("kind: Pod\n---\nkind: Pod\nmetadata: {name: 3}\n", "p")
            .expect_err("bad name");
        assert!(
            err.to_string().contains("[document 1].metadata.name"),
            "{err}"
        );
    }

    #[test]
    fn times_and_state() {
        let t = parse_time("2024-05-01T10:00:00.5Z", "--now").expect("time");
        assert_eq!((t.seconds, t.nanos), (1_714_557_600, 500_000_000));
        assert!(parse_time("yesterday", "--now").is_err());
        let state = parse_state(
            r#"{"actions":[],"state":{"backoff":{"failuresAfterLastSuccess":2}}}"#,
            "state.json",
        )
        .expect("state");
        assert_eq!(
            state.backoff.map(|b| b.failures_after_last_success),
            Some(2)
        );
    }
}
