//! Every Job, Pod and JobSet the project ships (the vectors' requests and the
//! bundled examples) is strictly valid: each field is in the Kubernetes schema
//! of its kind, so the strict reader the CLI uses accepts them as they are.

use std::path::{Path, PathBuf};

use job_decider::documents;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("JSON")
}

#[test]
fn every_vector_job_and_pod_is_strictly_valid() {
    let mut checked = 0;
    for path in yaml_files(&root().join("tests/vectors")) {
        let text = std::fs::read_to_string(&path).expect("read");
        let vector: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
        let request = &vector["request"];
        let name = path.display().to_string();
        if let Some(job) = request.get("job") {
            documents::parse_job(&json(job), &format!("{name}: job"))
                .unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
        if let Some(pods) = request.get("pods") {
            documents::parse_pods(&json(pods), &format!("{name}: pods"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(checked > 100, "{checked} vectors");
}

#[test]
fn every_jobset_vector_is_strictly_valid() {
    let mut checked = 0;
    for path in yaml_files(&root().join("tests/vectors/jobset")) {
        let text = std::fs::read_to_string(&path).expect("read");
        let vector: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
        let request = &vector["request"];
        let name = path.display().to_string();
        if let Some(jobset) = request.get("jobSet") {
            documents::parse_jobset(&json(jobset), &format!("{name}: jobSet"))
                .unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
        if let Some(jobs) = request.get("jobs") {
            documents::parse_jobs(&json(jobs), &format!("{name}: jobs"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(checked > 10, "{checked} vectors");
}

#[test]
fn every_example_is_strictly_valid() {
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("read");
            let name = path.display().to_string();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let result = match stem {
                "job" => documents::parse_job(&text, &name).map(drop),
                "pods" => documents::parse_pods(&text, &name).map(drop),
                "jobs" => documents::parse_jobs(&text, &name).map(drop),
                "jobset" => documents::parse_jobset(&text, &name).map(drop),
                _ => continue,
            };
            result.unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} files");
}
