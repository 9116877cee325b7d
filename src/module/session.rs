//! One offline run over a modules tree, in addon-operator's start-up order:
//! discovery and static values ([`Session::load`]), global hooks
//! (`onStartup`, kubernetes `Synchronization`, then `beforeAll`;
//! [`Session::run_global_hooks`]), enabled state
//! ([`Session::compute_enabled`], which also injects
//! `global.enabledModules`), then per module its `onStartup` hooks and
//! kubernetes `Synchronization` (first run only) and `beforeHelm` hooks
//! ([`Session::run_module_hooks`]), the values given to Helm
//! ([`Session::helm_values`]) and, after the render, its `afterHelm` hooks
//! ([`Session::run_after_helm`]); global `afterAll` hooks last
//! ([`Session::run_after_all`]). `super::render` drives the re-runs these
//! last two trigger in addon-operator.
//!
//! Modules in the original antiopa layout keep that layout's values: one
//! flat map from `crate::values::legacy` (directory `values.yaml`, global
//! hooks' returned values, module `values.yaml`, `initial_values` output,
//! config `values`, config `<module-name>-values`), and values their own
//! `before-helm` hooks return through `RETURN_VALUES_PATH` are merged on
//! top. Their hooks get that flat map in `VALUES_PATH`. What the session
//! would save to the ConfigMap (hook config patches, remembered
//! `initial_values`) is [`Session::remembered_config`].
//!
//! Offline, kubernetes bindings see the snapshots of `--snapshots`
//! ([`SnapshotInput`]), else empty ones; in the operator, the live ones its
//! watches keep ([`SnapshotInput::Live`], [`Session::kubernetes_bindings`]).
//! Schedules do not run offline; the
//! operator runs them through [`Session::schedule_bindings`] and
//! [`Session::run_schedule`], and executes the kubernetes operations hooks
//! write ([`Session::take_kube_operations`]). Every hook run is recorded
//! (duration, outcome, `METRICS_PATH` operations) for the operator's
//! metrics and logs ([`Session::take_hook_runs`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ModuleError;
use super::config::OfflineConfig;
use super::discovery::{Module, ModulesSettings, ModulesTree, discover};
use super::enabled::{
    EnabledInputs, EnabledState, dynamic_enabled, run_enabled_script, state_before_script,
};
use crate::hooks::config::{KubernetesBinding, ScheduleBinding};
use crate::hooks::context::{
    KubeEvent, combine_contexts, snapshots_from_objects, snapshots_from_recorded,
};
use crate::hooks::discovery::{
    discover_global_hooks, discover_legacy_hooks, discover_module_hooks,
};
use crate::hooks::exec::{OutputLimits, RunOptions, fmt_bytes, fmt_count, run_process};
use crate::hooks::output::{KubeOperation, MetricOperation};
use crate::hooks::{
    BindingContext, BindingType, Hook, HookOutput, HookScope, JqRunner, LegacyStage, RunInput,
    Snapshots, sort_by_binding,
};
use crate::values::legacy::LegacySources;
use crate::values::merge::merge_into;
use crate::values::sources::{
    enabled_flag, read_global_sources, read_module_sources, read_values_file,
    static_enabled_modules,
};
use crate::values::{EffectiveValues, PatchOp, Values, ValuesSources, legacy_values, values_key};

/// The largest `--snapshots` file read: a recorded cluster dump may be
/// big, but beyond this parsing it would risk the process's memory.
pub const MAX_SNAPSHOTS_BYTES: usize = 256 << 20;

/// Offline input for kubernetes bindings' snapshots (`--snapshots FILE`).
#[derive(Clone, Debug, Default)]
pub enum SnapshotInput {
    /// Empty snapshots for every binding.
    #[default]
    None,
    /// Objects recorded per binding name (a map of lists).
    Recorded(BTreeMap<String, Vec<Value>>),
    /// A cluster dump (a list, or a `kind: List` with `items`): each binding
    /// gets the objects it would watch.
    Objects(Vec<Value>),
    /// The operator's live snapshots, kept current by its watches.
    Live(LiveSnapshots),
}

/// Live snapshots (`antiopa run`): by hook (module, or `None` for a global
/// hook, and hook name), each kubernetes binding's current items, written
/// by the operator's watches and read by every hook run.
pub type LiveSnapshots = std::sync::Arc<std::sync::RwLock<BTreeMap<HookKey, Snapshots>>>;

/// A hook: its module (`None`: a global hook) and its name.
pub type HookKey = (Option<String>, String);

/// The [`HookKey`] of a loaded hook.
pub fn hook_key(hook: &Hook) -> HookKey {
    let module = match &hook.scope {
        HookScope::Global => None,
        HookScope::Module { module, .. } => Some(module.clone()),
    };
    (module, hook.name.clone())
}

impl SnapshotInput {
    /// Reads a `--snapshots` file (YAML or JSON), telling the two shapes
    /// apart: a map without `items` is recorded-per-binding.
    pub fn read(path: &Path) -> Result<SnapshotInput, ModuleError> {
        let fail = |message: String| ModuleError::Io {
            path: path.display().to_string(),
            message,
        };
        let bytes = crate::hooks::exec::read_capped(path, MAX_SNAPSHOTS_BYTES)
            .map_err(|e| fail(e.describe("snapshots file")))?;
        let text = String::from_utf8_lossy(&bytes);
        let v = crate::values::convert::value_from_yaml(&text).map_err(|e| fail(e.0))?;
        match v {
            Value::Array(items) => Ok(SnapshotInput::Objects(items)),
            Value::Object(mut m) if m.contains_key("items") => match m.remove("items") {
                Some(Value::Array(items)) => Ok(SnapshotInput::Objects(items)),
                _ => Err(fail("'items' must be a list".into())),
            },
            Value::Object(m) => {
                let mut rec = BTreeMap::new();
                for (k, v) in m {
                    match v {
                        Value::Array(items) => {
                            rec.insert(k, items);
                        }
                        Value::Null => {
                            rec.insert(k, Vec::new());
                        }
                        _ => {
                            return Err(fail(format!("binding '{k}': expected a list of objects")));
                        }
                    }
                }
                Ok(SnapshotInput::Recorded(rec))
            }
            Value::Null => Ok(SnapshotInput::None),
            _ => Err(fail(
                "expected a map of binding name to objects, or a list of objects".into(),
            )),
        }
    }

    /// One hook's snapshots, its jqFilters run by `jq`.
    pub fn for_hook(&self, hook: &Hook, jq: &JqRunner) -> Result<Snapshots, String> {
        match self {
            SnapshotInput::None => Ok(Snapshots::new()),
            SnapshotInput::Recorded(r) => snapshots_from_recorded(&hook.config, r, jq),
            SnapshotInput::Objects(o) => snapshots_from_objects(&hook.config, o, jq),
            SnapshotInput::Live(live) => Ok(live
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&hook_key(hook))
                .cloned()
                .unwrap_or_default()),
        }
    }
}

/// What a new config asks of the operator ([`Session::set_config`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigDelta {
    /// `global`, an `*Enabled` flag, `disable-modules` or the original
    /// layout's `values` changed: converge every module again.
    pub reconverge: bool,
    /// Modules whose own section (or maintenance mode) changed: run these
    /// again.
    pub modules: Vec<String>,
}

