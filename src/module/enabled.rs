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
//!    `MODULE_ENABLED_REASON`. A script that fails, times out or writes
//!    anything else is an error ([`EnabledScriptError`]), as in
//!    addon-operator, never a silent "disabled".
//!
//! With no opinion a module is disabled — except a module in the original
//! antiopa layout, where every module ran unless `disable-modules` named it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::hooks::exec::{OutputLimits, RunOptions, read_capped, run_process};
use crate::values::{PatchOp, Values, enabled_key};

/// A module's enabled state and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnabledState {
    pub enabled: bool,
    /// Which step decided, in words (`values.yaml: fooEnabled: true`).
    pub reason: String,
    /// The `enabled` script failed (the [`EnabledScriptError`] text): the
    /// module's state is unknown. `enabled` is then false so that nothing
    /// runs it, but it is not disabled either: it must be neither rendered
    /// nor uninstalled; [`crate::module::Session::compute_enabled`] returns
    /// the failures as an error.
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

/// Why an `enabled` script gave no answer. addon-operator makes this a
/// permanent error of the converge ("failed to execute 'x' module's enabled
/// script"), never a "disabled": a script that crashes must not uninstall
/// its module. Kept per module as data, so that a caller (the operator)
/// can fail just that module and keep running the others.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("module '{module}': enabled script {script} failed: {message}")]
pub struct EnabledScriptError {
    pub module: String,
    /// The script's path, as discovered.
    pub script: String,
    /// What went wrong: exit status and the last stderr line, the timeout,
    /// or the text it wrote instead of `true`/`false`.
    pub message: String,
}

/// Runs an `enabled` script (`RunEnabledScript`): `values` and
/// `config_values` go to `VALUES_PATH` / `CONFIG_VALUES_PATH`; the result is
/// `(enabled, reason)`. A script that cannot start, fails, times out
/// (`opts.timeout`) or writes something other than `true`/`false` is an
/// error naming the module and the script.
pub fn run_enabled_script(
    script: &Path,
    module: &str,
    values: &Values,
    config_values: &Values,
    opts: &RunOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<(bool, Option<String>), EnabledScriptError> {
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
        let out = run_process(cmd, opts.timeout, OutputLimits::logs(opts), &mut forward)
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(out.failure_text());
        }
        let read = |p: &Path, var: &str| {
            read_capped(p, opts.max_file_bytes)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| format!("cannot read {var} ({}): {e}", p.display()))
        };
        let result = read(&result_path, "MODULE_ENABLED_RESULT")?;
        let enabled = match result.trim() {
            "true" => true,
            "false" => false,
            other => {
                let shown: String = other.chars().take(100).collect();
                let more = if shown.len() < other.len() { "…" } else { "" };
                return Err(format!(
                    "MODULE_ENABLED_RESULT must be 'true' or 'false', got '{shown}{more}'"
                ));
            }
        };
        let reason = read(&reason_path, "MODULE_ENABLED_REASON")?;
        let reason = Some(reason.trim().to_string()).filter(|s| !s.is_empty());
        Ok((enabled, reason))
    })();
    if !opts.keep_tmp_files {
        let _ = std::fs::remove_dir_all(&dir);
    }
    res.map_err(|message| EnabledScriptError {
        module: module.to_string(),
        script: script.display().to_string(),
        message,
    })
}
