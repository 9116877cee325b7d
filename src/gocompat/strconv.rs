//! Go's `strconv` quoting (`Quote`, `QuoteRune`, `%q`) and
//! `unicode.IsPrint`, which decides what quoting leaves as it is.

use std::fmt::Write as _;

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the
/// ASCII space (by Unicode general category).
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !matches!(
        get_general_category(c),
        G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
    )
}

/// Appends `c` as it stands inside a Go literal quoted with `q`
/// (`strconv.appendEscapedRune`).
pub fn push_escaped(out: &mut String, c: char, q: char) {
    match c {
        c if c == q || c == '\\' => {
            out.push('\\');
            out.push(c);
        }
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if is_print(c) => out.push(c),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_bytes(s.as_bytes())
}

/// `strconv.Quote` of a byte string: bytes that are not UTF-8 are written
/// as `\xNN`.
pub fn quote_bytes(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_escaped(&mut out, c, '"');
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

/// `strconv.QuoteRune`: a single-quoted Go rune literal.
pub fn quote_rune(c: char) -> String {
    let mut s = String::from("'");
    push_escaped(&mut s, c, '\'');
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(
            quote("a\"b\\c\n\u{7}\u{0}é\u{200b}\u{1F600}"),
            "\"a\\\"b\\\\c\\n\\a\\x00é\\u200b😀\""
        );
        assert_eq!(quote_bytes(b"a\xffb"), "\"a\\xffb\"");
        assert_eq!(quote_rune('\''), "'\\''");
        assert_eq!(quote_rune('"'), "'\"'");
        assert!(is_print(' ') && !is_print('\u{a0}') && !is_print('\u{e000}'));
    }
}
