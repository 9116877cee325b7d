//! Go text/template's builtin functions (`and`, `or`, `not`, `len`, `index`,
//! `slice`, `print*`, `html`, `js`, `urlquery`, `call`, comparisons), ported
//! from Go's `text/template/funcs.go` with its error texts.
//!
//! `and` and `or` are registered as placeholders: the evaluator implements
//! them itself because they short-circuit.

use super::{Env, FuncDef, FuncMap, FuncResult, Param};
use crate::engine::gofmt;
use crate::engine::value::Value;

const BUILTINS: &[FuncDef] = &[
    FuncDef {
        name: "and",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: placeholder,
    },
    FuncDef {
        name: "or",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: placeholder,
    },
    FuncDef {
        name: "not",
        params: &[Param::Any],
        variadic: None,
        imp: not,
    },
    FuncDef {
        name: "len",
        params: &[Param::Any],
        variadic: None,
        imp: length,
    },
    FuncDef {
        name: "index",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: index,
    },
    FuncDef {
        name: "slice",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: slice,
    },
    FuncDef {
        name: "print",
        params: &[],
        variadic: Some(Param::Any),
        imp: print,
    },
    FuncDef {
        name: "printf",
        params: &[Param::Str],
        variadic: Some(Param::Any),
        imp: printf,
    },
    FuncDef {
        name: "println",
        params: &[],
        variadic: Some(Param::Any),
        imp: println,
    },
    FuncDef {
        name: "html",
        params: &[],
        variadic: Some(Param::Any),
        imp: html,
    },
    FuncDef {
        name: "js",
        params: &[],
        variadic: Some(Param::Any),
        imp: js,
    },
    FuncDef {
        name: "urlquery",
        params: &[],
        variadic: Some(Param::Any),
        imp: urlquery,
    },
    FuncDef {
        name: "call",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: call,
    },
    FuncDef {
        name: "eq",
        params: &[Param::Any],
        variadic: Some(Param::Any),
        imp: eq,
    },
    FuncDef {
        name: "ne",
        params: &[Param::Any, Param::Any],
        variadic: None,
        imp: ne,
    },
    FuncDef {
        name: "lt",
        params: &[Param::Any, Param::Any],
        variadic: None,
        imp: lt,
    },
    FuncDef {
        name: "le",
        params: &[Param::Any, Param::Any],
        variadic: None,
        imp: le,
    },
    FuncDef {
        name: "gt",
        params: &[Param::Any, Param::Any],
        variadic: None,
        imp: gt,
    },
    FuncDef {
        name: "ge",
        params: &[Param::Any, Param::Any],
        variadic: None,
        imp: ge,
    },
];

pub fn register(m: &mut FuncMap) {
    for d in BUILTINS {
        m.insert(d);
    }
}

/// A builtin by name (Go always has them, whatever the user's map holds).
pub fn get(name: &str) -> Option<&'static FuncDef> {
    BUILTINS.iter().find(|d| d.name == name)
}

fn placeholder(_: &Env, _: &[Value]) -> FuncResult {
    Err("unreachable".into())
}

fn not(_: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(!a[0].truthy()))
}

fn length(_: &Env, a: &[Value]) -> FuncResult {
    let n = match &a[0].underlying() {
        Value::Str(s) => s.len(),
        Value::BStr(b) | Value::Bytes(b) => b.len(),
        Value::List(l) => l.items.len(),
        Value::Map(m) => m.len(),
        Value::Nil => return Err("len of nil pointer".into()),
        other => return Err(format!("len of type {}", other.type_name())),
    };
    Ok(Value::Int(n as i64))
}

