//! Reading the shared vector files (`tests/vectors/**/<name>.yaml`): each holds
//! a `name`, a `description`, a `request` and its `expected` response in proto3
//! JSON written as YAML. Shared by the Job and the JobSet vector runners.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// One vector file, its request and response still as JSON values.
pub struct VectorDoc {
    /// The `name` field (equal to the file's stem).
    pub name: String,
    /// What the vector shows and where it comes from.
    pub description: String,
    /// The request, proto3 JSON.
    pub request: serde_json::Value,
    /// The expected response, proto3 JSON.
    pub expected: serde_json::Value,
}

/// The `.yaml` files directly in `tests/<dir>`, sorted.
pub fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// Reads one vector file.
pub fn load(path: &Path) -> Result<VectorDoc, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let doc: serde_json::Value = serde_yaml::from_str(&text).map_err(|e| format!("yaml: {e}"))?;
    Ok(VectorDoc {
        name: doc["name"].as_str().unwrap_or_default().to_string(),
        description: doc["description"].as_str().unwrap_or_default().to_string(),
        request: doc["request"].clone(),
        expected: doc["expected"].clone(),
    })
}

/// A file's name, for messages.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
