use super::*;

#[test]
fn stat_fields_count_from_the_last_parenthesis() {
    // A command name with a space and a ')' must not shift the fields.
    let line =
        "42 (job) decider) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 12345 1000 200";
    assert_eq!(
        stat_fields(line),
        Some(StatFields {
            cpu_ticks: 325,
            start_ticks: 12345
        })
    );
    assert_eq!(stat_fields("garbage"), None);
}

#[test]
fn status_limits_and_boot_time_are_parsed() {
    let status = "Name:\tjob-decider\nVmSize:\t  20480 kB\nVmRSS:\t    1024 kB\nThreads:\t7\n";
    assert_eq!(status_kib(status, "VmRSS:"), Some(1024));
    assert_eq!(status_kib(status, "VmSize:"), Some(20480));
    assert_eq!(status_kib(status, "Threads:"), Some(7));
    assert_eq!(status_kib(status, "VmSwap:"), None);
    let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
    assert_eq!(max_open_files(limits), Some(1024));
    assert_eq!(
        boot_time("cpu  1 2 3\nbtime 1700000000\n"),
        Some(1_700_000_000)
    );
}

#[test]
fn render_skips_what_was_not_read() {
    let text = render(&Sample {
        open_fds: Some(9),
        ..Sample::default()
    });
    assert!(text.contains("# TYPE process_open_fds gauge\nprocess_open_fds 9\n"));
    assert!(!text.contains("process_cpu_seconds_total"));
}

#[cfg(target_os = "linux")]
#[test]
fn this_process_has_every_figure() {
    let s = sample();
    assert!(s.resident_bytes.is_some_and(|b| b > 0), "{s:?}");
    assert!(s.open_fds.is_some_and(|n| n >= 3), "{s:?}");
    assert!(s.threads.is_some_and(|n| n >= 1), "{s:?}");
    assert!(s.cpu_seconds.is_some() && s.max_fds.is_some(), "{s:?}");
    // Started after 2020 and not in the future.
    let started = s.start_time_seconds.unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    assert!(
        started > 1_577_836_800.0 && started <= now + 1.0,
        "{started}"
    );
}