/// Go's `indexArg`.
fn index_arg(index: &Value, cap: usize) -> Result<usize, String> {
    let x: i128 = match index {
        Value::Int(i) | Value::I64(i) => *i as i128,
        Value::U64(u) => *u as i128,
        Value::Nil => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ));
        }
    };
    if x < 0 || x > cap as i128 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(_: &Env, a: &[Value]) -> FuncResult {
    let mut item = a[0].clone();
    if item.is_nil() {
        return Err("index of untyped nil".into());
    }
    for idx in &a[1..] {
        item = match &item.underlying() {
            Value::Nil => return Err("index of nil pointer".into()),
            Value::List(l) => {
                let x = index_arg(idx, l.items.len())?;
                match l.items.get(x) {
                    Some(v) => v.clone(),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::Str(s) => {
                let x = index_arg(idx, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::U64(*b as u64).to_uint8(),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::BStr(b) | Value::Bytes(b) => {
                let x = index_arg(idx, b.len())?;
                match b.get(x) {
                    Some(b) => Value::U64(*b as u64).to_uint8(),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::Map(m) => match idx {
                Value::Str(k) => m
                    .get(k)
                    .unwrap_or(if m.kind == crate::engine::MapKind::Str {
                        Value::str("")
                    } else {
                        Value::Nil
                    }),
                Value::Nil => return Err("value is nil; should be of type string".into()),
                other => {
                    return Err(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    ));
                }
            },
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

trait ToUint8 {
    fn to_uint8(self) -> Value;
}
impl ToUint8 for Value {
    /// A byte read out of a string: Go's `uint8`, printed as a number. The
    /// value model has no uint8, so it is carried as a Go `int`, which prints
    /// and compares the same in templates.
    fn to_uint8(self) -> Value {
        match self {
            Value::U64(u) => Value::Int(u as i64),
            v => v,
        }
    }
}

fn slice(_: &Env, a: &[Value]) -> FuncResult {
    let item = &a[0];
    let idxs = &a[1..];
    if item.is_nil() {
        return Err("slice of untyped nil".into());
    }
    if idxs.len() > 3 {
        return Err(format!("too many slice indexes: {}", idxs.len()));
    }
    let len = match item {
        Value::Str(_) | Value::BStr(_) => {
            if idxs.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            item.go_bytes().map_or(0, <[u8]>::len)
        }
        Value::List(l) => l.items.len(),
        Value::Bytes(b) => b.len(),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    let mut idx = [0, len, len];
    for (i, v) in idxs.iter().enumerate() {
        idx[i] = index_arg(v, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if idxs.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    Ok(match item {
        Value::Str(_) | Value::BStr(_) => {
            Value::from_go_bytes(item.go_bytes().unwrap_or_default()[idx[0]..idx[1]].to_vec())
        }
        Value::List(l) => Value::List(std::rc::Rc::new(crate::engine::List {
            kind: l.kind,
            items: l.items[idx[0]..idx[1]].to_vec(),
        })),
        Value::Bytes(b) => Value::Bytes(b[idx[0]..idx[1]].into()),
        _ => Value::Nil,
    })
}

fn print(_: &Env, a: &[Value]) -> FuncResult {
    Ok(gofmt::sprint_value(a))
}
fn println(_: &Env, a: &[Value]) -> FuncResult {
    Ok(gofmt::sprintln_value(a))
}
fn printf(_: &Env, a: &[Value]) -> FuncResult {
    Ok(gofmt::sprintf_value(a[0].as_str().unwrap_or(""), &a[1..]))
}

/// Go's `evalArgs`: one string argument as is, else `fmt.Sprint` with
/// untyped nils printed as `<no value>`. Bytes, as Go's escapers take them.
fn eval_args(a: &[Value]) -> Vec<u8> {
    if let [v] = a
        && let Some(b) = v.go_bytes()
    {
        return b.to_vec();
    }
    let mapped: Vec<Value> = a
        .iter()
        .map(|v| {
            if v.is_nil() {
                Value::str("<no value>")
            } else {
                v.clone()
            }
        })
        .collect();
    match gofmt::sprint_value(&mapped) {
        Value::Str(s) => s.as_bytes().to_vec(),
        other => other.go_bytes().unwrap_or_default().to_vec(),
    }
}

/// Go's `HTMLEscape`: byte by byte, so invalid UTF-8 passes through.
fn html(_: &Env, a: &[Value]) -> FuncResult {
    let s = eval_args(a);
    let mut out = Vec::with_capacity(s.len());
    for b in s {
        match b {
            b'\0' => out.extend_from_slice("\u{FFFD}".as_bytes()),
            b'"' => out.extend_from_slice(b"&#34;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b => out.push(b),
        }
    }
    Ok(Value::from_go_bytes(out))
}

/// Go's `JSEscape`. An invalid byte decodes as U+FFFD, which is printable,
/// so Go copies the byte through.
fn js(_: &Env, a: &[Value]) -> FuncResult {
    let s = eval_args(a);
    let mut out = String::with_capacity(s.len());
    let mut raw: Vec<u8> = Vec::new();
    for chunk in s.utf8_chunks() {
        js_escape_into(chunk.valid(), &mut out);
        if !chunk.invalid().is_empty() {
            raw.extend_from_slice(out.as_bytes());
            raw.extend_from_slice(chunk.invalid());
            out.clear();
        }
    }
    if raw.is_empty() {
        return Ok(Value::string(out));
    }
    raw.extend_from_slice(out.as_bytes());
    Ok(Value::from_go_bytes(raw))
}

fn js_escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) < 0x80 => out.push(c),
            c if gofmt::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
}

fn urlquery(_: &Env, a: &[Value]) -> FuncResult {
    let s = eval_args(a);
    let mut out = String::with_capacity(s.len());
    for b in s {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    Ok(Value::string(out))
}

fn call(_: &Env, a: &[Value]) -> FuncResult {
    // Template data never holds Go funcs here. The evaluator puts the
    // callee's text after "non-function".
    match &a[0] {
        Value::Nil => Err("call of nil".into()),
        other => Err(format!("non-function of type {}", other.type_name())),
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    Str,
    Uint,
    Complex,
}

/// Go's `basicKind`.
fn basic_kind(v: &Value) -> Kind {
    match v {
        Value::Object(o) if o.as_any().is::<crate::engine::value::Complex>() => Kind::Complex,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::I64(_) => Kind::Int,
        Value::U64(_) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::Str(_) | Value::BStr(_) => Kind::Str,
        _ => Kind::Invalid,
    }
}

const BAD_TYPE: &str = "invalid type for comparison";
const BAD_CMP: &str = "incompatible types for comparison";

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::I64(i) => *i,
        _ => 0,
    }
}
fn uint_of(v: &Value) -> u64 {
    match v {
        Value::U64(u) => *u,
        _ => 0,
    }
}
fn complex_of(v: &Value) -> Option<crate::engine::value::Complex> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref().copied(),
        _ => None,
    }
}
fn float_of(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        _ => 0.0,
    }
}

/// Go's `eq`: `a == b || a == c || …`, kind-strict.
fn eq_impl(a1: &Value, rest: &[Value]) -> Result<bool, String> {
    if rest.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic_kind(a1);
    for a in rest {
        let k2 = basic_kind(a);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (Kind::Int, Kind::Uint) => int_of(a1) >= 0 && int_of(a1) as u64 == uint_of(a),
                (Kind::Uint, Kind::Int) => int_of(a) >= 0 && uint_of(a1) == int_of(a) as u64,
                _ => {
                    if !a1.is_nil() && !a.is_nil() {
                        return Err(BAD_CMP.into());
                    }
                    false
                }
            }
        } else {
            match k1 {
                Kind::Bool => matches!((a1, a), (Value::Bool(x), Value::Bool(y)) if x == y),
                Kind::Float => float_of(a1) == float_of(a),
                Kind::Int => int_of(a1) == int_of(a),
                Kind::Str => a1.go_bytes() == a.go_bytes(),
                Kind::Uint => uint_of(a1) == uint_of(a),
                Kind::Complex => complex_of(a1) == complex_of(a),
                Kind::Invalid => {
                    if a1.is_nil() || a.is_nil() {
                        a1.is_nil() == a.is_nil()
                    } else {
                        // Maps, slices and funcs are not comparable in Go.
                        match a {
                            Value::List(_) | Value::Map(_) | Value::Bytes(_) => {
                                let s = gofmt::sprintf("%s", std::slice::from_ref(a));
                                return Err(format!("non-comparable type {s}: {}", a.type_name()));
                            }
                            Value::Object(o2) => match a1 {
                                Value::Object(o1) => std::ptr::addr_eq(
                                    std::rc::Rc::as_ptr(o1),
                                    std::rc::Rc::as_ptr(o2),
                                ),
                                _ => false,
                            },
                            _ => false,
                        }
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn eq(_: &Env, a: &[Value]) -> FuncResult {
    eq_impl(&a[0], &a[1..]).map(Value::Bool)
}
fn ne(_: &Env, a: &[Value]) -> FuncResult {
    eq_impl(&a[0], &a[1..]).map(|b| Value::Bool(!b))
}

/// Go's `lt`.
fn lt_impl(a1: &Value, a2: &Value) -> Result<bool, String> {
    let k1 = basic_kind(a1);
    if k1 == Kind::Invalid {
        return Err(BAD_TYPE.into());
    }
    let k2 = basic_kind(a2);
    if k2 == Kind::Invalid {
        return Err(BAD_TYPE.into());
    }
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) => Ok(int_of(a1) < 0 || (int_of(a1) as u64) < uint_of(a2)),
            (Kind::Uint, Kind::Int) => Ok(int_of(a2) >= 0 && uint_of(a1) < int_of(a2) as u64),
            _ => Err(BAD_CMP.into()),
        };
    }
    match k1 {
        Kind::Bool | Kind::Complex => Err(BAD_TYPE.into()),
        Kind::Float => Ok(float_of(a1) < float_of(a2)),
        Kind::Int => Ok(int_of(a1) < int_of(a2)),
        Kind::Str => Ok(a1.go_bytes() < a2.go_bytes()),
        Kind::Uint => Ok(uint_of(a1) < uint_of(a2)),
        Kind::Invalid => Err(BAD_TYPE.into()),
    }
}

fn lt(_: &Env, a: &[Value]) -> FuncResult {
    lt_impl(&a[0], &a[1]).map(Value::Bool)
}
/// Go's `le`: `lt || eq`.
fn le(_: &Env, a: &[Value]) -> FuncResult {
    le_impl(&a[0], &a[1]).map(Value::Bool)
}
fn le_impl(a1: &Value, a2: &Value) -> Result<bool, String> {
    if lt_impl(a1, a2)? {
        return Ok(true);
    }
    eq_impl(a1, std::slice::from_ref(a2))
}
fn gt(_: &Env, a: &[Value]) -> FuncResult {
    le_impl(&a[0], &a[1]).map(|b| Value::Bool(!b))
}
fn ge(_: &Env, a: &[Value]) -> FuncResult {
    lt_impl(&a[0], &a[1]).map(|b| Value::Bool(!b))
}
