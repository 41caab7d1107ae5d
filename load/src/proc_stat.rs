//! A process's CPU time from `/proc/<pid>/stat`: the server's CPU per call is
//! the growth of its utime + stime over a ghz run, divided by the calls.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::Error;

/// utime + stime, in clock ticks, from the text of `/proc/<pid>/stat`.
///
/// The command name (field 2) is in parentheses and may hold spaces or `)`,
/// so fields are counted from the last `)`: state is then field 3, utime 14, stime 15.
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The CPU a running process has used so far, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Result<u64, Error> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(Path::new(&path), e))?;
    parse_cpu_ticks(&text)
        .ok_or_else(|| Error::tool("/proc", format!("{path}: no utime/stime in {text:?}")))
}

/// Clock ticks a second (`getconf CLK_TCK`), the unit of `/proc/<pid>/stat`'s times.
pub fn ticks_per_second() -> Result<u64, Error> {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .map_err(|e| Error::tool("getconf", e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| Error::tool("getconf", format!("CLK_TCK printed {text:?}")))
}

/// `ticks` clock ticks as a duration.
pub fn ticks_to_duration(ticks: u64, per_second: u64) -> Duration {
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_and_stime_are_counted_from_the_last_parenthesis() {
        // A command name with a space and a ')' in it; utime 1234, stime 56.
        let stat = "4242 (job )decider) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 56 0 0 20 0 3 0 100 1000 200";
        assert_eq!(parse_cpu_ticks(stat), Some(1290));
    }

    #[test]
    fn a_truncated_stat_line_is_not_read_as_zero() {
        assert_eq!(parse_cpu_ticks("4242 (x) S 1 2 3"), None);
        assert_eq!(parse_cpu_ticks("no parenthesis"), None);
    }

    #[test]
    fn this_process_has_a_readable_cpu_time() {
        let ticks = cpu_ticks(std::process::id());
        assert!(ticks.is_ok(), "{ticks:?}");
        let per_second = ticks_per_second().expect("getconf CLK_TCK");
        assert_eq!(
            ticks_to_duration(per_second, per_second),
            Duration::from_secs(1)
        );
    }
}
