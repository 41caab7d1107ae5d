use super::*;

#[test]
fn controls_and_bidi_overrides_are_written_visibly() {
    assert!(matches!(escaped("plain\ttext\n"), Cow::Borrowed(_)));
    assert_eq!(escaped("a\u{1b}[31mred"), "a\\u{1b}[31mred");
    assert_eq!(escaped("x\u{202e}cod.exe"), "x\\u{202e}cod.exe");
    assert_eq!(
        escaped("\r\u{7f}\u{85}\u{9b}\u{2066}\u{200f}"),
        "\\u{d}\\u{7f}\\u{85}\\u{9b}\\u{2066}\\u{200f}"
    );
    assert_eq!(escaped("é ü 日本"), "é ü 日本");
}
