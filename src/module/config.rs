//! The offline config source (`--config FILE`): a ConfigMap manifest whose
//! `data` holds addon-operator's keys (`global`, `<camelName>`,
//! `<camelName>Enabled`, `<camelName>Maintenance`) and the original
//! antiopa's (`values`, `<module-name>-values`, `disable-modules`).
//!
//! The original antiopa's keys are taken out before the rest goes to
//! addon-operator's parser ([`crate::values::parse_config_data`]), which
//! would reject them as badly camelCased module keys: `values` and
//! `disable-modules` by name, and every key ending in `-values` (a camelCase
//! key never holds a `-`). A module named `values` can therefore not be
//! configured through this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::ModuleError;
use crate::hooks::exec::{DEFAULT_MAX_FILE_BYTES, read_capped};
use crate::values::legacy::legacy_config;
use crate::values::{KubeConfig, Values, parse_config_data, values_to_yaml};

/// A parsed `--config` file.
#[derive(Clone, Debug, Default)]
pub struct OfflineConfig {
    /// addon-operator's part.
    pub kube: KubeConfig,
    /// The original antiopa's keys (`values`, `*-values`), as text.
    pub legacy_data: BTreeMap<String, String>,
    /// `disable-modules`: names or globs (`*`, `?`), comma-separated.
    pub disable_modules: Vec<String>,
    /// Modules whose `<module-name>-archived` key is `"true"`.
    pub archived: BTreeSet<String>,
}

/// The suffix of antiopa's archive keys: `<module-name>-archived`.
pub const ARCHIVED_SUFFIX: &str = "-archived";

/// The modules a ConfigMap's `data` marks archived
/// (`<module-name>-archived: "true"`; `"false"` or no key: not archived).
pub fn archived_modules(data: &BTreeMap<String, String>) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    for (k, v) in data {
        let Some(module) = k.strip_suffix(ARCHIVED_SUFFIX) else {
            continue;
        };
        match v.trim() {
            "true" => {
                out.insert(module.to_string());
            }
            "false" => {}
            other => {
                return Err(format!(
                    "module archive key '{k}' should be \"true\" or \"false\", got '{other}'"
                ));
            }
        }
    }
    Ok(out)
}

