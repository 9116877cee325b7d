//! Sprig's regular-expression functions (`regex.go`) with Go `regexp` (RE2)
//! semantics on top of the `regex` crate.
//!
//! Both engines are RE2-style with leftmost-first matching, so most patterns
//! mean the same. Go's syntax is translated where they differ: Go's `\d`,
//! `\w`, `\s` and `\b` are ASCII-only (the crate's are Unicode), Go has
//! `\Q…\E`, and inside a Go character class `[`, `&&`, `--` and `~~` are
//! literal. The iteration rules of `FindAll`, `Split` and `ReplaceAll`
//! (an empty match right after a match is skipped) are ported from Go.
//!
//! Known differences: a few constructs the crate accepts are errors in Go
//! (`\<`, `\b{start}`, repeat counts above 1000), and error texts for bad
//! patterns are mapped to Go's codes (`missing closing )`, …) but the quoted
//! fragment may differ from Go's for complex patterns.
//!
//! Most patterns are compiled with `regex-lite`, the same crate's small
//! engine (see [`Regex`]).

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::conv::string_list;
use super::strings::go_quote;
use super::{arg_int, arg_str, def};
use crate::engine::funcs::{FuncDef, FuncResult, Param};
use crate::engine::value::Value;

use Param::{Int, Str};

pub const FUNCS: &[FuncDef] = &[
    def("regexMatch", &[Str, Str], |_, a| {
        Ok(Value::Bool(
            compile(arg_str(a, 0)).is_ok_and(|re| re.is_match(arg_str(a, 1))),
        ))
    }),
    def("mustRegexMatch", &[Str, Str], |_, a| {
        Ok(Value::Bool(compile(arg_str(a, 0))?.is_match(arg_str(a, 1))))
    }),
    def("regexFindAll", &[Str, Str, Int], |_, a| {
        find_all(&*must_compile(arg_str(a, 0))?, a)
    }),
    def("mustRegexFindAll", &[Str, Str, Int], |_, a| {
        find_all(&*compile(arg_str(a, 0))?, a)
    }),
    def("regexFind", &[Str, Str], |_, a| {
        find(&*must_compile(arg_str(a, 0))?, arg_str(a, 1))
    }),
    def("mustRegexFind", &[Str, Str], |_, a| {
        find(&*compile(arg_str(a, 0))?, arg_str(a, 1))
    }),
    def("regexReplaceAll", &[Str, Str, Str], |env, a| {
        replace_all(
            &*must_compile(arg_str(a, 0))?,
            arg_str(a, 1),
            arg_str(a, 2),
            true,
            env.alloc_cap(),
        )
        .map(Value::string)
    }),
    def("mustRegexReplaceAll", &[Str, Str, Str], |env, a| {
        replace_all(
            &*compile(arg_str(a, 0))?,
            arg_str(a, 1),
            arg_str(a, 2),
            true,
            env.alloc_cap(),
        )
        .map(Value::string)
    }),
    def("regexReplaceAllLiteral", &[Str, Str, Str], |env, a| {
        replace_all(
            &*must_compile(arg_str(a, 0))?,
            arg_str(a, 1),
            arg_str(a, 2),
            false,
            env.alloc_cap(),
        )
        .map(Value::string)
    }),
    def("mustRegexReplaceAllLiteral", &[Str, Str, Str], |env, a| {
        replace_all(
            &*compile(arg_str(a, 0))?,
            arg_str(a, 1),
            arg_str(a, 2),
            false,
            env.alloc_cap(),
        )
        .map(Value::string)
    }),
    def("regexSplit", &[Str, Str, Int], |_, a| {
        Ok(split(
            &*must_compile(arg_str(a, 0))?,
            arg_str(a, 0),
            arg_str(a, 1),
            arg_int(a, 2),
        )
        .map_or_else(Value::nil_str_list, string_list))
    }),
    def("mustRegexSplit", &[Str, Str, Int], |_, a| {
        Ok(split(
            &*compile(arg_str(a, 0))?,
            arg_str(a, 0),
            arg_str(a, 1),
            arg_int(a, 2),
        )
        .map_or_else(Value::nil_str_list, string_list))
    }),
    def("regexQuoteMeta", &[Str], |_, a| {
        Ok(Value::string(quote_meta(arg_str(a, 0))))
    }),
];

