//! Sprig's `defaults.go`: `default`, `empty`, `coalesce`, `all`, `any`,
//! `ternary`, the JSON functions and `deepCopy`.
//!
//! Emptiness is Sprig's `empty` ([`super::conv::empty`]): the zero value of
//! the type, so `default "x" 0`, `default "x" false` and `default "x" (dict)`
//! all give "x". `toJson` and friends swallow encoding errors into "" (the
//! `must*` variants return them), except `toRawJson`, which panics.

use super::conv::empty;
use super::json::{from_json, to_json};
use super::{arg, arg_str, def, defv};
use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::Value;

use Param::{Any, Bool, Str};

pub const FUNCS: &[FuncDef] = &[
    defv("default", &[Any], Any, dfault),
    def("empty", &[Any], |_, a| Ok(Value::Bool(empty(&arg(a, 0))))),
    defv("coalesce", &[], Any, |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
    }),
    defv("all", &[], Any, |_, a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    }),
    defv("any", &[], Any, |_, a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    }),
    def("ternary", &[Any, Any, Bool], |_, a| {
        Ok(if matches!(a.get(2), Some(Value::Bool(true))) {
            arg(a, 0)
        } else {
            arg(a, 1)
        })
    }),
    def("fromJson", &[Str], |_, a| {
        Ok(from_json(arg_str(a, 0)).unwrap_or(Value::Nil))
    }),
    def("mustFromJson", &[Str], |_, a| from_json(arg_str(a, 0))),
    def("toJson", &[Any], |_, a| {
        Ok(Value::string(
            to_json(&arg(a, 0), true, "").unwrap_or_default(),
        ))
    }),
    def("mustToJson", &[Any], |_, a| {
        to_json(&arg(a, 0), true, "").map(Value::string)
    }),
    def("toPrettyJson", &[Any], |_, a| {
        Ok(Value::string(
            to_json(&arg(a, 0), true, "  ").unwrap_or_default(),
        ))
    }),
    def("mustToPrettyJson", &[Any], |_, a| {
        to_json(&arg(a, 0), true, "  ").map(Value::string)
    }),
    def("toRawJson", &[Any], |_, a| {
        to_json(&arg(a, 0), false, "").map(Value::string)
    }),
    def("mustToRawJson", &[Any], |_, a| {
        to_json(&arg(a, 0), false, "").map(Value::string)
    }),
    def("deepCopy", &[Any], |_, a| Ok(arg(a, 0).deep_copy())),
    def("mustDeepCopy", &[Any], |_, a| Ok(arg(a, 0).deep_copy())),
];

/// Sprig's `dfault`: `given` is the variadic rest; with no value given, or
/// an empty one, the default wins.
fn dfault(_: &Env, a: &[Value]) -> FuncResult {
    match a.get(1) {
        Some(g) if !empty(g) => Ok(g.clone()),
        _ => Ok(arg(a, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{d, f, i, l, s, v};
    use super::*;

    #[test]
    fn default_and_friends() {
        assert_eq!(v("default", &[s("x"), f(0.0)]), "x");
        assert_eq!(v("default", &[s("x"), Value::Bool(false)]), "x");
        assert_eq!(v("default", &[s("x"), d(&[])]), "x");
        assert_eq!(v("default", &[i(5), f(0.0)]), "5");
        assert_eq!(v("default", &[s("x"), s("ok")]), "ok");
        assert_eq!(v("default", &[s("x")]), "x");
        assert_eq!(v("empty", &[l(vec![])]), "true");
        assert_eq!(v("empty", &[s(" ")]), "false");
        assert_eq!(v("coalesce", &[Value::Nil, s(""), i(0), s("a")]), "a");
        assert_eq!(v("coalesce", &[Value::Nil]), "<nil>");
        assert_eq!(v("all", &[i(1), s("")]), "false");
        assert_eq!(v("all", &[]), "true");
        assert_eq!(v("any", &[i(0), s("x")]), "true");
        assert_eq!(v("any", &[]), "false");
        assert_eq!(v("ternary", &[s("a"), s("b"), Value::Bool(true)]), "a");
        assert_eq!(v("ternary", &[s("a"), s("b"), Value::Bool(false)]), "b");
    }

    #[test]
    fn json_functions() {
        let m = d(&[("a", s("<b>&")), ("n", f(1000000.0))]);
        assert_eq!(
            v("toJson", std::slice::from_ref(&m)),
            r#"{"a":"\u003cb\u003e\u0026","n":1000000}"#
        );
        assert_eq!(v("toRawJson", &[d(&[("a", s("<b>&"))])]), r#"{"a":"<b>&"}"#);
        assert_eq!(
            v("toPrettyJson", &[d(&[("a", l(vec![i(1)])), ("e", d(&[]))])]),
            "{\n  \"a\": [\n    1\n  ],\n  \"e\": {}\n}"
        );
        assert_eq!(v("toJson", &[f(f64::NAN)]), "");
        assert_eq!(
            v("fromJson", &[s(r#"{"a":[1,"x",null,true]}"#)]),
            "map[a:[1 x <nil> true]]"
        );
        assert_eq!(v("fromJson", &[s("{")]), "<nil>");
    }

    #[test]
    fn deep_copy_unaliases() {
        let m = d(&[("a", d(&[("b", i(1))]))]);
        let Ok(c) = super::super::testutil::call("deepCopy", std::slice::from_ref(&m)) else {
            panic!()
        };
        if let Value::Map(cm) = &c {
            cm.insert("z", i(1));
        }
        assert_eq!(crate::engine::gofmt::to_string_v(&m), "map[a:map[b:1]]");
    }
}
