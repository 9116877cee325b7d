//! A module's `module.yaml`, in Deckhouse's format: `name`, `weight` (the
//! run order, instead of the directory's number prefix), `requirements.
//! modules` (what the module needs: `name: "<semver constraint>"`, with
//! ` !optional` for a module it works with only when that one is enabled),
//! and the descriptive fields (`tags`, `stage`, `description(s)`). Other
//! keys Deckhouse defines (`accessibility`, `disable`, `exclusiveGroup`,
//! `subsystems`, …) are accepted and ignored, so Deckhouse modules load as
//! they are.
//!
//! The dependency graph built from it (which module waits for which, cycle
//! and missing-module errors) is [`DependencyGraph`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::ModuleError;
use super::discovery::Module;

/// The file's name in a module directory.
pub const MODULE_YAML: &str = "module.yaml";

/// The version a module without `Chart.yaml` has (addon-operator writes
/// `version: 0.2.0` into the Chart.yaml it generates).
const GENERATED_CHART_VERSION: &str = "0.2.0";

/// What `module.yaml` says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleMeta {
    /// `weight`: the module's order, replacing its directory's prefix.
    pub weight: Option<u32>,
    /// `requirements.modules`, by module name.
    pub requires: BTreeMap<String, Requirement>,
    /// `requirements` present with a `modules` key (even an empty one): the
    /// module declares everything it needs, so it does not wait for the
    /// modules of lower order (see [`DependencyGraph`]).
    pub declares_requirements: bool,
    /// `requirements.kubernetes`: a semver constraint on the cluster's version.
    pub kubernetes: Option<String>,
    pub tags: Vec<String>,
    pub stage: Option<String>,
    /// `descriptions.en`, else `description`.
    pub description: Option<String>,
}

/// One `requirements.modules` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The semver constraint (Masterminds/semver, as Deckhouse checks it).
    pub constraint: String,
    /// ` !optional`: needed only when that module is enabled.
    pub optional: bool,
}

fn bad(path: &Path, message: impl Into<String>) -> ModuleError {
    ModuleError::Config {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn string_field(path: &Path, v: &Value, field: &str) -> Result<Option<String>, ModuleError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad(
            path,
            format!("{field}: expected a string, got {other}"),
        )),
    }
}

