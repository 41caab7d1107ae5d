//! Writes the fuzz targets' seed corpus from the test vectors: `fuzz-seeds <repo> <corpus dir>`.
//!
//! - `decide_job/`, `decide_jobset/`: each vector's request, protobuf-encoded (DecideJob requests
//!   also with their pods as LeanPods);
//! - `documents/`: each Job vector's Job and pods as JSON and as YAML, and the bundled examples;
//! - `index_set/`: every index list the vectors carry, after a 4-byte little-endian
//!   `completions` (the target's input format).
//!
//! The corpus is not checked in (megabytes that the vectors already hold); `make fuzz` writes it.

use std::fs;
use std::path::{Path, PathBuf};

use job_decider_api::pb;
use prost::Message;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

/// A vector's name and request, as JSON.
fn request(path: &Path) -> Result<(String, serde_json::Value)> {
    let doc: serde_json::Value = serde_yaml::from_str(&fs::read_to_string(path)?)?;
    let name = doc["name"].as_str().unwrap_or("vector").to_string();
    Ok((name, doc["request"].clone()))
}

/// Every string under a key naming an index list.
fn index_lists(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, v) in o {
                match v {
                    serde_json::Value::String(s)
                        if matches!(
                            k.as_str(),
                            "completedIndexes" | "failedIndexes" | "succeededIndexes"
                        ) =>
                    {
                        out.push(s.clone());
                    }
                    _ => index_lists(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| index_lists(v, out)),
        _ => {}
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    fs::create_dir_all(dir)?;
    fs::write(dir.join(name), bytes)?;
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, repo, out] = args.as_slice() else {
        return Err("usage: fuzz-seeds <repo> <corpus dir>".into());
    };
    let (repo, out) = (Path::new(repo), Path::new(out));
    let vectors = repo.join("tests/vectors");
    let mut lists = vec!["0,2-4,7".to_string(), "1-3,5".to_string(), String::new()];
    for path in yaml_files(&vectors)? {
        let (name, req) = request(&path)?;
        index_lists(&req, &mut lists);
        let message: pb::DecideJobRequest = serde_json::from_value(req.clone())?;
        write(&out.join("decide_job"), &name, &message.encode_to_vec())?;
        // The same request with its pods as LeanPods (the hand-written decoder's input).
        if let Ok(lean) = job_decider_api::lean::lean_request(message.clone()) {
            write(
                &out.join("decide_job"),
                &format!("{name}.lean"),
                &lean.encode_to_vec(),
            )?;
        }
        let docs = out.join("documents");
        write(
            &docs,
            &format!("{name}.job.json"),
            req["job"].to_string().as_bytes(),
        )?;
        write(
            &docs,
            &format!("{name}.job.yaml"),
            serde_yaml::to_string(&req["job"])?.as_bytes(),
        )?;
        if req["pods"].is_array() {
            write(
                &docs,
                &format!("{name}.pods.yaml"),
                serde_yaml::to_string(&req["pods"])?.as_bytes(),
            )?;
        }
    }
    for path in yaml_files(&vectors.join("jobset"))? {
        let (name, req) = request(&path)?;
        let message: pb::DecideJobSetRequest = serde_json::from_value(req.clone())?;
        write(&out.join("decide_jobset"), &name, &message.encode_to_vec())?;
        let jobset = serde_yaml::to_string(&req["jobSet"])?;
        write(
            &out.join("documents"),
            &format!("{name}.jobset.yaml"),
            jobset.as_bytes(),
        )?;
    }
    // Every file under examples/, at any depth (examples/simulate/ nests a directory per story).
    let examples = repo.join("examples");
    let mut dirs = vec![examples.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Some(relative) = path.strip_prefix(&examples)?.parent() else {
                continue;
            };
            if relative.as_os_str().is_empty() {
                continue; // examples/README.md and the like: not documents
            }
            let name = format!(
                "example-{}-{}",
                relative.to_string_lossy().replace('/', "-"),
                entry.file_name().to_string_lossy()
            );
            write(&out.join("documents"), &name, &fs::read(&path)?)?;
        }
    }
    lists.sort();
    lists.dedup();
    for (i, list) in lists.iter().enumerate() {
        for completions in [10_i32, 100_000, i32::MAX] {
            let mut bytes = completions.to_le_bytes().to_vec();
            bytes.extend_from_slice(list.as_bytes());
            write(
                &out.join("index_set"),
                &format!("{i}-{completions}"),
                &bytes,
            )?;
        }
    }
    Ok(())
}
