use super::*;

#[test]
fn the_overload_pushback_is_jittered_within_its_bounds() {
    let waits: Vec<Duration> = (0..1000).map(|_| overload_pushback()).collect();
    assert!(
        waits
            .iter()
            .all(|w| (OVERLOAD_PUSHBACK_MIN..=OVERLOAD_PUSHBACK_MAX).contains(w))
    );
    assert!(waits.iter().all(|w| w.subsec_nanos() % 1_000_000 == 0));
    let distinct: std::collections::HashSet<_> = waits.iter().collect();
    assert!(distinct.len() > 50, "{} distinct waits", distinct.len());
}
