//! Values coalescing: a port of Helm v3.17's `pkg/chartutil/coalesce.go`
//! (`CoalesceValues`, `MergeValues`, `CoalesceTables`, `MergeTables`) and the
//! values part of `ToRenderValues`.
//!
//! The port works on a private model with Go's reference semantics (maps
//! shared by pointer) because Helm's result depends on that sharing:
//! `coalesceGlobals` copies `global` tables shallowly, so a subchart's nested
//! `global` defaults are merged into maps the parent also holds. Warnings go
//! to a caller-supplied sink as the complete line Helm's `log.Printf` prints
//! (with its `coalesce.go:NNN: ` prefix).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::chart::schema::Schemas;
use crate::chart::types::{Chart, Warn};
use crate::yaml::{Mapping, Yaml};

/// A values error; `Display` is Helm's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ValuesError(pub String);

/// Go's `map[string]interface{}` by reference.
pub(crate) type M = Rc<RefCell<BTreeMap<String, V>>>;

/// A value in the Go model: a shared map, or anything else (never mutated
/// by coalescing, so kept as plain YAML).
#[derive(Clone, Debug)]
pub(crate) enum V {
    Map(M),
    Leaf(Yaml),
}

pub(crate) fn new_m() -> M {
    Rc::new(RefCell::new(BTreeMap::new()))
}

/// Deep copy into the Go model (`copystructure.Copy`).
pub(crate) fn to_m(m: &Mapping) -> M {
    Rc::new(RefCell::new(
        m.iter().map(|(k, v)| (k.clone(), to_v(v))).collect(),
    ))
}

pub(crate) fn to_v(y: &Yaml) -> V {
    match y {
        Yaml::Map(m) => V::Map(to_m(m)),
        other => V::Leaf(other.clone()),
    }
}

/// [`to_m`] of values nothing else needs: keys and leaves are moved, not
/// copied.
fn into_m(m: Mapping) -> M {
    Rc::new(RefCell::new(
        m.into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Yaml::Map(m) => V::Map(into_m(m)),
                    other => V::Leaf(other),
                };
                (k, v)
            })
            .collect(),
    ))
}

/// The default values of a chart and of its subcharts (in the order of
/// [`Chart::dependencies`]), taken out of the chart tree by
/// [`take_chart_values`] for a coalescing that consumes them.
pub struct ChartValues {
    values: Mapping,
    deps: Vec<ChartValues>,
}

impl ChartValues {
    /// A chart's own defaults, its subcharts' left in the chart tree.
    pub(crate) fn own(values: Mapping) -> ChartValues {
        ChartValues {
            values,
            deps: Vec::new(),
        }
    }
}

/// Move every chart's `values.yaml` out of `chart` (leaving them empty),
/// for [`coalesce_taken_values`]: the last coalescing of a render need not
/// copy the defaults (`copystructure.Copy` in Helm) when nothing reads
/// them afterwards, and for a big chart that copy is a few per cent of the
/// whole run (bitnami-postgresql's values and those of its `common`
/// subchart: ~3 % of its instructions).
pub fn take_chart_values(chart: &mut Chart) -> ChartValues {
    ChartValues {
        values: std::mem::take(&mut chart.values),
        deps: chart
            .dependencies
            .iter_mut()
            .map(take_chart_values)
            .collect(),
    }
}

/// [`coalesce_values`] of `chart` whose defaults `taken` holds (see
/// [`take_chart_values`]), consuming them: the same result, without
/// copying them.
pub fn coalesce_taken_values(
    chart: &Chart,
    taken: ChartValues,
    vals: &Mapping,
    warn: Warn,
) -> Result<Mapping, ValuesError> {
    coalesce_over(chart, Some(taken), vals, false, warn)
}

/// `vals` over the defaults of `chart` (taken from `taken` when given),
/// as a new mapping: the body of every public coalescing of a chart.
fn coalesce_over(
    chart: &Chart,
    taken: Option<ChartValues>,
    vals: &Mapping,
    merge: bool,
    warn: Warn,
) -> Result<Mapping, ValuesError> {
    let dest = to_m(vals);
    coalesce_with(chart, taken, &dest, "", merge, warn)?;
    Ok(into_mapping(dest))
}

