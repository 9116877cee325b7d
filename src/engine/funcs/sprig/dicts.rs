//! Sprig's dictionary functions (`dict.go`). Maps have reference semantics:
//! `set`, `unset`, `merge` and `mergeOverwrite` change their first argument
//! in place, visibly through every alias (Helm charts rely on this to
//! accumulate state in `.Values`).
//!
//! `merge`/`mergeOverwrite` port mergo v1.0.1's `deepMerge` for
//! `map[string]interface {}`: `merge` fills keys that are missing or hold an
//! empty value (false, 0, "", nil, empty collections) and recurses into
//! nested maps; `mergeOverwrite` replaces every key the source has (an
//! empty source value included) except that nested maps are merged.
//!
//! Go iterates maps in random order; `keys` and `values` here follow the
//! map's (bytewise) key order.

use std::rc::Rc;

use super::conv::strval;
use super::{arg, arg_str, def, defv, tail};
use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::{Map, MapKind, Value};

use Param::{Any, Str};

pub const FUNCS: &[FuncDef] = &[
    defv("dict", &[], Any, dict),
    def("get", &[Param::Map, Str], get),
    def("set", &[Param::Map, Str, Any], set),
    def("unset", &[Param::Map, Str], unset),
    def("hasKey", &[Param::Map, Str], |_, a| {
        Ok(Value::Bool(
            as_map(&arg(a, 0)).is_some_and(|m| m.contains_key(arg_str(a, 1))),
        ))
    }),
    defv("pluck", &[Str], Param::Map, pluck),
    defv("keys", &[], Param::Map, keys),
    defv("pick", &[Param::Map], Str, pick),
    defv("omit", &[Param::Map], Str, omit),
    defv("merge", &[Param::Map], Param::Map, |_, a| {
        merge_all(a, false)
    }),
    defv("mustMerge", &[Param::Map], Param::Map, |_, a| {
        merge_all(a, false)
    }),
    defv("mergeOverwrite", &[Param::Map], Param::Map, |_, a| {
        merge_all(a, true)
    }),
    defv("mustMergeOverwrite", &[Param::Map], Param::Map, |_, a| {
        merge_all(a, true)
    }),
    def("values", &[Param::Map], |_, a| {
        Ok(Value::list(
            as_map(&arg(a, 0))
                .map(|m| m.borrow().values().cloned().collect())
                .unwrap_or_default(),
        ))
    }),
    defv("dig", &[], Any, dig),
];

/// The map behind a `map[string]interface {}` argument (`None` for a nil map).
fn as_map(v: &Value) -> Option<Rc<Map>> {
    match v {
        Value::Map(m) => Some(m.clone()),
        _ => None,
    }
}

fn dict(_: &Env, a: &[Value]) -> FuncResult {
    let out = Value::empty_map();
    if let Value::Map(m) = &out {
        for pair in a.chunks(2) {
            let key = strval(&pair[0]);
            m.insert(
                key.as_str(),
                pair.get(1).cloned().unwrap_or_else(|| Value::str("")),
            );
        }
    }
    Ok(out)
}

fn get(_: &Env, a: &[Value]) -> FuncResult {
    Ok(as_map(&arg(a, 0))
        .and_then(|m| m.get(arg_str(a, 1)))
        .unwrap_or_else(|| Value::str("")))
}

fn set(_: &Env, a: &[Value]) -> FuncResult {
    let d = arg(a, 0);
    let Some(m) = as_map(&d) else {
        return Err("assignment to entry in nil map".into());
    };
    m.insert(arg_str(a, 1), arg(a, 2));
    Ok(d)
}

fn unset(_: &Env, a: &[Value]) -> FuncResult {
    let d = arg(a, 0);
    if let Some(m) = as_map(&d) {
        m.remove(arg_str(a, 1));
    }
    Ok(d)
}

fn pluck(_: &Env, a: &[Value]) -> FuncResult {
    let key = arg_str(a, 0);
    Ok(Value::list(
        tail(a)
            .iter()
            .filter_map(|d| as_map(d).and_then(|m| m.get(key)))
            .collect(),
    ))
}

fn keys(_: &Env, a: &[Value]) -> FuncResult {
    let mut out = Vec::new();
    for d in a {
        if let Some(m) = as_map(d) {
            out.extend(m.borrow().keys().map(|k| Value::Str(k.clone().into())));
        }
    }
    Ok(Value::str_list(out))
}

