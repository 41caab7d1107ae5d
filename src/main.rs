//! The `job-decider` binary: parses the command line and hands off to [`job_decider::cli`].

use clap::Parser;

/// jemalloc: a large call's freed pages go back to the system within about a second
/// (glibc's malloc keeps them; see the README's "Memory" section for the measurements).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`_RJEM_MALLOC_CONF` in the environment
/// overrides them). One arena: a request is decoded on a reactor thread and converted
/// on a blocking one, and the pages its encoded pods free must be reusable for the
/// domain model (per-thread arenas kept both: 3.0× the request at peak, not 2.6×).
/// A background thread hands freed pages back 100 ms after they fall idle,
/// skipping the muzzy stage, instead of at some later allocation.
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals, unsafe_code)] // jemalloc reads this symbol by name.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 =
    &b"narenas:1,background_thread:true,dirty_decay_ms:100,muzzy_decay_ms:0\0"[0];

/// mimalloc, for comparison builds (`--no-default-features --features mimalloc`).
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    job_decider::cli::run(job_decider::cli::Cli::parse())
}
