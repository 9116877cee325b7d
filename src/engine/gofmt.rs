//! Go's `fmt` printing of template values: `%v` (what `{{ . }}`, `print` and
//! `toString` produce) and Go's float formatting.
//!
//! Hand-written because the output must match Go byte for byte: `map[a:1
//! b:2]`, `[a b]`, `<nil>`, and float64 as `strconv.FormatFloat(f, 'g', -1,
//! 64)` (`1e+06`, `1.5`, `1e-05`), which no Rust formatter produces.

use super::value::{Value, go_lossy};

/// Where Go's `fmt` writes. Go strings are bytes, so a byte string
/// ([`Value::BStr`]) prints its raw bytes into a `Vec<u8>` (Go's own output
/// buffer); into a `String` its invalid bytes become U+FFFD, for callers
/// that need text.
pub trait Sink {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char);
    fn push_bytes(&mut self, b: &[u8]);
}

impl Sink for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
    fn push_bytes(&mut self, b: &[u8]) {
        String::push_str(self, &go_lossy(b));
    }
}

impl Sink for Vec<u8> {
    fn push_str(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    fn push(&mut self, c: char) {
        let mut b = [0; 4];
        self.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
    }
    fn push_bytes(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

/// Append Go's `%v` rendering of `v` to `out`.
pub fn fmt_v<S: Sink + ?Sized>(v: &Value, out: &mut S) {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::I64(i) => out.push_str(&i.to_string()),
        Value::U64(u) => out.push_str(&u.to_string()),
        Value::Float(f) => {
            let mut s = String::new();
            format_float(*f, 'g', -1, &mut s);
            out.push_str(&s);
        }
        Value::Str(s) => out.push_str(s),
        Value::BStr(b) => out.push_bytes(b),
        Value::Bytes(b) => {
            out.push('[');
            for (i, byte) in b.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&byte.to_string());
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
        Value::Object(o) => {
            let mut s = String::new();
            o.fmt_arg(&mut s);
            out.push_str(&s);
        }
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

/// A finite float64's mantissa and binary exponent as Go's `genericFtoa`
/// takes them apart (implicit top bit added, bias removed).
fn float_parts(f: f64) -> (bool, u64, i32) {
    let bits = f.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << 52;
    }
    (neg, mant, exp - 1023)
}

/// `strconv.FormatFloat(f, 'b', -1, 64)`: `mantissa p exponent`.
fn format_float_bin(f: f64, out: &mut String) {
    let (neg, mant, exp) = float_parts(f);
    if neg {
        out.push('-');
    }
    let exp = exp - 52;
    out.push_str(&format!("{mant}p{}{exp}", if exp >= 0 { "+" } else { "" }));
}

/// Go's `fmtX`: `strconv.FormatFloat(f, 'x', prec, 64)` (`0x1.cp+01`).
fn format_float_hex(f: f64, prec: i32, out: &mut String) {
    let (neg, mut mant, mut exp) = float_parts(f);
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = (prec * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if neg {
        out.push('-');
    }
    out.push_str("0x");
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(HEX[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(HEX[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    out.push('p');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
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

pub use crate::gocompat::strconv::{is_print, quote, quote_bytes};

fn quote_into(s: &str, q: char, out: &mut String) {
    for c in s.chars() {
        crate::gocompat::strconv::push_escaped(out, c, q);
    }
}

/// Go's `strconv.QuoteToASCII` (`%+q`): non-ASCII characters escaped too.
fn quote_ascii(s: &[u8]) -> String {
    let mut out = String::from('"');
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_ascii() {
                quote_into(c.encode_utf8(&mut [0; 4]), '"', &mut out);
            } else if (c as u32) < 0x10000 {
                out.push_str(&format!("\\u{:04x}", c as u32));
            } else {
                out.push_str(&format!("\\U{:08x}", c as u32));
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `fmt.Sprint`: spaces between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    sprint_to(args, &mut out);
    out
}

/// [`sprint`] as a Go string value (byte strings keep their bytes).
pub fn sprint_value(args: &[Value]) -> Value {
    let mut out = Vec::new();
    sprint_to(args, &mut out);
    Value::from_go_bytes(out)
}

fn sprint_to<S: Sink + ?Sized>(args: &[Value], out: &mut S) {
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !a.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        fmt_v(a, out);
    }
}

/// Go's `fmt.Sprintln`: always spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    sprintln_to(args, &mut out);
    out
}

/// [`sprintln`] as a Go string value.
pub fn sprintln_value(args: &[Value]) -> Value {
    let mut out = Vec::new();
    sprintln_to(args, &mut out);
    Value::from_go_bytes(out)
}

fn sprintln_to<S: Sink + ?Sized>(args: &[Value], out: &mut S) {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        fmt_v(a, out);
    }
    out.push('\n');
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    /// `%#v` (Go's `sharpV`): Go-syntax form; `sharp` itself is then off.
    sharp_v: bool,
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
    sprintf_to(format, args, &mut out);
    out
}

/// [`sprintf`] as a Go string value (byte strings keep their bytes).
pub fn sprintf_value(format: &str, args: &[Value]) -> Value {
    let mut out = Vec::with_capacity(format.len() + 16);
    sprintf_to(format, args, &mut out);
    Value::from_go_bytes(out)
}

fn sprintf_to<S: Sink + ?Sized>(format: &str, args: &[Value], out: &mut S) {
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
                    f.sharp_v = f.sharp;
                    f.sharp = false;
                }
                print_arg(a, verb, f, out);
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
                fmt_v(a, out);
            }
        }
        out.push(')');
    }
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

fn bad_verb<S: Sink + ?Sized>(v: &Value, verb: char, out: &mut S) {
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
fn pad<S: Sink + ?Sized>(s: &str, f: Flags, out: &mut S) {
    pad_bytes(s.as_bytes(), f, out);
}

/// [`pad`] for a byte string: each invalid byte counts as one rune, as in
/// Go's `utf8.RuneCount`.
fn pad_bytes<S: Sink + ?Sized>(s: &[u8], f: Flags, out: &mut S) {
    let n = rune_starts(s).count();
    let w = f.wid.unwrap_or(0);
    if n >= w {
        out.push_bytes(s);
        return;
    }
    let fill = w - n;
    let fill_with = |c: u8, out: &mut S| out.push_str(&String::from(c as char).repeat(fill));
    if f.minus {
        out.push_bytes(s);
        fill_with(b' ', out);
    } else if f.zero {
        fill_with(b'0', out);
        out.push_bytes(s);
    } else {
        fill_with(b' ', out);
        out.push_bytes(s);
    }
}

/// The byte offsets where Go's rune decoding starts a rune: every
/// character of the valid parts and every invalid byte.
fn rune_starts(s: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut pos = 0;
    s.utf8_chunks().flat_map(move |chunk| {
        let base = pos;
        let valid = chunk.valid();
        pos += valid.len() + chunk.invalid().len();
        let inv = base + valid.len();
        valid
            .char_indices()
            .map(move |(i, _)| base + i)
            .chain((0..chunk.invalid().len()).map(move |k| inv + k))
    })
}

fn print_arg<S: Sink + ?Sized>(a: &Value, verb: char, f: Flags, out: &mut S) {
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
        Value::Str(s) => fmt_string(s.as_bytes(), a, verb, f, out),
        Value::BStr(s) => fmt_string(s, a, verb, f, out),
        Value::Bytes(bytes) => match verb {
            's' | 'q' | 'x' | 'X' => fmt_string(bytes, a, verb, f, out),
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
        Value::List(l) if f.sharp_v && verb == 'v' && l.kind.is_nil() => {
            pad(&format!("{}(nil)", a.type_name()), f, out)
        }
        Value::List(l) => {
            if f.sharp_v && verb == 'v' {
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
                print_elem(item, verb, f, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (k, (key, item)) in m.borrow().iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                fmt_string(
                    key.as_bytes(),
                    &Value::Str(key.clone().into()),
                    verb,
                    f,
                    out,
                );
                out.push(':');
                print_elem(item, verb, f, out);
            }
            out.push(']');
        }
        Value::Object(o) => match verb {
            'v' | 's' => {
                let mut s = String::new();
                o.fmt_arg(&mut s);
                pad(&s, f, out);
            }
            'q' => {
                let mut s = String::new();
                o.fmt_arg(&mut s);
                pad(&quote(&s), f, out);
            }
            _ => bad_verb(a, verb, out),
        },
    }
}

/// An element of a slice or map: a nil interface prints `<nil>` whatever
/// the verb (Go's `printValue`, `reflect.Interface` case).
fn print_elem<S: Sink + ?Sized>(item: &Value, verb: char, f: Flags, out: &mut S) {
    if item.is_nil() {
        pad("<nil>", f, out);
    } else {
        print_arg(item, verb, f, out);
    }
}

/// Go's `fmtS`/`fmtQ`/`fmtSbx` over a string's bytes (a `[]byte` prints
/// the same way for these verbs).
fn fmt_string<S: Sink + ?Sized>(s: &[u8], a: &Value, verb: char, f: Flags, out: &mut S) {
    // Go's `truncate`: the precision counts runes (an invalid byte is one).
    let s: &[u8] = match f.prec {
        Some(p) if matches!(verb, 'v' | 's' | 'q' | 'x' | 'X') => match rune_starts(s).nth(p) {
            Some(idx) => &s[..idx],
            None => s,
        },
        _ => s,
    };
    match verb {
        // %#v of a string is its Go literal.
        'v' if f.sharp_v => pad(&quote_bytes(s), f, out),
        'v' | 's' => pad_bytes(s, f, out),
        'q' if f.plus => pad(&quote_ascii(s), f, out),
        'q' => {
            // strconv.CanBackquote fails on invalid UTF-8.
            let back = std::str::from_utf8(s).ok().filter(|t| {
                f.sharp
                    && !t.contains(['`', '\u{feff}'])
                    && t.chars().all(|c| c == '\t' || is_print(c))
            });
            match back {
                Some(t) => pad(&format!("`{t}`"), f, out),
                None => pad(&quote_bytes(s), f, out),
            }
        }
        'x' | 'X' => {
            let mut h = String::new();
            for (k, byte) in s.iter().enumerate() {
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
fn fmt_integer<S: Sink + ?Sized>(
    mag: u64,
    neg: bool,
    a: &Value,
    verb: char,
    f: Flags,
    out: &mut S,
) {
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
        if digits.len() < p {
            digits = "0".repeat(p - digits.len()) + &digits;
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
    if let Some(w) = f.wid.filter(|_| f.zero && !f.minus && f.prec.is_none())
        && prefix.len() + digits.len() < w
    {
        digits = "0".repeat(w - prefix.len() - digits.len()) + &digits;
    }
    let s = prefix + &digits;
    pad(&s, Flags { zero: false, ..f }, out);
}

/// Go's `fmtFloat` for `%v %e %E %f %F %g %G`.
fn fmt_float_verb<S: Sink + ?Sized>(x: f64, a: &Value, verb: char, f: Flags, out: &mut S) {
    let (fmtc, prec, upper) = match verb {
        'v' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), false),
        'g' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), false),
        'G' => ('g', f.prec.map(|p| p as i32).unwrap_or(-1), true),
        'e' => ('e', f.prec.map(|p| p as i32).unwrap_or(6), false),
        'E' => ('e', f.prec.map(|p| p as i32).unwrap_or(6), true),
        'f' | 'F' => ('f', f.prec.map(|p| p as i32).unwrap_or(6), false),
        'x' | 'X' => ('x', f.prec.map(|p| p as i32).unwrap_or(-1), verb == 'X'),
        'b' => ('b', -1, false),
        _ => {
            bad_verb(a, verb, out);
            return;
        }
    };
    let mut s = String::new();
    match fmtc {
        'x' if x.is_finite() => format_float_hex(x, prec, &mut s),
        'b' if x.is_finite() => format_float_bin(x, &mut s),
        _ => format_float(x, fmtc, prec, &mut s),
    }
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
    if let Some(w) = f.wid.filter(|_| f.zero && !f.minus)
        && sign.len() + digits.len() < w
    {
        digits = "0".repeat(w - sign.len() - digits.len()) + &digits;
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
