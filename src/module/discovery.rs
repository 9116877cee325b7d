//! Finding modules on disk: addon-operator's `FileSystemLoader`
//! (`pkg/module_manager/loader/fs/fs.go`, `findModulesInDir`,
//! `resolveDirEntry`, `getModuleOrder`).
//!
//! `MODULES_DIR` is a colon-separated list of directories. Every
//! subdirectory of one of them, or symlink to a directory, is a module named
//! by `^(([0-9]+)-)?(.+)$`: the numeric prefix is its order, the rest its
//! name; without a prefix the order is `UNNUMBERED_MODULES_ORDER` (default
//! 1). Modules are sorted by order, then name. Names must round-trip through
//! camelCase ([`crate::values::validate_module_name`]). Entries that are not
//! directories are ignored (addon-operator logs a warning for them except
//! for `values.yaml`); hidden entries (`.git`, editor swap dirs) are skipped
//! here, where addon-operator would fail on their names.
//!
//! A module has a Helm chart when it has `Chart.yaml` or `templates/`
//! (addon-operator writes a `Chart.yaml` for a templates-only module). Its
//! `crds/` files are listed except those starting with `doc-` or `_`
//! (`ADDON_OPERATOR_CRD_FILTER_PREFIXES`' default). A module whose `hooks/`
//! has `before-helm/` or `after-helm/` uses the original antiopa layout
//! ([`crate::hooks::discovery::has_legacy_module_layout`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::ModuleError;
use super::meta::{DependencyGraph, ModuleMeta};
use crate::hooks::discovery::has_legacy_module_layout;
use crate::values::validate_module_name;

/// The default for modules without an order prefix (`UNNUMBERED_MODULES_ORDER`).
pub const DEFAULT_UNNUMBERED_ORDER: u32 = 1;

/// Where modules and global hooks are, and how unnumbered modules sort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModulesSettings {
    /// The `MODULES_DIR` list, in order.
    pub modules_dirs: Vec<PathBuf>,
    /// `GLOBAL_HOOKS_DIR`, if any.
    pub global_hooks_dir: Option<PathBuf>,
    /// `UNNUMBERED_MODULES_ORDER`.
    pub unnumbered_order: u32,
}

/// The first set variable of `names`.
fn env_first(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

impl ModulesSettings {
    /// Settings from the environment, accepting every spelling in use:
    /// `MODULES_DIR` / `ADDON_OPERATOR_MODULES_DIR`, `GLOBAL_HOOKS_DIR` /
    /// `ADDON_OPERATOR_GLOBAL_HOOKS_DIR`, `UNNUMBERED_MODULES_ORDER` /
    /// `ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER` / `UNNUMBERED_MODULE_ORDER`
    /// (the docs' spelling). Unset directories default to `modules` and
    /// `global-hooks` (relative to the working directory).
    pub fn from_env() -> Result<ModulesSettings, ModuleError> {
        let dirs = env_first(&["MODULES_DIR", "ADDON_OPERATOR_MODULES_DIR"])
            .unwrap_or_else(|| "modules".into());
        let global = env_first(&["GLOBAL_HOOKS_DIR", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR"])
            .unwrap_or_else(|| "global-hooks".into());
        let order = match env_first(&[
            "UNNUMBERED_MODULES_ORDER",
            "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER",
            "UNNUMBERED_MODULE_ORDER",
        ]) {
            Some(s) => s.trim().parse().map_err(|_| {
                ModuleError::Settings(format!(
                    "bad UNNUMBERED_MODULES_ORDER '{s}': expected a non-negative integer"
                ))
            })?,
            None => DEFAULT_UNNUMBERED_ORDER,
        };
        Ok(ModulesSettings {
            modules_dirs: split_dirs(&dirs),
            global_hooks_dir: Some(PathBuf::from(global)),
            unnumbered_order: order,
        })
    }
}

/// A colon-separated directory list; empty parts are dropped.
pub fn split_dirs(list: &str) -> Vec<PathBuf> {
    list.split(':')
        .filter(|s| !s.trim().is_empty())
        .map(|s| PathBuf::from(s.trim()))
        .collect()
}

/// One module found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// kebab-case name, without the order prefix.
    pub name: String,
    /// The order prefix, or the unnumbered order.
    pub order: u32,
    /// The module directory (a symlink's target, as addon-operator resolves it).
    pub path: PathBuf,
    /// Index into [`ModulesSettings::modules_dirs`] of the directory holding it.
    pub dir_index: usize,
    /// `Chart.yaml` or `templates/` present.
    pub has_chart: bool,
    /// `Chart.yaml` present (a templates-only chart gets a generated one).
    pub has_chart_yaml: bool,
    /// The original antiopa layout (`hooks/before-helm`, `hooks/after-helm`).
    pub legacy: bool,
    /// An executable `enabled` script.
    pub enabled_script: Option<PathBuf>,
    /// `crds/` files applied before the chart, sorted, filtered.
    pub crds: Vec<PathBuf>,
    /// Its `module.yaml` (empty without one).
    pub meta: ModuleMeta,
}

/// Everything discovered in a modules tree.
#[derive(Clone, Debug, Default)]
pub struct ModulesTree {
    /// Sorted by order, then name.
    pub modules: Vec<Module>,
    /// The `MODULES_DIR` entries, in order.
    pub modules_dirs: Vec<PathBuf>,
    pub global_hooks_dir: Option<PathBuf>,
    /// Which module waits for which (`module.yaml` requirements, else order).
    pub graph: DependencyGraph,
}

impl ModulesTree {
    pub fn get(&self, name: &str) -> Option<&Module> {
        self.modules.iter().find(|m| m.name == name)
    }
}

static MODULE_DIR_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(([0-9]+)-)?(.+)$").unwrap_or_else(|_| unreachable!("constant regex"))
});

