use super::*;

#[test]
fn logs_are_coloured_only_on_a_terminal_without_no_color() {
    use std::ffi::OsStr;
    assert!(log_colour(true, None));
    assert!(log_colour(true, Some(OsStr::new(""))));
    assert!(!log_colour(true, Some(OsStr::new("1"))));
    assert!(!log_colour(false, None));
}

fn refused(config: ServerConfig) -> String {
    match check(&config) {
        Err(ServeError::Config(message)) => message,
        other => panic!("accepted: {other:?}"),
    }
}

#[test]
fn http2_sizes_outside_what_http2_allows_are_refused() {
    assert!(check(&ServerConfig::default()).is_ok());
    let frame = |size| ServerConfig {
        http2_max_frame_size: size,
        ..ServerConfig::default()
    };
    assert!(refused(frame((16 << 10) - 1)).contains("frame size"));
    assert!(refused(frame(1 << 24)).contains("frame size"));
    assert!(check(&frame((1 << 24) - 1)).is_ok());
    let stream = ServerConfig {
        http2_stream_window: 0,
        ..ServerConfig::default()
    };
    assert!(refused(stream).contains("stream window"));
    let connection = ServerConfig {
        http2_connection_window: 1 << 31,
        ..ServerConfig::default()
    };
    assert!(refused(connection).contains("connection window"));
}