/// A compiled pattern, by one of two engines with the same syntax and
/// matching rules (leftmost-first, Unicode scalar values).
///
/// `regex-lite` (a backtracker and a Pike VM, no automata built ahead)
/// compiles what charts use (`(-?[^a-z\d\-])+-?` for names, image tags,
/// versions) in microseconds; the `regex` crate spent 0.2–0.6 ms and a
/// 300 KB table on that one pattern, a few percent of rendering a bitnami
/// chart, to search strings of a few dozen bytes. On long texts the `regex`
/// crate's automata pay for themselves (`regex-lite` took 0.14 s, as long
/// as helm, for three searches of a 2 MB file, against 0.02 s), so it is
/// compiled too the first time the pattern meets a text longer than
/// [`LONG_TEXT`]. It alone takes what only it reads like Go: Unicode
/// classes (`\pL`) and flag groups (`(?i)` folds case across Unicode in
/// Go, in ASCII only in `regex-lite`; the translation's ASCII `\b` is
/// `(?-u:\b)`), and whatever `regex-lite` rejects (its size limits are
/// lower), so that errors read as before.
#[derive(Debug)]
pub enum Regex {
    Lite {
        re: regex_lite::Regex,
        pattern: Box<str>,
        /// The `regex` crate's compilation, made for the first long text;
        /// `None` inside if it rejects what `regex-lite` took.
        full: OnceCell<Option<regex::Regex>>,
    },
    Full(regex::Regex),
}

/// Whether `regex-lite` reads `pattern` as the `regex` crate does: no
/// Unicode classes, and every `(?` group non-capturing, named, or setting
/// only the flags `m`, `s` and `U` (not `i`, which folds case across
/// Unicode only in `regex`, nor the translation's `(?-u:\b)`). Anything
/// that merely looks like such a group (`\(?`) counts against it.
fn lite_syntax(pattern: &str) -> bool {
    if pattern.contains("\\p") || pattern.contains("\\P") {
        return false;
    }
    pattern.match_indices("(?").all(|(at, _)| {
        let rest = &pattern.as_bytes()[at + 2..];
        match rest.first() {
            Some(b':' | b'<') => true,
            Some(b'P') => rest.get(1) == Some(&b'<'),
            _ => {
                let flags = rest
                    .iter()
                    .take_while(|c| matches!(c, b'm' | b's' | b'U' | b'-'))
                    .count();
                flags > 0 && matches!(rest.get(flags), Some(b')' | b':'))
            }
        }
    })
}

/// Text length from which a search uses the `regex` crate's engine.
const LONG_TEXT: usize = 8 * 1024;

/// The engine one search runs on (see [`Regex`]).
#[derive(Clone, Copy)]
enum Engine<'r> {
    Lite(&'r regex_lite::Regex),
    Full(&'r regex::Regex),
}

/// One engine's capture-group positions, filled in by each search: what
/// `ReplaceAll` expands `$1` and `$name` from.
enum Captures<'r> {
    Lite(&'r regex_lite::Regex, regex_lite::CaptureLocations),
    Full(&'r regex::Regex, regex::CaptureLocations),
}

impl Regex {
    /// Compile a pattern already in the crates' syntax (see [`translate`]);
    /// `None` if it is invalid.
    fn new(pattern: &str) -> Option<Regex> {
        if lite_syntax(pattern)
            && let Ok(re) = regex_lite::Regex::new(pattern)
        {
            return Some(Regex::Lite {
                re,
                pattern: pattern.into(),
                full: OnceCell::new(),
            });
        }
        regex::Regex::new(pattern).ok().map(Regex::Full)
    }

    /// The engine for searches of `s`.
    fn engine(&self, s: &str) -> Engine<'_> {
        match self {
            Regex::Full(re) => Engine::Full(re),
            Regex::Lite { re, .. } if s.len() < LONG_TEXT => Engine::Lite(re),
            Regex::Lite { re, pattern, full } => full
                .get_or_init(|| regex::Regex::new(pattern).ok())
                .as_ref()
                .map_or(Engine::Lite(re), Engine::Full),
        }
    }

    pub fn is_match(&self, s: &str) -> bool {
        match self.engine(s) {
            Engine::Lite(re) => re.is_match(s),
            Engine::Full(re) => re.is_match(s),
        }
    }

    /// The span of the leftmost-first match starting at or after `start`
    /// (what comes before `start` still counts for `^` and `\b`).
    fn find_at(&self, s: &str, start: usize) -> Option<(usize, usize)> {
        match self.engine(s) {
            Engine::Lite(re) => re.find_at(s, start).map(|m| (m.start(), m.end())),
            Engine::Full(re) => re.find_at(s, start).map(|m| (m.start(), m.end())),
        }
    }

    /// Group positions for searches of `s`, on the engine for `s`.
    fn captures(&self, s: &str) -> Captures<'_> {
        match self.engine(s) {
            Engine::Lite(re) => Captures::Lite(re, re.capture_locations()),
            Engine::Full(re) => Captures::Full(re, re.capture_locations()),
        }
    }
}