/// `(order, name)` of a module directory name.
pub fn parse_dir_name(dir_name: &str, unnumbered: u32) -> Result<(u32, String), ModuleError> {
    let caps = MODULE_DIR_RE
        .captures(dir_name)
        .ok_or_else(|| ModuleError::BadDirName(dir_name.to_string()))?;
    let name = caps
        .get(3)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    let order = match caps.get(2) {
        // strconv.Atoi on the prefix: too large a number is an error.
        Some(p) => p.as_str().parse().map_err(|_| {
            ModuleError::BadDirName(format!("{dir_name}: order prefix out of range"))
        })?,
        None => unnumbered,
    };
    Ok((order, name))
}

fn io(path: &Path, e: std::io::Error) -> ModuleError {
    ModuleError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// CRD files of a module: regular files directly in `crds/`, sorted, skipping
/// names starting with `doc-` or `_`.
pub fn crd_files(module_dir: &Path) -> Result<Vec<PathBuf>, ModuleError> {
    let dir = module_dir.join("crds");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut res = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
        let e = e.map_err(|e| io(&dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("doc-") || name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let p = e.path();
        if p.is_file() {
            res.push(p);
        }
    }
    res.sort();
    Ok(res)
}

/// Finds every module of the tree.
pub fn discover(settings: &ModulesSettings) -> Result<ModulesTree, ModuleError> {
    let mut found: BTreeMap<String, Module> = BTreeMap::new();
    for (dir_index, dir) in settings.modules_dirs.iter().enumerate() {
        let entries = std::fs::read_dir(dir).map_err(|e| io(dir, e))?;
        let mut names = Vec::new();
        for e in entries {
            let e = e.map_err(|e| io(dir, e))?;
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        for entry in names {
            if entry.starts_with('.') {
                continue;
            }
            let path = dir.join(&entry);
            // metadata follows symlinks: a symlink to a directory is a module.
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let (order, name) = parse_dir_name(&entry, settings.unnumbered_order)?;
            validate_module_name(&name).map_err(|e| ModuleError::BadName {
                dir: dir.join(&entry).display().to_string(),
                message: e.to_string(),
            })?;
            if let Some(prev) = found.get(&name) {
                return Err(ModuleError::Duplicate {
                    name,
                    first: prev.path.display().to_string(),
                    second: path.display().to_string(),
                });
            }
            let has_chart_yaml = path.join("Chart.yaml").is_file();
            let has_chart = has_chart_yaml || path.join("templates").is_dir();
            let enabled = path.join("enabled");
            let meta = ModuleMeta::load(&path, &name)?;
            let module = Module {
                // Deckhouse's `weight` replaces the directory's prefix.
                order: meta.weight.unwrap_or(order),
                meta,
                dir_index,
                has_chart,
                has_chart_yaml,
                legacy: has_legacy_module_layout(&path),
                enabled_script: is_executable_file(&enabled).then_some(enabled),
                crds: crd_files(&path)?,
                path,
                name: name.clone(),
            };
            found.insert(name, module);
        }
    }
    let mut modules: Vec<Module> = found.into_values().collect();
    modules.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.name.cmp(&b.name)));
    let graph = DependencyGraph::build(&modules)?;
    Ok(ModulesTree {
        graph,
        modules,
        modules_dirs: settings.modules_dirs.clone(),
        global_hooks_dir: settings.global_hooks_dir.clone(),
    })
}
