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
        "job-decider-k8s",
        "job-decider",
        // Kubernetes' client types and their serde stay in job-decider-k8s.
        "k8s-openapi",
        "serde",
        "serde_json",
        "jiff",
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

#[test]
fn k8s_bridge_sits_on_api_and_core_and_not_the_binary() {
    let tree = dependency_tree("job-decider-k8s");
    for needed in ["job-decider-core", "job-decider-api", "k8s-openapi"] {
        assert!(
            tree.iter().any(|c| c == needed),
            "job-decider-k8s should depend on {needed}: {tree:?}"
        );
    }
    assert!(
        !tree.iter().any(|c| c == "job-decider"),
        "job-decider-k8s depends on the binary"
    );
    // kube-rs comes with the `kube` feature (apply) only: gRPC-only users do not pull it.
    assert!(
        !tree.iter().any(|c| c == "kube" || c == "kube-client"),
        "job-decider-k8s pulls kube without its `kube` feature"
    );
}

#[test]
fn k8s_bridge_leaves_the_kubernetes_version_to_the_binary() {
    // k8s-openapi builds with exactly one `v1_*` feature: a library that enabled one
    // would break every controller that picks another. Only dev-dependencies may.
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/k8s/Cargo.toml"),
    )
    .expect("crates/k8s/Cargo.toml reads");
    let mut section = "";
    let mut seen = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section == "[dependencies]" && line.starts_with("k8s-openapi") {
            seen = true;
            assert!(
                !line.contains("v1_") && !line.contains("latest") && !line.contains("earliest"),
                "job-decider-k8s picks a Kubernetes version: {line}"
            );
        }
    }
    assert!(seen, "no k8s-openapi line in crates/k8s's [dependencies]");
}

/// The simulator is pure: it names no runtime, network or clock crate itself (the
/// API crate's tonic is in its tree, for the `pb` types only) and never the binary,
/// so the CLI can hand it any decider, in process or remote.
#[test]
fn sim_names_no_runtime_network_clock_or_binary() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["tree", "--offline", "--prefix", "none", "--depth", "1"])
        .args(["--edges", "normal", "--package", "job-decider-sim"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let direct: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        direct.iter().any(|c| c == "job-decider-api"),
        "unexpected tree: {direct:?}"
    );
    let forbidden = [
        "tokio",
        "tonic",
        "hyper",
        "h2",
        "tower",
        "chrono",
        "job-decider",
    ];
    let crossing: Vec<_> = direct
        .iter()
        .filter(|c| forbidden.contains(&c.as_str()))
        .collect();
    assert!(
        crossing.is_empty(),
        "job-decider-sim depends on {crossing:?}"
    );
}