impl OfflineConfig {
    /// Reads a ConfigMap manifest (YAML or JSON).
    pub fn read(path: &Path) -> Result<OfflineConfig, ModuleError> {
        // A ConfigMap holds at most 1 MiB in a cluster; anything near the
        // cap is a mistake, and beyond it parsing could exhaust memory.
        let bytes = read_capped(path, DEFAULT_MAX_FILE_BYTES).map_err(|e| ModuleError::Io {
            path: path.display().to_string(),
            message: e.describe("config file"),
        })?;
        let text = String::from_utf8_lossy(&bytes);
        Self::parse(&text).map_err(|message| ModuleError::Config {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses a ConfigMap manifest's text.
    pub fn parse(text: &str) -> Result<OfflineConfig, String> {
        let doc = crate::values::convert::value_from_yaml(text).map_err(|e| e.0)?;
        let data = match &doc {
            Value::Object(m) => {
                if let Some(Value::String(kind)) = m.get("kind")
                    && kind != "ConfigMap"
                {
                    return Err(format!("expected a ConfigMap, got kind '{kind}'"));
                }
                match m.get("data") {
                    None | Some(Value::Null) => Values::new(),
                    Some(Value::Object(d)) => d.clone(),
                    Some(_) => return Err("'data' must be a map of strings".into()),
                }
            }
            Value::Null => Values::new(),
            _ => return Err("expected a ConfigMap manifest (a map)".into()),
        };
        let mut strings = BTreeMap::new();
        for (k, v) in data {
            // ConfigMap data values are strings; Kubernetes refuses others.
            let Value::String(s) = v else {
                return Err(format!("data key '{k}' must be a string"));
            };
            strings.insert(k, s);
        }
        Self::from_data(strings)
    }

    /// Parses a ConfigMap's `data` (the operator's watched ConfigMap).
    pub fn from_data(data: BTreeMap<String, String>) -> Result<OfflineConfig, String> {
        let mut kube_data = BTreeMap::new();
        let mut cfg = OfflineConfig {
            archived: archived_modules(&data)?,
            ..OfflineConfig::default()
        };
        for (k, s) in data {
            if k.ends_with(ARCHIVED_SUFFIX) {
                continue;
            }
            if k == "disable-modules" {
                cfg.disable_modules = s
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect();
            } else if k == "values" || k.ends_with("-values") {
                cfg.legacy_data.insert(k, s);
            } else {
                kube_data.insert(k, s);
            }
        }
        cfg.kube = parse_config_data(&kube_data)?;
        Ok(cfg)
    }

    /// The first `disable-modules` pattern matching a module name.
    pub fn disabled_by(&self, module: &str) -> Option<&str> {
        self.disable_modules
            .iter()
            .find(|p| glob_matches(p, module))
            .map(String::as_str)
    }

    /// Config sources 5 and 6 of the original antiopa layout for a module.
    pub fn legacy_values(
        &self,
        module: &str,
    ) -> Result<(Option<Values>, Option<Values>), ModuleError> {
        legacy_config(&self.legacy_data, module).map_err(|e| ModuleError::Values {
            module: module.to_string(),
            message: e.to_string(),
        })
    }
}

/// Shell-style glob (`*` any run, `?` one character), the whole name.
/// Translated to a regex rather than hand-matched.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).is_ok_and(|r| r.is_match(name))
}

/// `render --write-config`: stores `updates` (config key → values) in the
/// ConfigMap manifest at `path`, each as YAML text (ConfigMap data holds
/// strings). A missing file is created as ConfigMap `addon-operator`. The
/// manifest is written back as YAML: its keys sorted, comments not kept.
pub fn write_config_data(
    path: &Path,
    updates: &BTreeMap<String, Values>,
) -> Result<(), ModuleError> {
    let fail = |message: String| ModuleError::Config {
        path: path.display().to_string(),
        message,
    };
    let mut doc = match std::fs::read_to_string(path) {
        Ok(text) => match crate::values::convert::value_from_yaml(&text).map_err(|e| fail(e.0))? {
            Value::Object(m) => m,
            Value::Null => Values::new(),
            _ => return Err(fail("expected a ConfigMap manifest (a map)".into())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Values::new(),
        Err(e) => {
            return Err(ModuleError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    if doc.is_empty() {
        doc.insert("apiVersion".into(), Value::String("v1".into()));
        doc.insert("kind".into(), Value::String("ConfigMap".into()));
        let mut meta = Values::new();
        meta.insert("name".into(), Value::String("addon-operator".into()));
        doc.insert("metadata".into(), Value::Object(meta));
    }
    let data = doc
        .entry("data")
        .or_insert_with(|| Value::Object(Values::new()));
    if data.is_null() {
        *data = Value::Object(Values::new());
    }
    let Value::Object(data) = data else {
        return Err(fail("'data' must be a map of strings".into()));
    };
    for (k, v) in updates {
        data.insert(k.clone(), Value::String(values_to_yaml(v)));
    }
    std::fs::write(path, values_to_yaml(&doc)).map_err(|e| ModuleError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod archive_key_tests {
    use super::*;

    #[test]
    fn archive_keys_are_taken_out_and_checked() {
        let data: BTreeMap<String, String> = [
            ("db-archived", "true"),
            ("web-archived", "false"),
            ("dbEnabled", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cfg = OfflineConfig::from_data(data).unwrap();
        assert_eq!(cfg.archived.iter().collect::<Vec<_>>(), ["db"]);
        assert_eq!(cfg.kube.modules["db"].enabled, Some(true));
        let bad = BTreeMap::from([("db-archived".to_string(), "yes".to_string())]);
        let e = OfflineConfig::from_data(bad).unwrap_err();
        assert!(e.contains("'db-archived'") && e.contains("'yes'"), "{e}");
    }
}