/// Everything known about a tree during one run.
pub struct Session {
    pub tree: ModulesTree,
    pub config: OfflineConfig,
    pub values: EffectiveValues,
    /// Directory `values.yaml` files, in `MODULES_DIR` order (`None` if absent).
    pub dir_values: Vec<Option<Values>>,
    /// Global hooks (addon-operator's layout and on-kube-node-change).
    pub global_hooks: Vec<Hook>,
    /// `*Enabled` operations of global hooks, in run order.
    pub enabled_ops: Vec<PatchOp>,
    /// Values global hooks returned through `RETURN_VALUES_PATH`.
    pub legacy_returns: Vec<Values>,
    /// Values a legacy module's own hooks returned.
    legacy_hook_returns: BTreeMap<String, Vec<Values>>,
    /// By module name, once computed.
    pub enabled: BTreeMap<String, EnabledState>,
    pub run: RunOptions,
    /// Snapshots for kubernetes bindings.
    pub snapshots: SnapshotInput,
    global_hooks_loaded: bool,
    /// Module hooks by module name, once loaded.
    module_hooks: BTreeMap<String, Vec<Hook>>,
    /// Modules whose `onStartup` hooks have run.
    started_modules: BTreeSet<String>,
    /// What each original-layout module's `initial_values` printed, run
    /// once per session (`None`: no script or no output).
    initial_values: RefCell<BTreeMap<String, Option<Values>>>,
    /// `KUBERNETES_PATCH_PATH` operations hooks wrote, in run order, not
    /// yet taken ([`Session::take_kube_operations`]).
    kube_operations: Vec<HookOperations>,
    /// Hook runs not yet taken ([`Session::take_hook_runs`]).
    hook_runs: Vec<HookRunRecord>,
    /// The operator runs the Synchronization of bindings with
    /// `waitForSynchronization: false` in their queues, not in the module
    /// run: those are left out and listed in `deferred_syncs`. Offline
    /// (false) they run where the others do.
    pub defer_unwaited_syncs: bool,
    deferred_syncs: Vec<KubeBindingRef>,
}

/// One hook run, as the operator's metrics and logs report it.
#[derive(Clone, Debug)]
pub struct HookRunRecord {
    /// The module whose hook ran; `None`: a global hook.
    pub module: Option<String>,
    pub hook: String,
    pub binding: BindingType,
    /// The queue of its schedule/kubernetes bindings (`main` otherwise).
    pub queue: String,
    pub duration: Duration,
    /// Why it failed (the process or what it wrote); `None`: it succeeded.
    pub error: Option<String>,
    /// Every binding of the run has `allowFailure: true`.
    pub allow_failure: bool,
    /// What it wrote to `METRICS_PATH` (only kept when it succeeded).
    pub metrics: Vec<MetricOperation>,
    /// When it ended.
    pub finished: std::time::SystemTime,
    /// The last lines it wrote to stderr ([`STDERR_TAIL_LINES`] at most,
    /// each cut at [`STDERR_TAIL_LINE`] bytes).
    pub stderr_tail: String,
}

/// Lines of a hook's stderr kept in its run record.
pub const STDERR_TAIL_LINES: usize = 10;
/// Bytes of one stderr line kept in a run record.
pub const STDERR_TAIL_LINE: usize = 200;

/// The last lines of a hook's stderr, bounded whatever it writes.
#[derive(Default)]
struct StderrTail(std::collections::VecDeque<String>);

impl StderrTail {
    fn push(&mut self, line: &str) {
        if self.0.len() == STDERR_TAIL_LINES {
            self.0.pop_front();
        }
        let mut end = line.len().min(STDERR_TAIL_LINE);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        self.0.push_back(line[..end].to_string());
    }

    fn text(&self) -> String {
        let mut t = String::new();
        for l in &self.0 {
            t.push_str(l);
            t.push('\n');
        }
        t
    }
}

/// A hook run prepared under the session (its values taken), executed
/// without it ([`PreparedRun::execute`]: hooks of other queues run
/// meanwhile), then finished under it again
/// ([`Session::finish_hook_run`]: patches applied).
pub struct PreparedRun {
    /// `None`: a global hook.
    module: Option<Module>,
    hook: Hook,
    binding: BindingType,
    contexts: Vec<BindingContext>,
    values: Value,
    config_values: Value,
    run: RunOptions,
    /// What [`PreparedRun::execute`] saw of its stderr, for the record.
    stderr_tail: String,
}

impl PreparedRun {
    /// Runs the hook's process (no session needed), forwarding its output.
    pub fn execute(&mut self, on_stderr: &mut dyn FnMut(&str)) -> Result<HookOutput, ModuleError> {
        let input = RunInput {
            binding: self.binding,
            contexts: &self.contexts,
            values: &self.values,
            config_values: &self.config_values,
        };
        let mut tail = StderrTail::default();
        let out = self.hook.run(&input, &self.run, &mut |line: &str| {
            tail.push(line);
            on_stderr(line)
        });
        self.stderr_tail = tail.text();
        let out = out.map_err(|e| match &self.module {
            Some(m) => ModuleError::Hook(format!("module '{}': {e}", m.name)),
            None => hook_err(e),
        })?;
        forward_stdout(&self.hook, &out.stdout, on_stderr);
        Ok(out)
    }
}

/// The kubernetes operations one hook run asked for
/// (`KUBERNETES_PATCH_PATH`), for the operator to execute.
#[derive(Clone, Debug)]
pub struct HookOperations {
    /// Who asked, for messages: `hook 'NAME'` or `module 'M': hook 'NAME'`.
    pub hook: String,
    pub operations: Vec<KubeOperation>,
}

/// One kubernetes binding of a loaded hook ([`Session::kubernetes_bindings`]).
#[derive(Clone, Debug)]
pub struct KubeBindingRef {
    /// The module whose hook it is; `None`: a global hook.
    pub module: Option<String>,
    /// The hook's name.
    pub hook: String,
    pub binding: KubernetesBinding,
}

/// One schedule binding of a loaded hook ([`Session::schedule_bindings`]).
#[derive(Clone, Debug)]
pub struct ScheduleBindingRef {
    /// The module whose hook it is; `None`: a global hook.
    pub module: Option<String>,
    /// The hook's name.
    pub hook: String,
    /// Its index in the hook's `schedule` list.
    pub index: usize,
    pub binding: ScheduleBinding,
}

fn hook_err(e: impl std::fmt::Display) -> ModuleError {
    ModuleError::Hook(e.to_string())
}

impl Session {
    /// Discovery, static and config values; runs nothing.
    pub fn load(
        settings: &ModulesSettings,
        config: OfflineConfig,
        run: RunOptions,
    ) -> Result<Session, ModuleError> {
        let tree = discover(settings)?;
        let mut dir_values = Vec::new();
        for d in &tree.modules_dirs {
            dir_values.push(
                read_values_file(&d.join("values.yaml"))
                    .map_err(|e| ModuleError::global_values(&e))?,
            );
        }
        let dirs: Vec<&Path> = tree.modules_dirs.iter().map(|p| p.as_path()).collect();
        let mut sources = ValuesSources {
            global: read_global_sources(&dirs, tree.global_hooks_dir.as_deref())
                .map_err(|e| ModuleError::global_values(&e))?,
            ..Default::default()
        };
        for m in tree.modules.iter().filter(|m| !m.legacy) {
            let dv = dir_values.get(m.dir_index).and_then(|v| v.as_ref());
            sources.modules.push(
                read_module_sources(&m.name, &m.path, dv)
                    .map_err(|e| ModuleError::values(&m.name, &e))?,
            );
        }
        sources.apply_config(&config.kube);
        let values = EffectiveValues::compute(&sources).map_err(|e| ModuleError::Values {
            module: "*".into(),
            message: e.to_string(),
        })?;
        Ok(Session {
            tree,
            config,
            values,
            dir_values,
            global_hooks: Vec::new(),
            enabled_ops: Vec::new(),
            legacy_returns: Vec::new(),
            legacy_hook_returns: BTreeMap::new(),
            enabled: BTreeMap::new(),
            run,
            snapshots: SnapshotInput::None,
            global_hooks_loaded: false,
            module_hooks: BTreeMap::new(),
            started_modules: BTreeSet::new(),
            initial_values: RefCell::new(BTreeMap::new()),
            kube_operations: Vec::new(),
            hook_runs: Vec::new(),
            defer_unwaited_syncs: false,
            deferred_syncs: Vec::new(),
        })
    }

