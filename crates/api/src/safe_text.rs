//! The one escape for text that came from the input and is shown to a person:
//! in a terminal (the CLI's text output and error messages) and in the HTML/SVG
//! report. A name or message may carry terminal escape sequences (which can
//! rewrite the screen or the window title) or bidi overrides (which reorder
//! what is shown, so the text reads other than it is); both are written
//! visibly, as `\u{1b}`, instead.

use std::borrow::Cow;

/// Whether `c` is shown escaped: C0 controls other than newline and tab, DEL,
/// C1 controls, and the bidi marks, embeddings, overrides and isolates.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

/// `text` with every [`is_unsafe`] character written as `\u{..}` (its code in
/// hex); borrowed, unchanged, when there is none. Newlines and tabs are kept:
/// the caller's own lines are made of them.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests;
