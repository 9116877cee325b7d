//! Sprig's list functions (`list.go`). They accept any Go slice through
//! reflection and return new `[]interface {}` slices; a non-slice argument
//! fails with Sprig's "Cannot … on type KIND" text, and nil fails with the
//! nil-pointer panic that `reflect.TypeOf(nil).Kind()` raises in Go.

use std::rc::Rc;

use super::conv::{deep_equal, empty, is_slice, kind_of, slice_items, to_int};
use super::{NIL_DEREF, arg, arg_int, def, defv, tail};
use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::{List, ListKind, Value};

use Param::{Any, Int};

pub const FUNCS: &[FuncDef] = &[
    defv("list", &[], Any, |_, a| Ok(Value::list(a.to_vec()))),
    defv("tuple", &[], Any, |_, a| Ok(Value::list(a.to_vec()))),
    def("append", &[Any, Any], push),
    def("push", &[Any, Any], push),
    def("mustAppend", &[Any, Any], push),
    def("mustPush", &[Any, Any], push),
    def("prepend", &[Any, Any], prepend),
    def("mustPrepend", &[Any, Any], prepend),
    def("first", &[Any], first),
    def("mustFirst", &[Any], first),
    def("rest", &[Any], rest),
    def("mustRest", &[Any], rest),
    def("last", &[Any], last),
    def("mustLast", &[Any], last),
    def("initial", &[Any], initial),
    def("mustInitial", &[Any], initial),
    def("reverse", &[Any], reverse),
    def("mustReverse", &[Any], reverse),
    def("uniq", &[Any], uniq),
    def("mustUniq", &[Any], uniq),
    defv("without", &[Any], Any, without),
    defv("mustWithout", &[Any], Any, without),
    def("has", &[Any, Any], has),
    def("mustHas", &[Any, Any], has),
    defv("slice", &[Any], Any, slice),
    defv("mustSlice", &[Any], Any, slice),
    defv("concat", &[], Any, concat),
    def("chunk", &[Int, Any], chunk),
    def("mustChunk", &[Int, Any], chunk),
    def("compact", &[Any], compact),
    def("mustCompact", &[Any], compact),
];

/// The elements of a slice argument, or Sprig's error for anything else.
fn items_of(v: &Value, what: &str) -> Result<Vec<Value>, String> {
    if v.is_nil() {
        return Err(NIL_DEREF.into());
    }
    if !is_slice(v) {
        return Err(format!("{what} {}", kind_of(v)));
    }
    Ok(slice_items(v))
}

fn push(_: &Env, a: &[Value]) -> FuncResult {
    let mut items = items_of(&arg(a, 0), "Cannot push on type")?;
    items.push(arg(a, 1));
    Ok(Value::list(items))
}

fn prepend(_: &Env, a: &[Value]) -> FuncResult {
    let mut items = items_of(&arg(a, 0), "Cannot prepend on type")?;
    items.insert(0, arg(a, 1));
    Ok(Value::list(items))
}

fn first(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot find first on type")?;
    Ok(items.into_iter().next().unwrap_or(Value::Nil))
}

fn last(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot find last on type")?;
    Ok(items.into_iter().next_back().unwrap_or(Value::Nil))
}

fn rest(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot find rest on type")?;
    // An empty input gives a nil []interface{}: [] printed, null as JSON.
    if items.is_empty() {
        return Ok(Value::list_or_nil(items));
    }
    Ok(Value::list(items.into_iter().skip(1).collect()))
}

fn initial(_: &Env, a: &[Value]) -> FuncResult {
    let mut items = items_of(&arg(a, 0), "Cannot find initial on type")?;
    // As `rest`: a nil []interface{} for an empty input only.
    if items.is_empty() {
        return Ok(Value::list_or_nil(items));
    }
    items.pop();
    Ok(Value::list(items))
}

fn reverse(_: &Env, a: &[Value]) -> FuncResult {
    let mut items = items_of(&arg(a, 0), "Cannot find reverse on type")?;
    items.reverse();
    Ok(Value::list(items))
}

fn uniq(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot find uniq on type")?;
    let mut dest: Vec<Value> = Vec::new();
    for item in items {
        if !dest.iter().any(|d| deep_equal(&item, d)) {
            dest.push(item);
        }
    }
    Ok(Value::list(dest))
}

fn without(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot find without on type")?;
    let omit = tail(a);
    Ok(Value::list(
        items
            .into_iter()
            .filter(|item| !omit.iter().any(|o| deep_equal(item, o)))
            .collect(),
    ))
}

fn has(_: &Env, a: &[Value]) -> FuncResult {
    let (needle, haystack) = (arg(a, 0), arg(a, 1));
    if haystack.is_nil() {
        return Ok(Value::Bool(false));
    }
    let items = items_of(&haystack, "Cannot find has on type")?;
    Ok(Value::Bool(
        items.iter().any(|item| deep_equal(&needle, item)),
    ))
}

