//! Go's `fmt` printing of template values: `%v` (what `{{ . }}`, `print` and
//! `toString` produce) and Go's float formatting.
//!
//! Hand-written because the output must match Go byte for byte: `map[a:1
//! b:2]`, `[a b]`, `<nil>`, and float64 as `strconv.FormatFloat(f, 'g', -1,
//! 64)` (`1e+06`, `1.5`, `1e-05`), which no Rust formatter produces.

use super::value::Value;

/// Append Go's `%v` rendering of `v` to `out`.
pub fn fmt_v(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::I64(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        Value::U64(u) => {
            use std::fmt::Write;
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => format_float(*f, 'g', -1, out),
        Value::Str(s) => out.push_str(s),
        Value::Bytes(b) => {
            out.push('[');
            for (i, byte) in b.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                use std::fmt::Write;
                let _ = write!(out, "{byte}");
            }
            out.push(']');
        }
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                fmt_v(item, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                fmt_v(item, out);
            }
            out.push(']');
        }
        Value::Object(o) => o.fmt_v(out),
    }
}

/// `%v` into a new string.
pub fn to_string_v(v: &Value) -> String {
    let mut s = String::new();
    fmt_v(v, &mut s);
    s
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `fmt` in `e`, `f`, `g`
/// (prec -1 = shortest representation that round-trips).
pub fn format_float(f: f64, fmt: char, prec: i32, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let neg = f.is_sign_negative();
    // Decimal digits and decimal-point position, as Go's `decimalSlice`:
    // value = 0.d1d2d3… × 10^dp.
    let (digits, dp) = decimal_digits(f.abs(), fmt, prec);
    if neg {
        out.push('-');
    }
    let shortest = prec < 0;
    match fmt {
        'e' => {
            let p = if shortest {
                digits.len().saturating_sub(1) as i32
            } else {
                prec
            };
            fmt_e(&digits, dp, p, out);
        }
        'f' => {
            let p = if shortest {
                (digits.len() as i32 - dp).max(0)
            } else {
                prec
            };
            fmt_f(&digits, dp, p, out);
        }
        _ => {
            let mut eprec = if prec == 0 { 1 } else { prec };
            let nd = digits.len() as i32;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            if digits == b"0" {
                // zero: Go prints "0"
                out.push('0');
                return;
            }
            if exp < -4 || exp >= eprec {
                let p = if shortest { nd - 1 } else { prec.max(1) - 1 };
                fmt_e(&digits, dp, p.min(nd - 1).max(0), out);
            } else {
                let p = if shortest {
                    (nd - dp).max(0)
                } else {
                    (prec.max(1) - dp).max(0)
                };
                fmt_f(&digits, dp, p.min((nd - dp).max(0)), out);
            }
        }
    }
}

/// Digits (without leading zeros; "0" for zero) and decimal point position.
fn decimal_digits(f: f64, fmt: char, prec: i32) -> (Vec<u8>, i32) {
    if f == 0.0 {
        return (b"0".to_vec(), 1);
    }
    // Rust's `{:e}` gives the shortest round-trip digits (same algorithm
    // family as Go's Ryu-based shortest formatting); with a precision it
    // rounds half-to-even on the exact binary value, as Go does.
    let s = if prec < 0 {
        format!("{f:e}")
    } else {
        match fmt {
            'e' => format!("{f:.*e}", prec as usize),
            'f' => {
                let s = format!("{f:.*}", prec as usize);
                return f_string_digits(&s);
            }
            _ => format!("{f:.*e}", (prec.max(1) - 1) as usize),
        }
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    if prec < 0 {
        while digits.len() > 1 && digits.last() == Some(&b'0') {
            digits.pop();
        }
    }
    (digits, exp + 1)
}

fn f_string_digits(s: &str) -> (Vec<u8>, i32) {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let mut dp = int.len() as i32;
    while digits.len() > 1 && digits[0] == b'0' {
        digits.remove(0);
        dp -= 1;
    }
    if digits.iter().all(|d| *d == b'0') {
        return (b"0".to_vec(), 1);
    }
    (digits, dp)
}

fn fmt_e(digits: &[u8], dp: i32, prec: i32, out: &mut String) {
    out.push(digits[0] as char);
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as usize {
            out.push(*digits.get(i).unwrap_or(&b'0') as char);
        }
    }
    let exp = if digits == b"0" { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
}

fn fmt_f(digits: &[u8], dp: i32, prec: i32, out: &mut String) {
    if dp > 0 {
        for i in 0..dp as usize {
            out.push(*digits.get(i).unwrap_or(&b'0') as char);
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec {
            let j = dp + i;
            let d = if j < 0 {
                b'0'
            } else {
                *digits.get(j as usize).unwrap_or(&b'0')
            };
            out.push(d as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(f: f64) -> String {
        let mut s = String::new();
        format_float(f, 'g', -1, &mut s);
        s
    }

    #[test]
    fn shortest_g_matches_go() {
        assert_eq!(g(1000000.0), "1e+06");
        assert_eq!(g(123456789.0), "1.23456789e+08");
        assert_eq!(g(100000.0), "100000");
        assert_eq!(g(1.1), "1.1");
        assert_eq!(g(2.5), "2.5");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1e-05");
        assert_eq!(g(0.0), "0");
        assert_eq!(g(-3.0), "-3");
        assert_eq!(g(1e21), "1e+21");
        assert_eq!(g(8080.0), "8080");
    }

    #[test]
    fn composites_print_like_go() {
        let m = Value::map(
            [
                ("b".into(), Value::Float(2.0)),
                ("a".into(), Value::list(vec![Value::Int(1), "x".into()])),
            ]
            .into_iter()
            .collect(),
        );
        assert_eq!(to_string_v(&m), "map[a:[1 x] b:2]");
        assert_eq!(
            to_string_v(&Value::list(vec![Value::Nil, Value::Float(2.5)])),
            "[<nil> 2.5]"
        );
    }
}

/// Go's `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    quote_into(s, '"', &mut out);
    out.push('"');
    out
}

fn quote_into(s: &str, q: char, out: &mut String) {
    use std::fmt::Write;
    for c in s.chars() {
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
            '\u{FFFD}' => out.push_str("\\ufffd"),
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
}

/// An approximation of Go's `unicode.IsPrint` (letters, marks, numbers,
/// punctuation, symbols and the ASCII space).
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    // Format characters, surrogates, private use and non-characters.
    !matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x200B..=0x200F | 0x202A..=0x202E
        | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF | 0xFFFE | 0xFFFF)
}

/// Go's `fmt.Sprint`: spaces between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        fmt_v(a, &mut out);
    }
    out
}

/// Go's `fmt.Sprintln`: always spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        fmt_v(a, &mut out);
    }
    out.push('\n');
    out
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

/// Go's `fmt.Sprintf` over template values: verbs, flags, width and
/// precision, and Go's inline error forms (`%!d(float64=1)`,
/// `%!s(MISSING)`, `%!(EXTRA …)`, `%!(NOVERB)`).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::with_capacity(format.len() + 16);
    let b = format.as_bytes();
    let mut argn = 0;
    let mut i = 0;
    let end = b.len();
    let mut reordered = false;
    let mut good_arg = true;
    while i < end {
        let start = i;
        while i < end && b[i] != b'%' {
            i += 1;
        }
        if i > start {
            out.push_str(&format[start..i]);
        }
        if i >= end {
            break;
        }
        i += 1; // skip %
        let mut f = Flags::default();
        while i < end {
            match b[i] {
                b'#' => f.sharp = true,
                b'0' => f.zero = !f.minus,
                b'+' => f.plus = true,
                b'-' => {
                    f.minus = true;
                    f.zero = false;
                }
                b' ' => f.space = true,
                _ => break,
            }
            i += 1;
        }
        // An explicit argument index, `%[n]d`.
        let (n, j, ok) = arg_number(b, i, args.len());
        if let Some(n) = n {
            argn = n;
            reordered = true;
        } else if !ok {
            good_arg = false;
        }
        i = j;
        // Width.
        if i < end && b[i] == b'*' {
            i += 1;
            match args.get(argn) {
                Some(Value::Int(n)) | Some(Value::I64(n)) if !too_large(*n) => {
                    if *n < 0 {
                        f.minus = true;
                        f.zero = false;
                    }
                    f.wid = Some(n.unsigned_abs() as usize);
                }
                _ => out.push_str("%!(BADWIDTH)"),
            }
            argn += 1;
        } else {
            let (n, j) = parse_num(b, i);
            f.wid = n;
            i = j;
        }
        // Precision.
        if i < end && b[i] == b'.' {
            i += 1;
            if i < end && b[i] == b'*' {
                i += 1;
                match args.get(argn) {
                    Some(Value::Int(n)) | Some(Value::I64(n)) if *n >= 0 && !too_large(*n) => {
                        f.prec = Some(*n as usize)
                    }
                    _ => out.push_str("%!(BADPREC)"),
                }
                argn += 1;
            } else {
                let (n, j) = parse_num(b, i);
                f.prec = Some(n.unwrap_or(0));
                i = j;
            }
        }
        if i < end && b[i] == b'[' {
            let (n, j, ok) = arg_number(b, i, args.len());
            if let Some(n) = n {
                argn = n;
                reordered = true;
            } else if !ok {
                good_arg = false;
            }
            i = j;
        }
        if i >= end {
            out.push_str("%!(NOVERB)");
            break;
        }
        let verb = match format[i..].chars().next() {
            Some(c) => c,
            None => break,
        };
        i += verb.len_utf8();
        if verb == '%' {
            out.push('%');
            continue;
        }
        if !good_arg {
            out.push_str("%!");
            out.push(verb);
            out.push_str("(BADINDEX)");
            good_arg = true;
            continue;
        }
        match args.get(argn) {
            None => {
                out.push_str("%!");
                out.push(verb);
                out.push_str("(MISSING)");
            }
            Some(a) => {
                argn += 1;
                // Go's doPrintf: for %v the plus flag becomes plusV, which
                // only affects struct field names, never number signs.
                let mut f = f;
                if verb == 'v' {
                    f.plus = false;
                }
                print_arg(a, verb, f, &mut out);
            }
        }
    }
    if !reordered && argn < args.len() {
        out.push_str("%!(EXTRA ");
        for (k, a) in args[argn..].iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            if a.is_nil() {
                out.push_str("<nil>");
            } else {
                out.push_str(a.type_name());
                out.push('=');
                fmt_v(a, &mut out);
            }
        }
        out.push(')');
    }
    out
}

