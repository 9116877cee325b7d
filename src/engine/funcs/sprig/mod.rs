//! Sprig v3.3.0's function library (`functions.go`'s `genericMap`), each
//! function declared with its Go signature so that the evaluator converts
//! arguments as Go's `text/template` does.
//!
//! A Go panic inside a Sprig function (`first` of a string, `substr` out of
//! range, `regexFind` with a bad pattern) is recovered by `text/template` and
//! reported as the function's error, so the `must*` variants and their
//! panicking twins usually fail with the same text; both are registered.

pub mod conv;
pub mod crypto;
pub mod dates;
pub mod defaults;
pub mod dicts;
pub mod gounicode;
pub mod json;
pub mod lists;
pub mod misc;
pub mod numeric;
#[cfg(test)]
mod oracle_tests;
pub mod random;
pub mod regex;
pub mod semver;
pub mod strings;
pub mod url;

use super::{FuncDef, FuncImpl, FuncMap, Param};
use crate::engine::value::Value;

pub fn register(m: &mut FuncMap) {
    for table in [
        strings::FUNCS,
        numeric::FUNCS,
        lists::FUNCS,
        dicts::FUNCS,
        defaults::FUNCS,
        misc::FUNCS,
        regex::FUNCS,
        semver::FUNCS,
        url::FUNCS,
        crypto::FUNCS,
        dates::FUNCS,
        random::FUNCS,
    ] {
        for def in table {
            m.insert(def);
        }
    }
}

/// A function with fixed parameters.
pub(crate) const fn def(name: &'static str, params: &'static [Param], imp: FuncImpl) -> FuncDef {
    FuncDef {
        name,
        params,
        variadic: None,
        imp,
    }
}

/// A variadic function (`func(fixed…, rest ...T)`).
pub(crate) const fn defv(
    name: &'static str,
    params: &'static [Param],
    variadic: Param,
    imp: FuncImpl,
) -> FuncDef {
    FuncDef {
        name,
        params,
        variadic: Some(variadic),
        imp,
    }
}

/// Argument `i`, which the evaluator has converted to Go `string`.
pub(crate) fn arg_str(args: &[Value], i: usize) -> &str {
    args.get(i).and_then(Value::as_str).unwrap_or("")
}

/// The bytes of argument `i`, declared [`Param::RawStr`] (a `Str` or a
/// `BStr`).
pub(crate) fn arg_bytes(args: &[Value], i: usize) -> &[u8] {
    args.get(i).and_then(Value::go_bytes).unwrap_or_default()
}

/// Whether any argument is a Go string that is not UTF-8, so that a
/// function must take its byte path.
pub(crate) fn any_bstr(args: &[Value]) -> bool {
    args.iter().any(|v| matches!(v, Value::BStr(_)))
}

/// Argument `i`, converted to Go `int`/`int64`.
pub(crate) fn arg_int(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n) | Value::I64(n)) => *n,
        _ => 0,
    }
}

/// The arguments after the first (the variadic rest of `f(a, rest...)`).
pub(crate) fn tail(args: &[Value]) -> &[Value] {
    args.get(1..).unwrap_or(&[])
}

/// Argument `i` as an `interface {}` (nil when absent).
pub(crate) fn arg(args: &[Value], i: usize) -> Value {
    args.get(i).cloned().unwrap_or(Value::Nil)
}

/// A Go string of these bytes: byte-sliced Go strings may cut a UTF-8
/// sequence, which gives a [`Value::BStr`].
pub(crate) fn go_str(b: &[u8]) -> Value {
    Value::from_go_bytes(b.to_vec())
}

/// Go's runtime panic for dereferencing nil, which `reflect.TypeOf(nil).Kind()`
/// triggers in Sprig's list functions.
pub(crate) const NIL_DEREF: &str =
    "runtime error: invalid memory address or nil pointer dereference";

#[cfg(test)]
pub(crate) mod testutil {
    use crate::engine::funcs::{Env, FuncMap};
    use crate::engine::value::Value;

    /// Call a registered function's implementation directly.
    pub fn call(name: &str, args: &[Value]) -> Result<Value, String> {
        let m = FuncMap::standard();
        let def = m
            .get(name)
            .unwrap_or_else(|| panic!("function {name} is not registered"));
        (def.imp)(
            &Env::reproducible(1, chrono::DateTime::UNIX_EPOCH.fixed_offset()),
            args,
        )
    }

    /// `%v` of a successful call.
    pub fn v(name: &str, args: &[Value]) -> String {
        match call(name, args) {
            Ok(v) => crate::engine::gofmt::to_string_v(&v),
            Err(e) => panic!("{name} failed: {e}"),
        }
    }

    /// The error of a failing call.
    pub fn err(name: &str, args: &[Value]) -> String {
        match call(name, args) {
            Ok(v) => panic!("{name} succeeded with {v:?}"),
            Err(e) => e,
        }
    }

    pub fn s(x: &str) -> Value {
        Value::str(x)
    }
    pub fn i(x: i64) -> Value {
        Value::Int(x)
    }
    pub fn f(x: f64) -> Value {
        Value::Float(x)
    }
    pub fn l(items: Vec<Value>) -> Value {
        Value::list(items)
    }
    pub fn d(pairs: &[(&str, Value)]) -> Value {
        Value::map(
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        )
    }
}
