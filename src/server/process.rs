//! The standard `process_*` metrics (the names Prometheus client libraries
//! use), read from `/proc/self` at each scrape and rendered beside the
//! recorder's text. The `metrics` recorder has no process collector, and its
//! counters hold integers where CPU seconds need fractions.
//!
//! Linux only: elsewhere (or when `/proc` is missing) nothing is rendered.

use std::fmt::Write as _;

/// The names rendered, for tests and the dashboard's list of metrics.
pub const NAMES: [&str; 7] = [
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
    "process_threads",
];

/// Linux reports `/proc` times in USER_HZ ticks, which the kernel's ABI fixes
/// at 100 on every architecture Rust targets for Linux today.
const TICKS_PER_SECOND: f64 = 100.0;

/// What one read of `/proc/self` found; a field it could not read is `None`.
#[derive(Debug, Default, PartialEq)]
pub struct Sample {
    /// User plus system CPU time, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, in bytes.
    pub resident_bytes: Option<u64>,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors.
    pub max_fds: Option<u64>,
    /// The start time, in seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
    /// OS threads.
    pub threads: Option<u64>,
}

/// Reads this process's figures.
pub fn sample() -> Sample {
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let fields = stat.as_deref().and_then(stat_fields);
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| boot_time(&s));
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        // The directory handle being read is one of the entries: leave it out.
        .map(|dir| (dir.count() as u64).saturating_sub(1));
    Sample {
        cpu_seconds: fields
            .as_ref()
            .map(|f| f.cpu_ticks as f64 / TICKS_PER_SECOND),
        resident_bytes: status_kib(&status, "VmRSS:").map(|k| k * 1024),
        virtual_bytes: status_kib(&status, "VmSize:").map(|k| k * 1024),
        open_fds,
        max_fds: max_open_files(&limits),
        start_time_seconds: fields
            .as_ref()
            .zip(boot_time)
            .map(|(f, boot)| boot as f64 + f.start_ticks as f64 / TICKS_PER_SECOND),
        threads: status_kib(&status, "Threads:"),
    }
}

/// The fields of `/proc/self/stat` used here.
#[derive(Debug, PartialEq)]
struct StatFields {
    cpu_ticks: u64,
    start_ticks: u64,
}

/// utime + stime (fields 14, 15) and starttime (22) of a `/proc/<pid>/stat` line.
fn stat_fields(stat: &str) -> Option<StatFields> {
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: count fields from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field n is at index n - 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(StatFields {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
    })
}

/// The `btime` line of `/proc/stat`: boot time in seconds since the epoch.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The number of a `/proc/self/status` line such as `VmRSS:   1234 kB`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The soft limit of the `Max open files` line of `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The Prometheus text of `sample`: one family per figure it holds.
pub fn render(sample: &Sample) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, value: Option<String>| {
        if let Some(value) = value {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n\n"
            );
        }
    };
    family(
        NAMES[0],
        "counter",
        "Total user and system CPU time spent in seconds.",
        sample.cpu_seconds.map(|v| v.to_string()),
    );
    family(
        NAMES[1],
        "gauge",
        "Resident memory size in bytes.",
        sample.resident_bytes.map(|v| v.to_string()),
    );
    family(
        NAMES[2],
        "gauge",
        "Virtual memory size in bytes.",
        sample.virtual_bytes.map(|v| v.to_string()),
    );
    family(
        NAMES[3],
        "gauge",
        "Number of open file descriptors.",
        sample.open_fds.map(|v| v.to_string()),
    );
    family(
        NAMES[4],
        "gauge",
        "Maximum number of open file descriptors.",
        sample.max_fds.map(|v| v.to_string()),
    );
    family(
        NAMES[5],
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        sample.start_time_seconds.map(|v| v.to_string()),
    );
    family(
        NAMES[6],
        "gauge",
        "Number of OS threads in the process.",
        sample.threads.map(|v| v.to_string()),
    );
    out
}

#[cfg(test)]
mod tests;
