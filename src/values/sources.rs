//! All values of a modules tree, computed from their sources given as data:
//! [`ValuesSources`] → [`EffectiveValues`]. This is the order of
//! addon-operator's start-up for values (`loadGlobalValues`,
//! `FileSystemLoader.getBasicModule`, `NewGlobalModule`, `NewBasicModule`,
//! then config values and hook patches, then `SetEnabledModules`).
//!
//! [`read_global_sources`] and [`read_module_sources`] fill the file-based
//! parts from a modules tree (reading files only; hooks are run elsewhere).

use super::config::KubeConfig;
use super::convert::{Values, values_from_yaml};
use super::merge::merge_into;
use super::names::{
    ENABLED_SUFFIX, GLOBAL_VALUES_KEY, module_name, validate_module_name, values_key,
};
use super::patch::{PatchOp, ValuesPatch};
use super::store::{ValuesError, ValuesStore};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The global section's sources.
#[derive(Debug, Clone, Default)]
pub struct GlobalSources {
    /// Each modules directory's `values.yaml`, in `MODULES_DIR` order (their
    /// `global` sections are merged in that order).
    pub dir_values: Vec<Values>,
    /// `$GLOBAL_HOOKS_DIR/openapi/config-values.yaml`.
    pub config_schema: Option<String>,
    /// `$GLOBAL_HOOKS_DIR/openapi/values.yaml`.
    pub values_schema: Option<String>,
    /// ConfigMap key `global`.
    pub config: Option<Values>,
    /// Global hooks' values patches, in run order: `(hook name, patch)`.
    pub patches: Vec<(String, ValuesPatch)>,
}

/// One module's sources.
#[derive(Debug, Clone, Default)]
pub struct ModuleSources {
    /// Module name (kebab-case, without the order prefix).
    pub name: String,
    /// The `values.yaml` of the modules directory holding the module.
    pub dir_values: Option<Values>,
    /// The module's own `values.yaml` (only its `<camelName>` section counts).
    pub module_values: Option<Values>,
    /// `openapi/config-values.yaml`.
    pub config_schema: Option<String>,
    /// `openapi/values.yaml`.
    pub values_schema: Option<String>,
    /// ConfigMap key `<camelName>`.
    pub config: Option<Values>,
    /// The module's hooks' values patches, in run order.
    pub patches: Vec<(String, ValuesPatch)>,
}

/// Everything values are computed from.
#[derive(Debug, Clone, Default)]
pub struct ValuesSources {
    pub global: GlobalSources,
    pub modules: Vec<ModuleSources>,
    /// Names of the enabled modules (`global.enabledModules`, sorted on
    /// injection; not injected when empty, as `SetEnabledModules`).
    pub enabled_modules: Vec<String>,
}

impl ValuesSources {
    /// Put a parsed ConfigMap's sections into the sources.
    pub fn apply_config(&mut self, cfg: &KubeConfig) {
        self.global.config = cfg.global.clone();
        for m in &mut self.modules {
            m.config = cfg.modules.get(&m.name).and_then(|c| c.values.clone());
        }
    }
}

/// `loadGlobalValues`: the `global` sections of every directory
/// `values.yaml` merged in order (a non-map section counts as `{}`).
pub fn global_static_values(dir_values: &[Values]) -> Result<Values, ValuesError> {
    let mut res = Values::new();
    for dv in dir_values {
        if let Some(Value::Object(section)) = dv.get(GLOBAL_VALUES_KEY) {
            merge_into(&mut res, section)?;
        }
    }
    Ok(res)
}

/// `loadGlobalValues`' enabled flags: module names whose
/// `<camelName>Enabled` is true in a directory `values.yaml` (a bool, or a
/// string `strconv.ParseBool` accepts; other types are an error).
pub fn static_enabled_modules(dir_values: &[Values]) -> Result<Vec<String>, ValuesError> {
    let mut res = Vec::new();
    for dv in dir_values {
        for (key, value) in dv {
            if key == GLOBAL_VALUES_KEY {
                continue;
            }
            let Some(stem) = key.strip_suffix(ENABLED_SUFFIX) else {
                continue;
            };
            if enabled_flag(key, value)? {
                res.push(module_name(stem));
            }
        }
    }
    res.sort();
    res.dedup();
    Ok(res)
}

