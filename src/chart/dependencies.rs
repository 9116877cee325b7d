//! Subchart processing before rendering: a port of Helm v3.17's
//! `chartutil.ProcessDependenciesWithMerge` (`pkg/chartutil/dependencies.go`):
//! aliases (the subchart is copied under the alias name), tags and
//! conditions (disabled subcharts are removed), and `import-values` (both
//! the `exports.` string form and `{child, parent}` maps). Subcharts are
//! matched to `dependencies:` entries by name and Masterminds/semver range
//! (`IsCompatibleRange`, through Sprig's port of Masterminds/semver: Rust's
//! `semver` crate has Cargo's range semantics, not Masterminds').

use crate::chart::coalesce::{
    self, M, V, ValuesError, coalesce_tables_full_key, from_m, into_mapping, new_m, to_m,
};
use crate::chart::load::set_full_paths;
use crate::chart::metadata::go_quote;
use crate::chart::types::{Chart, Dependency, Warn};
use crate::yaml::{Mapping, Yaml};

/// `action.CheckDependencies` as `helm install/template` report it: every
/// `dependencies:` entry must have a chart under `charts/` (checked on the
/// loaded chart, before [`process_dependencies`]). The error is the whole
/// text helm prints after `Error: `.
pub fn check_dependencies(chart: &Chart) -> Result<(), String> {
    let missing: Vec<&str> = chart
        .metadata
        .dependencies
        .iter()
        .filter(|r| !chart.dependencies.iter().any(|d| d.name() == r.name))
        .map(|r| r.name.as_str())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
            missing.join(", ")
        ))
    }
}

/// `ProcessDependenciesWithMerge`: enable/disable and alias subcharts, then
/// import values. `chart` is changed in place; `full_path`s are updated to
/// the aliased names.
pub fn process_dependencies(
    chart: &mut Chart,
    values: &Mapping,
    warn: Warn,
) -> Result<(), ValuesError> {
    process_dependency_enabled(chart, values, "", warn)?;
    process_dependency_import_values(chart, warn)?;
    let parent = parent_of(&chart.full_path);
    set_full_paths(chart, &parent);
    Ok(())
}

/// The parent part of a `full_path` (`a/charts/b` → `a`).
fn parent_of(full_path: &str) -> String {
    match full_path.rfind("/charts/") {
        Some(i) => full_path[..i].to_string(),
        None => String::new(),
    }
}

/// `processDependencyEnabled`.
fn process_dependency_enabled(
    c: &mut Chart,
    v: &Mapping,
    path: &str,
    warn: Warn,
) -> Result<(), ValuesError> {
    // Go checks for a nil slice; our model cannot tell nil from empty.
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let mut chart_deps: Vec<Chart> = Vec::new();
    for existing in &c.dependencies {
        let listed = c.metadata.dependencies.iter().any(|req| {
            existing.name() == req.name
                && is_compatible_range(&req.version, &existing.metadata.version)
        });
        if !listed {
            chart_deps.push(existing.clone());
        }
    }
    for req in &mut c.metadata.dependencies {
        if let Some(dep) = get_alias_dependency(&c.dependencies, req) {
            chart_deps.push(dep);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    c.dependencies = chart_deps;
    for req in &mut c.metadata.dependencies {
        req.enabled = true;
    }
    let cvals = coalesce::coalesce_values(c, v, warn)?;
    process_dependency_tags(&mut c.metadata.dependencies, &cvals, warn);
    process_dependency_conditions(&mut c.metadata.dependencies, &cvals, path, warn);

    let removed: Vec<String> = c
        .metadata
        .dependencies
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    c.dependencies
        .retain(|d| !removed.iter().any(|n| n == d.name()));
    c.metadata
        .dependencies
        .retain(|r| !removed.contains(&r.name));
    for t in &mut c.dependencies {
        let subpath = format!("{path}{}.", t.metadata.name);
        process_dependency_enabled(t, &cvals, &subpath, warn)?;
    }
    Ok(())
}

/// `getAliasDependency`: a copy of the matching subchart, renamed to the
/// alias when there is one.
fn get_alias_dependency(charts: &[Chart], dep: &Dependency) -> Option<Chart> {
    for c in charts {
        if c.name() != dep.name {
            continue;
        }
        if !is_compatible_range(&dep.version, &c.metadata.version) {
            continue;
        }
        let mut out = c.clone();
        if !dep.alias.is_empty() {
            out.metadata.name = dep.alias.clone();
        }
        return Some(out);
    }
    None
}

/// `Values.PathValue`: a non-table value at a dotted path.
fn path_value<'a>(v: &'a Mapping, path: &str) -> Option<&'a Yaml> {
    let parts: Vec<&str> = path.split('.').collect();
    let (key, tables) = parts.split_last()?;
    let mut t = v;
    for n in tables {
        match t.get(*n) {
            Some(Yaml::Map(m)) => t = m,
            _ => return None,
        }
    }
    match t.get(*key) {
        Some(Yaml::Map(_)) | None => None,
        Some(other) => Some(other),
    }
}

