use super::*;

#[test]
fn parses_what_people_write() {
    for (text, secs_millis) in [
        ("90s", 90_000),
        ("5m", 300_000),
        ("1h30m", 5_400_000),
        ("250ms", 250),
        ("2m5s", 125_000),
        ("1.5s", 1500),
        ("30", 30_000),
        ("0s", 0),
    ] {
        assert_eq!(
            parse_span(text),
            Ok(Span(secs_millis * 1_000_000)),
            "{text}"
        );
    }
    for bad in [
        "",
        "soon",
        "5d",
        "m",
        "-3s",
        "1h-2m",
        "999999999h",
        "600000000s600000000s",
    ] {
        assert!(parse_span(bad).is_err(), "{bad}");
    }
}

#[test]
fn prints_short_exact_forms() {
    assert_eq!(human(0), "0s");
    assert_eq!(human(65 * SECOND), "1m05s");
    assert_eq!(human(300 * SECOND), "5m");
    assert_eq!(human(3725 * SECOND), "1h02m05s");
    assert_eq!(human(3600 * SECOND), "1h00m");
    assert_eq!(human(1_250_000_000), "1.250s");
    assert_eq!(human(-2 * SECOND), "-2s");
    assert_eq!(human(1_500), "0.000001s");
}

#[test]
fn formats_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_748_858_280 * SECOND), "2025-06-02T09:58:00Z");
    assert_eq!(
        rfc3339(1_748_858_280 * SECOND + 5_000_000),
        "2025-06-02T09:58:00.005Z"
    );
    assert_eq!(clock(1_748_858_285 * SECOND), "09:58:05");
}
