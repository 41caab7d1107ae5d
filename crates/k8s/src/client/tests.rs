use super::*;

#[test]
fn targets() {
    assert_eq!(
        parse_target("127.0.0.1:50051").unwrap(),
        Target::Host("127.0.0.1:50051".into())
    );
    assert_eq!(
        parse_target("dns:///jd.ns.svc:50051").unwrap(),
        Target::Dns("jd.ns.svc:50051".into())
    );
    assert_eq!(
        parse_target("unix:///run/jd.sock").unwrap(),
        Target::Unix("/run/jd.sock".into())
    );
    assert_eq!(
        parse_target("unix:jd.sock").unwrap(),
        Target::Unix("jd.sock".into())
    );
    for bad in [
        "unix://host/x",
        "unix:",
        "dns://8.8.8.8/jd:1",
        "http://x:1",
        "nohost",
        "x:port",
    ] {
        assert!(parse_target(bad).is_err(), "{bad}");
    }
}

#[test]
fn grpc_timeouts_round_trip() {
    for d in [
        Duration::from_millis(1),
        Duration::from_secs(10),
        Duration::from_secs(3600),
    ] {
        let text = grpc_timeout(d);
        let back = parse_grpc_timeout(text.to_str().unwrap()).unwrap();
        assert!(
            back <= d && d - back < Duration::from_millis(1),
            "{d:?} {text:?}"
        );
    }
    assert_eq!(parse_grpc_timeout("10S"), Some(Duration::from_secs(10)));
    assert_eq!(parse_grpc_timeout("x"), None);
}

#[test]
fn full_jitter_stays_within_the_backoff() {
    let waits: Vec<_> = (0..500)
        .map(|_| full_jitter(Duration::from_millis(100)))
        .collect();
    assert!(waits.iter().all(|w| *w <= Duration::from_millis(100)));
    assert!(waits.iter().any(|w| *w < Duration::from_millis(50)));
    assert!(waits.iter().any(|w| *w > Duration::from_millis(50)));
}
