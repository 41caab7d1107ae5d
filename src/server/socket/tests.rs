use super::*;

#[test]
fn a_mode_beyond_rwx_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = bind_unix(&dir.path().join("s"), 0o4770).expect_err("setuid bit");
    assert!(matches!(err, SocketError::Mode { .. }), "{err}");
    assert!(err.is_bad_input());
}

#[test]
fn what_is_at_the_path_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = clear(dir.path()).expect_err("a directory");
    assert!(err.to_string().contains("is a directory"), "{err}");
    let file = dir.path().join("f");
    std::fs::write(&file, "x").expect("write");
    let err = clear(&file).expect_err("a file");
    assert!(err.to_string().contains("is a regular file"), "{err}");
    assert!(file.exists(), "the file is left alone");
}