/// Go's `argNumber`: `[n]` at `i` selects argument n (1-based). Returns
/// the 0-based index, the position after it, and whether the syntax was
/// acceptable (a bad index makes the verb print `%!v(BADINDEX)`).
fn arg_number(b: &[u8], i: usize, nargs: usize) -> (Option<usize>, usize, bool) {
    if i >= b.len() || b[i] != b'[' {
        return (None, i, true);
    }
    let Some(close) = b[i..].iter().position(|c| *c == b']') else {
        return (None, i, false);
    };
    let (n, j) = parse_num(b, i + 1);
    match n {
        Some(n) if j == i + close && n >= 1 && n <= nargs => (Some(n - 1), i + close + 1, true),
        _ => (None, i + close + 1, false),
    }
}

/// Go's `tooLarge`: fmt rejects widths and precisions beyond ±1e6.
fn too_large(n: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&n)
}

/// Go's `parsenum`: a number too large consumes the rest of the format
/// (so the directive ends in `%!(NOVERB)`), as Go's does.
fn parse_num(b: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut n: usize = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if n > 1_000_000 {
            return (None, b.len());
        }
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    if i == start { (None, i) } else { (Some(n), i) }
}

fn bad_verb(v: &Value, verb: char, out: &mut String) {
    out.push_str("%!");
    out.push(verb);
    out.push('(');
    if v.is_nil() {
        out.push_str("<nil>");
    } else {
        out.push_str(v.type_name());
        out.push('=');
        fmt_v(v, out);
    }
    out.push(')');
}

