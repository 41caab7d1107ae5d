//! The deploy's own flags: `serve`'s arguments and the memory limit of the
//! `job-decider` container in `deploy/base/decider-deployment.yaml`, read as
//! text (the manifest is the source of truth; nothing here restates a value).

use std::time::Duration;

use crate::Error;

/// What the hostile run starts the server with and checks against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployFlags {
    /// `serve`'s arguments after `serve`, as written in the manifest.
    pub args: Vec<String>,
    /// `--max-request-bytes-in-flight`, bytes.
    pub budget: u64,
    /// `--max-message-size`, bytes.
    pub max_message: u64,
    /// `--max-concurrent-requests`.
    pub slots: usize,
    /// The container's memory limit, bytes.
    pub memory_limit: u64,
}

impl DeployFlags {
    /// The arguments with the three listening addresses moved to loopback ports.
    pub fn loopback_args(&self, api: u16, metrics: u16, health: u16) -> Vec<String> {
        self.args
            .iter()
            .map(|a| match a.split_once('=') {
                Some(("--addr", _)) => format!("--addr=127.0.0.1:{api}"),
                Some(("--metrics-addr", _)) => format!("--metrics-addr=127.0.0.1:{metrics}"),
                Some(("--health-addr", _)) => format!("--health-addr=127.0.0.1:{health}"),
                _ => a.clone(),
            })
            .collect()
    }

    /// The value of `--flag=value` among the arguments.
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.args
            .iter()
            .find_map(|a| a.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
    }
}

/// A leading whole number and the unit written after it (`256MiB` → 256, `MiB`).
fn number_and_unit(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    Some((number.parse().ok()?, unit))
}

/// Bytes of a Kubernetes quantity or a `serve` size: `256MiB`, `1Gi`, `128MiB`, `512`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let (n, unit) = number_and_unit(text)?;
    let mult: u64 = match unit {
        "" | "B" => 1,
        "Ki" | "KiB" => 1 << 10,
        "Mi" | "MiB" => 1 << 20,
        "Gi" | "GiB" => 1 << 30,
        "K" | "KB" | "k" => 1_000,
        "M" | "MB" => 1_000_000,
        "G" | "GB" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// A `serve` duration: `30s`, `100ms`, `5m`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (n, unit) = number_and_unit(text)?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(60).map(Duration::from_secs),
        "h" => n.checked_mul(3600).map(Duration::from_secs),
        _ => None,
    }
}

/// The `job-decider` container's `serve` arguments and memory limit in a Deployment's text.
pub fn read_deployment(text: &str) -> Result<DeployFlags, Error> {
    let bad = |what: &str| Error::tool("deployment", what.to_string());
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "- name: job-decider")
        .ok_or_else(|| bad("no container named job-decider"))?;
    let rest = &lines[start..];
    let args_at = rest
        .iter()
        .position(|l| l.trim() == "args:")
        .ok_or_else(|| bad("the job-decider container has no args"))?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let args_indent = indent(rest[args_at]);
    let mut args = Vec::new();
    for line in &rest[args_at + 1..] {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if indent(line) < args_indent || !t.starts_with("- ") {
            break;
        }
        args.push(t.trim_start_matches("- ").trim_matches('"').to_string());
    }
    if args.first().map(String::as_str) != Some("serve") {
        return Err(bad(
            "the job-decider container's args do not start with serve",
        ));
    }
    args.remove(0);
    let limits_at = rest
        .iter()
        .position(|l| l.trim() == "limits:")
        .ok_or_else(|| bad("the job-decider container has no resource limits"))?;
    let memory_limit = rest[limits_at + 1..]
        .iter()
        .take_while(|l| indent(l) > indent(rest[limits_at]) || l.trim().starts_with('#'))
        .find_map(|l| l.trim().strip_prefix("memory:"))
        .and_then(|v| parse_bytes(v.trim().trim_matches('"')))
        .ok_or_else(|| bad("no memory limit"))?;
    let mut flags = DeployFlags {
        args,
        budget: 0,
        max_message: 0,
        slots: 0,
        memory_limit,
    };
    flags.budget = flags
        .flag("--max-request-bytes-in-flight")
        .and_then(parse_bytes)
        .ok_or_else(|| bad("no --max-request-bytes-in-flight"))?;
    flags.max_message = flags
        .flag("--max-message-size")
        .and_then(parse_bytes)
        .ok_or_else(|| bad("no --max-message-size"))?;
    flags.slots = flags
        .flag("--max-concurrent-requests")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no --max-concurrent-requests"))?;
    Ok(flags)
}

/// `serve`'s default for `--request-timeout` from its `--help` text (`[default: 30s]`).
pub fn default_from_help(help: &str, flag: &str) -> Option<String> {
    let at = help.find(&format!("{flag} "))?;
    let rest = &help[at..];
    let default = rest.find("[default: ")? + "[default: ".len();
    let end = rest[default..].find(']')?;
    Some(rest[default..default + end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_deployment_is_read() {
        let text = include_str!("../../../deploy/base/decider-deployment.yaml");
        let flags = read_deployment(text).expect("read");
        assert!(flags.args.iter().any(|a| a.starts_with("--health-addr=")));
        assert!(flags.budget >= flags.max_message, "{flags:?}");
        assert!(
            flags.slots > 0 && flags.memory_limit > flags.budget,
            "{flags:?}"
        );
        let moved = flags.loopback_args(1, 2, 3);
        assert!(
            moved.contains(&"--addr=127.0.0.1:1".to_string()),
            "{moved:?}"
        );
        assert!(moved.contains(&"--health-addr=127.0.0.1:3".to_string()));
        assert_eq!(moved.len(), flags.args.len());
    }

    #[test]
    fn sizes_and_durations_parse_as_serve_and_kubernetes_write_them() {
        assert_eq!(parse_bytes("256MiB"), Some(256 << 20));
        assert_eq!(parse_bytes("1Gi"), Some(1 << 30));
        assert_eq!(parse_bytes("12x"), None);
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(parse_duration("s"), None);
    }

    #[test]
    fn a_default_is_read_from_help_text() {
        let help = "      --request-timeout <REQUEST_TIMEOUT>\n          the decision [env: X] [default: 30s]\n      --other <O> [default: 1]";
        assert_eq!(
            default_from_help(help, "--request-timeout").as_deref(),
            Some("30s")
        );
        assert_eq!(default_from_help(help, "--missing"), None);
    }
}