impl Captures<'_> {
    /// The span of the leftmost-first match in `s` at or after `start`,
    /// with the groups' spans kept for [`Captures::get`].
    fn read_at(&mut self, s: &str, start: usize) -> Option<(usize, usize)> {
        match self {
            Captures::Lite(re, l) => re
                .captures_read_at(l, s, start)
                .map(|m| (m.start(), m.end())),
            Captures::Full(re, l) => re
                .captures_read_at(l, s, start)
                .map(|m| (m.start(), m.end())),
        }
    }

    fn get(&self, group: usize) -> Option<(usize, usize)> {
        match self {
            Captures::Lite(_, l) => l.get(group),
            Captures::Full(_, l) => l.get(group),
        }
    }

    /// The index of the group named `name`.
    fn group_index(&self, name: &str) -> Option<usize> {
        match self {
            Captures::Lite(re, _) => re.capture_names().position(|g| g == Some(name)),
            Captures::Full(re, _) => re.capture_names().position(|g| g == Some(name)),
        }
    }
}

/// Go's `regexp.Compile`, with Go-style error text. Compiled patterns are
/// cached per thread: charts call `regexReplaceAll` inside loops. The cache
/// hands out the same `Regex`, not clones: a clone of a `regex` crate
/// pattern starts with an empty pool of search caches, and building one
/// (the lazy DFA's tables) cost ten times a short search.
pub fn compile(expr: &str) -> Result<Rc<Regex>, String> {
    thread_local! {
        static CACHE: RefCell<HashMap<String, Rc<Regex>>> = RefCell::new(HashMap::new());
    }
    if let Some(re) = CACHE.with(|c| c.borrow().get(expr).cloned()) {
        return Ok(re);
    }
    let translated = translate(expr)?;
    let re = Rc::new(Regex::new(&translated).ok_or_else(|| go_error(expr, &translated))?);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 512 {
            c.clear();
        }
        c.insert(expr.to_string(), Rc::clone(&re));
    });
    Ok(re)
}

/// regexp's `quote`: backquoted when `strconv.CanBackquote` allows it.
fn quote(s: &str) -> String {
    let can_backquote = s
        .chars()
        .all(|c| c != '`' && c != '\u{feff}' && (c == '\t' || !c.is_control()));
    if can_backquote {
        format!("`{s}`")
    } else {
        go_quote(s)
    }
}

/// Go's `regexp.MustCompile`, whose panic text becomes the error.
fn must_compile(expr: &str) -> Result<Rc<Regex>, String> {
    compile(expr).map_err(|e| format!("regexp: Compile({}): {e}", quote(expr)))
}

fn err(code: &str, expr: &str) -> String {
    format!("error parsing regexp: {code}: `{expr}`")
}

/// Map a parse failure of the translated pattern to Go's error codes.
fn go_error(orig: &str, translated: &str) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let Err(e) = regex_syntax::ast::parse::Parser::new().parse(translated) else {
        // Parsed but not compiled: too big, or Unicode class issues.
        return err("expression too large", orig);
    };
    let span = e.span();
    let frag = translated
        .get(span.start.offset..span.end.offset)
        .unwrap_or(orig);
    match e.kind() {
        K::GroupUnclosed => err("missing closing )", orig),
        K::GroupUnopened => err("unexpected )", orig),
        K::ClassUnclosed => err(
            "missing closing ]",
            translated.get(span.start.offset..).unwrap_or(orig),
        ),
        K::ClassRangeInvalid => err("invalid character class range", frag),
        K::UnsupportedBackreference => err("invalid escape sequence", frag),
        K::EscapeUnrecognized
        | K::EscapeUnexpectedEof
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::EscapeHexEmpty => err("invalid escape sequence", frag),
        K::RepetitionMissing => {
            let at = span.start.offset;
            let op = translated
                .get(at..)
                .and_then(|r| r.chars().next())
                .map(String::from)
                .unwrap_or_default();
            err("missing argument to repetition operator", &op)
        }
        K::RepetitionCountInvalid
        | K::RepetitionCountUnclosed
        | K::RepetitionCountDecimalEmpty
        | K::DecimalEmpty
        | K::DecimalInvalid => err("invalid repeat count", frag),
        K::GroupNameDuplicate { .. } => err("duplicate capture group name", frag),
        K::GroupNameEmpty | K::GroupNameInvalid | K::GroupNameUnexpectedEof => {
            err("invalid named capture", frag)
        }
        K::FlagUnrecognized
        | K::FlagDanglingNegation
        | K::FlagRepeatedNegation { .. }
        | K::FlagUnexpectedEof
        | K::FlagDuplicate { .. } => err("invalid or unsupported Perl syntax", frag),
        _ => err("invalid or unsupported Perl syntax", frag),
    }
}

