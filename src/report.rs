//! `simulate --html FILE` and `--svg FILE`: the pictures of a timeline (drawn by
//! `job_decider_sim::render`, which does no I/O) written to their files.

use std::path::Path;

use crate::input::CliError;
use job_decider_sim::{Timeline, render};

/// Writes the HTML report and/or the SVG chart of `left` (or of `left` and the
/// compared timeline, named `(left_name, right_name, right)`), when asked.
pub fn write_pictures(
    html: Option<&Path>,
    svg: Option<&Path>,
    left: &Timeline,
    compared: Option<(&str, &str, &Timeline)>,
) -> Result<(), CliError> {
    for (flag, path) in [("--html", html), ("--svg", svg)] {
        if path.is_some_and(|p| p.as_os_str() == "-") {
            return Err(CliError::BadInput(format!(
                "{flag} -: standard output carries the timeline; give {flag} a file name"
            )));
        }
    }
    if let Some(path) = html {
        let page = match compared {
            None => render::html(left),
            Some((l, r, right)) => render::compare_html(l, left, r, right),
        };
        write(path, "--html", &page)?;
    }
    if let Some(path) = svg {
        let image = match compared {
            None => render::svg(left),
            Some((l, r, right)) => render::compare_svg(l, left, r, right),
        };
        write(path, "--svg", &image)?;
    }
    Ok(())
}

fn write(path: &Path, flag: &str, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::Failed(format!("{flag} {}: {e}", path.display())))
}