fn pick(_: &Env, a: &[Value]) -> FuncResult {
    let out = Value::empty_map();
    if let (Some(src), Value::Map(dst)) = (as_map(&arg(a, 0)), &out) {
        for k in tail(a) {
            let k = k.as_str().unwrap_or("");
            if let Some(v) = src.get(k) {
                dst.insert(k, v);
            }
        }
    }
    Ok(out)
}

fn omit(_: &Env, a: &[Value]) -> FuncResult {
    let out = Value::empty_map();
    if let (Some(src), Value::Map(dst)) = (as_map(&arg(a, 0)), &out) {
        let omit: Vec<&str> = tail(a).iter().map(|k| k.as_str().unwrap_or("")).collect();
        for (k, v) in src.borrow().iter() {
            if !omit.contains(&k.as_ref()) {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(out)
}

fn merge_all(a: &[Value], overwrite: bool) -> FuncResult {
    let mut dst = arg(a, 0);
    for src in tail(a) {
        let Some(s) = as_map(src) else { continue };
        let d = match as_map(&dst) {
            Some(d) => d,
            None => {
                // mergo makes a new map for a nil destination (even when
                // the source is empty but not nil).
                dst = Value::empty_map();
                match as_map(&dst) {
                    Some(d) => d,
                    None => continue,
                }
            }
        };
        merge_maps(&d, &s, overwrite);
    }
    Ok(dst)
}

/// mergo's `isEmptyValue` through an interface (nil, false, 0, "", empty
/// collections; a struct or pointer object is not empty).
fn is_empty_value(v: &Value) -> bool {
    super::conv::empty(v)
}

/// mergo `deepMerge` for two `map[string]interface {}` values.
pub fn merge_maps(dst: &Map, src: &Map, overwrite: bool) {
    let dst_was_empty = dst.is_empty();
    let entries: Vec<(crate::engine::Key, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, s) in entries {
        let d = dst.get(&key);
        match &s {
            Value::Nil => {
                if overwrite {
                    dst.insert(key, Value::Nil);
                }
                continue;
            }
            Value::Map(sm) => {
                if let Some(Value::Map(dm)) = &d
                    && dm.id() != sm.id()
                {
                    merge_maps(dm, sm, overwrite);
                }
            }
            // mergo decides on the *outer* maps here: with overwrite or an
            // empty destination map the source slice is stored.
            Value::List(_) | Value::Bytes(_) if overwrite || dst_was_empty => {
                dst.insert(key.clone(), s.clone());
            }
            _ => {}
        }
        if let Some(dv) = &d
            && !is_empty_value(dv)
            && (matches!(s, Value::List(_) | Value::Bytes(_))
                || matches!(s, Value::Map(_)) && matches!(dv, Value::Map(_)))
        {
            continue;
        }
        if overwrite || d.as_ref().is_none_or(is_empty_value) {
            dst.insert(key, s);
        }
    }
}

/// Go's failed type assertion `x.(T)` on an `interface {}`.
fn assertion_error(v: &Value, want: &str) -> String {
    let got = if v.is_nil() { "nil" } else { v.type_name() };
    format!("interface conversion: interface {{}} is {got}, not {want}")
}

fn dig(_: &Env, a: &[Value]) -> FuncResult {
    if a.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let last = &a[a.len() - 1];
    let mut dict = match last {
        Value::Map(m) if m.kind == MapKind::Any => m.clone(),
        other => return Err(assertion_error(other, "map[string]interface {}")),
    };
    let default = a[a.len() - 2].clone();
    let mut keys = Vec::new();
    for k in &a[..a.len() - 2] {
        match k {
            Value::Str(s) => keys.push(s.clone()),
            other => return Err(assertion_error(other, "string")),
        }
    }
    for (i, k) in keys.iter().enumerate() {
        let Some(step) = dict.get(k) else {
            return Ok(default);
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        dict = match &step {
            Value::Map(m) if m.kind == MapKind::Any => m.clone(),
            other => return Err(assertion_error(other, "map[string]interface {}")),
        };
    }
    Ok(default)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{call, d, err, i, l, s, v};
    use super::*;
    use crate::engine::value::Entries;

    #[test]
    fn dict_get_set() {
        assert_eq!(
            v("dict", &[s("b"), i(1), s("a"), s("x"), s("odd")]),
            "map[a:x b:1 odd:]"
        );
        assert_eq!(v("dict", &[i(1), i(2)]), "map[1:2]");
        let m = d(&[("a", i(1))]);
        assert_eq!(v("get", &[m.clone(), s("a")]), "1");
        assert_eq!(v("get", &[m.clone(), s("zz")]), "");
        assert_eq!(v("set", &[m.clone(), s("b"), i(2)]), "map[a:1 b:2]");
        // set mutated m in place
        assert_eq!(crate::engine::gofmt::to_string_v(&m), "map[a:1 b:2]");
        assert_eq!(v("unset", &[m.clone(), s("a")]), "map[b:2]");
        assert_eq!(v("hasKey", &[m.clone(), s("b")]), "true");
        assert_eq!(
            err("set", &[Value::Nil, s("a"), i(1)]),
            "assignment to entry in nil map"
        );
        assert_eq!(
            v(
                "pluck",
                &[
                    s("a"),
                    d(&[("a", i(1))]),
                    d(&[("b", i(2))]),
                    d(&[("a", i(3))])
                ]
            ),
            "[1 3]"
        );
        assert_eq!(
            v("keys", &[d(&[("b", i(1)), ("a", i(1))]), d(&[("c", i(1))])]),
            "[a b c]"
        );
        assert_eq!(
            v("pick", &[d(&[("a", i(1)), ("b", i(2))]), s("b"), s("z")]),
            "map[b:2]"
        );
        assert_eq!(
            v("omit", &[d(&[("a", i(1)), ("b", i(2))]), s("b")]),
            "map[a:1]"
        );
        assert_eq!(v("values", &[d(&[("a", i(1)), ("b", i(2))])]), "[1 2]");
    }

    #[test]
    fn merge_semantics() {
        let dst = d(&[("a", Value::Bool(false)), ("b", s("")), ("d", s("keep"))]);
        let src = d(&[
            ("a", Value::Bool(true)),
            ("b", s("x")),
            ("d", s("new")),
            ("e", i(1)),
        ]);
        assert_eq!(
            v("merge", &[dst.clone(), src]),
            "map[a:true b:x d:keep e:1]"
        );
        assert_eq!(
            crate::engine::gofmt::to_string_v(&dst),
            "map[a:true b:x d:keep e:1]"
        );

        let nested_dst = d(&[("m", d(&[("x", i(1))])), ("l", l(vec![i(1)]))]);
        let nested_src = d(&[("m", d(&[("x", i(2)), ("y", i(3))])), ("l", l(vec![i(9)]))]);
        assert_eq!(
            v("merge", &[nested_dst.clone(), nested_src.clone()]),
            "map[l:[1] m:map[x:1 y:3]]"
        );
        assert_eq!(
            v("mergeOverwrite", &[nested_dst, nested_src]),
            "map[l:[9] m:map[x:2 y:3]]"
        );

        assert_eq!(
            v("mergeOverwrite", &[d(&[("a", s("x"))]), d(&[("a", s(""))])]),
            "map[a:]"
        );
        assert_eq!(v("merge", &[Value::Nil, d(&[])]), "map[]");
        assert_eq!(v("merge", &[Value::Nil, d(&[("a", i(1))])]), "map[a:1]");
        let Ok(Value::Map(_)) = call("merge", &[d(&[]), d(&[("k", i(1))])]) else {
            panic!()
        };
    }

    #[test]
    fn dig_rules() {
        let inner = d(&[("b", i(1))]);
        let m = d(&[("a", inner)]);
        assert_eq!(v("dig", &[s("a"), s("b"), s("def"), m.clone()]), "1");
        assert_eq!(v("dig", &[s("a"), s("z"), s("def"), m.clone()]), "def");
        assert_eq!(v("dig", &[s("x"), s("def"), m.clone()]), "def");
        let values = Value::Map(Rc::new(Map::new(MapKind::Values, Entries::new())));
        assert_eq!(
            err("dig", &[s("a"), s("def"), values]),
            "interface conversion: interface {} is chartutil.Values, not map[string]interface {}"
        );
        assert_eq!(
            err("dig", &[s("a"), s("b"), s("def"), d(&[("a", i(1))])]),
            "interface conversion: interface {} is int, not map[string]interface {}"
        );
        assert_eq!(
            err("dig", &[i(1), s("def"), m]),
            "interface conversion: interface {} is int, not string"
        );
        assert_eq!(
            err("dig", &[s("a"), s("def")]),
            "dig needs at least three arguments"
        );
    }
}
