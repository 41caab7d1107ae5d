//! The crate graph is the architecture: these tests fail when a dependency
//! crosses an edge that ARCHITECTURE.md says it must not.

use std::process::Command;

/// Every crate `package` depends on, directly or not (normal and build edges).
fn dependency_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "--edges",
            "normal,build",
        ])
        .args(["--package", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn core_depends_on_no_runtime_wire_or_clock_crate() {
    let tree = dependency_tree("job-decider-core");
    // The tree was really read: the core's own regex dependency is in it.
    assert!(
        tree.iter().any(|c| c == "regex"),
        "unexpected tree: {tree:?}"
    );
    let forbidden = [
        "tokio",
        "tonic",
        "prost",
        "hyper",
        "h2",
        "http",
        "tower",
        "serde_yaml",
        "chrono",
        "job-decider-api",
        "job-decider",
    ];
    let crossing: Vec<_> = tree
        .iter()
        .filter(|c| forbidden.contains(&c.as_str()))
        .collect();
    assert!(
        crossing.is_empty(),
        "job-decider-core depends on {crossing:?}"
    );
}

#[test]
fn api_does_not_depend_on_the_binary() {
    let tree = dependency_tree("job-decider-api");
    assert!(
        tree.iter().any(|c| c == "job-decider-core"),
        "unexpected tree: {tree:?}"
    );
    assert!(
        !tree.iter().any(|c| c == "job-decider"),
        "job-decider-api depends on the binary"
    );
}
