//! The `job-decider` binary: parses the command line and hands off to [`job_decider::cli`].

use clap::Parser;

/// jemalloc: a large call's freed pages go back to the system within about a second
/// (glibc's malloc keeps them; see the README's "Memory" section for the measurements).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`_RJEM_MALLOC_CONF` in the environment
/// overrides them): freed pages go back to the system at once (`dirty_decay_ms:0`),
/// not after a delay, and a background thread does the purging. A request is held
/// twice while tonic buffers it (the body layer's frames, tonic's copy); with any
/// delay those freed pages were still resident while the domain model was built
/// (2.7–3.3× the request at peak with 100 ms, 2.6× at once; README "Memory").
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals, unsafe_code)] // jemalloc reads this symbol by name.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 = &b"background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0\0"[0];

/// mimalloc, for comparison builds (`--no-default-features --features mimalloc`).
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    job_decider::cli::run(job_decider::cli::Cli::parse())
}
