//! TEMPORARY measurement knobs (removed before the branch is done).
#![allow(missing_docs, clippy::unwrap_used)]
use std::sync::LazyLock;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub static INLINE_PODS: LazyLock<usize> = LazyLock::new(|| env("JD_INLINE_PODS", 32));
pub static DEFER_FREE: LazyLock<usize> = LazyLock::new(|| env("JD_DEFER_FREE", 1));
pub static SPLIT_PREFIX: LazyLock<usize> = LazyLock::new(|| env("JD_SPLIT_PREFIX", 1));
pub static CACHED_METRICS: LazyLock<usize> = LazyLock::new(|| env("JD_CACHED_METRICS", 1));
pub static SPAN: LazyLock<usize> = LazyLock::new(|| env("JD_SPAN", 1));
pub static TIMEOUT_CHECK: LazyLock<usize> = LazyLock::new(|| env("JD_TIMEOUT_CHECK", 1));