/// Rewrite Go RE2 syntax into the `regex` crate's.
fn translate(expr: &str) -> Result<String, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::with_capacity(expr.len() + 8);
    let mut i = 0;
    // Where the last repetition operator began (for Go's nested-repetition
    // error), if the previous token was one.
    let mut last_rep: Option<usize> = None;
    while i < chars.len() {
        let c = chars[i];
        let is_rep = matches!(c, '*' | '+' | '?') || c == '{' && is_repeat_count(&chars[i..]);
        if is_rep {
            let op_end = if c == '{' {
                i + chars[i..].iter().position(|&x| x == '}').unwrap_or(0)
            } else {
                i
            };
            if let Some(start) = last_rep {
                let frag: String = chars[start..=op_end].iter().collect();
                return Err(err("invalid nested repetition operator", &frag));
            }
            if c == '{' {
                // Go limits repeat counts to 1000.
                let body: String = chars[i + 1..op_end].iter().collect();
                if body
                    .split(',')
                    .any(|n| n.parse::<u64>().is_ok_and(|n| n > 1000))
                {
                    let frag: String = chars[i..=op_end].iter().collect();
                    return Err(err("invalid repeat count", &frag));
                }
            }
            let start = i;
            if c == '{' {
                while i < chars.len() && chars[i] != '}' {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            out.push(chars[i.min(chars.len() - 1)]);
            i += 1;
            if chars.get(i) == Some(&'?') {
                out.push('?');
                i += 1;
            }
            last_rep = Some(start);
            continue;
        }
        last_rep = None;
        match c {
            '[' => {
                i = translate_class(&chars, i, &mut out)?;
                continue;
            }
            '{' => out.push_str("\\{"),
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err(err("trailing backslash at end of expression", ""));
                };
                i += 1;
                match n {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str("[0-9A-Za-z_]"),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    's' => out.push_str("[\\t\\n\\f\\r ]"),
                    'S' => out.push_str("[^\\t\\n\\f\\r ]"),
                    'b' => out.push_str("(?-u:\\b)"),
                    'B' => out.push_str("(?-u:\\B)"),
                    '0'..='7' if octal_escape(&chars, &mut i, &mut out) => {}
                    'Q' => {
                        let rest: String = chars[i + 1..].iter().collect();
                        let (lit, consumed) = match rest.find("\\E") {
                            Some(end) => (&rest[..end], end + 2),
                            None => (rest.as_str(), rest.len()),
                        };
                        out.push_str(&regex::escape(lit));
                        i += 1 + rest[..consumed].chars().count();
                        continue;
                    }
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Translates the Go character class starting at `chars[start]` (`[`) as
/// Go's `parser.parseClass` reads it, into an explicit class of the
/// `regex` crate, and returns the index after its `]`. Go's rules differ
/// from the crate's: `-` after a class escape (`[\w-.]`), or first or last,
/// is a literal; a range needs single characters at both ends; `[`, `&&`,
/// `--` and `~~` mean nothing special; `\d`, `\w`, `\s` are ASCII. Every
/// literal is written as `\x{…}`, so nothing in the output can be read as
/// the crate's own class syntax.
fn translate_class(chars: &[char], start: usize, out: &mut String) -> Result<usize, String> {
    let whole = || chars[start..].iter().collect::<String>();
    let mut i = start + 1;
    let mut body = String::new();
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut first = true;
    loop {
        match chars.get(i) {
            Some(']') if !first => break,
            None => return Err(err("missing closing ]", &whole())),
            _ => {}
        }
        first = false;
        // POSIX `[:alpha:]`, `[:^alpha:]`.
        if chars.get(i) == Some(&'[') && chars.get(i + 1) == Some(&':') {
            let rest: String = chars[i..].iter().collect();
            if let Some(end) = rest[2..].find(":]") {
                let name = &rest[..end + 4];
                let bare = name[2..name.len() - 2].trim_start_matches('^');
                if !POSIX_CLASSES.contains(&bare) {
                    return Err(err("invalid character class range", name));
                }
                body.push_str(name);
                i += name.chars().count();
                continue;
            }
        }
        if chars.get(i) == Some(&'\\') {
            match chars.get(i + 1) {
                // Unicode classes `\pL`, `\p{Greek}`, `\P{^Greek}`.
                Some(&p @ ('p' | 'P')) => {
                    let (mut neg, name, len) = match chars.get(i + 2) {
                        Some('{') => {
                            let close = chars[i + 2..].iter().position(|&c| c == '}');
                            let Some(close) = close else {
                                let frag: String = chars[i..].iter().collect();
                                return Err(err("invalid character class range", &frag));
                            };
                            let name: String = chars[i + 3..i + 2 + close].iter().collect();
                            (p == 'P', name, close + 3)
                        }
                        Some(&c) => (p == 'P', c.to_string(), 3),
                        None => return Err(err("invalid escape sequence", &format!("\\{p}"))),
                    };
                    let name = match name.strip_prefix('^') {
                        Some(n) => {
                            neg = !neg;
                            n.to_string()
                        }
                        None => name,
                    };
                    // Go knows Unicode's categories and scripts (and `Any`);
                    // a name the crate does not know either is Go's error.
                    if regex_syntax::Parser::new()
                        .parse(&format!("\\p{{{name}}}"))
                        .is_err()
                    {
                        let frag: String = chars[i..i + len].iter().collect();
                        return Err(err("invalid character class range", &frag));
                    }
                    body.push_str(if neg { "\\P{" } else { "\\p{" });
                    body.push_str(&name);
                    body.push('}');
                    i += len;
                    continue;
                }
                // Perl classes, ASCII as in Go.
                Some(&c @ ('d' | 'D' | 'w' | 'W' | 's' | 'S')) => {
                    let set = match c.to_ascii_lowercase() {
                        'd' => "0-9",
                        'w' => "0-9A-Za-z_",
                        _ => "\\t\\n\\x{0C}\\r ",
                    };
                    if c.is_ascii_uppercase() {
                        body.push_str(&format!("[^{set}]"));
                    } else {
                        body.push_str(set);
                    }
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        // A single character or a simple range; `[a-]` is `a` or `-`.
        let range_start = i;
        let lo = class_char(chars, &mut i, &whole)?;
        let mut hi = lo;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&c| c != ']') {
            i += 1;
            hi = class_char(chars, &mut i, &whole)?;
            if hi < lo {
                let frag: String = chars[range_start..i].iter().collect();
                return Err(err("invalid character class range", &frag));
            }
        }
        body.push_str(&format!("\\x{{{:X}}}", lo as u32));
        if hi != lo {
            body.push_str(&format!("-\\x{{{:X}}}", hi as u32));
        }
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(&body);
    out.push(']');
    Ok(i + 1)
}

/// The POSIX class names Go knows (`[:name:]`).
const POSIX_CLASSES: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

/// Go's `parseClassChar`: one character of a class, escapes included
/// (`parseEscape`); `*i` moves past it.
fn class_char(chars: &[char], i: &mut usize, whole: &dyn Fn() -> String) -> Result<char, String> {
    let Some(&c) = chars.get(*i) else {
        return Err(err("missing closing ]", &whole()));
    };
    *i += 1;
    if c != '\\' {
        return Ok(c);
    }
    let Some(&n) = chars.get(*i) else {
        return Err(err("trailing backslash at end of expression", ""));
    };
    *i += 1;
    let bad = |len: usize, i: usize| {
        let frag: String = chars[i - len..i].iter().collect();
        err("invalid escape sequence", &frag)
    };
    Ok(match n {
        '1'..='7' if !chars.get(*i).is_some_and(|c| ('0'..='7').contains(c)) => {
            return Err(bad(2, *i));
        }
        '0'..='7' => {
            let mut r = n as u32 - '0' as u32;
            for _ in 1..3 {
                match chars.get(*i) {
                    Some(&d @ '0'..='7') => {
                        r = r * 8 + (d as u32 - '0' as u32);
                        *i += 1;
                    }
                    _ => break,
                }
            }
            char::from_u32(r).unwrap_or('\u{FFFD}')
        }
        // Go's `\x{…}` (any number of hex digits, at most U+10FFFF) or
        // `\xHH`; the error names what was read up to the bad character.
        'x' => {
            let esc = *i - 2;
            let fail = |end: usize| {
                let frag: String = chars[esc..end.min(chars.len())].iter().collect();
                err("invalid escape sequence", &frag)
            };
            let hex = |c: Option<&char>| c.and_then(|c| c.to_digit(16));
            if chars.get(*i) == Some(&'{') {
                *i += 1;
                let mut r: u32 = 0;
                let mut n = 0;
                loop {
                    let Some(&c) = chars.get(*i) else {
                        return Err(fail(*i));
                    };
                    *i += 1;
                    if c == '}' {
                        break;
                    }
                    let Some(v) = hex(Some(&c)) else {
                        return Err(fail(*i));
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(fail(*i));
                    }
                    n += 1;
                }
                if n == 0 {
                    return Err(fail(*i));
                }
                char::from_u32(r).ok_or_else(|| fail(*i))?
            } else {
                let (x, y) = (hex(chars.get(*i)), hex(chars.get(*i + 1)));
                *i = (*i + 2).min(chars.len());
                match (x, y) {
                    (Some(x), Some(y)) => char::from_u32(x * 16 + y).ok_or_else(|| fail(*i))?,
                    _ => return Err(fail(*i)),
                }
            }
        }
        'a' => '\u{7}',
        'f' => '\u{C}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\u{B}',
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => c,
        _ => return Err(bad(2, *i)),
    })
}

/// Go's octal escapes: `\0`, `\0NN`, `\NNN` (a lone `\1`…`\7` is a
/// backreference, which Go rejects). `chars[*i]` is the first digit; on
/// success the escape is written as `\x{…}` and `*i` left on its last digit.
fn octal_escape(chars: &[char], i: &mut usize, out: &mut String) -> bool {
    let first = chars[*i];
    let is_oct = |c: Option<&char>| c.is_some_and(|c| ('0'..='7').contains(c));
    if first != '0' && !is_oct(chars.get(*i + 1)) {
        return false;
    }
    let mut r = first as u32 - '0' as u32;
    for _ in 1..3 {
        if !is_oct(chars.get(*i + 1)) {
            break;
        }
        *i += 1;
        r = r * 8 + (chars[*i] as u32 - '0' as u32);
    }
    out.push_str(&format!("\\x{{{r:x}}}"));
    true
}

/// Whether `{…` starts a valid Go repeat count `{n}`, `{n,}`, `{n,m}`;
/// otherwise Go takes the brace literally.
fn is_repeat_count(s: &[char]) -> bool {
    let Some(end) = s.iter().position(|&c| c == '}') else {
        return false;
    };
    let body: String = s[1..end].iter().collect();
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body.as_str(), None),
    };
    !lo.is_empty()
        && lo.bytes().all(|b| b.is_ascii_digit())
        && hi.is_none_or(|h| h.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `Regexp.allMatches` iteration: match spans, skipping an empty match
/// that abuts the previous match.
fn all_matches(re: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let limit = if n < 0 { s.len() as i64 + 1 } else { n };
    let mut out = Vec::new();
    let (mut pos, mut prev_end): (usize, Option<usize>) = (0, None);
    while (out.len() as i64) < limit && pos <= s.len() {
        let Some((start, end)) = re.find_at(s, pos) else {
            break;
        };
        let mut accept = true;
        if end == pos {
            if Some(start) == prev_end {
                accept = false;
            }
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
        } else {
            pos = end;
        }
        prev_end = Some(end);
        if accept {
            out.push((start, end));
        }
    }
    out
}

fn find_all(re: &Regex, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 1);
    let n = arg_int(a, 2);
    let matches = if n == 0 {
        Vec::new()
    } else {
        all_matches(re, s, n)
    };
    // Go's FindAllString returns a nil slice when nothing matches.
    if matches.is_empty() {
        return Ok(Value::nil_str_list());
    }
    Ok(string_list(
        matches.into_iter().map(|(b, e)| s[b..e].to_string()),
    ))
}

fn find(re: &Regex, s: &str) -> FuncResult {
    Ok(Value::str(re.find_at(s, 0).map_or("", |(b, e)| &s[b..e])))
}

/// Go's `Regexp.Split`.
/// `None` for the nil slice Go returns for a count of 0.
fn split(re: &Regex, expr: &str, s: &str, n: i64) -> Option<Vec<String>> {
    if n == 0 {
        return None;
    }
    if !expr.is_empty() && s.is_empty() {
        return Some(vec![String::new()]);
    }
    let matches = all_matches(re, s, n);
    let mut out = Vec::new();
    let (mut beg, mut end) = (0usize, 0usize);
    for (ms, me) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = ms;
        if me != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = me;
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    Some(out)
}

/// Go's `Regexp.ReplaceAllString` (`expand`) / `ReplaceAllLiteralString`.
/// A result growing past `cap` bytes (the render's output limit) is an
/// error: an empty match repeats the replacement after every character.
fn replace_all(
    re: &Regex,
    src: &str,
    repl: &str,
    expand: bool,
    cap: u64,
) -> Result<String, String> {
    let mut buf = String::new();
    let mut last_end = 0usize;
    let mut search = 0usize;
    let mut caps = re.captures(src);
    while search <= src.len() {
        let Some((ms, me)) = caps.read_at(src, search) else {
            break;
        };
        buf.push_str(&src[last_end..ms]);
        if me > last_end || ms == 0 {
            if expand {
                go_expand(&mut buf, repl, src, &caps);
            } else {
                buf.push_str(repl);
            }
            if buf.len() as u64 > cap {
                return Err(crate::engine::LimitHit::Output(cap).to_string());
            }
        }
        last_end = me;
        let width = src[search..].chars().next().map_or(1, char::len_utf8);
        if search + width > me {
            search += width;
        } else if search + 1 > me {
            search += 1;
        } else {
            search = me;
        }
    }
    buf.push_str(&src[last_end.min(src.len())..]);
    Ok(buf)
}

/// Go's `Regexp.expand`: `$1`, `$name`, `${name}`, `$$`; a malformed
/// reference is copied literally and an unknown group expands to nothing.
fn go_expand(dst: &mut String, template: &str, src: &str, caps: &Captures) {
    let mut t = template;
    while let Some(at) = t.find('$') {
        dst.push_str(&t[..at]);
        t = &t[at + 1..];
        if let Some(rest) = t.strip_prefix('$') {
            dst.push('$');
            t = rest;
            continue;
        }
        let Some((name, num, rest)) = extract(t) else {
            dst.push('$');
            continue;
        };
        t = rest;
        let group = match num {
            Some(n) => Some(n),
            None => caps.group_index(name),
        };
        if let Some((b, e)) = group.and_then(|g| caps.get(g)) {
            dst.push_str(&src[b..e]);
        }
    }
    dst.push_str(t);
}

/// Go's `extract`: the group reference at the start of `s` (after `$`):
/// its name, its number if it is one, and the rest of the template.
fn extract(s: &str) -> Option<(&str, Option<usize>, &str)> {
    let (brace, body) = match s.strip_prefix('{') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let len: usize = body
        .chars()
        .take_while(|&c| {
            super::gounicode::is_letter(c) || super::gounicode::is_digit(c) || c == '_'
        })
        .map(char::len_utf8)
        .sum();
    if len == 0 {
        return None;
    }
    let name = &body[..len];
    let mut rest = &body[len..];
    if brace {
        rest = rest.strip_prefix('}')?;
    }
    let mut num: Option<usize> = Some(0);
    for c in name.bytes() {
        num = match num {
            Some(n) if c.is_ascii_digit() && n < 100_000_000 => {
                Some(n * 10 + usize::from(c - b'0'))
            }
            _ => None,
        };
    }
    if name.starts_with('0') && name.len() > 1 {
        num = None;
    }
    Some((name, num, rest))
}

/// Go's `regexp.QuoteMeta`.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{err, i, s, v};

    #[test]
    fn matching_is_ascii_like_go() {
        assert_eq!(v("regexMatch", &[s("^\\d+$"), s("123")]), "true");
        assert_eq!(v("regexMatch", &[s("^\\d+$"), s("١٢٣")]), "false");
        assert_eq!(v("regexMatch", &[s("\\w+"), s("é")]), "false");
        assert_eq!(v("regexMatch", &[s("("), s("x")]), "false");
        assert_eq!(v("regexMatch", &[s("[[]"), s("[")]), "true");
        assert_eq!(v("regexMatch", &[s("\\Qa.b\\E"), s("a.b")]), "true");
        assert_eq!(v("regexMatch", &[s("x{"), s("x{")]), "true");
        assert_eq!(v("regexMatch", &[s("^\\101\\0$"), s("A\0")]), "true");
        assert_eq!(v("regexMatch", &[s("[\\060-\\071]"), s("5")]), "true");
        assert_eq!(
            err("mustRegexMatch", &[s("\\1"), s("x")]),
            "error parsing regexp: invalid escape sequence: `\\1`"
        );
    }

    #[test]
    fn find_replace_split() {
        assert_eq!(v("regexFindAll", &[s("a*"), s("baaab"), i(-1)]), "[ aaa ]");
        assert_eq!(v("regexFindAll", &[s("[0-9]"), s("a1b2c3"), i(2)]), "[1 2]");
        assert_eq!(v("regexFind", &[s("b+"), s("abbbc")]), "bbb");
        assert_eq!(
            v(
                "regexReplaceAll",
                &[s("a(x*)b"), s("-ab-axxb-"), s("${1}W")]
            ),
            "-W-xxW-"
        );
        assert_eq!(
            v("regexReplaceAll", &[s("a*"), s("baaac"), s("X")]),
            "XbXcX"
        );
        assert_eq!(
            v(
                "regexReplaceAllLiteral",
                &[s("a(x*)b"), s("-ab-axxb-"), s("$1")]
            ),
            "-$1-$1-"
        );
        assert_eq!(v("regexSplit", &[s("z+"), s("pizza"), i(-1)]), "[pi a]");
        assert_eq!(v("regexSplit", &[s(""), s("abc"), i(-1)]), "[a b c]");
        assert_eq!(v("regexSplit", &[s("a"), s("banana"), i(2)]), "[b nana]");
        assert_eq!(v("regexQuoteMeta", &[s("1.5-2.0?")]), "1\\.5-2\\.0\\?");
    }

    #[test]
    fn errors_like_go() {
        assert_eq!(
            err("mustRegexMatch", &[s("("), s("x")]),
            "error parsing regexp: missing closing ): `(`"
        );
        assert_eq!(
            err("regexFind", &[s("a**"), s("x")]),
            "regexp: Compile(`a**`): error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("x{2}{3}"), s("x")]),
            "error parsing regexp: invalid nested repetition operator: `{2}{3}`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("a{1001}"), s("x")]),
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("(?=x)"), s("x")]),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("[z-a]"), s("x")]),
            "error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(v("mustRegexFind", &[s("^*"), s("x")]), "");
        assert_eq!(
            err("mustRegexFind", &[s("[a"), s("x")]),
            "error parsing regexp: missing closing ]: `[a`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("\\q"), s("x")]),
            "error parsing regexp: invalid escape sequence: `\\q`"
        );
        assert_eq!(
            err("mustRegexFind", &[s("*"), s("x")]),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
    }

    /// Patterns charts use compile with `regex-lite`, and the two engines
    /// find the same matches and groups at every start position (what the
    /// Go-style iteration of `FindAll`, `Split` and `ReplaceAll` asks).
    #[test]
    fn both_engines_match_alike() {
        use super::{Regex, translate};
        let charts = [
            r"(-?[^a-z\d\-])+-?",
            r"{(v[0-9])*[^}]*}}$",
            r"-r\d+$|sha256:",
            r"^([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$",
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            r"\W",
            r"[[:alpha:]]+|\s+",
            // vault
            r#"(?m)^(?:[^#/\n]|/[^/])*autopilot_redundancy_zone\s*=\s*"VAULT_REDUNDANCY_ZONE""#,
            r"(?m)^\s*disable_mlock\s*=\s*(true|false)",
            r"\$(?:__(?:env|file|vault))?{[^}]+}",
            r"(?P<n>[a-z]+)-(\d+)",
            r"(?s:a.b)(?U)c+",
        ];
        for p in charts {
            let t = translate(p).unwrap();
            assert!(matches!(Regex::new(&t), Some(Regex::Lite { .. })), "{p}");
        }
        // Case folding, Unicode classes and the ASCII word boundary stay
        // with the `regex` crate.
        for p in [r"(?i)straße", r"\pL+", r"\bword\b", r"(?im)^a", r"\(?x"] {
            let t = translate(p).unwrap();
            assert!(matches!(Regex::new(&t), Some(Regex::Full(_))), "{p}");
        }
        let others = [
            "",
            "a*",
            "x*?y",
            "(a|ab)(c|bcd)(d*)",
            "é+|ü",
            r"\Qa.b\E",
            "^$",
            ".",
            "(?P<n>[a-z]+)-(\\d+)",
            "$",
            "[^x]",
            r"a{2,3}",
            r"(a*)+",
        ];
        let hays = [
            "",
            "abc",
            "My-Release_Name",
            "v1.2.3-r4",
            "sha256:abcd",
            "héllo wörld ü",
            "a-b--c",
            "{v1}}",
            "x\ny",
            "1.2.3-alpha.1+build.5",
            "abcd",
            "aa-12 foo",
            "xxy",
            "disable_mlock = true\n# autopilot_redundancy_zone = \"VAULT_REDUNDANCY_ZONE\"\n  autopilot_redundancy_zone = \"VAULT_REDUNDANCY_ZONE\"\n",
            "x: ${__env:HOME} ${y}",
            "a\nbccc",
        ];
        for p in charts.iter().chain(&others) {
            let t = translate(p).unwrap();
            let lite = regex_lite::Regex::new(&t).unwrap();
            let full = regex::Regex::new(&t).unwrap();
            let (mut ll, mut fl) = (lite.capture_locations(), full.capture_locations());
            for h in hays {
                for start in (0..=h.len()).filter(|&i| h.is_char_boundary(i)) {
                    let l = lite.captures_read_at(&mut ll, h, start).map(|m| m.range());
                    let f = full.captures_read_at(&mut fl, h, start).map(|m| m.range());
                    assert_eq!(l, f, "{p:?} on {h:?} from {start}");
                    // After no match the locations are stale (regex-lite
                    // leaves them, regex clears them); nobody reads them.
                    if l.is_none() {
                        continue;
                    }
                    for g in 0..ll.len() {
                        assert_eq!(
                            ll.get(g),
                            fl.get(g),
                            "{p:?} on {h:?} from {start}, group {g}"
                        );
                    }
                }
            }
        }
    }

    /// Texts from `LONG_TEXT` on are searched by the `regex` crate's
    /// engine, with the same results (groups included).
    #[test]
    fn long_texts_match_like_short_ones() {
        let long = "ab-12 ".repeat(2000);
        assert!(long.len() > super::LONG_TEXT);
        let swapped = v(
            "regexReplaceAll",
            &[s("([a-z]+)-(\\d+)"), s(&long), s("$2$1")],
        );
        assert_eq!(swapped, "12ab ".repeat(2000));
        let found = v("regexFindAll", &[s("[0-9]+"), s(&long), i(-1)]);
        assert_eq!(found, format!("[{}]", vec!["12"; 2000].join(" ")));
        assert_eq!(v("regexMatch", &[s("b-1"), s(&long)]), "true");
    }
}
