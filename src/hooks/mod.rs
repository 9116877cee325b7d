//! addon-operator hooks: discovery, `--config` parsing, execution with the
//! file protocol, binding contexts and the outputs hooks write back.
//!
//! This layer runs processes but talks to no cluster: kubernetes bindings are
//! parsed and validated, their snapshots come in as data
//! ([`context::Snapshots`]), and the kubernetes operations a hook asks for
//! are returned, typed and validated, for the operator to execute.
//!
//! - [`discovery`]: where hooks are (addon-operator's and the original
//!   antiopa's layouts).
//! - [`config`]: `hook --config` → [`HookConfig`] (v0/v1, schema + checks).
//! - [`context`]: binding-context JSON in shell-operator's shape.
//! - [`exec`]: processes: timeout, process group, bounded output.
//! - [`output`]: values patches, metrics, kubernetes operations.
//! - [`jq`], [`jq_sandbox`]: `jqFilter`s, compiled here and run in a
//!   worker process that a hostile filter cannot take down.
//! - [`Hook::run`] ties them together.

pub mod config;
pub mod context;
pub mod cron;
pub mod discovery;
pub mod exec;
pub mod jq;
pub mod jq_sandbox;
pub mod output;
mod schema;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

pub use config::{
    BindingType, ConfigVersion, HookConfig, KubernetesBinding, ScheduleBinding, WatchEvent,
};
pub use context::{BindingContext, KubeEvent, SnapshotObject, Snapshots};
pub use discovery::{FoundHook, LegacyStage};
pub use exec::{ProcessError, ProcessOutput, RunOptions};
pub use jq_sandbox::{JqError, JqLimits, JqRunner};
pub use output::{KubeOperation, MetricOperation, PatchTarget};

use crate::values::{PatchScope, ValuesPatch};

/// Global hooks and module hooks differ in the bindings they may have and
/// the values they may patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookKind {
    Global,
    Module,
}

/// Whose hook it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookScope {
    /// A global hook: patches `/global/…` and top-level `*Enabled` keys.
    Global,
    /// A module hook: patches `/<values_key>/…` only.
    Module {
        /// The module's name (kebab-case).
        module: String,
        /// The module's values key (camelCase).
        values_key: String,
    },
}

impl HookScope {
    pub fn kind(&self) -> HookKind {
        match self {
            HookScope::Global => HookKind::Global,
            HookScope::Module { .. } => HookKind::Module,
        }
    }

    /// Which values the hook may patch, for [`crate::values::validate_hook_patch`].
    pub fn patch_scope(&self) -> PatchScope {
        match self {
            HookScope::Global => PatchScope::Global,
            HookScope::Module { values_key, .. } => PatchScope::Module(values_key.clone()),
        }
    }

    /// The top-level values key the hook may patch.
    pub fn values_root(&self) -> &str {
        match self {
            HookScope::Global => "global",
            HookScope::Module { values_key, .. } => values_key,
        }
    }
}

/// Errors of this layer; each names the hook (and the binding, for runs).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HookError {
    #[error("cannot search hooks in {path}: {message}")]
    Discovery { path: String, message: String },
    #[error("hook '{hook}': cannot get its config ('--config'): {message}")]
    ConfigRun { hook: String, message: String },
    #[error("hook '{hook}': invalid config: {message}")]
    Config { hook: String, message: String },
    #[error("hook '{hook}' failed (binding {binding}): {message}")]
    Run {
        hook: String,
        binding: String,
        message: String,
    },
    #[error("hook '{hook}' (binding {binding}): {message}")]
    Output {
        hook: String,
        binding: String,
        message: String,
    },
}

/// A hook with its configuration.
#[derive(Clone, Debug)]
pub struct Hook {
    /// addon-operator's name (`hooks/subdir/hook.sh`), used in messages.
    pub name: String,
    pub path: PathBuf,
    pub scope: HookScope,
    pub config: HookConfig,
    /// Set for hooks of the original antiopa layout (no `--config`).
    pub legacy: Option<LegacyStage>,
}

