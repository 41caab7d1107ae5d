use super::*;

#[test]
fn value_rendering() {
    let quoted: &[(&str, &str)] = &[
        ("plain", r#""plain""#),
        ("q\"b\\", r#""q\"b\\""#),
        ("tab\tnl\n\u{1}\u{7f}", r#""tab\tnl\n\x01\x7f""#),
        ("é<&>", "\"é<&>\""),
        ("\u{a0}\u{200b}\u{85}", r#""\u00a0\u200b\u0085""#),
        ("\u{10ffff}", r#""\U0010ffff""#),
    ];
    for (raw, want) in quoted {
        assert_eq!(go_quote(raw), *want, "go_quote({raw:?})");
    }
    let json: &[(&str, &str)] = &[
        ("plain", r#""plain""#),
        ("q\"b\\", r#""q\"b\\""#),
        ("<&>\u{2028}", r#""\u003c\u0026\u003e\u2028""#),
        ("\u{8}\u{c}\u{1}é", r#""\b\f\u0001é""#),
    ];
    for (raw, want) in json {
        assert_eq!(json_quote(raw), *want, "json_quote({raw:?})");
    }
}