    /// Loads the global hooks (`--config` of each), once per session.
    /// Files skipped with a warning (see [`crate::hooks::discovery`]) are
    /// reported through `on_stderr`.
    pub fn load_global_hooks(
        &mut self,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        if self.global_hooks_loaded {
            return Ok(());
        }
        let Some(dir) = self.tree.global_hooks_dir.clone() else {
            self.global_hooks_loaded = true;
            return Ok(());
        };
        let legacy_dir = dir.join(LegacyStage::OnKubeNodeChange.dir());
        let mut hooks = Vec::new();
        let found = discover_global_hooks(&dir).map_err(hook_err)?;
        let legacy =
            discover_legacy_hooks(&dir, LegacyStage::OnKubeNodeChange).map_err(hook_err)?;
        // The legacy dir's files are judged (and warned about) once, there.
        let legacy_text = legacy_dir.display().to_string();
        for w in found
            .warnings
            .iter()
            .filter(|w| !w.starts_with(&legacy_text))
        {
            on_stderr(&format!("warning: global hooks: {w}"));
        }
        for w in &legacy.warnings {
            on_stderr(&format!("warning: global hooks: {w}"));
        }
        for found in found.hooks {
            if found.path.starts_with(&legacy_dir) {
                continue;
            }
            hooks.push(Hook::load(found, HookScope::Global, &self.run).map_err(hook_err)?);
        }
        for found in legacy.hooks {
            hooks.push(Hook::legacy(
                found,
                HookScope::Global,
                LegacyStage::OnKubeNodeChange,
            ));
        }
        self.global_hooks = hooks;
        self.global_hooks_loaded = true;
        Ok(())
    }

    /// Loads the global hooks and runs their `onStartup` bindings, their
    /// kubernetes `Synchronization`, then `beforeAll` bindings, applying
    /// their patches (addon-operator's start-up order).
    pub fn run_global_hooks(&mut self, on_stderr: &mut dyn FnMut(&str)) -> Result<(), ModuleError> {
        self.load_global_hooks(on_stderr)?;
        self.run_global_binding(BindingType::OnStartup, on_stderr)?;
        self.run_global_synchronization(on_stderr)?;
        self.run_global_binding(BindingType::BeforeAll, on_stderr)
    }

    /// The global `afterAll` hooks, run once every enabled module has run.
    /// Returns whether they changed the global values or a module's enabled
    /// flag: addon-operator then converges again (`ReloadAll`: `beforeAll`,
    /// enabled state, every module, `afterAll`; global-hook-run/task.go,
    /// `LastAfterAllHook`).
    pub fn run_after_all(&mut self, on_stderr: &mut dyn FnMut(&str)) -> Result<bool, ModuleError> {
        self.load_global_hooks(on_stderr)?;
        let values = self.values.global.values().clone();
        let flags = dynamic_enabled(&self.enabled_ops);
        self.run_global_binding(BindingType::AfterAll, on_stderr)?;
        Ok(self.values.global.values() != &values || dynamic_enabled(&self.enabled_ops) != flags)
    }

    /// Runs the loaded global hooks having `binding`, in order, applying
    /// their patches. The first failure stops and names the hook.
    pub fn run_global_binding(
        &mut self,
        binding: BindingType,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let hooks: Vec<Hook> = sort_by_binding(&self.global_hooks, binding)
            .into_iter()
            .cloned()
            .collect();
        for hook in &hooks {
            let snapshots = self
                .snapshots
                .for_hook(hook, &self.run.jq)
                .map_err(|e| ModuleError::Hook(format!("hook '{}': snapshots: {e}", hook.name)))?;
            let ctx = context_for(binding, hook, &snapshots);
            self.run_global_hook(hook, binding, &ctx, on_stderr)?;
        }
        Ok(())
    }

    /// Global hooks' kubernetes `Synchronization` runs, after `onStartup`
    /// (see [`Session::sync_contexts`]).
    pub fn run_global_synchronization(
        &mut self,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let hooks: Vec<Hook> = sort_by_binding(&self.global_hooks, BindingType::Kubernetes)
            .into_iter()
            .cloned()
            .collect();
        for hook in &hooks {
            self.defer_syncs(None, hook);
            let ctx = self
                .sync_contexts(hook)
                .map_err(|e| ModuleError::Hook(format!("hook '{}': snapshots: {e}", hook.name)))?;
            if !ctx.is_empty() {
                self.run_global_hook(hook, BindingType::Kubernetes, &ctx, on_stderr)?;
            }
        }
        Ok(())
    }

    /// One run of a global hook, applying its patches.
    fn run_global_hook(
        &mut self,
        hook: &Hook,
        binding: BindingType,
        ctx: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let mut prepared = self.prepare_global(hook, binding, ctx);
        let started = Instant::now();
        let out = prepared.execute(on_stderr);
        self.record_prepared(&prepared, started, &out);
        self.finish_global(&prepared, out?)
    }

    fn prepare_global(
        &self,
        hook: &Hook,
        binding: BindingType,
        ctx: &[BindingContext],
    ) -> PreparedRun {
        PreparedRun {
            module: None,
            hook: hook.clone(),
            binding,
            contexts: ctx.to_vec(),
            values: Value::Object(self.values.global.values_with_prefix()),
            config_values: Value::Object(self.values.global.config_values_with_prefix()),
            run: self.run.clone(),
            stderr_tail: String::new(),
        }
    }

    /// A global hook's output applied: its patches, kubernetes operations
    /// and returned values.
    fn finish_global(&mut self, p: &PreparedRun, out: HookOutput) -> Result<(), ModuleError> {
        let (hook, binding) = (&p.hook, p.binding);
        if !out.kubernetes_operations.is_empty() {
            self.kube_operations.push(HookOperations {
                hook: format!("hook '{}'", hook.name),
                operations: out.kubernetes_operations.clone(),
            });
        }
        let wrap = |e: crate::values::ValuesError| {
            ModuleError::Hook(format!(
                "hook '{}' (binding {}): {e}",
                hook.name,
                binding.as_str()
            ))
        };
        let outcome = self
            .values
            .global
            .apply_hook_config_patch(&hook.name, &out.config_values_patch)
            .map_err(wrap)?;
        self.enabled_ops.extend(outcome.enabled.operations);
        let outcome = self
            .values
            .global
            .apply_hook_patch(&hook.name, &out.values_patch)
            .map_err(wrap)?;
        self.enabled_ops.extend(outcome.enabled.operations);
        if let Some(Value::Object(ret)) = out.return_values {
            self.legacy_returns.push(ret);
        }
        Ok(())
    }