/// What a run is given.
#[derive(Clone, Copy, Debug)]
pub struct RunInput<'a> {
    /// The binding type being run (for messages and metrics).
    pub binding: BindingType,
    /// The contexts written to `BINDING_CONTEXT_PATH`.
    pub contexts: &'a [BindingContext],
    /// Values with their root key (`{"global": …, "<camelName>": …}`), as
    /// `VALUES_PATH` carries them.
    pub values: &'a Value,
    /// Config values with their root key, for `CONFIG_VALUES_PATH`.
    pub config_values: &'a Value,
}

/// What a successful run returned.
#[derive(Clone, Debug, Default)]
pub struct HookOutput {
    /// `VALUES_JSON_PATCH_PATH`, validated against the hook's root.
    pub values_patch: ValuesPatch,
    /// `CONFIG_VALUES_JSON_PATCH_PATH`, validated against the hook's root.
    pub config_values_patch: ValuesPatch,
    pub metrics: Vec<MetricOperation>,
    pub kubernetes_operations: Vec<KubeOperation>,
    /// `RETURN_VALUES_PATH` (original antiopa): the YAML the hook wrote, if any.
    pub return_values: Option<Value>,
    pub stdout: String,
    pub stderr: String,
    pub output_truncated: bool,
    pub duration: Duration,
}

impl Hook {
    /// Runs `path --config` and parses its output.
    pub fn load(found: FoundHook, scope: HookScope, opts: &RunOptions) -> Result<Hook, HookError> {
        let name = found.name.clone();
        let mut cmd = command_for(&found.path, &scope);
        cmd.arg("--config");
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        let mut ignore = |_: &str| {};
        let out = exec::run_process(
            cmd,
            opts.timeout,
            exec::OutputLimits::data(opts),
            &mut ignore,
        )
        .map_err(|e| HookError::ConfigRun {
            hook: name.clone(),
            message: e.to_string(),
        })?;
        if !out.status.success() {
            let tail = out.stderr.trim();
            return Err(HookError::ConfigRun {
                hook: name,
                message: if tail.is_empty() {
                    out.status_text()
                } else {
                    format!("{}: {tail}", out.status_text())
                },
            });
        }
        if out.stdout_dropped > 0 {
            // Parsing the cut text would report a misleading syntax error.
            return Err(HookError::ConfigRun {
                hook: name,
                message: format!(
                    "it printed more than the {} limit ({} more dropped)",
                    exec::fmt_bytes(opts.max_file_bytes as u64),
                    exec::fmt_count(out.stdout_dropped)
                ),
            });
        }
        let config = config::parse_config(&name, scope.kind(), &out.stdout)?;
        Ok(Hook {
            name,
            path: found.path,
            scope,
            config,
            legacy: None,
        })
    }

    /// A hook of the original antiopa layout: no `--config`; before-helm and
    /// after-helm hooks are `beforeHelm`/`afterHelm` hooks. on-kube-node-change
    /// hooks run as `beforeAll` (before every module) and carry a `kubernetes`
    /// binding on Nodes named `on-kube-node-change` that fires when a node is
    /// added or removed or its name, spec, labels or annotations change (the
    /// jqFilter keeps exactly those, so status updates do not fire), with no
    /// run on Synchronization (the beforeAll run covers start-up). Hooks of
    /// one directory keep their alphabetical order (all have order 0, ties
    /// go by name).
    pub fn legacy(found: FoundHook, scope: HookScope, stage: LegacyStage) -> Hook {
        let binding = match stage {
            LegacyStage::BeforeHelm => BindingType::BeforeHelm,
            LegacyStage::AfterHelm => BindingType::AfterHelm,
            LegacyStage::OnKubeNodeChange => BindingType::BeforeAll,
        };
        Hook {
            name: found.name,
            path: found.path,
            scope,
            config: HookConfig {
                config_version: ConfigVersion::V1,
                orders: [(binding, 0.0)].into_iter().collect(),
                schedules: Vec::new(),
                kubernetes: match stage {
                    LegacyStage::OnKubeNodeChange => vec![node_change_binding()],
                    _ => Vec::new(),
                },
                settings: None,
            },
            legacy: Some(stage),
        }
    }

