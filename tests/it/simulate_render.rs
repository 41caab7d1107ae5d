//! `job-decider simulate --html FILE --svg FILE`: the pictures written beside an
//! unchanged text or JSON output, one bar per attempt of the JSON timeline, and the
//! file flags' errors. (tools/browser-test.sh opens the same reports in Chromium.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_job-decider");

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/simulate")
        .join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run job-decider")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn html_and_svg_are_written_and_the_text_is_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ex = example("what-if-oom-and-drain");
    let (html, svg) = (dir.path().join("r.html"), dir.path().join("c.svg"));
    let (job, script) = (ex.join("job.yaml"), ex.join("script.yaml"));
    let out = run(&[
        "simulate",
        "--job",
        s(&job),
        "--script",
        s(&script),
        "--html",
        s(&html),
        "--svg",
        s(&svg),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        read(&ex.join("expected.txt"))
    );

    // One bar per attempt of the JSON timeline, in the page and in the image.
    let json = run(&[
        "simulate",
        "--job",
        s(&job),
        "--script",
        s(&script),
        "-o",
        "json",
    ]);
    let timeline: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let attempts = timeline["attempts"].as_array().expect("attempts").len();
    let (page, image) = (read(&html), read(&svg));
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(image.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
    for text in [&page, &image] {
        assert_eq!(text.matches("<rect class=\"bar ").count(), attempts);
    }
    assert!(page.contains("<tr><th>Result:</th><td>Complete (CompletionsReached)</td></tr>"));

    // -o json with the pictures: the JSON is the same.
    let again = run(&[
        "simulate",
        "--job",
        s(&job),
        "--script",
        s(&script),
        "-o",
        "json",
        "--svg",
        s(&svg),
    ]);
    assert_eq!(again.stdout, json.stdout);
}

#[test]
fn compare_writes_both_timelines_into_one_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ex = example("kep-3850-story1");
    let (html, svg) = (dir.path().join("r.html"), dir.path().join("c.svg"));
    let out = run(&[
        "simulate",
        "--job",
        s(&ex.join("job.yaml")),
        "--script",
        s(&ex.join("script.yaml")),
        "--compare",
        s(&ex.join("compare.yaml")),
        "--html",
        s(&html),
        "--svg",
        s(&svg),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        read(&ex.join("compare.expected.txt"))
    );
    for text in [read(&html), read(&svg)] {
        assert_eq!(text.matches("<g class=\"panel\"").count(), 2);
    }
    assert!(read(&html).contains("<tr class=\"differs\">"));
}

#[test]
fn pictures_to_stdout_are_bad_input_and_an_unwritable_file_a_failure() {
    let ex = example("kep-3850-story2");
    let (job, script) = (ex.join("job.yaml"), ex.join("script.yaml"));
    for flag in ["--html", "--svg"] {
        let out = run(&[
            "simulate",
            "--job",
            s(&job),
            "--script",
            s(&script),
            flag,
            "-",
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} -");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{flag} -: standard output carries the timeline")),
            "{err}"
        );
    }
    let out = run(&[
        "simulate",
        "--job",
        s(&job),
        "--script",
        s(&script),
        "--html",
        "/nonexistent-dir/r.html",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--html /nonexistent-dir/r.html"));
}

/// The renderers are pure, like the rest of the simulator crate: they name no file,
/// stream, network or clock API (the CLI writes the files, in src/report.rs).
#[test]
fn the_renderers_do_no_io() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/sim/src/render");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("crates/sim/src/render") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        files += 1;
        let text = read(&path);
        for banned in [
            "std::fs",
            "std::io",
            "std::net",
            "std::env",
            "SystemTime",
            "Instant",
            "println!",
            "eprintln!",
            "File::",
        ] {
            assert!(!text.contains(banned), "{} uses {banned}", path.display());
        }
    }
    assert!(
        files >= 4,
        "found {files} renderer files in {}",
        dir.display()
    );
}