/// `processDependencyConditions`: the first condition path that resolves to
/// a bool decides; non-bool values warn.
fn process_dependency_conditions(
    reqs: &mut [Dependency],
    cvals: &Mapping,
    cpath: &str,
    warn: Warn,
) {
    for r in reqs {
        for c in r.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            if let Some(vv) = path_value(cvals, &format!("{cpath}{c}")) {
                if let Yaml::Bool(b) = vv {
                    r.enabled = *b;
                    break;
                }
                warn(&format!(
                    "dependencies.go:63: Warning: Condition path '{c}' for chart {} returned non-bool value",
                    r.name
                ));
            }
        }
    }
}

/// `processDependencyTags`.
fn process_dependency_tags(reqs: &mut [Dependency], cvals: &Mapping, warn: Warn) {
    let Some(Yaml::Map(vt)) = cvals.get("tags") else {
        return;
    };
    for r in reqs {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            if let Some(b) = vt.get(k) {
                match b {
                    Yaml::Bool(true) => has_true = true,
                    Yaml::Bool(false) => has_false = true,
                    _ => warn(&format!(
                        "dependencies.go:94: Warning: Tag '{k}' for chart {} returned non-bool value",
                        r.name
                    )),
                }
            }
        }
        if !has_true && has_false {
            r.enabled = false;
        } else if has_true || !has_false {
            r.enabled = true;
        }
    }
}

/// `Values.Table` on the shared model; the error is `ErrNoTable`'s text.
fn table(v: &M, name: &str) -> Result<M, String> {
    let mut t = v.clone();
    for n in name.split('.') {
        let next = t.borrow().get(n).cloned();
        match next {
            Some(V::Map(m)) => t = m,
            _ => return Err(format!("{} is not a table", go_quote(n))),
        }
    }
    Ok(t)
}

/// `pathToMap`.
fn path_to_map(path: &str, data: M) -> M {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for p in path.split('.').rev() {
        let m = new_m();
        m.borrow_mut().insert(p.to_string(), V::Map(cur));
        cur = m;
    }
    cur
}

/// `processDependencyImportValues`: children first, then this chart.
fn process_dependency_import_values(c: &mut Chart, warn: Warn) -> Result<(), ValuesError> {
    for d in &mut c.dependencies {
        process_dependency_import_values(d, warn)?;
    }
    process_import_values(c, warn)
}