/// Sprig's `slice`: `reflect.Value.Slice`, which keeps the slice's type.
fn slice(_: &Env, a: &[Value]) -> FuncResult {
    let list = arg(a, 0);
    if list.is_nil() {
        return Err(NIL_DEREF.into());
    }
    if !is_slice(&list) {
        return Err(format!(
            "list should be type of slice or array but {}",
            kind_of(&list)
        ));
    }
    // A named slice type (`.Capabilities.APIVersions`) slices as its list.
    let list = match &list {
        Value::Object(o) => o.underlying().unwrap_or(Value::Nil),
        _ => list,
    };
    let len = match &list {
        Value::List(l) => l.items.len(),
        Value::Bytes(b) => b.len(),
        _ => 0,
    } as i64;
    if len == 0 {
        return Ok(Value::Nil);
    }
    let start = a.get(1).map(to_int).unwrap_or(0);
    let end = a.get(2).map(to_int).unwrap_or(len);
    if start < 0 || end < start || end > len {
        return Err("reflect.Value.Slice: slice index out of bounds".into());
    }
    let (s, e) = (start as usize, end as usize);
    Ok(match &list {
        Value::List(l) => Value::List(Rc::new(List {
            kind: l.kind,
            items: l.items[s..e].to_vec(),
        })),
        Value::Bytes(b) => Value::Bytes(Rc::from(&b[s..e])),
        _ => Value::Nil,
    })
}

fn concat(_: &Env, a: &[Value]) -> FuncResult {
    let mut res = Vec::new();
    for l in a {
        if l.is_nil() {
            return Err(NIL_DEREF.into());
        }
        if !is_slice(l) {
            return Err(format!("Cannot concat type {} as list", kind_of(l)));
        }
        res.extend(slice_items(l));
    }
    // Sprig appends to a nil `[]interface{}`.
    Ok(Value::list_or_nil(res))
}

fn chunk(_: &Env, a: &[Value]) -> FuncResult {
    let size = arg_int(a, 0);
    let items = items_of(&arg(a, 1), "Cannot chunk type")?;
    if size <= 0 {
        // Sprig's float arithmetic yields a negative or NaN chunk count.
        return Err("runtime error: makeslice: len out of range".into());
    }
    Ok(Value::List(Rc::new(List {
        kind: ListKind::Lists,
        items: items
            .chunks(size as usize)
            .map(|c| Value::list(c.to_vec()))
            .collect(),
    })))
}

fn compact(_: &Env, a: &[Value]) -> FuncResult {
    let items = items_of(&arg(a, 0), "Cannot compact on type")?;
    Ok(Value::list(
        items.into_iter().filter(|v| !empty(v)).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{d, err, f, i, l, s, v};
    use super::*;

    #[test]
    fn list_basics() {
        assert_eq!(
            v("list", &[i(1), s("a"), Value::Nil, f(2.5)]),
            "[1 a <nil> 2.5]"
        );
        assert_eq!(v("append", &[l(vec![i(1)]), i(2)]), "[1 2]");
        assert_eq!(v("prepend", &[l(vec![i(1)]), i(0)]), "[0 1]");
        assert_eq!(v("first", &[l(vec![i(1), i(2)])]), "1");
        assert_eq!(v("first", &[l(vec![])]), "<nil>");
        assert_eq!(v("last", &[l(vec![i(1), i(2)])]), "2");
        assert_eq!(v("rest", &[l(vec![i(1), i(2), i(3)])]), "[2 3]");
        assert_eq!(v("initial", &[l(vec![i(1), i(2), i(3)])]), "[1 2]");
        assert_eq!(v("reverse", &[l(vec![i(1), i(2), i(3)])]), "[3 2 1]");
        assert_eq!(v("uniq", &[l(vec![i(1), i(1), f(1.0), s("1")])]), "[1 1 1]");
        assert_eq!(v("without", &[l(vec![i(1), i(2), i(3)]), i(2)]), "[1 3]");
        assert_eq!(v("has", &[i(2), l(vec![i(1), i(2)])]), "true");
        assert_eq!(v("has", &[f(2.0), l(vec![i(1), i(2)])]), "false");
        assert_eq!(v("has", &[i(2), Value::Nil]), "false");
        assert_eq!(
            v(
                "compact",
                &[l(vec![i(0), s(""), s("a"), Value::Nil, d(&[])])]
            ),
            "[a]"
        );
        assert_eq!(
            v("concat", &[l(vec![i(1)]), l(vec![i(2), i(3)])]),
            "[1 2 3]"
        );
        assert_eq!(
            v("chunk", &[i(2), l(vec![i(1), i(2), i(3)])]),
            "[[1 2] [3]]"
        );
        assert_eq!(v("slice", &[l(vec![i(1), i(2), i(3)]), i(1)]), "[2 3]");
        assert_eq!(
            v("slice", &[l(vec![i(1), i(2), i(3)]), i(0), i(2)]),
            "[1 2]"
        );
    }

    #[test]
    fn list_errors() {
        assert_eq!(
            err("first", &[s("abc")]),
            "Cannot find first on type string"
        );
        assert_eq!(err("mustLast", &[d(&[])]), "Cannot find last on type map");
        assert_eq!(err("first", &[Value::Nil]), NIL_DEREF);
        assert_eq!(
            err("slice", &[s("abc"), i(1)]),
            "list should be type of slice or array but string"
        );
        assert_eq!(
            err("slice", &[l(vec![i(1)]), i(2)]),
            "reflect.Value.Slice: slice index out of bounds"
        );
        assert_eq!(
            err("concat", &[l(vec![]), i(1)]),
            "Cannot concat type int as list"
        );
        assert_eq!(err("append", &[s("x"), i(1)]), "Cannot push on type string");
        assert_eq!(
            err("chunk", &[i(0), l(vec![i(1)])]),
            "runtime error: makeslice: len out of range"
        );
    }
}
