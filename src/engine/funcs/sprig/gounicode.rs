//! Go's `unicode` package predicates and simple case mappings, which the
//! string functions (Go's `strings`, goutils, xstrings) are built on.
//!
//! Hand-written because Rust's `char` methods differ from Go where templates
//! can see it: `char::to_uppercase` is the *full* mapping (`ß` → `SS`) while
//! Go uses the simple one (`ß` stays), Rust has no title case, and
//! `is_uppercase` is the `Uppercase` property where Go's `IsUpper` is the
//! `Lu` category. Categories come from `unicode-general-category`.

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// `unicode.IsUpper`
pub fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_uppercase();
    }
    get_general_category(c) == G::UppercaseLetter
}

/// `unicode.IsLower`
pub fn is_lower(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_lowercase();
    }
    get_general_category(c) == G::LowercaseLetter
}

/// `unicode.IsTitle`
pub fn is_title(c: char) -> bool {
    get_general_category(c) == G::TitlecaseLetter
}

/// `unicode.IsLetter`
pub fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
    )
}

/// `unicode.IsDigit`
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    get_general_category(c) == G::DecimalNumber
}

/// `unicode.IsNumber`
pub fn is_number(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::DecimalNumber | G::LetterNumber | G::OtherNumber
    )
}

/// `unicode.IsPunct`
pub fn is_punct(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// `unicode.IsSpace`: for Latin-1 `\t \n \v \f \r`, space, U+0085 and
/// U+00A0; beyond that the White_Space property, which is Rust's.
pub fn is_space(c: char) -> bool {
    match c as u32 {
        0x09..=0x0d | 0x20 | 0x85 | 0xa0 => true,
        0..=0xff => false,
        _ => c.is_whitespace(),
    }
}

pub use crate::gocompat::strconv::is_print;

/// `unicode.ToUpper`: the simple (one-to-one) uppercase mapping.
pub fn to_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        // Multi-character full mappings. Only the Greek letters with
        // ypogegrammeni have a simple mapping (to their title-case forms);
        // everything else (ß, ŉ, ligatures …) maps to itself.
        _ => greek_iota_subscript_title(c).unwrap_or(c),
    }
}

/// `unicode.ToLower`: the simple lowercase mapping.
pub fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        // U+0130 İ has the full mapping "i̇" but the simple mapping "i".
        _ if c == '\u{130}' => 'i',
        _ => c,
    }
}

/// `unicode.ToTitle`: the simple title-case mapping; equal to the
/// uppercase one except for the Latin digraphs (dž → ǅ).
pub fn to_title(c: char) -> char {
    match c as u32 {
        0x1c4..=0x1c6 => '\u{1c5}',
        0x1c7..=0x1c9 => '\u{1c8}',
        0x1ca..=0x1cc => '\u{1cb}',
        0x1f1..=0x1f3 => '\u{1f2}',
        // Georgian Mkhedruli has an uppercase (Mtavruli) form but is its
        // own title case.
        0x10d0..=0x10fa | 0x10fd..=0x10ff => c,
        _ => to_upper(c),
    }
}

fn greek_iota_subscript_title(c: char) -> Option<char> {
    let u = c as u32;
    let t = match u {
        0x1f80..=0x1faf if u & 0xf < 8 => u + 8,
        0x1f80..=0x1faf => u,
        0x1fb3 => 0x1fbc,
        0x1fc3 => 0x1fcc,
        0x1ff3 => 0x1ffc,
        0x1fbc | 0x1fcc | 0x1ffc => u,
        _ => return None,
    };
    char::from_u32(t)
}

/// Go's `strings.ToUpper`.
pub fn str_to_upper(s: &str) -> String {
    s.chars().map(to_upper).collect()
}

/// Go's `strings.ToLower`.
pub fn str_to_lower(s: &str) -> String {
    s.chars().map(to_lower).collect()
}

/// Go's `strings.TrimSpace`.
pub fn trim_space(s: &str) -> &str {
    s.trim_matches(is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_case_mapping() {
        assert_eq!(str_to_upper("straße"), "STRAßE");
        assert_eq!(str_to_lower("İ"), "i");
        assert_eq!(to_title('ǆ'), 'ǅ');
        assert_eq!(to_upper('ᾳ'), 'ᾼ');
        assert!(!is_upper('Ⓐ'));
        assert!(is_space('\u{85}'));
        assert!(!is_print('\u{a0}'));
    }
}