    /// Runs the hook for one binding: writes the protocol files, runs the
    /// process (stderr lines go to `on_stderr`, prefixed with the hook's
    /// name), then reads and validates what it wrote.
    pub fn run(
        &self,
        input: &RunInput<'_>,
        opts: &RunOptions,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<HookOutput, HookError> {
        let binding = input.binding.as_str().to_string();
        let run_err = |message: String| HookError::Run {
            hook: self.name.clone(),
            binding: binding.clone(),
            message,
        };
        let out_err = |message: String| HookError::Output {
            hook: self.name.clone(),
            binding: binding.clone(),
            message,
        };
        let contexts = context::binding_context_json(input.contexts, self.config.config_version);
        let values = serde_json::to_string(input.values).map_err(|e| run_err(e.to_string()))?;
        let config_values =
            serde_json::to_string(input.config_values).map_err(|e| run_err(e.to_string()))?;
        let files = exec::RunFiles::create(
            &opts.tmp_dir,
            &self.name,
            opts.keep_tmp_files,
            [
                (exec::RunFiles::BINDING_CONTEXT, &contexts),
                (exec::RunFiles::VALUES, &values),
                (exec::RunFiles::CONFIG_VALUES, &config_values),
            ],
        )
        .map_err(|e| {
            run_err(format!(
                "cannot prepare temporary files in {}: {e}",
                opts.tmp_dir.display()
            ))
        })?;

        // addon-operator's executor runs the hook in the operator's own
        // working directory; so does this.
        let mut cmd = command_for(&self.path, &self.scope);
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        cmd.envs(files.env());
        let prefix = self.name.clone();
        let mut forward = |line: &str| on_stderr(&format!("{prefix}: {line}"));
        let proc = exec::run_process(
            cmd,
            opts.timeout,
            exec::OutputLimits::logs(opts),
            &mut forward,
        )
        .map_err(|e| run_err(e.to_string()))?;
        if let Some(note) = proc.dropped_note() {
            forward(&note);
        }
        if !proc.status.success() {
            return Err(run_err(proc.status_text()));
        }

        let read = |var: &str| {
            files.read(var, opts.max_file_bytes).map_err(|e| {
                out_err(format!(
                    "cannot read {var} ({}): {e}",
                    files.path(var).display()
                ))
            })
        };
        let scope = self.scope.patch_scope();
        let mut patches = Vec::new();
        for (var, target) in [
            (
                exec::RunFiles::CONFIG_VALUES_PATCH,
                PatchTarget::ConfigValues,
            ),
            (exec::RunFiles::VALUES_PATCH, PatchTarget::Values),
        ] {
            let text = read(var)?;
            let patch = ValuesPatch::from_json_stream(&text).map_err(|e| {
                out_err(format!("got bad json patch for {}: {e}", target.describe()))
            })?;
            check_patch(&patch, &scope)
                .map_err(|e| out_err(format!("{} patch rejected: {e}", target.describe())))?;
            patches.push(patch);
        }
        let values_patch = patches.pop().unwrap_or_default();
        let config_values_patch = patches.pop().unwrap_or_default();
        let metrics = output::parse_metrics(&read(exec::RunFiles::METRICS)?, &self.name)
            .map_err(|e| out_err(format!("got bad metrics: {e}")))?;
        let kubernetes_operations =
            output::parse_kube_operations(&read(exec::RunFiles::KUBERNETES_PATCH)?)
                .map_err(|e| out_err(format!("got bad kubernetes patch operations: {e}")))?;
        let ret = read(exec::RunFiles::RETURN_VALUES)?;
        let return_values = if ret.trim().is_empty() {
            None
        } else {
            let y = crate::yaml::from_yaml(&ret)
                .map_err(|e| out_err(format!("got bad YAML in RETURN_VALUES_PATH: {}", e.0)))?;
            Some(config::yaml_to_json(&y))
        };
        Ok(HookOutput {
            values_patch,
            config_values_patch,
            metrics,
            kubernetes_operations,
            return_values,
            stdout: proc.stdout,
            stderr: proc.stderr,
            output_truncated: proc.truncated,
            duration: proc.duration,
        })
    }
}

fn node_change_binding() -> KubernetesBinding {
    KubernetesBinding {
        name: "on-kube-node-change".into(),
        api_version: Some("v1".into()),
        kind: "Node".into(),
        name_selector: None,
        label_selector: None,
        field_selector: None,
        namespace: None,
        // A constant program that jaq compiles; None would only mean "fire on
        // every change", never a wrong run.
        jq_filter: jq::JqFilter::compile(
            "{name: .metadata.name, spec: .spec, labels: .metadata.labels, annotations: .metadata.annotations}",
        )
        .ok(),
        execute_hook_on_event: vec![WatchEvent::Added, WatchEvent::Modified, WatchEvent::Deleted],
        execute_hook_on_synchronization: false,
        wait_for_synchronization: true,
        keep_full_objects_in_memory: false,
        allow_failure: false,
        queue: "main".into(),
        group: None,
        include_snapshots_from: Vec::new(),
        resynchronization_period: None,
    }
}

/// `validate_hook_patch` operation by operation, so the message can show the
/// whole offending operation: addon-operator's own text quotes only the
/// operation's value (module-sdk `ValuesPatchOperation.ToString`).
fn check_patch(patch: &ValuesPatch, scope: &PatchScope) -> Result<(), String> {
    for op in &patch.operations {
        let single = ValuesPatch {
            operations: vec![op.clone()],
        };
        if let Err(e) = crate::values::validate_hook_patch(&single, scope) {
            let whole = serde_json::to_string(op).unwrap_or_default();
            return Err(format!("{e} in operation {whole}"));
        }
    }
    Ok(())
}

/// The command that runs a hook. A module's `.py` hook runs with the
/// module's `hooks/venv/bin/python3` and `PYTHONHOME` set to the venv when
/// that interpreter exists (addon-operator's `updateExecutorParamsForPython`);
/// everything else is executed directly.
fn command_for(path: &Path, scope: &HookScope) -> Command {
    use std::os::unix::fs::PermissionsExt;
    if matches!(scope, HookScope::Module { .. })
        && path.extension().is_some_and(|e| e == "py")
        && let Some(hooks_dir) = path
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "hooks"))
    {
        let venv = hooks_dir.join("venv");
        let python = venv.join("bin/python3");
        let executable = std::fs::metadata(&python)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if executable {
            let mut cmd = Command::new(python);
            cmd.arg(path).env("PYTHONHOME", venv);
            return cmd;
        }
    }
    Command::new(path)
}

/// Sorts hooks having `binding` by its order, ties by name (addon-operator's
/// `GetHooks` ordering), dropping hooks without that binding.
pub fn sort_by_binding(hooks: &[Hook], binding: BindingType) -> Vec<&Hook> {
    let mut with: Vec<&Hook> = hooks
        .iter()
        .filter(|h| h.config.has_binding(binding))
        .collect();
    with.sort_by(|a, b| {
        let oa = a.config.order(binding).unwrap_or(0.0);
        let ob = b.config.order(binding).unwrap_or(0.0);
        oa.total_cmp(&ob).then_with(|| a.name.cmp(&b.name))
    });
    with
}
