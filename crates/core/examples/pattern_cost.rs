//! What message patterns cost: build and search times of the bounded matcher, and the
//! reviewer's 0.4 MiB, 20-rule request as the regex crate (the matcher before it) and the
//! bounded matcher handle it.
//!
//! `cargo run --release -p job-decider-core --example pattern_cost -- PATTERN...` times each
//! pattern; with no pattern it runs the reviewer's request both ways. `NFA`, `DET`, `DFA`
//! (bytes) and `ACC` (0/1) try other limits.

use std::time::{Duration, Instant};

use job_decider_core::message_pattern::{BoundedPattern, Limits};

fn env(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The average of `n` runs of `f`.
fn timed<T>(n: u32, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut last = f();
    for _ in 1..n {
        last = f();
    }
    (start.elapsed() / n, last)
}

fn one_pattern(source: &str, limits: &Limits, message: &str) {
    let (build, built) = timed(10, || BoundedPattern::with_limits(source, limits));
    match built {
        Ok(p) => {
            let (search, _) = timed(100, || std::hint::black_box(p.is_match(message)));
            println!(
                "{source:.40}: build {build:?}, DFA {} bytes, 4 KiB search {search:?}",
                p.memory_usage()
            );
        }
        Err(e) => println!("{source:.40}: refused after {build:?}: {e}"),
    }
}

/// 20 rules of the reviewer's two patterns over 50 failed pods, each with a 4 KiB pod
/// message and a 4 KiB container message of `a`s (neither pattern matches, so every search
/// runs to the end): 0.4 MiB of messages.
fn reviewer_request() {
    let message = "a".repeat(4096);
    let sources: Vec<&str> = (0..20)
        .map(|i| {
            if i % 2 == 0 {
                "a(?s:.){200}b"
            } else {
                "a[ac]{3000}b"
            }
        })
        .collect();
    let texts = 50 * 2;
    // The matcher before: the regex crate with its 256 KiB compiled and lazy-DFA limits.
    let start = Instant::now();
    let mut compiled = Vec::new();
    for s in &sources {
        if let Ok(r) = regex::RegexBuilder::new(s)
            .size_limit(256 * 1024)
            .dfa_size_limit(256 * 1024)
            .build()
        {
            compiled.push(r);
        }
    }
    let mut hits = 0usize;
    for _ in 0..texts {
        for r in &compiled {
            hits += usize::from(r.is_match(&message));
        }
    }
    println!(
        "before (regex crate): {} of 20 patterns accepted, {} searches of 4 KiB, {:?} ({hits} hits)",
        compiled.len(),
        texts * compiled.len(),
        start.elapsed()
    );
    let start = Instant::now();
    let refused = sources
        .iter()
        .filter(|s| BoundedPattern::new(s).is_err())
        .count();
    println!(
        "after (bounded matcher): {refused} of 20 patterns refused when read, in {:?}; nothing searched",
        start.elapsed()
    );
}

fn main() {
    let limits = Limits {
        nfa_bytes: env("NFA", Limits::DEFAULT.nfa_bytes),
        determinize_bytes: env("DET", Limits::DEFAULT.determinize_bytes),
        dfa_bytes: env("DFA", Limits::DEFAULT.dfa_bytes),
        accelerate: env("ACC", usize::from(Limits::DEFAULT.accelerate)) == 1,
    };
    let message = "ab".repeat(2048);
    let sources: Vec<String> = std::env::args().skip(1).collect();
    if sources.is_empty() {
        reviewer_request();
    }
    for source in &sources {
        one_pattern(source, &limits, &message);
    }
}
