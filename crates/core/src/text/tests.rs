use super::*;

#[test]
fn human_durations_are_short() {
    for (secs, want) in [
        (0, "0ms"),
        (7, "7s"),
        (60, "1m"),
        (250, "4m10s"),
        (7380, "2h3m"),
        (7384, "2h3m"),
        (3 * 86_400 + 4 * 3600 + 5, "3d4h"),
        (833_709_562, "more than a year"),
    ] {
        assert_eq!(human_duration(Duration::from_secs(secs)), want, "{secs}");
    }
    assert_eq!(human_duration(Duration::from_millis(1500)), "1s");
    assert_eq!(human_duration(Duration::from_millis(300)), "300ms");
    assert_eq!(
        [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).join(" "),
        "1st 2nd 3rd 4th 11th 12th 13th 21st 22nd 101st"
    );
}
