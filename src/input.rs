//! What every command reads and how it fails: the files (`-` is stdin, read
//! once), strictness about unknown fields, a Job written without a uid taken as
//! created, and [`CliError`] with the exit status it maps to. The commands
//! (`cli`, `simulate`, `report`) depend on this module; it depends on none of them.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::cluster::ClusterError;
use crate::documents::{self, UnknownFields};
use crate::manifest;
use job_decider_api::safe_text::escaped;
use job_decider_api::{ApiError, pb};

/// A failure of a subcommand, with the exit status it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The input is unusable (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// The program failed (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process's exit status for this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::BadInput(_) => ExitCode::from(2),
            CliError::Failed(_) => ExitCode::from(1),
        }
    }
}

impl From<documents::DocumentError> for CliError {
    fn from(err: documents::DocumentError) -> Self {
        match err {
            documents::DocumentError::Schema(_) => CliError::Failed(err.to_string()),
            _ => CliError::BadInput(err.to_string()),
        }
    }
}

impl From<ClusterError> for CliError {
    fn from(err: ClusterError) -> Self {
        if err.is_bad_input() {
            CliError::BadInput(err.to_string())
        } else {
            CliError::Failed(err.to_string())
        }
    }
}

impl From<ApiError> for CliError {
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::BadRequest {
                what, violations, ..
            } => {
                let lines: Vec<String> = violations.iter().map(|v| format!("  {v}")).collect();
                CliError::BadInput(format!("{what}:\n{}", lines.join("\n")))
            }
            other => CliError::Failed(other.to_string()),
        }
    }
}

/// Strict input, as `kubectl --validate=strict`: a field that is not in the
/// Kubernetes schema of its kind is an error naming its path, unless `--lenient`.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct Strictness {
    /// Warn about fields the Kubernetes schema does not have (typos, fields of
    /// another version), instead of rejecting the file.
    #[arg(long)]
    pub lenient: bool,
}

impl Strictness {
    /// What the document readers do with unknown fields.
    pub fn unknown_fields(self) -> UnknownFields {
        if self.lenient {
            UnknownFields::Warn
        } else {
            UnknownFields::Reject
        }
    }
}