/// One `<camelName>Enabled` value of a `values.yaml`: a bool, or a string
/// `strconv.ParseBool` accepts as true (anything else is false); other types
/// are an error (`loadGlobalValues`).
pub fn enabled_flag(key: &str, value: &Value) -> Result<bool, ValuesError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) => Ok(matches!(
            s.as_str(),
            "1" | "t" | "T" | "TRUE" | "true" | "True"
        )),
        other => Err(ValuesError::Data(format!(
            "unknown type for Enabled flag: {key}: {}",
            super::convert::go_type_name(other)
        ))),
    }
}

/// `getBasicModule`'s static values: `{<key>: {}}`, merged with the whole
/// directory `values.yaml` if it has the module's key, then with the whole
/// module `values.yaml`; the `<key>` section must be a map.
pub fn module_static_values(
    name: &str,
    dir_values: Option<&Values>,
    module_values: Option<&Values>,
) -> Result<Values, ValuesError> {
    let key = values_key(name);
    let mut initial = Values::new();
    initial.insert(key.clone(), Value::Object(Values::new()));
    if let Some(dv) = dir_values
        && dv.contains_key(&key)
    {
        merge_into(&mut initial, dv)?;
    }
    if let Some(mv) = module_values {
        merge_into(&mut initial, mv)?;
    }
    match initial.remove(&key) {
        Some(Value::Object(m)) => Ok(m),
        _ => Err(ValuesError::Data(
            "new basic module: expect map[string]interface{} in module values".into(),
        )),
    }
}

/// The computed values of a modules tree.
#[derive(Debug)]
pub struct EffectiveValues {
    pub global: ValuesStore,
    /// By module name.
    pub modules: BTreeMap<String, ValuesStore>,
}

impl EffectiveValues {
    /// `ValuesSources` → stores: static values, config values (checked
    /// against the config schemas), hook patches (checked as
    /// `apply_hook_patch` checks them), every store validated
    /// (`BasicModule.Validate`: values schema, then config schema), then
    /// `global.enabledModules` injected.
    pub fn compute(src: &ValuesSources) -> Result<EffectiveValues, ValuesError> {
        let gs = &src.global;
        let mut global = ValuesStore::new(
            GLOBAL_VALUES_KEY,
            global_static_values(&gs.dir_values)?,
            gs.config_schema.as_deref(),
            gs.values_schema.as_deref(),
        )?;
        if let Some(cfg) = &gs.config {
            global.set_config_values(cfg.clone())?;
        }
        for (hook, patch) in &gs.patches {
            global.apply_hook_patch(hook, patch)?;
        }
        let mut modules = BTreeMap::new();
        for m in &src.modules {
            validate_module_name(&m.name).map_err(|e| ValuesError::Data(e.to_string()))?;
            let stat =
                module_static_values(&m.name, m.dir_values.as_ref(), m.module_values.as_ref())?;
            let mut store = ValuesStore::new(
                &m.name,
                stat,
                m.config_schema.as_deref(),
                m.values_schema.as_deref(),
            )?;
            if let Some(cfg) = &m.config {
                store.set_config_values(cfg.clone())?;
            }
            for (hook, patch) in &m.patches {
                store.apply_hook_patch(hook, patch)?;
            }
            store.validate()?;
            modules.insert(m.name.clone(), store);
        }
        // Global values are checked before the injection: the global values
        // schema need not declare `enabledModules`.
        global.validate()?;
        let mut enabled = src.enabled_modules.clone();
        enabled.sort();
        enabled.dedup();
        if !enabled.is_empty() {
            let list = Value::Array(enabled.into_iter().map(Value::String).collect());
            global.append_patch(&[PatchOp::add("/global/enabledModules", list)])?;
        }
        Ok(EffectiveValues { global, modules })
    }

    /// The values file given to Helm for a module (`NewHelmModule`):
    /// `{global: …, <camelName>: …}`, after checking the module's section
    /// against its schema with `x-required-for-helm`. `None` for an unknown
    /// module.
    pub fn helm_values(&self, module: &str) -> Option<Result<Values, ValuesError>> {
        let store = self.modules.get(module)?;
        Some(
            store
                .validate_helm()
                .map(|()| self.module_values(module, true).unwrap_or_default()),
        )
    }

