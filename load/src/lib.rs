//! job-decider's load suite: realistic DecideJob request files in both pod
//! encodings ([`requests`]), and the runner behind `make load` ([`run`]): ghz
//! against the release server pinned to one core, upstream's in-process
//! syncJob on the same files, then one table and one chart ([`report`]).

pub mod client;
pub mod ghz;
pub mod hostile;
pub mod proc_stat;
pub mod report;
pub mod requests;
pub mod run;

use std::path::{Path, PathBuf};

/// What can stop the generator or a load run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A generated pod has no lean form (a bug in the generator).
    #[error("{case}: pods[{index}]: {source}")]
    NotLean {
        /// The request file.
        case: String,
        /// The pod's position.
        index: usize,
        /// Why.
        source: job_decider_api::lean::NotLean,
    },
    /// A tool the run starts failed or printed what the run cannot read.
    #[error("{tool}: {detail}")]
    Tool {
        /// The tool (server, ghz, upstream timer).
        tool: String,
        /// What went wrong.
        detail: String,
    },
    /// A measurement came back with calls that did not answer OK.
    #[error("{what}: {detail}")]
    Failed {
        /// Which run.
        what: String,
        /// The status codes and errors ghz reported.
        detail: String,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A tool's failure.
    pub fn tool(tool: &str, detail: impl Into<String>) -> Self {
        Error::Tool {
            tool: tool.to_string(),
            detail: detail.into(),
        }
    }
}
