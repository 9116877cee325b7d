//! Config values from an addon-operator ConfigMap's `data` (string → YAML
//! string): a port of `parseConfigMapData` and `fromConfigMapData`
//! (kube_config_manager/backend/configmap/configmap.go) and
//! `ModuleConfig.LoadFromValues` (pkg/utils/module_config.go).
//!
//! - `global`: YAML of the global section;
//! - `<camelName>`: YAML of a module's section (a map; a list is accepted
//!   but contributes nothing, as `GetValues` finds no map);
//! - `<camelName>Enabled`: exactly `"true"` or `"false"`;
//! - `<camelName>Maintenance`: `NoResourceReconciliation`,
//!   `noresourcereconciliation` or empty;
//! - every other key must be a camelCase module key that round-trips
//!   (`bad module name '…': should be camelCased`).

use super::convert::{Values, go_float, value_from_yaml};
use super::names::{
    GLOBAL_VALUES_KEY, enabled_key, maintenance_key, module_of_config_key, values_key,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// One module's part of the ConfigMap (`utils.ModuleConfig`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleConfig {
    /// The module's section; `None` when the key is absent or not a map.
    pub values: Option<Values>,
    /// `<camelName>Enabled`, if present.
    pub enabled: Option<bool>,
    /// `<camelName>Maintenance` is `NoResourceReconciliation`.
    pub no_resource_reconciliation: bool,
}

/// A parsed ConfigMap (`config.KubeConfig`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeConfig {
    /// The `global` section, if the key is present.
    pub global: Option<Values>,
    /// By module name (kebab-case).
    pub modules: BTreeMap<String, ModuleConfig>,
}

/// `parseConfigMapData`. Error texts are addon-operator's.
pub fn parse_config_data(data: &BTreeMap<String, String>) -> Result<KubeConfig, String> {
    let mut cfg = KubeConfig::default();
    if let Some(text) = data.get(GLOBAL_VALUES_KEY) {
        // utils.NewGlobalValues: into map[string]interface{}.
        let section = super::convert::values_from_yaml(text).map_err(|e| {
            format!(
                "ConfigMap: bad yaml at key '{GLOBAL_VALUES_KEY}': global section is not compatible with JSON and YAML: {e}, data:\n{text}:\n{text}"
            )
        })?;
        cfg.global = Some(section);
    }
    let mut names = Vec::new();
    for key in data.keys() {
        if let Some(name) = module_of_config_key(key).map_err(|e| e.to_string())? {
            names.push(name);
        }
    }
    names.sort();
    names.dedup();
    for name in names {
        let mc = module_config(&name, data)
            .map_err(|e| format!("bad yaml at key '{}': {e}", values_key(&name)))?;
        cfg.modules.insert(name, mc);
    }
    Ok(cfg)
}

/// `fromConfigMapData` + `LoadFromValues`.
fn module_config(name: &str, data: &BTreeMap<String, String>) -> Result<ModuleConfig, String> {
    let key = values_key(name);
    let mut mc = ModuleConfig::default();
    if let Some(text) = data.get(&key) {
        // Go decodes module sections with gopkg.in/yaml.v3, whose errors
        // have no "error converting YAML to JSON: " prefix. (Its YAML 1.2
        // scalars also differ from the yaml.v2 rules used here for `yes`,
        // `on`, `y` and the like; maps, strings and numbers agree.)
        let v = value_from_yaml(text).map_err(|e| {
            let msg =
                e.0.strip_prefix("error converting YAML to JSON: ")
                    .unwrap_or(&e.0)
                    .to_string();
            format!("unmarshal yaml data in a module config key '{key}': {msg}")
        })?;
        match v {
            Value::Object(m) => mc.values = Some(m),
            Value::Array(_) => {}
            other => {
                return Err(format!(
                    "load '{name}' values: module config should be array or map. Got: {}",
                    spew(&other)
                ));
            }
        }
    }
    let ek = enabled_key(name);
    if let Some(s) = data.get(&ek) {
        mc.enabled = Some(match s.as_str() {
            "true" => true,
            "false" => false,
            _ => {
                return Err(format!(
                    "module enabled key '{ek}' should have a boolean value, got '{s}'"
                ));
            }
        });
    }
    let mk = maintenance_key(name);
    if let Some(s) = data.get(&mk) {
        mc.no_resource_reconciliation = match s.as_str() {
            "NoResourceReconciliation" | "noresourcereconciliation" => true,
            "" => false,
            _ => {
                return Err(format!(
                    "module maintenanceState key '{mk}' can only take 'NoResourceReconciliation', 'noresourcereconciliation' or '' values, got '{s}'"
                ));
            }
        };
    }
    Ok(mc)
}

/// go-spew's `Sdump` of a scalar.
fn spew(v: &Value) -> String {
    match v {
        Value::Null => "(interface {}) <nil>\n".into(),
        Value::Bool(b) => format!("(bool) {b}\n"),
        Value::Number(n) => format!("(float64) {}\n", go_float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => format!("(string) (len={}) {s:?}\n", s.len()),
        other => format!("{other}\n"),
    }
}
