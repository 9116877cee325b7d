//! `jqFilter` for kubernetes bindings, compiled with jaq and run the way
//! shell-operator's `pkg/filter/jq/apply.go` runs gojq: no output is `null`,
//! one output is that value, several outputs are an array, a bare `halt`
//! ends the output, and the result is JSON with sorted keys.

use std::fmt;
use std::sync::Arc;

use jaq_core::load::{Arena, File, Loader, lex, parse};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;

type Lut = data::JustLut<Val>;

/// A compiled jq program. Cheap to clone; `Send + Sync` (jaq-json `sync`).
#[derive(Clone)]
pub struct JqFilter {
    source: String,
    filter: Arc<jaq_core::compile::Filter<jaq_core::Native<Lut>>>,
}

impl fmt::Debug for JqFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JqFilter").field(&self.source).finish()
    }
}

impl PartialEq for JqFilter {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl JqFilter {
    /// Parses and compiles `code`; the error text says what the parser
    /// expected and where ("expected term, found `)`").
    pub fn compile(code: &str) -> Result<Self, String> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(&arena, File { code, path: () })
            .map_err(|errs| {
                errs.into_iter()
                    .map(|(_, e)| load_error(e))
                    .collect::<Vec<_>>()
                    .join("; ")
            })?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| {
                errs.into_iter()
                    .flat_map(|(_, es)| es)
                    .map(|(name, undefined)| format!("undefined {} `{name}`", undefined.as_str()))
                    .collect::<Vec<_>>()
                    .join("; ")
            })?;
        Ok(JqFilter {
            source: code.to_string(),
            filter: Arc::new(filter),
        })
    }

    /// The program text as written in the hook's config.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the filter on `input` (shell-operator's `CompiledJqFilter.Apply`):
    /// 0 outputs → `null`, 1 → the value, more → an array of them.
    pub fn apply(&self, input: &serde_json::Value) -> Result<serde_json::Value, String> {
        let val = json_to_val(input);
        let ctx = Ctx::<Lut>::new(&self.filter.lut, Vars::new([]));
        let mut results = Vec::new();
        for r in self.filter.id.run((ctx, val)) {
            match r {
                Ok(v) => results.push(val_to_json(&v)),
                // Never `unwrap_valr`: it calls process::exit on `halt`.
                Err(exn) => match exn.get_err() {
                    Ok(e) => return Err(format!("jq: error: {e}")),
                    // gojq's HaltError with a null value ends the output.
                    Err(_halt) => break,
                },
            }
        }
        Ok(match results.len() {
            0 => serde_json::Value::Null,
            1 => results.pop().unwrap_or(serde_json::Value::Null),
            _ => serde_json::Value::Array(results),
        })
    }
}

fn lex_expect(e: &lex::Expect<&str>) -> String {
    match e {
        lex::Expect::Digit => "digit".into(),
        lex::Expect::Ident => "identifier".into(),
        lex::Expect::Delim(d) => format!("closing delimiter for `{d}`"),
        lex::Expect::Escape => "string escape sequence".into(),
        lex::Expect::Unicode => "4-digit hexadecimal UTF-8 code point".into(),
        lex::Expect::Token => "token".into(),
        _ => "token".into(),
    }
}

fn found(rest: &str) -> String {
    let snippet: String = rest.chars().take(20).collect();
    if snippet.is_empty() {
        "end of input".into()
    } else {
        format!("`{snippet}`")
    }
}

