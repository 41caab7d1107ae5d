use super::*;

#[test]
fn unix_addresses_in_grpc_spellings() {
    let unix = |text: &str| match text.parse::<ListenAddr>() {
        Ok(ListenAddr::Unix(path)) => path,
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(unix("unix:///run/d.sock"), PathBuf::from("/run/d.sock"));
    assert_eq!(unix("unix:/run/d.sock"), PathBuf::from("/run/d.sock"));
    assert_eq!(unix("unix:d.sock"), PathBuf::from("d.sock"));
    assert_eq!(
        "127.0.0.1:50051".parse::<ListenAddr>(),
        Ok(ListenAddr::Tcp(SocketAddr::from(([127, 0, 0, 1], 50051))))
    );
}

#[test]
fn unix_addresses_without_a_path_or_with_a_host_are_refused() {
    for text in ["unix:", "unix://", "unix://host/run/d.sock", "unix:a\0b"] {
        let err = text.parse::<ListenAddr>().expect_err(text);
        assert!(err.contains("unix"), "{text}: {err}");
    }
    let err = "localhost:50051".parse::<ListenAddr>().expect_err("a name");
    assert!(err.contains("unix:///PATH"), "{err}");
}

#[test]
fn a_socket_address_prints_as_it_is_read() {
    for text in ["unix:///run/d.sock", "unix:d.sock", "[::1]:50051"] {
        let addr: ListenAddr = text.parse().expect(text);
        assert_eq!(addr.to_string(), text);
    }
}