/// `processImportValues` in merge mode.
fn process_import_values(c: &mut Chart, warn: Warn) -> Result<(), ValuesError> {
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    // MergeValues(c, nil), kept in the shared model: imported tables are
    // inserted by reference, as in Go. The result replaces the chart's own
    // values below, so they are moved into it rather than copied (its
    // subcharts' are copied: they are coalesced again for the render).
    let cvals = new_m();
    let own = coalesce::ChartValues::own(std::mem::take(&mut c.values));
    coalesce::coalesce_with(c, Some(own), &cvals, "", true, warn)?;
    let b = new_m();
    for r in &mut c.metadata.dependencies {
        let mut outiv = Vec::new();
        for riv in &r.import_values {
            match riv {
                Yaml::Map(iv) => {
                    // Go type-asserts both keys to strings (and panics
                    // otherwise); report that as an error instead.
                    let (Some(Yaml::Str(child)), Some(Yaml::Str(parent))) =
                        (iv.get("child"), iv.get("parent"))
                    else {
                        return Err(ValuesError(format!(
                            "import-values of dependency {} must have string child and parent",
                            r.name
                        )));
                    };
                    outiv.push(child_parent(child, parent));
                    match table(&cvals, &format!("{}.{child}", r.name)) {
                        Err(e) => warn(&format!(
                            "dependencies.go:269: Warning: ImportValues missing table from chart {}: {e}",
                            r.name
                        )),
                        Ok(vv) => {
                            coalesce_tables_full_key(&b, path_to_map(parent, vv), "", true, warn)
                        }
                    }
                }
                Yaml::Str(iv) => {
                    let child = format!("exports.{iv}");
                    outiv.push(child_parent(&child, "."));
                    match table(&cvals, &format!("{}.{child}", r.name)) {
                        Err(e) => warn(&format!(
                            "dependencies.go:286: Warning: ImportValues missing table: {e}"
                        )),
                        Ok(vm) => coalesce_tables_full_key(&b, vm, "", true, warn),
                    }
                }
                _ => {}
            }
        }
        r.import_values = outiv;
    }
    // Go deep-copies `cvals` before merging `b` into it, so that tables
    // imported by reference are not changed through it. With nothing
    // imported (most charts) the merge changes nothing and the values are
    // taken as they are: the copy was most of the time spent here.
    c.values = if b.borrow().is_empty() {
        into_mapping(cvals)
    } else {
        let copy = to_m(&from_m(&cvals));
        coalesce_tables_full_key(&copy, b, "", true, warn);
        into_mapping(copy)
    };
    Ok(())
}

fn child_parent(child: &str, parent: &str) -> Yaml {
    let mut m = Mapping::new();
    m.insert("child".into(), Yaml::Str(child.into()));
    m.insert("parent".into(), Yaml::Str(parent.into()));
    Yaml::Map(m)
}

// ---- Masterminds/semver v3.3 constraints (`IsCompatibleRange`) ----

/// Whether `ver` satisfies `constraint`, with why either cannot be parsed
/// (for requirements whose errors must say so, unlike Helm's silent false).
pub fn check_range(constraint: &str, ver: &str) -> Result<bool, String> {
    use crate::engine::funcs::sprig::semver::{Constraints, Version};
    let v = Version::parse(ver).map_err(|e| format!("not a semantic version: {e}"))?;
    let c = Constraints::parse(constraint).map_err(|e| format!("not a version constraint: {e}"))?;
    Ok(c.check(&v))
}

/// `chartutil.IsCompatibleRange`: whether `ver` satisfies `constraint`.
///
/// Helm and Sprig both use Masterminds/semver v3, so this is Sprig's port.
pub fn is_compatible_range(constraint: &str, ver: &str) -> bool {
    use crate::engine::funcs::sprig::semver::{Constraints, Version};
    let Ok(v) = Version::parse(ver) else {
        return false;
    };
    match Constraints::parse(constraint) {
        Ok(c) => c.check(&v),
        Err(_) => false,
    }
}

