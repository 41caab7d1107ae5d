//! `job-decider-load`: writes the load suite's request files (`gen`) and runs the
//! suite (`run`, behind `make load` and `make load-smoke`; see load/README.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use job_decider_load::requests::{self, SIZES};
use job_decider_load::{Error, client, hostile, run};

#[derive(Parser)]
#[command(about = "job-decider's load suite")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write DecideJob request files (binary protobuf) for Indexed and NonIndexed Jobs, both encodings.
    Gen {
        /// Where the files go.
        #[arg(long, default_value = "load/requests")]
        out: PathBuf,
        /// Pods per Job, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = SIZES)]
        sizes: Vec<usize>,
    },
    /// Run the suite: ghz against the pinned server, upstream's sync on the same files, the table and chart.
    Run(Box<run::Options>),
    /// Issue 22's hostile sequences against the server with the deploy's flags (`make hostile`).
    Hostile(Box<hostile::Options>),
    /// Send a request file's bytes to DecideJob CALLS times, one at a time; print the latencies as JSON.
    Client {
        /// The server, host:port or unix:///path.
        #[arg(long)]
        addr: String,
        /// A binary DecideJobRequest.
        #[arg(long)]
        file: PathBuf,
        /// Calls to make.
        #[arg(long, default_value_t = 10)]
        calls: u64,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Gen { out, sizes } => requests::write_all(&out, &sizes).map(|written| {
            for (case, bytes) in written {
                println!(
                    "{:>12} bytes  {}",
                    bytes,
                    out.join(case.file_name()).display()
                );
            }
        }),
        Command::Run(options) => run::run(&options),
        Command::Hostile(options) => hostile::run(&options),
        Command::Client { addr, file, calls } => std::fs::read(&file)
            .map_err(|e| Error::io(&file, e))
            .and_then(|body| client::run(&addr, body.into(), calls))
            .and_then(|l| {
                serde_json::to_string(&l)
                    .map(|line| println!("{line}"))
                    .map_err(|e| Error::tool("client", e.to_string()))
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("job-decider-load: {e}");
            ExitCode::FAILURE
        }
    }
}