/// A file's text; `-` is stdin.
pub fn read_file(path: &Path) -> Result<String, CliError> {
    if is_stdin(path) {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::BadInput(format!("stdin: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// `-` names stdin, as kubectl and curl spell it.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// What error messages call a file (`stdin` for `-`).
pub fn file_name(path: &Path) -> String {
    if is_stdin(path) {
        "stdin".to_string()
    } else {
        path.display().to_string()
    }
}

/// At most one of a command's files can be `-`: stdin can be read once. The
/// error names the second flag (`--pods: ...`).
pub fn one_stdin(files: &[(&str, Option<&Path>)]) -> Result<(), CliError> {
    let mut first: Option<&str> = None;
    for (flag, path) in files {
        if !path.is_some_and(is_stdin) {
            continue;
        }
        match first {
            None => first = Some(flag),
            Some(earlier) => {
                return Err(CliError::BadInput(format!(
                    "{flag}: - (stdin) is already {earlier}'s; only one of the files can be - (stdin)"
                )));
            }
        }
    }
    Ok(())
}

/// Prints a reader's warnings on stderr, where they do not mix with the output.
pub fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", escaped(warning));
    }
}

/// Reads a Job file (`-`: stdin) as every command does: strictly unless
/// `--lenient` (warnings on stderr), and, written without a uid, taken as the
/// API server would create it at `now` with a note on stderr (`manifest`);
/// `with_pods` adds to the note which pods are such a Job's.
pub fn read_job(
    path: &Path,
    strictness: Strictness,
    now: &pbjson_types::Timestamp,
    with_pods: bool,
) -> Result<pb::Job, CliError> {
    read_job_text(&read_file(path)?, path, strictness, now, with_pods, false)
}

/// [`read_job`] of a text already read from `path` (a file stdin gives can be read once);
/// `quiet` leaves out the note about a Job written without a uid (warnings stay).
pub fn read_job_text(
    text: &str,
    path: &Path,
    strictness: Strictness,
    now: &pbjson_types::Timestamp,
    with_pods: bool,
    quiet: bool,
) -> Result<pb::Job, CliError> {
    let read = documents::parse_job_with(text, &file_name(path), strictness.unknown_fields())?;
    warn(&read.warnings);
    let mut job = read.value;
    let note = as_created(&mut job, now, &file_name(path), with_pods);
    if let Some(note) = note.filter(|_| !quiet) {
        eprintln!("{}", escaped(&note));
    }
    Ok(job)
}

/// Validates a Job as the API server would (`job_decider_api::validate`, the
/// `validate` command's check): "valid", or every violation as bad input, the
/// file (or what `path` names) first.
pub fn validate_job(path: &Path, job: pb::Job, failure_policy: String) -> Result<String, CliError> {
    let response = job_decider_api::validate(pb::ValidateJobRequest {
        job: Some(job),
        failure_policy,
    })?;
    violations_report(path, &response.violations)
}

/// "valid", or every violation as bad input.
pub fn violations_report(
    path: &Path,
    violations: &[pb::FieldViolation],
) -> Result<String, CliError> {
    let name = file_name(path);
    if violations.is_empty() {
        return Ok(format!("{name}: valid\n"));
    }
    let lines: Vec<String> = violations
        .iter()
        .map(|v| format!("  {}", v.description))
        .collect();
    Err(CliError::BadInput(format!(
        "{name}: {} violation(s):\n{}",
        violations.len(),
        lines.join("\n")
    )))
}

/// Reads a pods file (`-`: stdin), strictly unless `--lenient` (warnings on stderr).
pub fn read_pods(path: &Path, strictness: Strictness) -> Result<Vec<pb::Pod>, CliError> {
    let read = documents::parse_pods_with(
        &read_file(path)?,
        &file_name(path),
        strictness.unknown_fields(),
    )?;
    warn(&read.warnings);
    Ok(read.value)
}

/// Reads the nodes of `--nodes` (any of the forms `parse_nodes_with` takes).
pub fn read_nodes(path: &Path, strictness: Strictness) -> Result<Vec<pb::Node>, CliError> {
    let read = documents::parse_nodes_with(
        &read_file(path)?,
        &file_name(path),
        strictness.unknown_fields(),
    )?;
    warn(&read.warnings);
    Ok(read.value)
}

/// A Job written without a uid, taken as the API server would create it at
/// `now`, with the note for stderr saying what was filled in (`manifest`).
fn as_created(
    job: &mut pb::Job,
    now: &pbjson_types::Timestamp,
    name: &str,
    pods: bool,
) -> Option<String> {
    let filled = manifest::as_created(job, now)?;
    let mut note = format!(
        "note: {name} has no metadata.uid, so it is taken as the API server would create it:"
    );
    for line in &filled {
        note.push_str("\n  ");
        note.push_str(line);
    }
    let uid = job
        .metadata
        .as_ref()
        .map(|m| m.uid.as_str())
        .unwrap_or_default();
    if pods && !uid.is_empty() {
        note.push_str(&format!(
            "\n  pods are this Job's only with an ownerReference to uid {uid}, or (orphans) the label {}={uid}; others are not its pods",
            manifest::CONTROLLER_UID_LABEL
        ));
    }
    Some(note)
}

/// The text of a `--failure-policy` file (`-`: stdin); empty without the flag.
/// The document is judged by the service, with the rest of the request.
pub fn read_failure_policy(path: Option<&Path>) -> Result<String, CliError> {
    match path {
        Some(path) => {
            let text = read_file(path)?;
            // An empty file would read as "no document": say so instead.
            if text.trim().is_empty() {
                return Err(CliError::BadInput(format!(
                    "--failure-policy {}: the file is empty",
                    file_name(path)
                )));
            }
            Ok(text)
        }
        None => Ok(String::new()),
    }
}