/// The whole values path of `helm template`/`helm install` (v3.17
/// `action.Install.RunWithContext`): `ProcessDependenciesWithMerge` (which
/// removes disabled subcharts from `chart`, applies aliases and
/// import-values), then [`coalesce::render_values`]. `chart` is changed in place and
/// must be rendered afterwards, not the loaded original.
pub fn to_render_values(
    chart: &mut Chart,
    user_values: &Mapping,
    skip_schema_validation: bool,
    warn: Warn,
) -> Result<Mapping, ValuesError> {
    process_dependencies(chart, user_values, warn)?;
    coalesce::render_values(chart, user_values, skip_schema_validation, warn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_dependencies() {
        let mut c = Chart::default();
        for n in ["x", "true"] {
            c.metadata.dependencies.push(Dependency {
                name: n.into(),
                ..Default::default()
            });
        }
        // helm v3.17.3's text for `- name: x` and `- name: y` (a YAML 1.1 bool).
        assert_eq!(
            check_dependencies(&c).unwrap_err(),
            "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: x, true"
        );
    }

    #[test]
    fn ranges() {
        assert!(is_compatible_range("2.x.x", "2.31.4"));
        assert!(!is_compatible_range("2.x.x", "3.0.0"));
        // Masterminds rejects an empty constraint, so a dependency without
        // `version:` never matches (Helm then keeps the subchart un-aliased).
        assert!(!is_compatible_range("", "1.2.3"));
        assert!(is_compatible_range("0.0.0", "0.0.0"));
        assert!(is_compatible_range("~1.2", "1.2.9"));
        assert!(!is_compatible_range("~1.2", "1.3.0"));
        assert!(is_compatible_range("^1.2", "1.9.0"));
        assert!(is_compatible_range(">=1.0.0, <2", "1.5.0"));
        assert!(!is_compatible_range(">=1.0.0, <2", "2.0.0"));
        assert!(is_compatible_range("1.0 - 2.0", "1.5.0"));
        assert!(is_compatible_range("<1 || >=3", "3.1.0"));
        assert!(!is_compatible_range("^1.0.0", "1.1.0-rc1"));
        assert!(is_compatible_range("0.0.0-undefined", "0.0.0-undefined"));
        assert!(!is_compatible_range("not a range", "1.0.0"));
    }

    fn tree(c: &Chart, out: &mut Vec<String>) {
        out.push(format!(
            "{}{}",
            c.full_path,
            if c.is_library() { " (library)" } else { "" }
        ));
        for d in &c.dependencies {
            tree(d, out);
        }
    }

    /// The subchart trees helm v3.17.3 renders for corpus cases (the
    /// `# Source:` paths of expected/*.yaml, plus charts whose templates
    /// print nothing, seen with a `{{ toJson .Values }}` probe template).
    #[test]
    fn corpus_dependency_trees() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        if !root.exists() {
            return;
        }
        let cases: &[(&str, Option<&str>, &[&str])] = &[
            (
                "kube-prometheus-stack",
                None,
                &[
                    "kube-prometheus-stack",
                    "kube-prometheus-stack/charts/crds",
                    "kube-prometheus-stack/charts/kube-state-metrics",
                    "kube-prometheus-stack/charts/prometheus-node-exporter",
                    "kube-prometheus-stack/charts/grafana",
                ],
            ),
            (
                "kube-prometheus-stack",
                Some("kube-prometheus-stack-features"),
                &[
                    "kube-prometheus-stack",
                    "kube-prometheus-stack/charts/crds",
                    "kube-prometheus-stack/charts/kube-state-metrics",
                    "kube-prometheus-stack/charts/prometheus-node-exporter",
                    "kube-prometheus-stack/charts/grafana",
                    "kube-prometheus-stack/charts/prometheus-windows-exporter",
                ],
            ),
            (
                "bitnami-wordpress",
                None,
                &[
                    "wordpress",
                    "wordpress/charts/mariadb",
                    "wordpress/charts/mariadb/charts/common (library)",
                    "wordpress/charts/common (library)",
                ],
            ),
            (
                "bitnami-wordpress",
                Some("bitnami-wordpress-features"),
                &[
                    "wordpress",
                    "wordpress/charts/memcached",
                    "wordpress/charts/memcached/charts/common (library)",
                    "wordpress/charts/mariadb",
                    "wordpress/charts/mariadb/charts/common (library)",
                    "wordpress/charts/common (library)",
                ],
            ),
            (
                "linkerd-control-plane",
                Some("linkerd-control-plane-ha"),
                &[
                    "linkerd-control-plane",
                    "linkerd-control-plane/charts/partials",
                ],
            ),
        ];
        for (chart, values, want) in cases {
            let mut c = crate::chart::load::load(&root.join("charts").join(chart)).unwrap();
            let opts = crate::chart::strvals::ValueOptions {
                values_files: values
                    .iter()
                    .map(|v| root.join(format!("values/{v}.yaml")).display().to_string())
                    .collect(),
                ..Default::default()
            };
            let user = opts.merge().unwrap();
            process_dependencies(&mut c, &user, &mut |_: &str| {}).unwrap();
            let mut got = Vec::new();
            tree(&c, &mut got);
            let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{chart} {values:?}");
        }
    }

    /// Aliases (three copies of one subchart), a tag and a condition that
    /// disable two of them, a library chart, a dependency without
    /// `version:` (never matched, removed by name), both import-values
    /// forms, `null` deletion, type-mismatch warnings and the shallow copy
    /// of nested globals (the subchart's `global.a.b.d` shows up in the
    /// parent): `.Values` as helm v3.17.3 rendered them with `-f user.yaml`.
    #[test]
    fn aliases_imports_globals_like_helm() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let w = |name: &str, text: &str| {
            let p = d.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "Chart.yaml",
            r#"apiVersion: v2
name: top
version: 1.0.0
dependencies:
- name: sub
  version: "~0.1"
  alias: first
  import-values:
  - data
  - child: deep.x
    parent: imported.here
- name: sub
  version: 0.1.x
  alias: second
  condition: second.enabled,global.second
- name: sub
  version: ">=0.1"
  alias: third
  tags: [t1, t2]
- name: lib
  version: 1.0.0
- name: other
  condition: other.enabled
"#,
        );
        w(
            "values.yaml",
            r#"global:
  a: {b: {c: 1}}
  s: top
tags:
  t1: false
second:
  enabled: false
first:
  keep: 1
  drop: 2
  tbl: {x: 1}
data: {fromParent: 1}
imported: {here: {p: 1}}
other:
  enabled: false
"#,
        );
        w(
            "charts/sub/Chart.yaml",
            r#"apiVersion: v2
name: sub
version: 0.1.5
"#,
        );
        w(
            "charts/sub/values.yaml",
            r#"global:
  a: {b: {d: 2}}
  s: sub
exports:
  data: {fromSub: 1, fromParent: 2}
deep: {x: {y: 1, p: 9}}
keep: 0
drop: 0
tbl: 5
enabled: true
"#,
        );
        w(
            "charts/lib/Chart.yaml",
            "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
        );
        w("charts/lib/values.yaml", "libval: 1\n");
        w(
            "charts/other/Chart.yaml",
            "apiVersion: v2\nname: other\nversion: 2.0.0\n",
        );
        w("charts/other/values.yaml", "o: 1\n");
        let mut chart = crate::chart::load::load(d).unwrap();
        let user = crate::chart::coalesce::tests::y("first:\n  drop: null\n  tbl: 3\n");
        let mut warnings = Vec::new();
        let vals = to_render_values(&mut chart, &user, false, &mut |w: &str| {
            warnings.push(w.to_string())
        })
        .unwrap();
        let mut names = Vec::new();
        tree(&chart, &mut names);
        names.sort();
        assert_eq!(
            names,
            vec!["top", "top/charts/first", "top/charts/lib (library)"]
        );
        let json = |m: &Mapping| crate::yaml::json::to_serde(&Yaml::Map(m.clone())).to_string();
        assert_eq!(
            json(&vals),
            r#"{"data":{"fromParent":1},"first":{"deep":{"x":{"p":9,"true":1}},"enabled":true,"exports":{"data":{"fromParent":2,"fromSub":1}},"global":{"a":{"b":{"c":1,"d":2}},"s":"top"},"keep":1,"tbl":3},"fromParent":2,"fromSub":1,"global":{"a":{"b":{"c":1,"d":2}},"s":"top"},"imported":{"here":{"p":1,"true":1}},"lib":{"global":{"a":{"b":{"c":1,"d":2}},"s":"top"},"libval":1},"other":{"enabled":false},"second":{"enabled":false},"tags":{"t1":false}}"#
        );
        let Some(Yaml::Map(first)) = vals.get("first") else {
            panic!("no first");
        };
        assert_eq!(
            json(first),
            r#"{"deep":{"x":{"p":9,"true":1}},"enabled":true,"exports":{"data":{"fromParent":2,"fromSub":1}},"global":{"a":{"b":{"c":1,"d":2}},"s":"top"},"keep":1,"tbl":3}"#
        );
        warnings.sort();
        assert_eq!(
            warnings,
            vec![
                "coalesce.go:237: warning: skipped value for top.first.tbl: Not a table.",
                "coalesce.go:298: warning: cannot overwrite table with non table for top.first.tbl (map[x:1])",
                "coalesce.go:298: warning: cannot overwrite table with non table for top.first.tbl (map[x:1])",
            ]
        );
    }
}
