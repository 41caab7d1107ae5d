//! The `job-decider` binary: parses the command line and hands off to [`job_decider::cli`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    job_decider::cli::run(job_decider::cli::Cli::parse())
}