fn load_error(e: jaq_core::load::Error<&str>) -> String {
    match e {
        jaq_core::load::Error::Io(es) => es
            .into_iter()
            .map(|(p, m)| format!("cannot load {p}: {m}"))
            .collect::<Vec<_>>()
            .join("; "),
        jaq_core::load::Error::Lex(es) => es
            .iter()
            .map(|(exp, rest)| format!("expected {}, found {}", lex_expect(exp), found(rest)))
            .collect::<Vec<_>>()
            .join("; "),
        jaq_core::load::Error::Parse(es) => es
            .iter()
            .map(|(exp, rest): &parse::Error<&str>| {
                format!("expected {}, found {}", exp.as_str(), found(rest))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn json_to_val(v: &serde_json::Value) -> Val {
    match v {
        serde_json::Value::Null => Val::Null,
        serde_json::Value::Bool(b) => Val::Bool(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64().and_then(|i| isize::try_from(i).ok()) {
                Val::from(i)
            } else {
                Val::from(n.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(s) => Val::from(s.clone()),
        serde_json::Value::Array(a) => a.iter().map(json_to_val).collect(),
        serde_json::Value::Object(m) => Val::obj(
            m.iter()
                .map(|(k, v)| (Val::from(k.clone()), json_to_val(v)))
                .collect(),
        ),
    }
}

/// jaq values back to JSON. Integral floats become integers because gojq
/// prints `4/2` as `2`; object keys come out sorted (`serde_json::Map` is a
/// BTreeMap), as Go's json.Marshal sorts them.
fn val_to_json(v: &Val) -> serde_json::Value {
    match v {
        Val::Null => serde_json::Value::Null,
        Val::Bool(b) => serde_json::Value::Bool(*b),
        Val::Num(n) => num_to_json(&n.to_string()),
        Val::TStr(b) | Val::BStr(b) => {
            serde_json::Value::String(String::from_utf8_lossy(b).into_owned())
        }
        Val::Arr(a) => serde_json::Value::Array(a.iter().map(val_to_json).collect()),
        Val::Obj(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
                        other => other.to_string(),
                    };
                    (key, val_to_json(v))
                })
                .collect(),
        ),
    }
}

fn num_to_json(text: &str) -> serde_json::Value {
    if let Ok(i) = text.parse::<i64>() {
        return serde_json::Value::from(i);
    }
    match text.parse::<f64>() {
        // gojq writes numbers as Go's encoding/json does: an integral one
        // as digits, which read back as an integer.
        Ok(f) if f.is_finite() => crate::gocompat::json::float_number(f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        // jq prints NaN as null and ±Infinity as ±DBL_MAX.
        Ok(f) if f.is_nan() => serde_json::Value::Null,
        Ok(f) => serde_json::Value::from(if f > 0.0 { f64::MAX } else { f64::MIN }),
        Err(_) => serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_follow_gojq_collect_rules() {
        let f = JqFilter::compile(".metadata.name").unwrap();
        assert_eq!(
            f.apply(&json!({"metadata":{"name":"a"}})).unwrap(),
            json!("a")
        );
        let f = JqFilter::compile(".[]").unwrap();
        assert_eq!(f.apply(&json!([1, 2])).unwrap(), json!([1, 2]));
        assert_eq!(f.apply(&json!([])).unwrap(), json!(null));
        let f = JqFilter::compile("4/2").unwrap();
        assert_eq!(f.apply(&json!(null)).unwrap(), json!(2));
        let f = JqFilter::compile("{b:1,a:2}").unwrap();
        assert_eq!(
            serde_json::to_string(&f.apply(&json!(null)).unwrap()).unwrap(),
            r#"{"a":2,"b":1}"#
        );
        let f = JqFilter::compile("1, halt, 2").unwrap();
        assert_eq!(f.apply(&json!(null)).unwrap(), json!(1));
    }

    #[test]
    fn compile_errors_are_readable() {
        let e = JqFilter::compile(".metadata | (").unwrap_err();
        assert!(e.contains("expected"), "{e}");
        let e = JqFilter::compile("nosuchfn(1)").unwrap_err();
        assert!(e.contains("undefined"), "{e}");
        let e = JqFilter::compile("error(\"x\")")
            .unwrap()
            .apply(&json!(1))
            .unwrap_err();
        assert!(e.contains("x"), "{e}");
    }
}
