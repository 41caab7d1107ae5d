//! The `job-decider` binary: parses the command line and hands off to [`job_decider::cli`].

/// jemalloc: a large call's freed pages go back to the system within about a second
/// (glibc's malloc keeps them; docs/performance.md, "Memory", has the measurements).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`_RJEM_MALLOC_CONF` in the environment
/// overrides them): one arena, and freed pages back to the system after 20 ms
/// (`narenas:1,dirty_decay_ms:20`), purged by a background thread. Handed back at
/// once (0 ms), every large call faulted its memory in again: a 100,000-pod lean
/// call cost 150 ms of CPU against 86–97 ms. With a delay and an arena per thread,
/// a snapshot freed on one thread was not reused by the next call's threads:
/// five 100,000-pod calls in a row peaked at 3.5× a request; with one arena, 2.75×
/// (docs/performance.md, "The allocator").
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals, unsafe_code)] // jemalloc reads this symbol by name.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 =
    &b"background_thread:true,narenas:1,dirty_decay_ms:20,muzzy_decay_ms:0\0"[0];

/// mimalloc, for comparison builds (`--no-default-features --features mimalloc`).
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // As `kubectl-job_decider` the binary is a kubectl plugin (src/cluster.rs).
    job_decider::cli::run(job_decider::cli::parse_command_line())
}