    /// The enabled state of every module (see [`super::enabled`]), then
    /// `global.enabledModules`. Every module is looked at even when an
    /// `enabled` script fails; the failures then come back as
    /// [`ModuleError::EnabledScripts`] (their modules' states carry the
    /// error and count as neither enabled nor disabled), so a caller may
    /// stop, as the CLI does, or go on with the others.
    pub fn compute_enabled(&mut self, on_stderr: &mut dyn FnMut(&str)) -> Result<(), ModuleError> {
        let dir_values: Vec<Values> = self.dir_values.iter().flatten().cloned().collect();
        let static_enabled =
            static_enabled_modules(&dir_values).map_err(|e| ModuleError::global_values(&e))?;
        let dynamic = dynamic_enabled(&self.enabled_ops);
        let mut enabled_so_far: Vec<String> = Vec::new();
        let mut failed = Vec::new();
        let modules = self.tree.modules.clone();
        for m in &modules {
            let module_flag = if m.legacy {
                None
            } else {
                module_enabled_flag(m)?
            };
            let inputs = EnabledInputs {
                name: &m.name,
                legacy: m.legacy,
                static_enabled: &static_enabled,
                dir_values: &dir_values,
                module_flag,
                dynamic: &dynamic,
                config: self
                    .config
                    .kube
                    .modules
                    .get(&m.name)
                    .and_then(|c| c.enabled),
                disabled_by: self.config.disabled_by(&m.name),
            };
            let mut st = state_before_script(&inputs);
            if st.enabled
                && let Some(script) = &m.enabled_script
            {
                let (values, config_values) = if m.legacy {
                    let v = self.legacy_module_values(m, on_stderr)?;
                    (v, Values::new())
                } else {
                    let mut sorted = enabled_so_far.clone();
                    sorted.sort();
                    (
                        self.values
                            .enabled_script_values(&m.name, &sorted)
                            .unwrap_or_default(),
                        self.values
                            .module_config_values(&m.name, true)
                            .unwrap_or_default(),
                    )
                };
                match run_enabled_script(
                    script,
                    &m.name,
                    &values,
                    &config_values,
                    &self.run,
                    on_stderr,
                ) {
                    Ok((on, reason)) => {
                        st.enabled = on;
                        st.reason = match reason {
                            Some(r) => format!("enabled script: {on}: {r}"),
                            None => format!("enabled script: {on}"),
                        };
                    }
                    Err(e) => {
                        st.enabled = false;
                        st.reason = format!("enabled script failed: {}", e.message);
                        st.error = Some(e.to_string());
                        failed.push(e);
                    }
                }
            }
            if st.enabled {
                enabled_so_far.push(m.name.clone());
            }
            self.enabled.insert(m.name.clone(), st);
        }
        enabled_so_far.sort();
        let op = if !enabled_so_far.is_empty() {
            let list = Value::Array(enabled_so_far.into_iter().map(Value::String).collect());
            Some(PatchOp::add("/global/enabledModules", list))
        } else if self.values.global.values().contains_key("enabledModules") {
            // A later convergence with every module disabled.
            Some(PatchOp::remove("/global/enabledModules"))
        } else {
            None
        };
        if let Some(op) = op {
            self.values
                .global
                .append_patch(&[op])
                .map_err(|e| ModuleError::global_values(&e))?;
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ModuleError::EnabledScripts(failed))
        }
    }

    /// Takes a new config (the operator's ConfigMap changed): every section
    /// present is checked against its config schema first, and a config
    /// that fails changes nothing (addon-operator keeps the last good config
    /// and queues no task). Hook patches stay, as they live in memory in
    /// addon-operator too. Returns what the change asks for.
    pub fn set_config(&mut self, new: OfflineConfig) -> Result<ConfigDelta, ModuleError> {
        if let Some(g) = &new.kube.global {
            self.values
                .global
                .check_config_values(g)
                .map_err(|e| ModuleError::global_values(&e))?;
        }
        for (name, store) in &self.values.modules {
            if let Some(v) = new.kube.modules.get(name).and_then(|c| c.values.as_ref()) {
                store
                    .check_config_values(v)
                    .map_err(|e| ModuleError::values(name, &e))?;
            }
        }
        let old = std::mem::replace(&mut self.config, new);
        let new = &self.config;
        // The flags set: a section without one (added, edited, removed)
        // concerns its module alone.
        let enabled_flags = |c: &OfflineConfig| -> BTreeMap<String, bool> {
            c.kube
                .modules
                .iter()
                .filter_map(|(k, m)| m.enabled.map(|e| (k.clone(), e)))
                .collect()
        };
        let mut delta = ConfigDelta {
            // addon-operator: `global` or any `*Enabled` → ConvergeModules;
            // the original layout's `values` and `disable-modules` are
            // global in the same way.
            reconverge: old.kube.global != new.kube.global
                || enabled_flags(&old) != enabled_flags(new)
                || old.disable_modules != new.disable_modules
                || old.legacy_data.get("values") != new.legacy_data.get("values"),
            modules: Vec::new(),
        };
        for m in &self.tree.modules {
            let section = |c: &OfflineConfig| {
                let mc = c.kube.modules.get(&m.name);
                (
                    mc.and_then(|c| c.values.clone()),
                    mc.is_some_and(|c| c.no_resource_reconciliation),
                    c.legacy_data
                        .get(&crate::values::legacy::legacy_config_key(&m.name))
                        .cloned(),
                )
            };
            if section(&old) != section(new) {
                delta.modules.push(m.name.clone());
            }
        }
        let global = new.kube.global.clone().unwrap_or_default();
        self.values
            .global
            .set_config_values_unchecked(global)
            .map_err(|e| ModuleError::global_values(&e))?;
        for (name, store) in self.values.modules.iter_mut() {
            let v = new
                .kube
                .modules
                .get(name)
                .and_then(|c| c.values.clone())
                .unwrap_or_default();
            store
                .set_config_values_unchecked(v)
                .map_err(|e| ModuleError::values(name, &e))?;
        }
        Ok(delta)
    }

    /// Forgets that a module's `onStartup` hooks ran: addon-operator runs
    /// them again when a disabled module is enabled.
    pub fn forget_startup(&mut self, name: &str) {
        self.started_modules.remove(name);
    }

    /// Names of the enabled modules, in module order.
    pub fn enabled_modules(&self) -> Vec<&Module> {
        self.tree
            .modules
            .iter()
            .filter(|m| self.enabled.get(&m.name).is_some_and(|s| s.enabled))
            .collect()
    }

    fn module(&self, name: &str) -> Result<&Module, ModuleError> {
        self.tree
            .get(name)
            .ok_or_else(|| ModuleError::UnknownModule(name.to_string()))
    }

    /// A module's values (`antiopa module values`): addon-operator layout
    /// `{…}` or with `with_global` `{global: …, <camelName>: …}`; original
    /// layout: its flat map.
    pub fn module_values(
        &self,
        name: &str,
        with_global: bool,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Values, ModuleError> {
        let m = self.module(name)?.clone();
        if m.legacy {
            return self.legacy_module_values(&m, on_stderr);
        }
        self.values
            .module_values(name, with_global)
            .ok_or_else(|| ModuleError::UnknownModule(name.to_string()))
    }

    /// The original layout's six sources (running `initial_values`) plus the
    /// values its own hooks returned.
    fn legacy_module_values(
        &self,
        m: &Module,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Values, ModuleError> {
        let (config_values, config_module_values) = self.config.legacy_values(&m.name)?;
        let src = LegacySources {
            common: self.dir_values.get(m.dir_index).cloned().flatten(),
            global_hook_returns: self.legacy_returns.clone(),
            module: read_values_file(&m.path.join("values.yaml"))
                .map_err(|e| ModuleError::values(&m.name, &e))?,
            initial_values: self.initial_values(m, on_stderr)?,
            config_values,
            config_module_values,
        };
        let mut v = legacy_values(&src).map_err(|e| ModuleError::values(&m.name, &e))?;
        for ret in self.legacy_hook_returns.get(&m.name).into_iter().flatten() {
            merge_into(&mut v, ret).map_err(|e| ModuleError::values(&m.name, &e))?;
        }
        Ok(v)
    }

    /// The YAML an executable `initial_values` prints, run once per
    /// session so every hook and the chart see the same output. Config
    /// values (sources 5 and 6) win over it; [`Session::remembered_config`]
    /// is what `render --write-config` stores so that the output of the
    /// first run (a generated password) stays on later runs.
    fn initial_values(
        &self,
        m: &Module,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Option<Values>, ModuleError> {
        if let Some(v) = self.initial_values.borrow().get(&m.name) {
            return Ok(v.clone());
        }
        let v = self.run_initial_values(m, on_stderr)?;
        self.initial_values
            .borrow_mut()
            .insert(m.name.clone(), v.clone());
        Ok(v)
    }

    /// What `render --write-config` writes back to the ConfigMap, by key:
    ///
    /// - addon-operator saves the config values hooks patched
    ///   (`CONFIG_VALUES_JSON_PATCH_PATH`) to the ConfigMap: each `global` or
    ///   `<camelName>` section that differs from the config's, as it is now;
    /// - the original antiopa remembered `initial_values`' output in the
    ///   module's entry on the first run: for each original-layout module
    ///   whose script has run and printed values, `<module-name>-values` —
    ///   the script's output with the key's current values merged over it
    ///   (config wins, so a remembered password is never replaced) — when
    ///   that adds anything.
    pub fn remembered_config(&self) -> Result<BTreeMap<String, Values>, ModuleError> {
        let mut res = BTreeMap::new();
        let global = self.values.global.config_values();
        if global != self.config.kube.global.clone().unwrap_or_default() {
            res.insert(self.values.global.key().to_string(), global);
        }
        for (name, store) in &self.values.modules {
            let given = self
                .config
                .kube
                .modules
                .get(name)
                .and_then(|c| c.values.clone())
                .unwrap_or_default();
            let now = store.config_values();
            if now != given {
                res.insert(store.key().to_string(), now);
            }
        }
        for (name, out) in self.initial_values.borrow().iter() {
            let Some(initial) = out else {
                continue;
            };
            let (_, current) = self.config.legacy_values(name)?;
            let mut merged = initial.clone();
            if let Some(c) = &current {
                merge_into(&mut merged, c).map_err(|e| ModuleError::values(name, &e))?;
            }
            if current.as_ref() != Some(&merged) {
                res.insert(crate::values::legacy::legacy_config_key(name), merged);
            }
        }
        Ok(res)
    }

    /// Runs an executable `initial_values` and parses what it prints.
    fn run_initial_values(
        &self,
        m: &Module,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Option<Values>, ModuleError> {
        use std::os::unix::fs::PermissionsExt;
        let script = m.path.join("initial_values");
        let executable = std::fs::metadata(&script)
            .is_ok_and(|md| md.is_file() && md.permissions().mode() & 0o111 != 0);
        if !executable {
            return Ok(None);
        }
        let mut cmd = Command::new(&script);
        cmd.envs(self.run.env.iter().map(|(k, v)| (k, v)));
        let prefix = format!("{}/initial_values", m.name);
        let mut forward = |line: &str| on_stderr(&format!("{prefix}: {line}"));
        let fail = |message: String| ModuleError::Values {
            module: m.name.clone(),
            message: format!("initial_values ({}): {message}", script.display()),
        };
        let out = run_process(
            cmd,
            self.run.timeout,
            OutputLimits::data(&self.run),
            &mut forward,
        )
        .map_err(|e| fail(e.to_string()))?;
        if !out.status.success() {
            return Err(fail(out.status_text()));
        }
        if out.stdout_dropped > 0 {
            return Err(fail(format!(
                "it printed more than the {} limit ({} more dropped)",
                fmt_bytes(self.run.max_file_bytes as u64),
                fmt_count(out.stdout_dropped)
            )));
        }
        if out.stdout.trim().is_empty() {
            return Ok(None);
        }
        crate::values::convert::values_from_yaml(&out.stdout)
            .map(Some)
            .map_err(|e| fail(format!("bad YAML on stdout: {}", e.0)))
    }

    /// A module's hooks, loaded (`--config` of each) on first use: an
    /// addon-operator layout module's `hooks/`, or the original layout's
    /// `hooks/before-helm/` and `hooks/after-helm/`.
    fn module_hooks(
        &mut self,
        m: &Module,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Vec<Hook>, ModuleError> {
        if let Some(h) = self.module_hooks.get(&m.name) {
            return Ok(h.clone());
        }
        let name = &m.name;
        let herr = |e: crate::hooks::HookError| ModuleError::Hook(format!("module '{name}': {e}"));
        let scope = HookScope::Module {
            module: m.name.clone(),
            values_key: values_key(&m.name),
        };
        let mut hooks = Vec::new();
        let mut warn = |w: &str| on_stderr(&format!("warning: module '{name}': {w}"));
        if m.legacy {
            for stage in [LegacyStage::BeforeHelm, LegacyStage::AfterHelm] {
                let found = discover_legacy_hooks(&m.path, stage).map_err(&herr)?;
                found.warnings.iter().for_each(|w| warn(w));
                for found in found.hooks {
                    hooks.push(Hook::legacy(found, scope.clone(), stage));
                }
            }
        } else {
            let found = discover_module_hooks(&m.path).map_err(&herr)?;
            found.warnings.iter().for_each(|w| warn(w));
            for found in found.hooks {
                hooks.push(Hook::load(found, scope.clone(), &self.run).map_err(&herr)?);
            }
        }
        self.module_hooks.insert(m.name.clone(), hooks.clone());
        Ok(hooks)
    }

    /// Loads a module's hooks and runs their `onStartup` bindings and
    /// kubernetes `Synchronization` (only on the module's first run in this
    /// session, as addon-operator runs them at start-up or on enablement),
    /// then `beforeHelm`, applying their
    /// values patches. The first failure stops the module and names the
    /// hook and the binding.
    pub fn run_module_hooks(
        &mut self,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        if !self.started_modules.contains(name) {
            self.run_module_binding(name, BindingType::OnStartup, on_stderr)?;
            self.run_module_synchronization(name, on_stderr)?;
            self.started_modules.insert(name.to_string());
        }
        self.run_module_binding(name, BindingType::BeforeHelm, on_stderr)
    }

    /// A module's `afterHelm` hooks, run after its chart is rendered.
    /// Returns whether they changed the module's values: addon-operator then
    /// runs the module again (`beforeHelm`, Helm, `afterHelm`, without
    /// `onStartup`; module-run/task.go "AfterHelm-Hooks-Change-Values").
    /// An original-layout module's `after-helm` hooks get its values but
    /// what they return is not used.
    pub fn run_after_helm(
        &mut self,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<bool, ModuleError> {
        let before = self.values.module_values(name, false);
        self.run_module_binding(name, BindingType::AfterHelm, on_stderr)?;
        Ok(self.values.module_values(name, false) != before)
    }

    /// Runs a module's hooks having `binding`, in order, applying their
    /// values patches.
    pub fn run_module_binding(
        &mut self,
        name: &str,
        binding: BindingType,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let m = self.module(name)?.clone();
        let hooks = self.module_hooks(&m, on_stderr)?;
        for hook in sort_by_binding(&hooks, binding) {
            let snapshots = self.snapshots.for_hook(hook, &self.run.jq).map_err(|e| {
                ModuleError::Hook(format!(
                    "module '{name}': hook '{}': snapshots: {e}",
                    hook.name
                ))
            })?;
            let ctx = context_for(binding, hook, &snapshots);
            self.run_module_hook(&m, hook, binding, &ctx, on_stderr)?;
        }
        Ok(())
    }

    /// A module's hooks' kubernetes `Synchronization` runs, after its
    /// `onStartup` hooks and before `beforeHelm` (see
    /// [`Session::sync_contexts`]).
    pub fn run_module_synchronization(
        &mut self,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let m = self.module(name)?.clone();
        let hooks = self.module_hooks(&m, on_stderr)?;
        for hook in sort_by_binding(&hooks, BindingType::Kubernetes) {
            self.defer_syncs(Some(name), hook);
            let ctx = self.sync_contexts(hook).map_err(|e| {
                ModuleError::Hook(format!(
                    "module '{name}': hook '{}': snapshots: {e}",
                    hook.name
                ))
            })?;
            if !ctx.is_empty() {
                self.run_module_hook(&m, hook, BindingType::Kubernetes, &ctx, on_stderr)?;
            }
        }
        Ok(())
    }

    /// Lists the hook's bindings whose Synchronization runs in their queue
    /// (`waitForSynchronization: false`), when the operator asks for that.
    fn defer_syncs(&mut self, module: Option<&str>, hook: &Hook) {
        if !self.defer_unwaited_syncs {
            return;
        }
        for k in &hook.config.kubernetes {
            if k.execute_hook_on_synchronization && !k.wait_for_synchronization {
                self.deferred_syncs.push(KubeBindingRef {
                    module: module.map(str::to_string),
                    hook: hook.name.clone(),
                    binding: k.clone(),
                });
            }
        }
    }

    /// Takes the bindings whose Synchronization was left to their queues
    /// (`waitForSynchronization: false`) since the last call.
    pub fn take_deferred_syncs(&mut self) -> Vec<KubeBindingRef> {
        std::mem::take(&mut self.deferred_syncs)
    }

    /// Whether a module's `onStartup` hooks and kubernetes Synchronization
    /// have run (its hooks may then get Event runs).
    pub fn module_started(&self, name: &str) -> bool {
        self.started_modules.contains(name)
    }

    /// A hook's `settings` (its run rate), `None` when it has none or is
    /// not loaded.
    pub fn hook_settings(
        &self,
        module: Option<&str>,
        hook: &str,
    ) -> Option<crate::hooks::config::Settings> {
        let hooks = match module {
            None => &self.global_hooks,
            Some(m) => self.module_hooks.get(m)?,
        };
        hooks
            .iter()
            .find(|h| h.name == hook)?
            .config
            .settings
            .clone()
    }

    /// Prepares one run of a hook (of `module`, or a global one) with
    /// `contexts`: its input taken now, its process run by
    /// [`PreparedRun::execute`] without the session, its output applied by
    /// [`Session::finish_hook_run`].
    pub fn prepare_hook_run(
        &mut self,
        module: Option<&str>,
        hook: &str,
        binding: BindingType,
        contexts: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<PreparedRun, ModuleError> {
        match module {
            None => {
                let h = self.global_hook(hook)?;
                Ok(self.prepare_global(&h, binding, contexts))
            }
            Some(name) => {
                let m = self.module(name)?.clone();
                let h = self.module_hook(name, hook, on_stderr)?;
                self.prepare_module(&m, &h, binding, contexts, on_stderr)
            }
        }
    }

    /// Applies what a prepared run returned. Returns whether it changed
    /// its module's values (global hook: the global values or a module's
    /// enabled flag), as [`Session::run_module_hook_by_name`] and
    /// [`Session::run_global_hook_by_name`] do.
    pub fn finish_hook_run(
        &mut self,
        prepared: &PreparedRun,
        out: HookOutput,
    ) -> Result<bool, ModuleError> {
        match &prepared.module {
            None => {
                let values = self.values.global.values().clone();
                let flags = dynamic_enabled(&self.enabled_ops);
                self.finish_global(prepared, out)?;
                Ok(self.values.global.values() != &values
                    || dynamic_enabled(&self.enabled_ops) != flags)
            }
            Some(m) => {
                let before = self.values.module_values(&m.name, false);
                self.finish_module(prepared, out)?;
                Ok(self.values.module_values(&m.name, false) != before)
            }
        }
    }

    /// The contexts of a hook's `Synchronization` run: one per kubernetes
    /// binding with `executeHookOnSynchronization`, listing the objects of
    /// `--snapshots` it would watch, combined into one run as
    /// addon-operator's main queue compacts a hook's consecutive
    /// Synchronization tasks (groups give one `Group` context). Empty when
    /// no binding runs on Synchronization.
    fn sync_contexts(&self, hook: &Hook) -> Result<Vec<BindingContext>, String> {
        let snapshots = self.snapshots.for_hook(hook, &self.run.jq)?;
        let runs = hook
            .config
            .kubernetes
            .iter()
            .filter(|k| {
                k.execute_hook_on_synchronization
                    && (k.wait_for_synchronization || !self.defer_unwaited_syncs)
            })
            .map(|k| {
                let objects = snapshots.get(&k.name).cloned().unwrap_or_default();
                vec![BindingContext::kubernetes(
                    k,
                    KubeEvent::Synchronization { objects },
                    &snapshots,
                )]
            })
            .collect();
        Ok(combine_contexts(runs))
    }

    /// One run of a module hook, applying its values patches (an original
    /// layout `before-helm` hook's returned values are kept instead).
    fn run_module_hook(
        &mut self,
        m: &Module,
        hook: &Hook,
        binding: BindingType,
        ctx: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let mut prepared = self.prepare_module(m, hook, binding, ctx, on_stderr)?;
        let started = Instant::now();
        let out = prepared.execute(on_stderr);
        self.record_prepared(&prepared, started, &out);
        self.finish_module(&prepared, out?)
    }

    fn prepare_module(
        &self,
        m: &Module,
        hook: &Hook,
        binding: BindingType,
        ctx: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<PreparedRun, ModuleError> {
        let name = m.name.as_str();
        let (values, config_values) = if m.legacy {
            (
                Value::Object(self.legacy_module_values(m, on_stderr)?),
                Value::Object(Values::new()),
            )
        } else {
            (
                Value::Object(self.values.module_values(name, true).unwrap_or_default()),
                Value::Object(
                    self.values
                        .module_config_values(name, true)
                        .unwrap_or_default(),
                ),
            )
        };
        Ok(PreparedRun {
            module: Some(m.clone()),
            hook: hook.clone(),
            binding,
            contexts: ctx.to_vec(),
            values,
            config_values,
            run: self.run.clone(),
            stderr_tail: String::new(),
        })
    }

    /// A module hook's output applied: its values patches and kubernetes
    /// operations (an original-layout `before-helm` hook's returned values
    /// are kept instead of patches).
    fn finish_module(&mut self, p: &PreparedRun, out: HookOutput) -> Result<(), ModuleError> {
        let (m, hook, binding) = match &p.module {
            Some(m) => (m, &p.hook, p.binding),
            None => return self.finish_global(p, out),
        };
        let name = m.name.as_str();
        if !out.kubernetes_operations.is_empty() {
            self.kube_operations.push(HookOperations {
                hook: format!("module '{name}': hook '{}'", hook.name),
                operations: out.kubernetes_operations.clone(),
            });
        }
        if m.legacy {
            if binding == BindingType::BeforeHelm
                && let Some(Value::Object(ret)) = out.return_values
            {
                self.legacy_hook_returns
                    .entry(m.name.clone())
                    .or_default()
                    .push(ret);
            }
            return Ok(());
        }
        let wrap = |e: crate::values::ValuesError| {
            ModuleError::Hook(format!(
                "module '{name}': hook '{}' (binding {}): {e}",
                hook.name,
                binding.as_str()
            ))
        };
        if let Some(store) = self.values.modules.get_mut(name) {
            store
                .apply_hook_config_patch(&hook.name, &out.config_values_patch)
                .map_err(wrap)?;
            store
                .apply_hook_patch(&hook.name, &out.values_patch)
                .map_err(wrap)?;
        }
        Ok(())
    }

    /// [`Session::run_module_hooks`] for a session shared between threads:
    /// the lock is held to build each hook's input and to apply its output,
    /// not while the hook process runs, so the hooks of several modules run
    /// at once (a module's own hooks still run one after another, each
    /// seeing the values the previous one patched).
    pub fn run_module_hooks_shared(
        shared: &Mutex<Session>,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let first = !lock(shared).started_modules.contains(name);
        if first {
            Session::run_module_binding_shared(shared, name, BindingType::OnStartup, on_stderr)?;
            Session::run_module_binding_shared(shared, name, BindingType::Kubernetes, on_stderr)?;
            lock(shared).started_modules.insert(name.to_string());
        }
        Session::run_module_binding_shared(shared, name, BindingType::BeforeHelm, on_stderr)
    }

    /// [`Session::run_after_helm`] for a shared session (see
    /// [`Session::run_module_hooks_shared`]).
    pub fn run_after_helm_shared(
        shared: &Mutex<Session>,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<bool, ModuleError> {
        let before = lock(shared).values.module_values(name, false);
        Session::run_module_binding_shared(shared, name, BindingType::AfterHelm, on_stderr)?;
        Ok(lock(shared).values.module_values(name, false) != before)
    }

    /// A module's hooks having `binding` (`Kubernetes`: their
    /// Synchronization), in order, the lock released while each runs.
    fn run_module_binding_shared(
        shared: &Mutex<Session>,
        name: &str,
        binding: BindingType,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<(), ModuleError> {
        let (m, hooks) = {
            let mut s = lock(shared);
            let m = s.module(name)?.clone();
            let hooks = s.module_hooks(&m, on_stderr)?;
            let sorted: Vec<Hook> = sort_by_binding(&hooks, binding)
                .into_iter()
                .cloned()
                .collect();
            (m, sorted)
        };
        let snap_err = |hook: &Hook, e: String| {
            ModuleError::Hook(format!(
                "module '{name}': hook '{}': snapshots: {e}",
                hook.name
            ))
        };
        for hook in &hooks {
            let prepared = {
                let mut s = lock(shared);
                let ctx = if binding == BindingType::Kubernetes {
                    s.defer_syncs(Some(name), hook);
                    s.sync_contexts(hook).map_err(|e| snap_err(hook, e))?
                } else {
                    let snapshots = s
                        .snapshots
                        .for_hook(hook, &s.run.jq)
                        .map_err(|e| snap_err(hook, e))?;
                    context_for(binding, hook, &snapshots)
                };
                if ctx.is_empty() && binding == BindingType::Kubernetes {
                    continue;
                }
                s.prepare_module(&m, hook, binding, &ctx, on_stderr)?
            };
            let mut prepared = prepared;
            let started = Instant::now();
            let out = prepared.execute(on_stderr);
            let mut s = lock(shared);
            s.record_prepared(&prepared, started, &out);
            s.finish_module(&prepared, out?)?;
        }
        Ok(())
    }

    /// Takes the kubernetes operations (`KUBERNETES_PATCH_PATH`) the hooks
    /// run since the last call wrote, in run order: the operator executes
    /// them against the cluster.
    pub fn take_kube_operations(&mut self) -> Vec<HookOperations> {
        std::mem::take(&mut self.kube_operations)
    }

    /// Takes the records of the hook runs since the last call, in run
    /// order (the operator's metrics and logs).
    pub fn take_hook_runs(&mut self) -> Vec<HookRunRecord> {
        std::mem::take(&mut self.hook_runs)
    }

    /// Keeps a record of a prepared run's outcome for the operator's logs,
    /// metrics and status page ([`Session::take_hook_runs`]). Its
    /// schedule/kubernetes bindings (named by the contexts) give the queue
    /// and `allowFailure`.
    pub fn record_prepared(
        &mut self,
        p: &PreparedRun,
        started: Instant,
        out: &Result<HookOutput, ModuleError>,
    ) {
        let (module, hook, binding, ctx) = (
            p.module.as_ref().map(|m| m.name.as_str()),
            &p.hook,
            p.binding,
            &p.contexts,
        );
        let c = &hook.config;
        let named: Vec<(bool, &str)> = ctx
            .iter()
            .filter_map(|bc| match binding {
                BindingType::Schedule => c
                    .schedules
                    .iter()
                    .find(|b| b.name == bc.binding)
                    .map(|b| (b.allow_failure, b.queue.as_str())),
                BindingType::Kubernetes => c
                    .kubernetes
                    .iter()
                    .find(|b| b.name == bc.binding)
                    .map(|b| (b.allow_failure, b.queue.as_str())),
                _ => None,
            })
            .collect();
        let queue = named
            .iter()
            .map(|(_, q)| *q)
            .find(|q| !q.is_empty())
            .unwrap_or("main");
        self.hook_runs.push(HookRunRecord {
            module: module.map(str::to_string),
            hook: hook.name.clone(),
            binding,
            queue: queue.to_string(),
            duration: started.elapsed(),
            error: out.as_ref().err().map(|e| e.to_string()),
            allow_failure: !named.is_empty() && named.iter().all(|(a, _)| *a),
            metrics: out.as_ref().map(|o| o.metrics.clone()).unwrap_or_default(),
            finished: std::time::SystemTime::now(),
            stderr_tail: p.stderr_tail.clone(),
        });
    }

    /// The global hooks, then the hooks of `modules` (loading hooks not
    /// loaded yet), each with its module's name (`None`: global).
    fn hooks_of(
        &mut self,
        modules: &[String],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Vec<(Option<String>, Hook)>, ModuleError> {
        self.load_global_hooks(on_stderr)?;
        let mut out: Vec<(Option<String>, Hook)> = self
            .global_hooks
            .iter()
            .map(|h| (None, h.clone()))
            .collect();
        for name in modules {
            let m = self.module(name)?.clone();
            for h in self.module_hooks(&m, on_stderr)? {
                out.push((Some(name.clone()), h));
            }
        }
        Ok(out)
    }

    /// The `schedule` bindings of the global hooks and of the hooks of
    /// `modules` (loading hooks not loaded yet), in hook order.
    pub fn schedule_bindings(
        &mut self,
        modules: &[String],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Vec<ScheduleBindingRef>, ModuleError> {
        let mut out = Vec::new();
        for (module, h) in self.hooks_of(modules, on_stderr)? {
            for (index, b) in h.config.schedules.iter().enumerate() {
                out.push(ScheduleBindingRef {
                    module: module.clone(),
                    hook: h.name.clone(),
                    index,
                    binding: b.clone(),
                });
            }
        }
        Ok(out)
    }

    /// The `kubernetes` bindings of the global hooks and of the hooks of
    /// `modules` (loading hooks not loaded yet), in hook order.
    pub fn kubernetes_bindings(
        &mut self,
        modules: &[String],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Vec<KubeBindingRef>, ModuleError> {
        let mut out = Vec::new();
        for (module, h) in self.hooks_of(modules, on_stderr)? {
            for b in &h.config.kubernetes {
                out.push(KubeBindingRef {
                    module: module.clone(),
                    hook: h.name.clone(),
                    binding: b.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Runs the `schedule` bindings `indexes` of one hook (of module
    /// `module`, or a global hook) as one run: a `Schedule` context per
    /// binding with the snapshots its `includeSnapshotsFrom`/`group` asks
    /// for, combined as addon-operator's queue compacts them. Returns
    /// whether the run changed values (see
    /// [`Session::run_global_hook_by_name`],
    /// [`Session::run_module_hook_by_name`]).
    pub fn run_schedule(
        &mut self,
        module: Option<&str>,
        hook: &str,
        indexes: &[usize],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<bool, ModuleError> {
        let h = match module {
            None => self.global_hook(hook)?,
            Some(m) => self.module_hook(m, hook, on_stderr)?,
        };
        let snapshots = self
            .snapshots
            .for_hook(&h, &self.run.jq)
            .map_err(|e| ModuleError::Hook(format!("hook '{}': snapshots: {e}", h.name)))?;
        let runs = indexes
            .iter()
            .filter_map(|i| BindingContext::schedule(&h.config, *i, &snapshots))
            .map(|c| vec![c])
            .collect();
        let ctx = combine_contexts(runs);
        match module {
            None => self.run_global_hook_by_name(hook, BindingType::Schedule, &ctx, on_stderr),
            Some(m) => {
                self.run_module_hook_by_name(m, hook, BindingType::Schedule, &ctx, on_stderr)
            }
        }
    }

    /// Runs the global hook named `hook` once, for `binding` with the
    /// binding contexts `contexts`, applying its patches. Returns whether
    /// it changed the global values or a module's enabled flag (the
    /// operator then converges again, as addon-operator does after a
    /// global hook's values change).
    pub fn run_global_hook_by_name(
        &mut self,
        hook: &str,
        binding: BindingType,
        contexts: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<bool, ModuleError> {
        let h = self.global_hook(hook)?;
        let values = self.values.global.values().clone();
        let flags = dynamic_enabled(&self.enabled_ops);
        self.run_global_hook(&h, binding, contexts, on_stderr)?;
        Ok(self.values.global.values() != &values || dynamic_enabled(&self.enabled_ops) != flags)
    }

    /// Runs hook `hook` of module `module` once, for `binding` with the
    /// binding contexts `contexts`, applying its values patches. Returns
    /// whether the module's values changed (the operator then runs the
    /// module again: ModuleRun).
    pub fn run_module_hook_by_name(
        &mut self,
        module: &str,
        hook: &str,
        binding: BindingType,
        contexts: &[BindingContext],
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<bool, ModuleError> {
        let m = self.module(module)?.clone();
        let h = self.module_hook(module, hook, on_stderr)?;
        let before = self.values.module_values(module, false);
        self.run_module_hook(&m, &h, binding, contexts, on_stderr)?;
        Ok(self.values.module_values(module, false) != before)
    }

    fn global_hook(&self, hook: &str) -> Result<Hook, ModuleError> {
        self.global_hooks
            .iter()
            .find(|h| h.name == hook)
            .cloned()
            .ok_or_else(|| ModuleError::Hook(format!("no global hook '{hook}'")))
    }

    fn module_hook(
        &mut self,
        module: &str,
        hook: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Hook, ModuleError> {
        let m = self.module(module)?.clone();
        self.module_hooks(&m, on_stderr)?
            .into_iter()
            .find(|h| h.name == hook)
            .ok_or_else(|| ModuleError::Hook(format!("module '{module}': no hook '{hook}'")))
    }

    /// The values file given to Helm: `{global, <camelName>}` checked with
    /// `x-required-for-helm`, or a legacy module's flat map.
    pub fn helm_values(
        &self,
        name: &str,
        on_stderr: &mut dyn FnMut(&str),
    ) -> Result<Values, ModuleError> {
        let m = self.module(name)?.clone();
        if m.legacy {
            return self.legacy_module_values(&m, on_stderr);
        }
        match self.values.helm_values(name) {
            Some(r) => r.map_err(|e| ModuleError::values(name, &e)),
            None => Err(ModuleError::UnknownModule(name.to_string())),
        }
    }
}

/// `<camelName>Enabled` in a module's own `values.yaml`, if set.
fn module_enabled_flag(m: &Module) -> Result<Option<bool>, ModuleError> {
    let key = crate::values::enabled_key(&m.name);
    let Some(v) = read_values_file(&m.path.join("values.yaml"))
        .map_err(|e| ModuleError::values(&m.name, &e))?
    else {
        return Ok(None);
    };
    match v.get(&key) {
        None => Ok(None),
        Some(value) => enabled_flag(&key, value)
            .map(Some)
            .map_err(|e| ModuleError::values(&m.name, &e)),
    }
}

/// A hook's stdout, line by line, as addon-operator logs it (offline it
/// goes where stderr goes, prefixed with the hook's name; stdout is the
/// rendered output).
fn forward_stdout(hook: &Hook, stdout: &str, on_stderr: &mut dyn FnMut(&str)) {
    for line in stdout.lines() {
        on_stderr(&format!("{}: {line}", hook.name));
    }
}

/// The binding context of a lifecycle run, offline (no snapshots).
fn context_for(binding: BindingType, hook: &Hook, snapshots: &Snapshots) -> Vec<BindingContext> {
    match binding {
        BindingType::OnStartup => vec![BindingContext::on_startup()],
        other => vec![BindingContext::lifecycle(other, &hook.config, snapshots)],
    }
}

/// The shared session, even after a panic elsewhere poisoned the lock (the
/// operator keeps running; the panicking task's work is retried).
fn lock(shared: &Mutex<Session>) -> MutexGuard<'_, Session> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> OfflineConfig {
        let data = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        OfflineConfig::from_data(data).unwrap()
    }

    /// addon-operator's rule: `global` or an `*Enabled` flag converges
    /// every module; a module's own section runs that module alone, also
    /// when the section is new.
    #[test]
    fn a_module_section_without_a_flag_reruns_that_module_alone() {
        let dir = tempfile::tempdir().unwrap();
        for (d, name) in [("010-alpha", "alpha"), ("020-beta", "beta")] {
            let m = dir.path().join(d);
            std::fs::create_dir_all(m.join("templates")).unwrap();
            std::fs::write(
                m.join("Chart.yaml"),
                format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
            )
            .unwrap();
        }
        let settings = ModulesSettings {
            modules_dirs: vec![dir.path().to_path_buf()],
            global_hooks_dir: None,
            unnumbered_order: 1,
        };
        let mut s = Session::load(&settings, config(&[]), RunOptions::default()).unwrap();
        let d = s.set_config(config(&[("alpha", "greeting: hi")])).unwrap();
        assert!(!d.reconverge);
        assert_eq!(d.modules, ["alpha"]);
        let d = s
            .set_config(config(&[("alpha", "greeting: hi"), ("beta", "x: 1")]))
            .unwrap();
        assert!(!d.reconverge);
        assert_eq!(d.modules, ["beta"]);
        let d = s
            .set_config(config(&[
                ("alpha", "greeting: hi"),
                ("beta", "x: 1"),
                ("betaEnabled", "false"),
            ]))
            .unwrap();
        assert!(d.reconverge);
        let d = s.set_config(config(&[("alpha", "greeting: hi")])).unwrap();
        assert!(d.reconverge, "the flag went");
        assert_eq!(d.modules, ["beta"]);
        let d = s
            .set_config(config(&[("alpha", "greeting: hi"), ("global", "a: 1")]))
            .unwrap();
        assert!(d.reconverge);
        assert!(d.modules.is_empty());
    }
}