/// Go's `fmt.pad`: width counted in runes.
fn pad(s: &str, f: Flags, out: &mut String) {
    let n = s.chars().count();
    let w = f.wid.unwrap_or(0);
    if n >= w {
        out.push_str(s);
        return;
    }
    let fill = w - n;
    if f.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if f.zero {
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(s);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    }
}

fn print_arg(a: &Value, verb: char, f: Flags, out: &mut String) {
    if verb == 'T' {
        pad(if a.is_nil() { "<nil>" } else { a.type_name() }, f, out);
        return;
    }
    match a {
        Value::Nil => match verb {
            'v' => pad("<nil>", f, out),
            _ => bad_verb(a, verb, out),
        },
        Value::Bool(b) => match verb {
            't' | 'v' => pad(if *b { "true" } else { "false" }, f, out),
            _ => bad_verb(a, verb, out),
        },
        Value::Int(i) | Value::I64(i) => fmt_integer(i.unsigned_abs(), *i < 0, a, verb, f, out),
        Value::U64(u) => fmt_integer(*u, false, a, verb, f, out),
        Value::Float(x) => fmt_float_verb(*x, a, verb, f, out),
        Value::Str(s) => fmt_string(s, a, verb, f, out),
        Value::Bytes(bytes) => match verb {
            's' => fmt_string(&String::from_utf8_lossy(bytes), a, 's', f, out),
            'q' | 'x' | 'X' => fmt_string(&String::from_utf8_lossy(bytes), a, verb, f, out),
            _ => {
                out.push('[');
                for (k, byte) in bytes.iter().enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    fmt_integer(*byte as u64, false, &Value::U64(*byte as u64), verb, f, out);
                }
                out.push(']');
            }
        },
        Value::List(l) => {
            if f.sharp && verb == 'v' {
                let mut s = String::new();
                fmt_v(a, &mut s);
                pad(&s, f, out);
                return;
            }
            out.push('[');
            for (k, item) in l.items.iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                print_arg(item, verb, f, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (k, (key, item)) in m.borrow().iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                fmt_string(key, &Value::Str(key.clone()), verb, f, out);
                out.push(':');
                print_arg(item, verb, f, out);
            }
            out.push(']');
        }
        Value::Object(o) => match verb {
            'v' | 's' => {
                let mut s = String::new();
                o.fmt_v(&mut s);
                pad(&s, f, out);
            }
            'q' => {
                let mut s = String::new();
                o.fmt_v(&mut s);
                pad(&quote(&s), f, out);
            }
            _ => bad_verb(a, verb, out),
        },
    }
}