    /// What `antiopa module values NAME [-g]` prints (addon-operator's debug
    /// `/module/{name}/values`): the module's values, or with `with_global`
    /// `{global: …, <camelName>: …}`.
    pub fn module_values(&self, module: &str, with_global: bool) -> Option<Values> {
        let store = self.modules.get(module)?;
        if !with_global {
            return Some(store.values().clone());
        }
        let mut m = Values::new();
        m.insert(
            GLOBAL_VALUES_KEY.into(),
            Value::Object(self.global.values().clone()),
        );
        m.insert(
            store.key().to_string(),
            Value::Object(store.values().clone()),
        );
        Some(m)
    }

    /// `valuesForEnabledScript`: what a module's `enabled` script reads from
    /// `VALUES_PATH`: `{global: …, <camelName>: …}` with
    /// `global.enabledModules` set to the modules enabled before it.
    pub fn enabled_script_values(
        &self,
        module: &str,
        preceding_enabled: &[String],
    ) -> Option<Values> {
        let mut res = self.module_values(module, true)?;
        if let Some(Value::Object(g)) = res.get_mut(GLOBAL_VALUES_KEY) {
            let list = preceding_enabled
                .iter()
                .cloned()
                .map(Value::String)
                .collect();
            g.insert("enabledModules".into(), Value::Array(list));
        }
        Some(res)
    }

    /// The config values of a module (`/module/{name}/config`), likewise;
    /// with `with_global` this is also what a module hook reads from
    /// `CONFIG_VALUES_PATH` (and [`Self::module_values`] with `with_global`
    /// what it reads from `VALUES_PATH`).
    pub fn module_config_values(&self, module: &str, with_global: bool) -> Option<Values> {
        let store = self.modules.get(module)?;
        if !with_global {
            return Some(store.config_values());
        }
        let mut m = Values::new();
        m.insert(
            GLOBAL_VALUES_KEY.into(),
            Value::Object(self.global.config_values()),
        );
        m.insert(
            store.key().to_string(),
            Value::Object(store.config_values()),
        );
        Some(m)
    }
}

/// A values file read with addon-operator's rules (`LoadValuesFileFromDir`):
/// absent → `None`; bad YAML → "bad values data: …".
pub fn read_values_file(path: &Path) -> Result<Option<Values>, ValuesError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ValuesError::Data(format!(
                "load values file '{}': {e}",
                path.display()
            )));
        }
    };
    let text = crate::yaml::check_input(&bytes).map_err(|e| {
        ValuesError::Data(format!(
            "bad values data: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        ))
    })?;
    values_from_yaml(text)
        .map(Some)
        .map_err(|e| ValuesError::Data(format!("bad values data: {e}\n{text}")))
}

/// `ReadOpenAPIFiles`: `(config-values.yaml, values.yaml)` of a directory;
/// absent files are `None`.
pub fn read_openapi_dir(dir: &Path) -> Result<(Option<String>, Option<String>), ValuesError> {
    let read = |name: &str| -> Result<Option<String>, ValuesError> {
        let p = dir.join(name);
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ValuesError::Data(format!(
                "read file '{}': {e}",
                p.display()
            ))),
        }
    };
    Ok((read("config-values.yaml")?, read("values.yaml")?))
}

/// The global sources of a tree: the `values.yaml` of each modules directory
/// and the schemas under `global_hooks_dir/openapi`.
pub fn read_global_sources(
    modules_dirs: &[&Path],
    global_hooks_dir: Option<&Path>,
) -> Result<GlobalSources, ValuesError> {
    let mut gs = GlobalSources::default();
    for d in modules_dirs {
        if let Some(v) = read_values_file(&d.join("values.yaml"))? {
            gs.dir_values.push(v);
        }
    }
    if let Some(g) = global_hooks_dir {
        let (c, v) = read_openapi_dir(&g.join("openapi"))?;
        gs.config_schema = c;
        gs.values_schema = v;
    }
    Ok(gs)
}

/// A module's file sources: `name` is the module name, `module_dir` its
/// directory, `dir_values` the `values.yaml` of the directory holding it.
pub fn read_module_sources(
    name: &str,
    module_dir: &Path,
    dir_values: Option<&Values>,
) -> Result<ModuleSources, ValuesError> {
    let (c, v) = read_openapi_dir(&module_dir.join("openapi"))?;
    Ok(ModuleSources {
        name: name.to_string(),
        dir_values: dir_values.cloned(),
        module_values: read_values_file(&module_dir.join("values.yaml"))?,
        config_schema: c,
        values_schema: v,
        config: None,
        patches: Vec::new(),
    })
}
