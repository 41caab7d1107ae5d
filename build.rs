//! Stamps the build for `job_decider_build_info`: the git revision (or
//! `JOB_DECIDER_REVISION` when set, as an image build without `.git` does;
//! "unknown" otherwise) and the rustc version.

use std::path::PathBuf;
use std::process::Command;

/// One line of a command's standard output, when it ran and succeeded.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=JOB_DECIDER_REVISION");
    let revision = match std::env::var("JOB_DECIDER_REVISION") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => {
            // Rebuild when HEAD moves: the files git keeps HEAD and its branch in.
            for path in ["HEAD", "packed-refs"] {
                watch(output("git", &["rev-parse", "--git-path", path]));
            }
            if let Some(branch) = output("git", &["symbolic-ref", "-q", "HEAD"]) {
                watch(output("git", &["rev-parse", "--git-path", &branch]));
            }
            output("git", &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    // "rustc 1.91.0 (f8297e351 2025-10-28)" -> "1.91.0".
    let rustc_version = output(&rustc, &["--version"])
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=JOB_DECIDER_REVISION={revision}");
    println!("cargo:rustc-env=JOB_DECIDER_RUSTC={rustc_version}");
}

/// Asks cargo to rerun this script when `path` changes, if it exists (a
/// missing path would make cargo rerun it on every build).
fn watch(path: Option<String>) {
    if let Some(path) = path.map(PathBuf::from)
        && path.exists()
    {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