fn fmt_string(s: &str, a: &Value, verb: char, f: Flags, out: &mut String) {
    let s: &str = match f.prec {
        Some(p) if matches!(verb, 'v' | 's' | 'q' | 'x' | 'X') => match s.char_indices().nth(p) {
            Some((idx, _)) => &s[..idx],
            None => s,
        },
        _ => s,
    };
    match verb {
        'v' | 's' => pad(s, f, out),
        'q' => {
            if f.sharp && !s.contains('`') && s.chars().all(|c| c == '\t' || is_print(c)) {
                pad(&format!("`{s}`"), f, out);
            } else {
                pad(&quote(s), f, out);
            }
        }
        'x' | 'X' => {
            let mut h = String::new();
            for (k, byte) in s.bytes().enumerate() {
                if f.space && k > 0 {
                    h.push(' ');
                }
                if f.sharp && (f.space || k == 0) {
                    h.push_str(if verb == 'x' { "0x" } else { "0X" });
                }
                if verb == 'x' {
                    h.push_str(&format!("{byte:02x}"));
                } else {
                    h.push_str(&format!("{byte:02X}"));
                }
            }
            pad(&h, f, out);
        }
        _ => bad_verb(a, verb, out),
    }
}

/// Go's `fmtInteger`.
fn fmt_integer(mag: u64, neg: bool, a: &Value, verb: char, f: Flags, out: &mut String) {
    let (base, upper) = match verb {
        'v' | 'd' => (10, false),
        'b' => (2, false),
        'o' | 'O' => (8, false),
        'x' => (16, false),
        'X' => (16, true),
        'c' => {
            let c = char::from_u32(mag as u32)
                .filter(|_| !neg && mag <= 0x10FFFF)
                .unwrap_or('\u{FFFD}');
            pad(&c.to_string(), f, out);
            return;
        }
        'q' => {
            let c = char::from_u32(mag as u32)
                .filter(|_| !neg && mag <= 0x10FFFF)
                .unwrap_or('\u{FFFD}');
            let mut s = String::from("'");
            if c == '\'' {
                s.push_str("\\'");
            } else {
                let mut q = String::new();
                quote_into(&c.to_string(), '\'', &mut q);
                s.push_str(&q);
            }
            s.push('\'');
            pad(&s, f, out);
            return;
        }
        'U' => {
            let mut s = format!("U+{mag:04X}");
            if let Some(c) = char::from_u32(mag as u32).filter(|c| f.sharp && is_print(*c)) {
                s.push_str(&format!(" '{c}'"));
            }
            pad(&s, f, out);
            return;
        }
        _ => {
            bad_verb(a, verb, out);
            return;
        }
    };
    let mut digits = match base {
        2 => format!("{mag:b}"),
        8 => format!("{mag:o}"),
        16 if upper => format!("{mag:X}"),
        16 => format!("{mag:x}"),
        _ => format!("{mag}"),
    };
    if let Some(p) = f.prec {
        if p == 0 && mag == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let mut prefix = String::new();
    if neg {
        prefix.push('-');
    } else if f.plus {
        prefix.push('+');
    } else if f.space {
        prefix.push(' ');
    }
    if f.sharp {
        match verb {
            'b' => prefix.push_str("0b"),
            'o' if !digits.starts_with('0') => prefix.push('0'),
            'x' => prefix.push_str("0x"),
            'X' => prefix.push_str("0X"),
            _ => {}
        }
    }
    if verb == 'O' {
        prefix.push_str("0o");
    }
    // Zero padding goes between the sign and the digits.
    if let Some(w) = f.wid.filter(|_| f.zero && !f.minus && f.prec.is_none()) {
        while prefix.len() + digits.len() < w {
            digits.insert(0, '0');
        }
    }
    let s = prefix + &digits;
    pad(&s, Flags { zero: false, ..f }, out);
}

/// Go's `fmtFloat` for `%v %e %E %f %F %g %G`.
fn fmt_float_verb(x: f64, a: &Value, verb: char, f: Flags, out: &mut String) {
    let (fmtc, prec, upper) = match verb {
        'v' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), false),
        'g' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), false),
        'G' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), true),
        'e' => ('e', f.prec.map(|p| p as i32).unwrap_or(6), false),
        'E' => ('e', f.prec.map(|p| p as i32).unwrap_or(6), true),
        'f' | 'F' => ('f', f.prec.map(|p| p as i32).unwrap_or(6), false),
        _ => {
            bad_verb(a, verb, out);
            return;
        }
    };
    let mut s = String::new();
    format_float(x, fmtc, prec, &mut s);
    if upper {
        s = s.to_uppercase();
    }
    if x.is_infinite() || x.is_nan() {
        // Go: infinities and NaN are never zero-padded.
        let s = if f.plus && !s.starts_with(['+', '-']) && !x.is_nan() {
            format!("+{s}")
        } else if s.starts_with('+') && !f.plus {
            if f.space {
                format!(" {}", &s[1..])
            } else {
                s[1..].to_string()
            }
        } else if x.is_nan() && f.plus {
            format!("+{s}")
        } else {
            s
        };
        pad(&s, Flags { zero: false, ..f }, out);
        return;
    }
    if f.sharp && fmtc == 'g' && !s.contains('.') {
        // %#g keeps the decimal point.
        match s.find('e') {
            Some(e) => s.insert(e, '.'),
            None => s.push('.'),
        }
    }
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => ("-", rest.to_string()),
        None if f.plus => ("+", s.clone()),
        None if f.space => (" ", s.clone()),
        None => ("", s.clone()),
    };
    let mut digits = digits;
    if let Some(w) = f.wid.filter(|_| f.zero && !f.minus) {
        while sign.len() + digits.len() < w {
            digits.insert(0, '0');
        }
    }
    pad(&format!("{sign}{digits}"), Flags { zero: false, ..f }, out);
}