/// Back out of the Go model.
pub(crate) fn from_m(m: &M) -> Mapping {
    m.borrow()
        .iter()
        .map(|(k, v)| (k.clone(), from_v(v)))
        .collect()
}

pub(crate) fn from_v(v: &V) -> Yaml {
    match v {
        V::Map(m) => Yaml::Map(from_m(m)),
        V::Leaf(y) => y.clone(),
    }
}

/// Out of the Go model, consuming it: a map nothing else holds gives up its
/// keys and values without copies (a chart's whole values tree, at the end of
/// each coalescing); a map still shared (a `global` table) is copied.
pub(crate) fn into_mapping(m: M) -> Mapping {
    match Rc::try_unwrap(m) {
        Ok(cell) => cell
            .into_inner()
            .into_iter()
            .map(|(k, v)| (k, into_yaml(v)))
            .collect(),
        Err(shared) => from_m(&shared),
    }
}

/// [`from_v`], consuming: see [`into_mapping`].
fn into_yaml(v: V) -> Yaml {
    match v {
        V::Map(m) => Yaml::Map(into_mapping(m)),
        V::Leaf(y) => y,
    }
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Go's `%v` of a values node (`map[a:1 b:[x y]]`, `<nil>`, floats as Go
/// prints float64).
pub(crate) fn go_v(y: &Yaml) -> String {
    let mut out = String::new();
    go_v_into(y, &mut out);
    out
}

fn go_v_into(y: &Yaml, out: &mut String) {
    match y {
        Yaml::Null => out.push_str("<nil>"),
        Yaml::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Yaml::Int(i) => out.push_str(&i.to_string()),
        Yaml::Float(f) => crate::engine::gofmt::format_float(*f, 'g', -1, out),
        Yaml::Str(s) => out.push_str(s),
        Yaml::Seq(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_v_into(it, out);
            }
            out.push(']');
        }
        Yaml::Map(m) => {
            out.push_str("map[");
            for (i, (k, it)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                go_v_into(it, out);
            }
            out.push(']');
        }
    }
}

/// Go's `%t` verb applied to any value (used by one Helm error message).
fn go_t(v: &V) -> String {
    match v {
        V::Leaf(Yaml::Bool(b)) => b.to_string(),
        V::Leaf(Yaml::Null) => "%!t(<nil>)".to_string(),
        V::Leaf(Yaml::Str(s)) => format!("%!t(string={s})"),
        V::Leaf(y @ Yaml::Float(_)) => format!("%!t(float64={})", go_v(y)),
        V::Leaf(y @ Yaml::Int(_)) => format!("%!t(int64={})", go_v(y)),
        V::Leaf(y @ Yaml::Seq(_)) => format!("%!t([]interface {{}}={})", go_v(y)),
        V::Map(m) => go_v(&Yaml::Map(from_m(m))),
        V::Leaf(y @ Yaml::Map(_)) => go_v(y),
    }
}

/// `CoalesceValues`: user values over the chart's defaults over its
/// subcharts' defaults; `null` user values delete keys.
pub fn coalesce_values(chart: &Chart, vals: &Mapping, warn: Warn) -> Result<Mapping, ValuesError> {
    coalesce_over(chart, None, vals, false, warn)
}

/// `MergeValues`: like [`coalesce_values`] but `null`s are kept.
pub fn merge_values(chart: &Chart, vals: &Mapping, warn: Warn) -> Result<Mapping, ValuesError> {
    coalesce_over(chart, None, vals, true, warn)
}

/// `CoalesceTables(dst, src)`: `src` fills what `dst` lacks; a `null` in
/// `dst` deletes the key.
pub fn coalesce_tables(dst: &Mapping, src: &Mapping, warn: Warn) -> Mapping {
    let d = to_m(dst);
    coalesce_tables_full_key(&d, to_m(src), "", false, warn);
    into_mapping(d)
}

/// `MergeTables(dst, src)`: like [`coalesce_tables`], `null`s kept.
pub fn merge_tables(dst: &Mapping, src: &Mapping, warn: Warn) -> Mapping {
    let d = to_m(dst);
    coalesce_tables_full_key(&d, to_m(src), "", true, warn);
    into_mapping(d)
}

