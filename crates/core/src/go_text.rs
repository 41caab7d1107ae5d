//! Go's text formats, for messages that must equal upstream's byte for byte:
//! `strconv.Quote` (`%q`) for plain strings and `encoding/json` for values.
//! Any text that must equal upstream's quotes through here (the core's validation,
//! index-set and JobSet webhook messages do), so copies cannot drift apart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;

/// Printable as Go's `unicode.IsPrint` sees it: letters, marks, numbers, punctuation, symbols.
static GO_PRINTABLE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[\p{L}\p{M}\p{N}\p{P}\p{S}]$").ok());

/// A string quoted as Go's `%q` (`strconv.Quote`) writes it, for upstream's exact messages.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            _ if c < ' ' || c == '\u{7F}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            _ if GO_PRINTABLE
                .as_ref()
                .is_none_or(|re| re.is_match(c.encode_utf8(&mut buf))) =>
            {
                out.push(c)
            }
            _ if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            _ => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// A string as Go's encoding/json writes it (HTML-safe escaping included).
pub(crate) fn json_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A string map as encoding/json writes it (keys in order).
pub(crate) fn string_map_json(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", json_quote(k), json_quote(v)))
        .collect();
    format!("{{{}}}", pairs.join(","))
}

/// A string list as encoding/json writes it.
pub(crate) fn string_list_json(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| json_quote(v)).collect();
    format!("[{}]", items.join(","))
}

/// An integer list as encoding/json writes it.
pub(crate) fn int_list_json(values: &[i32]) -> String {
    let items: Vec<String> = values.iter().map(i32::to_string).collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests;
