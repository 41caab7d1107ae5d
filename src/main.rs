//! The `job-decider` binary: parses the command line and hands off to [`job_decider::cli`].

use clap::Parser;

/// jemalloc: a large call's freed pages go back to the system within about a second
/// (glibc's malloc keeps them; see the README's "Memory" section for the measurements).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`_RJEM_MALLOC_CONF` in the environment
/// overrides them): freed pages go back to the system after 20 ms
/// (`dirty_decay_ms:20`), and a background thread does the purging. At once (0),
/// every large call faulted its memory in again: a 100,000-pod lean call cost
/// 150 ms of CPU, 86–97 ms with 20 ms. Longer delays keep freed pages resident
/// while the call goes on allocating: 100,000 Kubernetes-shaped pods peaked at
/// 2.3× the request with 0 or 20 ms, 2.5–2.7× with 50, 2.9–3.0× with 100 and
/// 3.1× with 300 (README, "The allocator").
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals, unsafe_code)] // jemalloc reads this symbol by name.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 = &b"background_thread:true,dirty_decay_ms:20,muzzy_decay_ms:0\0"[0];

/// mimalloc, for comparison builds (`--no-default-features --features mimalloc`).
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    job_decider::cli::run(job_decider::cli::Cli::parse())
}