/// Helm's `coalesce`: the defaults of `ch` and its subcharts into `dest`,
/// taken from `taken` when given (moved, not copied from the chart tree; a
/// subchart `taken` has none of is copied as usual).
pub(crate) fn coalesce_with(
    ch: &Chart,
    taken: Option<ChartValues>,
    dest: &M,
    prefix: &str,
    merge: bool,
    warn: Warn,
) -> Result<(), ValuesError> {
    let (own, deps) = match taken {
        Some(t) => (Some(t.values), t.deps),
        None => (None, Vec::new()),
    };
    coalesce_chart_values(ch, own, dest, prefix, merge, warn);
    coalesce_deps(ch, deps, dest, prefix, merge, warn)
}

fn coalesce_deps(
    ch: &Chart,
    taken: Vec<ChartValues>,
    dest: &M,
    prefix: &str,
    merge: bool,
    warn: Warn,
) -> Result<(), ValuesError> {
    let mut taken = taken.into_iter();
    for sub in &ch.dependencies {
        let sub_taken = taken.next();
        let name = sub.name().to_string();
        let existing = dest.borrow().get(&name).cloned();
        let dvmap = match existing {
            None => {
                let m = new_m();
                dest.borrow_mut().insert(name.clone(), V::Map(m.clone()));
                m
            }
            Some(V::Map(m)) => m,
            Some(other) => {
                return Err(ValuesError(format!(
                    "type mismatch on {name}: {}",
                    go_t(&other)
                )));
            }
        };
        let sub_prefix = concat_prefix(prefix, &ch.metadata.name);
        coalesce_globals(&dvmap, dest, &sub_prefix, warn);
        coalesce_with(sub, sub_taken, &dvmap, &sub_prefix, merge, warn)?;
    }
    Ok(())
}

/// `coalesceGlobals`: copy the parent's `global` into the subchart's values.
fn coalesce_globals(dest: &M, src: &M, prefix: &str, warn: Warn) {
    let dg = match dest.borrow().get("global").cloned() {
        None => new_m(),
        Some(V::Map(m)) => m,
        Some(V::Leaf(_)) => {
            warn(
                "coalesce.go:138: warning: skipping globals because destination global is not a table.",
            );
            return;
        }
    };
    let sg = match src.borrow().get("global").cloned() {
        None => new_m(),
        Some(V::Map(m)) => m,
        Some(V::Leaf(_)) => {
            warn(
                "coalesce.go:145: warning: skipping globals because source global is not a table.",
            );
            return;
        }
    };
    let entries: Vec<(String, V)> = sg
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        match &val {
            V::Map(vm) => {
                // copyMap: a shallow copy; nested maps stay shared.
                let vv: M = Rc::new(RefCell::new(vm.borrow().clone()));
                let destv = dg.borrow().get(&key).cloned();
                match destv {
                    None => {
                        dg.borrow_mut().insert(key, V::Map(vv));
                    }
                    Some(V::Map(destvmap)) => {
                        let sub_prefix = concat_prefix(prefix, &key);
                        coalesce_tables_full_key(&vv, destvmap, &sub_prefix, true, warn);
                        dg.borrow_mut().insert(key, V::Map(vv));
                    }
                    Some(V::Leaf(_)) => {
                        warn(&format!(
                            "coalesce.go:161: Conflict: cannot merge map onto non-map for {}. Skipping.",
                            crate::chart::metadata::go_quote(&key)
                        ));
                    }
                }
            }
            V::Leaf(_) => {
                let is_table = matches!(dg.borrow().get(&key), Some(V::Map(_)));
                if is_table {
                    warn(&format!("coalesce.go:175: key {key} is table. Skipping"));
                } else {
                    dg.borrow_mut().insert(key, val.clone());
                }
            }
        }
    }
    dest.borrow_mut().insert("global".to_string(), V::Map(dg));
}