#[cfg(test)]
mod printf_tests {
    use super::*;

    #[test]
    fn printf_matches_go() {
        let p = |f: &str, a: &[Value]| sprintf(f, a);
        assert_eq!(p("%d", &[Value::Float(8080.0)]), "%!d(float64=8080)");
        assert_eq!(p("%s", &[Value::Int(3)]), "%!s(int=3)");
        assert_eq!(p("%s-%s", &["a".into()]), "a-%!s(MISSING)");
        assert_eq!(p("%v", &[Value::Float(8080.0)]), "8080");
        assert_eq!(
            p(
                "%05d|%-4d|%x|%X|%o|%b",
                &[
                    Value::Int(42),
                    Value::Int(7),
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(5)
                ]
            ),
            "00042|7   |ff|FF|10|101"
        );
        assert_eq!(
            p(
                "%.2f|%e|%g|%6.1f",
                &[
                    Value::Float(2.71515),
                    Value::Float(1234.5),
                    Value::Float(1e6),
                    Value::Float(2.25)
                ]
            ),
            "2.72|1.234500e+03|1e+06|   2.2"
        );
        assert_eq!(
            p(
                "%q|%5s|%-5s|%.1s",
                &["a\"b".into(), "x".into(), "y".into(), "zz".into()]
            ),
            "\"a\\\"b\"|    x|y    |z"
        );
        assert_eq!(
            p(
                "%t|%v|%T",
                &[Value::Bool(true), Value::Nil, Value::Float(1.0)]
            ),
            "true|<nil>|float64"
        );
        assert_eq!(
            p("a", &[Value::Int(1), "b".into()]),
            "a%!(EXTRA int=1, string=b)"
        );
        assert_eq!(
            p("%c|%U|100%%", &[Value::Int(65), Value::Int(0x1F600)]),
            "A|U+1F600|100%"
        );
        assert_eq!(
            p("%d", &[Value::list(vec![Value::Int(1), Value::Int(2)])]),
            "[1 2]"
        );
    }

