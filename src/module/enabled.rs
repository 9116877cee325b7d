//! Which modules are enabled: addon-operator's extender chain
//! (`pkg/module_manager/scheduler`), each step overriding the previous one
//! when it has an opinion:
//! 1. `Static`: `<camelName>Enabled` in a directory `values.yaml`, then in
//!    the module's own `values.yaml` (which wins). This is the documented
//!    behaviour (docs/src/LIFECYCLE.md "Modules discovery", whose example has
//!    a module's own `values.yaml` disable a module the directory file
//!    enables) that addon-operator's own examples rely on (101, 201 and 202
//!    enable their modules only there). addon-operator's HEAD static extender
//!    reads only the directory-level file, so those examples would deploy
//!    nothing; we keep the documented behaviour (see
//!    `tests/integration/ao_examples.rs`);
//! 2. `DynamicallyEnabled`: global hooks' patches of `/<camelName>Enabled`
//!    (the last operation wins; `remove` withdraws the opinion);
//! 3. `KubeConfig`: config key `<camelName>Enabled`;
//! 4. the original antiopa's `disable-modules` globs (a match disables);
//! 5. `ScriptEnabled`: the module's `enabled` script, run only for a module
//!    still enabled, so it can only disable. It reads `VALUES_PATH` (with
//!    `global.enabledModules` listing the modules enabled before it, in
//!    module order) and `CONFIG_VALUES_PATH`, writes `true`/`false` to
//!    `MODULE_ENABLED_RESULT` and optionally a reason to
//!    `MODULE_ENABLED_REASON`.
//!
//! With no opinion a module is disabled — except a module in the original
//! antiopa layout, where every module ran unless `disable-modules` named it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::hooks::exec::{RunOptions, run_process};
use crate::values::{PatchOp, Values, enabled_key};

/// A module's enabled state and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnabledState {
    pub enabled: bool,
    /// Which step decided, in words (`values.yaml: fooEnabled: true`).
    pub reason: String,
    /// The `enabled` script failed: the module is treated as disabled.
    pub error: Option<String>,
}

/// The opinions of global hooks' `/<camelName>Enabled` operations, in run
/// order: camelName key → last opinion (`None` after a `remove`).
pub fn dynamic_enabled(ops: &[PatchOp]) -> BTreeMap<String, Option<bool>> {
    let mut res = BTreeMap::new();
    for op in ops {
        let Some(key) = op.path.strip_prefix('/') else {
            continue;
        };
        if key.contains('/') {
            continue;
        }
        match op.op.as_str() {
            "remove" => {
                res.insert(key.to_string(), None);
            }
            _ => {
                let b = match &op.value {
                    Some(Value::Bool(b)) => Some(*b),
                    Some(Value::String(s)) => match s.as_str() {
                        "true" => Some(true),
                        "false" => Some(false),
                        _ => None,
                    },
                    _ => None,
                };
                res.insert(key.to_string(), b);
            }
        }
    }
    res
}

/// Steps 1–4 for one module.
pub struct EnabledInputs<'a> {
    pub name: &'a str,
    pub legacy: bool,
    /// Module names enabled by directory `values.yaml` files.
    pub static_enabled: &'a [String],
    /// Directory `values.yaml` files, to tell "false" from "absent".
    pub dir_values: &'a [Values],
    /// `<camelName>Enabled` in the module's own `values.yaml`.
    pub module_flag: Option<bool>,
    pub dynamic: &'a BTreeMap<String, Option<bool>>,
    pub config: Option<bool>,
    pub disabled_by: Option<&'a str>,
}

/// The state before the `enabled` script.
pub fn state_before_script(i: &EnabledInputs<'_>) -> EnabledState {
    let key = enabled_key(i.name);
    let mut st = if i.legacy {
        EnabledState {
            enabled: true,
            reason: "original antiopa layout: enabled by default".into(),
            error: None,
        }
    } else {
        EnabledState {
            enabled: false,
            reason: "disabled by default".into(),
            error: None,
        }
    };
    let in_dir_values = i.dir_values.iter().any(|v| v.contains_key(&key));
    if in_dir_values {
        let on = i.static_enabled.iter().any(|n| n == i.name);
        st.enabled = on;
        st.reason = format!("values.yaml: {key}: {on}");
    }
    if let Some(on) = i.module_flag {
        st.enabled = on;
        st.reason = format!("module values.yaml: {key}: {on}");
    }
    if let Some(Some(on)) = i.dynamic.get(&key) {
        st.enabled = *on;
        st.reason = format!("global hook patch: {key}: {on}");
    }
    if let Some(on) = i.config {
        st.enabled = on;
        st.reason = format!("config: {key}: \"{on}\"");
    }
    if let Some(p) = i.disabled_by {
        st.enabled = false;
        st.reason = format!("config: disable-modules: '{p}'");
    }
    st
}

/// Runs an `enabled` script (`RunEnabledScript`): `values` and
/// `config_values` go to `VALUES_PATH` / `CONFIG_VALUES_PATH`; the result is
/// `Ok((enabled, reason))`, or an error text.
pub fn run_enabled_script(
    script: &Path,
    module: &str,
    values: &Values,
    config_values: &Values,
    opts: &RunOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<(bool, Option<String>), String> {
    let dir = opts
        .tmp_dir
        .join(format!("{module}-enabled-{}", uuid::Uuid::new_v4()));
    let res = (|| {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text)
                .map(|()| p.clone())
                .map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        let to_json = |v: &Values| serde_json::to_string(v).unwrap_or_else(|_| "{}".into());
        let values_path = write("values.json", &to_json(values))?;
        let config_path = write("config-values.json", &to_json(config_values))?;
        let result_path = write("enabled-result", "")?;
        let reason_path = write("enabled-reason", "")?;
        let mut cmd = Command::new(script);
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        cmd.env("VALUES_PATH", &values_path)
            .env("CONFIG_VALUES_PATH", &config_path)
            .env("MODULE_ENABLED_RESULT", &result_path)
            .env("MODULE_ENABLED_REASON", &reason_path);
        let prefix = format!("{module}/enabled");
        let mut forward = |line: &str| on_stderr(&format!("{prefix}: {line}"));
        let out = run_process(cmd, opts.timeout, opts.max_output_bytes, &mut forward)
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(out.status_text());
        }
        let result = std::fs::read_to_string(&result_path).unwrap_or_default();
        let enabled = match result.trim() {
            "true" => true,
            "false" => false,
            other => {
                return Err(format!(
                    "MODULE_ENABLED_RESULT must be 'true' or 'false', got '{other}'"
                ));
            }
        };
        let reason = std::fs::read_to_string(&reason_path)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        Ok((enabled, reason))
    })();
    if !opts.keep_tmp_files {
        let _ = std::fs::remove_dir_all(&dir);
    }
    res
}