/// `coalesceValues`: the chart's own defaults under the given values.
fn coalesce_chart_values(
    c: &Chart,
    own: Option<Mapping>,
    v: &M,
    prefix: &str,
    merge: bool,
    warn: Warn,
) {
    let sub_prefix = concat_prefix(prefix, &c.metadata.name);
    // The chart's values copied (`copystructure.Copy`) into a table nothing
    // else holds (or, taken from the chart, moved there), so its entries
    // are taken rather than copied again.
    let vc = match own {
        Some(m) => into_m(m),
        None => to_m(&c.values),
    };
    let entries = std::mem::take(&mut *vc.borrow_mut());
    for (key, val) in entries {
        let cur = slot(v, &key);
        match cur {
            Slot::Null if !merge => {
                v.borrow_mut().remove(&key);
            }
            Slot::Map(dest) => match val {
                V::Map(src) => {
                    let merge = c.dependencies.iter().any(|s| s.name() == key) || merge;
                    coalesce_tables_full_key(
                        &dest,
                        src,
                        &concat_prefix(&sub_prefix, &key),
                        merge,
                        warn,
                    );
                }
                V::Leaf(Yaml::Null) => {}
                V::Leaf(_) => warn(&format!(
                    "coalesce.go:237: warning: skipped value for {sub_prefix}.{key}: Not a table."
                )),
            },
            Slot::Null | Slot::Leaf => {}
            Slot::Absent => {
                v.borrow_mut().insert(key, val);
            }
        }
    }
}

/// What a table holds under a key, for the coalescing decisions: a leaf is
/// not copied to be looked at.
enum Slot {
    Absent,
    Null,
    Leaf,
    Map(M),
}

fn slot(m: &M, key: &str) -> Slot {
    match m.borrow().get(key) {
        None => Slot::Absent,
        Some(V::Leaf(Yaml::Null)) => Slot::Null,
        Some(V::Leaf(_)) => Slot::Leaf,
        Some(V::Map(m)) => Slot::Map(m.clone()),
    }
}

/// `coalesceTablesFullKey`: merge `src` into `dst` in place. `src` is
/// handed over: a table no one else holds (a chart's defaults, copied for
/// this coalescing) gives up its entries; a shared one (a `global` table)
/// is copied first, since changing `dst` may reach it.
pub(crate) fn coalesce_tables_full_key(dst: &M, src: M, prefix: &str, merge: bool, warn: Warn) {
    let entries = if Rc::strong_count(&src) == 1 {
        std::mem::take(&mut *src.borrow_mut())
    } else {
        src.borrow().clone()
    };
    for (key, val) in entries {
        match slot(dst, &key) {
            Slot::Null if !merge => {
                dst.borrow_mut().remove(&key);
            }
            Slot::Absent => {
                dst.borrow_mut().insert(key, val);
            }
            Slot::Map(dm) => match val {
                V::Map(vm) => {
                    if !Rc::ptr_eq(&vm, &dm) {
                        coalesce_tables_full_key(
                            &dm,
                            vm,
                            &concat_prefix(prefix, &key),
                            merge,
                            warn,
                        );
                    }
                }
                V::Leaf(Yaml::Null) => {}
                V::Leaf(l) => warn(&format!(
                    "coalesce.go:301: warning: destination for {} is a table. Ignoring non-table value ({})",
                    concat_prefix(prefix, &key),
                    go_v(&l)
                )),
            },
            Slot::Null | Slot::Leaf => {
                if let V::Map(vm) = &val {
                    warn(&format!(
                        "coalesce.go:298: warning: cannot overwrite table with non table for {} ({})",
                        concat_prefix(prefix, &key),
                        go_v(&Yaml::Map(from_m(vm)))
                    ));
                }
            }
        }
    }
}

/// What Helm's `ToRenderValues` puts under `.Values`: the coalesced values,
/// validated against the chart's and its subcharts' `values.schema.json`
/// unless `skip_schema_validation`. Call after
/// [`crate::chart::dependencies::process_dependencies`].
pub fn render_values(
    chart: &Chart,
    user_values: &Mapping,
    skip_schema_validation: bool,
    warn: Warn,
) -> Result<Mapping, ValuesError> {
    let vals = coalesce_values(chart, user_values, warn)?;
    if !skip_schema_validation {
        validate_values(&Schemas::of(chart), &vals)?;
    }
    Ok(vals)
}