    /// Go's `tooLarge` cap (1e6) on widths and precisions; expected texts
    /// from helm v3.17.3 (`printf` in a template).
    #[test]
    fn printf_width_precision_cap() {
        let five = [Value::Int(5)];
        assert_eq!(sprintf("%9999999999d", &five), "%!(NOVERB)%!(EXTRA int=5)");
        assert_eq!(sprintf("%.9999999999d", &five), "%!(NOVERB)%!(EXTRA int=5)");
        assert_eq!(sprintf("%99999999d|", &five), "%!(NOVERB)%!(EXTRA int=5)");
        let star = |n: i64| [Value::Int(n), Value::Int(5)];
        assert_eq!(sprintf("%*d", &star(10_000_000)), "%!(BADWIDTH)5");
        assert_eq!(sprintf("%*d", &star(-10_000_000)), "%!(BADWIDTH)5");
        assert_eq!(sprintf("%.*d", &star(10_000_000)), "%!(BADPREC)5");
        assert_eq!(sprintf("%*d", &star(1_000_000)).len(), 1_000_000);
        assert_eq!(sprintf("%1000001d", &five).len(), 1_000_001);
        assert_eq!(sprintf("%.1000001d", &five).len(), 1_000_001);
        assert_eq!(sprintf("%[1]*d", &[Value::Int(2), Value::Int(5)]), " 5");
    }

    #[test]
    fn quote_matches_go() {
        assert_eq!(quote("a\nb\"\\\u{1}é"), "\"a\\nb\\\"\\\\\\x01é\"");
    }
}