impl ModuleMeta {
    /// Reads `<dir>/module.yaml`; none is the empty meta. `name`, when
    /// given, must be the module's name.
    pub fn load(dir: &Path, module_name: &str) -> Result<ModuleMeta, ModuleError> {
        let path = dir.join(MODULE_YAML);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ModuleMeta::default()),
            Err(e) => {
                return Err(ModuleError::Io {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        ModuleMeta::parse(&path, &text, module_name)
    }

    /// Parses the text of `path`.
    pub fn parse(path: &Path, text: &str, module_name: &str) -> Result<ModuleMeta, ModuleError> {
        let v = crate::values::convert::value_from_yaml(text)
            .map_err(|e| bad(path, e.0.to_string()))?;
        let v = match v {
            Value::Null => return Ok(ModuleMeta::default()),
            Value::Object(_) => v,
            other => return Err(bad(path, format!("expected a mapping, got {other}"))),
        };
        let mut meta = ModuleMeta::default();
        if let Some(name) = string_field(path, &v, "name")?
            && name != module_name
        {
            return Err(bad(
                path,
                format!("name: '{name}' is not the module's name '{module_name}' (its directory)"),
            ));
        }
        meta.weight = match v.get("weight") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_u64()
                    .and_then(|w| u32::try_from(w).ok())
                    .ok_or_else(|| {
                        bad(path, format!("weight: {n} is not a non-negative integer"))
                    })?,
            ),
            Some(other) => {
                return Err(bad(
                    path,
                    format!("weight: expected an integer, got {other}"),
                ));
            }
        };
        meta.stage = string_field(path, &v, "stage")?;
        meta.description = match v.get("descriptions").and_then(|d| d.get("en")) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => string_field(path, &v, "description")?,
        };
        meta.tags = match v.get("tags") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|t| match t {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(bad(path, format!("tags: expected strings, got {other}"))),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(bad(path, format!("tags: expected a list, got {other}"))),
        };
        match v.get("requirements") {
            None | Some(Value::Null) => {}
            Some(Value::Object(req)) => {
                meta.kubernetes = string_field(path, &Value::Object(req.clone()), "kubernetes")?;
                match req.get("modules") {
                    None => {}
                    Some(Value::Null) => meta.declares_requirements = true,
                    Some(Value::Object(mods)) => {
                        meta.declares_requirements = true;
                        for (name, c) in mods {
                            let Value::String(c) = c else {
                                return Err(bad(
                                    path,
                                    format!(
                                        "requirements.modules.{name}: expected a version constraint string, got {c}"
                                    ),
                                ));
                            };
                            let r = Requirement::parse(c).map_err(|e| {
                                bad(path, format!("requirements.modules.{name}: {e}"))
                            })?;
                            if name == module_name {
                                return Err(bad(
                                    path,
                                    format!(
                                        "requirements.modules.{name}: a module cannot require itself"
                                    ),
                                ));
                            }
                            meta.requires.insert(name.clone(), r);
                        }
                    }
                    Some(other) => {
                        return Err(bad(
                            path,
                            format!(
                                "requirements.modules: expected a mapping of module names to version constraints, got {other}"
                            ),
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(bad(
                    path,
                    format!("requirements: expected a mapping, got {other}"),
                ));
            }
        }
        Ok(meta)
    }
}

impl Requirement {
    /// `">= 1.2 !optional"` → constraint `>= 1.2`, optional. The constraint
    /// must parse as Masterminds/semver's.
    pub fn parse(text: &str) -> Result<Requirement, String> {
        let t = text.trim();
        let (constraint, optional) = match t.strip_suffix("!optional") {
            Some(c) => (c.trim(), true),
            None => (t, false),
        };
        if constraint.is_empty() {
            return Err(format!(
                "'{text}': an empty version constraint (use \">= 0.0.0\" for any version)"
            ));
        }
        crate::chart::dependencies::check_range(constraint, "0.0.0")
            .map_err(|e| format!("'{constraint}': {e}"))?;
        Ok(Requirement {
            constraint: constraint.to_string(),
            optional,
        })
    }
}

/// A module's version, for its dependents' constraints: its `Chart.yaml`'s
/// `version`.
pub fn module_version(m: &Module) -> Result<String, ModuleError> {
    if !m.has_chart_yaml {
        return Ok(GENERATED_CHART_VERSION.to_string());
    }
    let path = m.path.join("Chart.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| ModuleError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let v =
        crate::values::convert::value_from_yaml(&text).map_err(|e| bad(&path, e.0.to_string()))?;
    match v.get("version") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Ok(GENERATED_CHART_VERSION.to_string()),
    }
}

/// How a module waits for another within one converge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Declared in `requirements.modules`: the module runs only after this
    /// one ran successfully, and waits while it is failing or disabled
    /// (an optional requirement: only while it is enabled).
    Requires { optional: bool },
    /// addon-operator's order: the module runs after this one of lower
    /// order finished, successfully or not (a failing module stays isolated).
    Order,
}

/// Which module waits for which. A module with `requirements.modules`
/// waits only for what it declares; a module without keeps addon-operator's
/// order: it waits for every module without declared requirements of a
/// lower order (so a tree of plain addon-operator modules runs exactly as
/// before, equal orders together). Order edges only go from lower to higher
/// order between modules that declare nothing, and no edge leads from such
/// a module to a declaring one, so a cycle can only be made of declared
/// requirements — the only one [`DependencyGraph::build`] has to look for.
#[derive(Clone, Debug, Default)]
pub struct DependencyGraph {
    /// Module → (what it waits for → how), for every module of the tree.
    pub after: BTreeMap<String, BTreeMap<String, Edge>>,
    /// Modules that declared their requirements.
    pub declaring: BTreeSet<String>,
}

impl DependencyGraph {
    /// Checks every declared requirement (the module exists, its version
    /// satisfies the constraint) and that they make no cycle; each failure
    /// is one error naming the module, its `module.yaml` and the cause.
    pub fn build(modules: &[Module]) -> Result<DependencyGraph, ModuleError> {
        let by_name: BTreeMap<&str, &Module> =
            modules.iter().map(|m| (m.name.as_str(), m)).collect();
        let mut versions: BTreeMap<&str, String> = BTreeMap::new();
        let mut g = DependencyGraph::default();
        for m in modules {
            if !m.meta.declares_requirements {
                continue;
            }
            g.declaring.insert(m.name.clone());
            let path = m.path.join(MODULE_YAML);
            for (dep, req) in &m.meta.requires {
                let Some(d) = by_name.get(dep.as_str()) else {
                    if req.optional {
                        continue;
                    }
                    return Err(ModuleError::Dependency {
                        module: m.name.clone(),
                        message: format!(
                            "{}: requirements.modules.{dep}: module '{dep}' is not in any modules directory",
                            path.display()
                        ),
                    });
                };
                let version = match versions.get(dep.as_str()) {
                    Some(v) => v.clone(),
                    None => {
                        let v = module_version(d)?;
                        versions.insert(&d.name, v.clone());
                        v
                    }
                };
                match crate::chart::dependencies::check_range(&req.constraint, &version) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(ModuleError::Dependency {
                            module: m.name.clone(),
                            message: format!(
                                "{}: requirements.modules.{dep}: needs '{}', but module '{dep}' is version {version}",
                                path.display(),
                                req.constraint
                            ),
                        });
                    }
                    Err(e) => {
                        return Err(ModuleError::Dependency {
                            module: m.name.clone(),
                            message: format!(
                                "{}: requirements.modules.{dep}: module '{dep}' has version '{version}': {e}",
                                path.display()
                            ),
                        });
                    }
                }
            }
        }
        for m in modules {
            let mut after = BTreeMap::new();
            if m.meta.declares_requirements {
                for (dep, req) in &m.meta.requires {
                    if by_name.contains_key(dep.as_str()) {
                        after.insert(
                            dep.clone(),
                            Edge::Requires {
                                optional: req.optional,
                            },
                        );
                    }
                }
            } else {
                for o in modules {
                    if o.order < m.order && !o.meta.declares_requirements {
                        after.insert(o.name.clone(), Edge::Order);
                    }
                }
            }
            g.after.insert(m.name.clone(), after);
        }
        if let Some(cycle) = g.find_cycle() {
            return Err(ModuleError::DependencyCycle(cycle));
        }
        Ok(g)
    }