/// The schema half of [`render_values`]: Helm's error for coalesced values
/// that the charts' schemas reject.
pub fn validate_values(schemas: &Schemas, vals: &Mapping) -> Result<(), ValuesError> {
    schemas.validate(vals).map_err(|e| {
        ValuesError(format!(
            "values don't meet the specifications of the schema(s) in the following chart(s):\n{e}"
        ))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chart::types::Metadata;

    pub(crate) fn y(src: &str) -> Mapping {
        match crate::chart::load::parse_yaml(src).unwrap() {
            Yaml::Map(m) => m,
            Yaml::Null => Mapping::new(),
            other => panic!("not a map: {other:?}"),
        }
    }

    fn chart(name: &str, values: &str, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                api_version: "v2".into(),
                version: "0.1.0".into(),
                ..Default::default()
            },
            values: y(values),
            dependencies: deps,
            ..Default::default()
        }
    }

    fn json(m: &Mapping) -> String {
        serde_json::to_string(&to_json(&Yaml::Map(m.clone()))).unwrap()
    }

    use crate::yaml::json::to_serde as to_json;

    /// Expected values from helm v3.17.3 (`{{ toJson .Values }}` of a
    /// throw-away chart in /tmp, `--set a=3 --set c.d=4 --set sub.on=7`).
    #[test]
    fn coalesce_matches_helm() {
        let sub = chart("sub", "x: 1\nglobal:\n  g: 1\n", vec![]);
        let mut top = chart(
            "c2",
            "a:\n  b: 1\nc: 2\nother: 5\nsub:\n  on: yes\n",
            vec![sub],
        );
        let user = crate::chart::strvals::parse("a=3,c.d=4,sub.on=7").unwrap();
        let mut warnings = Vec::new();
        let v =
            crate::chart::dependencies::to_render_values(&mut top, &user, false, &mut |w: &str| {
                warnings.push(w.to_string())
            })
            .unwrap();
        assert_eq!(
            json(&v),
            r#"{"a":3,"c":{"d":4},"other":5,"sub":{"global":{"g":1},"on":7,"true":true,"x":1}}"#
        );
        assert!(warnings.contains(
            &"coalesce.go:237: warning: skipped value for c2.c: Not a table.".to_string()
        ));
    }

    /// Expected from helm v3.17.3: chart `c2` with the values below,
    /// `-f` with the user's, `{{ toJson .Values }}` and the warnings on
    /// stderr (which helm prints in random order: Go map iteration).
    #[test]
    fn tables_and_non_tables_do_not_overwrite_each_other() {
        let top = chart("c2", "a:\n  b:\n    c: 1\n  d: 5\n  e: null\n", vec![]);
        let user = y("a:\n  b: 5\n  d:\n    x: 1\n  e:\n    y: 2\n");
        let mut warnings = Vec::new();
        let v = coalesce_values(&top, &user, &mut |w: &str| warnings.push(w.to_string())).unwrap();
        assert_eq!(json(&v), r#"{"a":{"b":5,"d":{"x":1},"e":{"true":2}}}"#);
        warnings.sort();
        assert_eq!(
            warnings,
            [
                "coalesce.go:298: warning: cannot overwrite table with non table for c2.a.b (map[c:1])",
                "coalesce.go:301: warning: destination for c2.a.d is a table. Ignoring non-table value (5)",
            ]
        );
    }

    #[test]
    fn null_deletes_and_globals_flow_down() {
        let sub = chart("sub", "x: 1\ny: 2\nglobal:\n  g: 1\n", vec![]);
        let top = chart("top", "a: 1\nb: 2\nglobal:\n  t: 1\n", vec![sub]);
        let user = y("a: null\nsub:\n  y: null\nglobal:\n  u: 1\n");
        let v = coalesce_values(&top, &user, &mut |_: &str| {}).unwrap();
        assert_eq!(
            json(&v),
            r#"{"b":2,"global":{"t":1,"u":1},"sub":{"global":{"g":1,"t":1,"u":1},"x":1}}"#
        );
    }

    /// Taking the charts' defaults instead of copying them gives the same
    /// values and warnings, subcharts and nested subcharts included, and
    /// leaves the defaults empty.
    #[test]
    fn coalescing_taken_defaults_is_coalescing_copies() {
        let leaf = chart("leaf", "l: [1, 2]\nglobal:\n  deep: x\n", vec![]);
        let sub = chart("sub", "x: 1\nz: {a: 1}\nglobal:\n  g: 1\n", vec![leaf]);
        let other = chart("other", "o: true\n", vec![]);
        let top = chart(
            "top",
            "a: 1\nb: {c: 2}\nd: 5\nsub: {z: {b: 2}}\nglobal:\n  t: 1\n",
            vec![sub, other],
        );
        let user =
            y("a: null\nb: {e: 3}\nd: {x: 1}\nsub:\n  x: null\n  leaf: {l: s}\nglobal:\n  u: 1\n");
        let mut copied_warnings = Vec::new();
        let copied = coalesce_values(&top, &user, &mut |w: &str| {
            copied_warnings.push(w.to_string())
        })
        .unwrap();
        let mut taken_chart = top.clone();
        let defaults = take_chart_values(&mut taken_chart);
        assert!(taken_chart.values.is_empty() && taken_chart.dependencies[0].values.is_empty());
        let mut taken_warnings = Vec::new();
        let taken = coalesce_taken_values(&taken_chart, defaults, &user, &mut |w: &str| {
            taken_warnings.push(w.to_string())
        })
        .unwrap();
        assert_eq!(json(&taken), json(&copied));
        assert_eq!(taken_warnings, copied_warnings);
        // Not a trivial case: user values reached the nested subchart,
        // defaults filled the rest, and the conflicts were warned about.
        assert!(
            json(&copied).contains(r#""leaf":{"global":{"deep":"x","g":1,"t":1,"u":1},"l":"s"}"#)
        );
        assert!(json(&copied).contains(r#""z":{"a":1,"b":2}"#));
        assert!(!copied_warnings.is_empty());
    }
}

/// A development harness for comparing with the real helm: with
/// `ANTIOPA_DUMP_CHART=<chart dir>` (and optionally
/// `ANTIOPA_DUMP_VALUES=<values file>`), prints `<templates path>\t<json>`
/// for every chart that renders, i.e. what `{{ toJson .Values }}` shows in
/// each chart's templates. Run with `cargo test --lib dump_values -- --ignored --nocapture`.
#[cfg(test)]
mod dump {
    use super::*;

    fn walk(c: &Chart, vals: &Mapping, out: &mut Vec<String>) {
        if !c.is_library() {
            let j = crate::yaml::json::to_serde(&Yaml::Map(vals.clone()));
            out.push(format!("{}/templates\t{}", c.full_path, j));
        }
        for d in &c.dependencies {
            let sub = match vals.get(d.name()) {
                Some(Yaml::Map(m)) => m.clone(),
                _ => Mapping::new(),
            };
            walk(d, &sub, out);
        }
    }

    #[test]
    #[ignore = "debugging aid: prints the coalesced values of the chart in ANTIOPA_DUMP_CHART"]
    fn dump_values() {
        let Ok(dir) = std::env::var("ANTIOPA_DUMP_CHART") else {
            return;
        };
        let mut chart = crate::chart::load::load(std::path::Path::new(&dir)).unwrap();
        let opts = crate::chart::strvals::ValueOptions {
            values_files: std::env::var("ANTIOPA_DUMP_VALUES")
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect(),
            ..Default::default()
        };
        let user = opts.merge().unwrap();
        let mut warnings = Vec::new();
        let vals = crate::chart::dependencies::to_render_values(
            &mut chart,
            &user,
            false,
            &mut |w: &str| warnings.push(w.to_string()),
        );
        for w in &warnings {
            println!("WARN\t{w}");
        }
        match vals {
            Ok(v) => {
                let mut out = Vec::new();
                walk(&chart, &v, &mut out);
                for l in out {
                    println!("DUMP\t{l}");
                }
            }
            Err(e) => println!("ERROR\t{e}"),
        }
    }
}