    /// A cycle of declared requirements, as `[a, b, …, a]`; the first found
    /// in name order, so the error is the same on every run.
    fn find_cycle(&self) -> Option<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Open,
            Done,
        }
        fn visit(
            g: &DependencyGraph,
            n: &str,
            marks: &mut BTreeMap<String, Mark>,
            stack: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            match marks.get(n) {
                Some(Mark::Done) => return None,
                Some(Mark::Open) => {
                    let start = stack.iter().position(|s| s == n).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(n.to_string());
                    return Some(cycle);
                }
                None => {}
            }
            marks.insert(n.to_string(), Mark::Open);
            stack.push(n.to_string());
            for (dep, edge) in g.after.get(n).into_iter().flatten() {
                if matches!(edge, Edge::Requires { .. })
                    && let Some(c) = visit(g, dep, marks, stack)
                {
                    return Some(c);
                }
            }
            stack.pop();
            marks.insert(n.to_string(), Mark::Done);
            None
        }
        let mut marks = BTreeMap::new();
        for n in &self.declaring {
            let mut stack = Vec::new();
            if let Some(c) = visit(self, n, &mut marks, &mut stack) {
                return Some(c);
            }
        }
        None
    }

    /// What `name` waits for, with how.
    pub fn prerequisites(&self, name: &str) -> impl Iterator<Item = (&str, Edge)> {
        self.after
            .get(name)
            .into_iter()
            .flatten()
            .map(|(n, e)| (n.as_str(), *e))
    }

    /// The declared requirements of `name` (for `module list`): `a`,
    /// `b (optional)`.
    pub fn requirements_text(&self, name: &str) -> String {
        self.prerequisites(name)
            .filter_map(|(n, e)| match e {
                Edge::Requires { optional: false } => Some(n.to_string()),
                Edge::Requires { optional: true } => Some(format!("{n} (optional)")),
                Edge::Order => None,
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Why `name` cannot run now, if a module it requires is disabled or
    /// not (yet) deployed successfully: `enabled(n)` and `ready(n)` tell the
    /// state of the others. Optional requirements count only when enabled.
    pub fn blocked_by(
        &self,
        name: &str,
        enabled: impl Fn(&str) -> bool,
        ready: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let mut why = Vec::new();
        for (dep, edge) in self.prerequisites(name) {
            let Edge::Requires { optional } = edge else {
                continue;
            };
            if !enabled(dep) {
                if !optional {
                    why.push(format!("'{dep}' (disabled)"));
                }
            } else if !ready(dep) {
                why.push(format!("'{dep}' (not ready)"));
            }
        }
        (!why.is_empty()).then(|| format!("waiting for {}", why.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn meta(text: &str) -> Result<ModuleMeta, ModuleError> {
        ModuleMeta::parse(Path::new("m/module.yaml"), text, "m")
    }

    fn module(name: &str, order: u32, requires: &[(&str, &str)]) -> Module {
        let mut m = Module {
            name: name.into(),
            order,
            path: PathBuf::from(format!("/nonexistent/{name}")),
            dir_index: 0,
            has_chart: true,
            has_chart_yaml: false,
            legacy: false,
            enabled_script: None,
            crds: Vec::new(),
            meta: ModuleMeta::default(),
        };
        if !requires.is_empty() {
            m.meta.declares_requirements = true;
            for (n, c) in requires {
                m.meta
                    .requires
                    .insert(n.to_string(), Requirement::parse(c).unwrap());
            }
        }
        m
    }

    #[test]
    fn parses_deckhouse_module_yaml() {
        let m = meta(
            "name: m\nweight: 960\nstage: Experimental\ntags: [a, b]\nexclusiveGroup: g\n\
             descriptions:\n  en: Hello\nrequirements:\n  kubernetes: \">= 1.27\"\n  modules:\n    \
             ingress-nginx: '> 1.67.0'\n    dns: '>= 0.0.0 !optional'\n",
        )
        .unwrap();
        assert_eq!(m.weight, Some(960));
        assert_eq!(m.tags, ["a", "b"]);
        assert_eq!(m.description.as_deref(), Some("Hello"));
        assert_eq!(m.kubernetes.as_deref(), Some(">= 1.27"));
        assert!(m.declares_requirements);
        assert_eq!(
            m.requires["dns"],
            Requirement {
                constraint: ">= 0.0.0".into(),
                optional: true
            }
        );
        assert!(!m.requires["ingress-nginx"].optional);
    }

    #[test]
    fn bad_module_yaml_names_the_file_and_field() {
        let e = meta("weight: heavy\n").unwrap_err().to_string();
        assert!(e.contains("m/module.yaml") && e.contains("weight"), "{e}");
        let e = meta("name: other\n").unwrap_err().to_string();
        assert!(e.contains("'other' is not the module's name 'm'"), "{e}");
        let e = meta("requirements:\n  modules:\n    x: 'not a version'\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("requirements.modules.x"), "{e}");
        let e = meta("requirements:\n  modules:\n    m: '>= 1'\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot require itself"), "{e}");
    }

    #[test]
    fn plain_modules_keep_the_order_and_declaring_ones_only_their_requirements() {
        let ms = vec![
            module("a", 10, &[]),
            module("b", 20, &[]),
            module("c", 20, &[]),
            module("x", 5, &[("c", ">= 0.0.0")]),
        ];
        let g = DependencyGraph::build(&ms).unwrap();
        let after = |n: &str| {
            g.prerequisites(n)
                .map(|(d, _)| d.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(after("a"), Vec::<String>::new());
        assert_eq!(after("b"), ["a"]);
        assert_eq!(after("c"), ["a"]);
        assert_eq!(after("x"), ["c"]);
        assert_eq!(g.requirements_text("x"), "c");
    }

    #[test]
    fn a_cycle_is_one_error_naming_it() {
        let ms = vec![
            module("a", 1, &[("b", ">= 0.0.0")]),
            module("b", 1, &[("c", ">= 0.0.0")]),
            module("c", 1, &[("a", ">= 0.0.0")]),
        ];
        let e = DependencyGraph::build(&ms).unwrap_err().to_string();
        assert_eq!(e, "module dependency cycle: a → b → c → a");
    }

    #[test]
    fn a_missing_or_wrong_version_dependency_is_an_error_optional_missing_is_not() {
        let e = DependencyGraph::build(&[module("a", 1, &[("ghost", ">= 0.0.0")])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("module 'ghost' is not in any modules directory"),
            "{e}"
        );
        let e =
            DependencyGraph::build(&[module("b", 1, &[]), module("a", 1, &[("b", ">= 1.0.0")])])
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("needs '>= 1.0.0', but module 'b' is version 0.2.0"),
            "{e}"
        );
        DependencyGraph::build(&[module("a", 1, &[("ghost", ">= 0.0.0 !optional")])]).unwrap();
    }

    #[test]
    fn blocked_by_disabled_or_not_ready_requirements() {
        let ms = vec![
            module("db", 1, &[]),
            module("opt", 1, &[]),
            module(
                "app",
                2,
                &[("db", ">= 0.0.0"), ("opt", ">= 0.0.0 !optional")],
            ),
        ];
        let g = DependencyGraph::build(&ms).unwrap();
        let w = g.blocked_by("app", |n| n != "db" && n != "opt", |_| true);
        assert_eq!(w.as_deref(), Some("waiting for 'db' (disabled)"));
        let w = g.blocked_by("app", |_| true, |n| n != "opt");
        assert_eq!(w.as_deref(), Some("waiting for 'opt' (not ready)"));
        assert_eq!(g.blocked_by("app", |n| n != "opt", |_| true), None);
    }
}
