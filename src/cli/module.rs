//! `antiopa module list|values`, `antiopa hook config` and `antiopa render`:
//! clap types and output formatting over [`crate::module`].
//!
//! Directories come from the flags, else from the environment
//! (`MODULES_DIR`, `GLOBAL_HOOKS_DIR`, … — every spelling addon-operator
//! accepts), else `modules` and `global-hooks` in the working directory.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::hooks::discovery::FoundHook;
use crate::hooks::{Hook, HookScope, JqLimits, JqRunner, RunOptions};
use crate::module::render::render_tree;
use crate::module::render::write_results;
use crate::module::{
    ModuleError, ModulesSettings, OfflineConfig, RenderOptions, Session, write_config_data,
};
use crate::values::{values_key, values_to_json, values_to_yaml};

/// Where the tree is and which config applies.
#[derive(Args, Debug, Clone)]
pub struct TreeArgs {
    /// Modules directories (colon-separated; default: $MODULES_DIR or ./modules).
    #[arg(long = "modules-dir")]
    modules_dir: Option<String>,
    /// Global hooks directory (default: $GLOBAL_HOOKS_DIR or ./global-hooks).
    #[arg(long = "global-hooks-dir")]
    global_hooks_dir: Option<PathBuf>,
    /// A ConfigMap manifest with the config values.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    limits: HookLimits,
}

/// Limits on what hooks, scripts and jq filters may take. Flags of
/// `render` and `module`; the environment variables apply to every command
/// that runs hooks (`diff` of modules trees too).
#[derive(Args, Debug, Clone, Default)]
pub struct HookLimits {
    /// Kill a hook or script (`--config` runs, bindings, `enabled`,
    /// `initial_values`) after this long: a Go duration (90s, 5m) or whole
    /// seconds; 0: no limit [default: 10m].
    #[arg(long = "hook-timeout", env = ENV_HOOK_TIMEOUT, value_parser = parse_duration_arg)]
    hook_timeout: Option<Duration>,
    /// Largest file a hook may write for antiopa to read (values patches,
    /// metrics, …) and largest `--config`/`initial_values` output: bytes,
    /// or with Ki, Mi, Gi [default: 16Mi].
    #[arg(long = "hook-max-file-size", env = ENV_HOOK_MAX_FILE_SIZE, value_parser = parse_size_arg)]
    max_file_bytes: Option<usize>,
    /// A jqFilter's evaluation of one object is stopped after this long
    /// (it runs in a worker process); 0: no limit [default: 5s].
    #[arg(long = "jq-timeout", env = ENV_JQ_TIMEOUT, value_parser = parse_duration_arg)]
    jq_timeout: Option<Duration>,
}

const ENV_HOOK_TIMEOUT: &str = "ANTIOPA_HOOK_TIMEOUT";
const ENV_HOOK_MAX_FILE_SIZE: &str = "ANTIOPA_HOOK_MAX_FILE_SIZE";
const ENV_JQ_TIMEOUT: &str = "ANTIOPA_JQ_TIMEOUT";

impl HookLimits {
    /// The environment's settings, for commands without the flags; a bad
    /// value is an error naming the variable.
    fn from_env() -> Result<HookLimits, String> {
        fn var<T>(name: &str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
            match std::env::var(name) {
                Ok(v) if !v.is_empty() => parse(&v).map(Some).map_err(|e| format!("{name}: {e}")),
                _ => Ok(None),
            }
        }
        Ok(HookLimits {
            hook_timeout: var(ENV_HOOK_TIMEOUT, parse_duration_arg)?,
            max_file_bytes: var(ENV_HOOK_MAX_FILE_SIZE, parse_size_arg)?,
            jq_timeout: var(ENV_JQ_TIMEOUT, parse_duration_arg)?,
        })
    }
}

/// Whole seconds or a Go duration, as kubectl's `--request-timeout`.
pub(super) fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return Ok(Duration::from_secs(n));
    }
    match crate::hooks::cron::parse_go_duration(s) {
        Ok(d) if !s.starts_with('-') => Ok(d),
        _ => Err(format!(
            "invalid duration '{s}': whole seconds, or a number with a unit (500ms, 90s, 5m)"
        )),
    }
}

/// Bytes, or a number with a binary unit suffix (`16Mi`, `512Ki`, `1Gi`).
fn parse_size_arg(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = [("Ki", 1usize << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)]
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((s, 1));
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("invalid size '{s}': bytes, or a number with Ki, Mi or Gi"))
}

#[derive(Subcommand, Debug)]
pub enum ModuleCommand {
    /// List modules: order, name, enabled state and why (with
    /// --debug-socket: the running operator's, with phase and revision).
    List(ListArgs),
    /// Print a module's values (after global hooks and its own
    /// onStartup/beforeHelm hooks; with --debug-socket: the values the
    /// running operator's module last ran with).
    Values(ValuesArgs),
    /// The running operator's render of a module now (Secret values masked).
    Render(super::ctl::RenderArgs),
    /// A module's state in the running operator: phase, revision, runs, last error.
    Status(super::ctl::StatusArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Ask the running operator through its debug socket instead of
    /// reading the tree.
    #[arg(long = "debug-socket", env = "DEBUG_UNIX_SOCKET")]
    debug_socket: Option<PathBuf>,
    /// Output format (json and yaml with --debug-socket).
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: super::ctl::Output,
    #[command(flatten)]
    tree: TreeArgs,
}

#[derive(Args, Debug)]
pub struct ValuesArgs {
    /// Module name (kebab-case).
    name: String,
    /// Include the global section: `{global: …, <camelName>: …}`.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: Format,
    /// Do not run any hook: static, schema and config values only.
    #[arg(long = "no-hooks")]
    no_hooks: bool,
    /// Ask the running operator through its debug socket instead of
    /// reading the tree.
    #[arg(long = "debug-socket", env = "DEBUG_UNIX_SOCKET")]
    debug_socket: Option<PathBuf>,
    #[command(flatten)]
    tree: TreeArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    Yaml,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Run `PATH --config` and print the parsed configuration as JSON.
    Config(HookConfigArgs),
}

#[derive(Args, Debug)]
pub struct HookConfigArgs {
    /// The hook executable.
    path: PathBuf,
    /// Parse it as a global hook (default: a module hook).
    #[arg(long)]
    global: bool,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Only these modules (default: every enabled module).
    modules: Vec<String>,
    #[command(flatten)]
    tree: TreeArgs,
    /// Release namespace.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// Objects for kubernetes bindings: a map binding name → objects, or a
    /// list / `kind: List` cluster dump (default: empty snapshots).
    #[arg(long)]
    snapshots: Option<PathBuf>,
    /// Write OUT/<module>.yaml files instead of printing.
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Write back to the --config file (created if missing), as the operator
    /// saves its ConfigMap: config values hooks patched, and what original-layout
    /// modules' `initial_values` printed (under `<module>-values`; values already
    /// there win, so a generated password stays the same on later runs).
    #[arg(long = "write-config")]
    write_config: bool,
    /// Render limits per module (default: the operator's).
    #[command(flatten)]
    limits: super::limits::RenderLimitArgs,
}

fn settings(t: &TreeArgs) -> Result<ModulesSettings, ModuleError> {
    let mut s = ModulesSettings::from_env()?;
    if let Some(d) = &t.modules_dir {
        s.modules_dirs = crate::module::discovery::split_dirs(d);
    }
    if let Some(g) = &t.global_hooks_dir {
        s.global_hooks_dir = Some(g.clone());
    }
    Ok(s)
}

fn session(t: &TreeArgs) -> Result<Session, ModuleError> {
    let config = match &t.config {
        Some(p) => OfflineConfig::read(p)?,
        None => OfflineConfig::default(),
    };
    Session::load(&settings(t)?, config, run_options_with(&t.limits))
}

/// Options for running hooks, from the environment alone (commands
/// without the limit flags). A malformed limit variable is reported and
/// the default used.
pub(super) fn run_options() -> RunOptions {
    let limits = HookLimits::from_env().unwrap_or_else(|e| {
        let _ = writeln!(std::io::stderr(), "warning: {e}; using the default");
        HookLimits::default()
    });
    run_options_with(&limits)
}

/// Options for running hooks: `ADDON_OPERATOR_TMP_DIR` (or
/// `SHELL_OPERATOR_TMP_DIR`, which addon-operator falls back to), the
/// limits, and jq filters in a worker process that is this binary.
pub(super) fn run_options_with(limits: &HookLimits) -> RunOptions {
    let mut o = RunOptions::default();
    if let Some(d) = ["ADDON_OPERATOR_TMP_DIR", "SHELL_OPERATOR_TMP_DIR"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|d| !d.is_empty()))
    {
        o.tmp_dir = PathBuf::from(d);
    }
    if let Some(t) = limits.hook_timeout {
        o.timeout = (!t.is_zero()).then_some(t);
    }
    if let Some(n) = limits.max_file_bytes {
        o.max_file_bytes = n;
    }
    let mut jq = JqLimits::default();
    if let Some(t) = limits.jq_timeout {
        jq.timeout = if t.is_zero() { Duration::MAX } else { t };
    }
    // /proc/self/exe is what current_exe reads; spawning it works even
    // when the path cannot be resolved.
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
    o.jq = JqRunner::sandboxed(me, jq);
    o
}

/// Hook and script stderr: passed through, prefixed by the hook's name.
fn forward_stderr(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn fail(e: impl std::fmt::Display) -> i32 {
    let _ = writeln!(std::io::stderr(), "Error: {e}");
    1
}

pub fn run_module(cmd: ModuleCommand) -> i32 {
    match cmd {
        ModuleCommand::List(ListArgs {
            debug_socket: Some(socket),
            output,
            ..
        }) => super::ctl::finish(super::ctl::module_list(&socket, output)),
        ModuleCommand::List(a) => match list(&a.tree) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
        ModuleCommand::Values(ValuesArgs {
            debug_socket: Some(socket),
            name,
            global,
            output,
            ..
        }) => super::ctl::finish(super::ctl::module_values(&socket, &name, global, output)),
        ModuleCommand::Values(a) => match values(&a) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
        ModuleCommand::Render(a) => super::ctl::finish(super::ctl::module_render(&a)),
        ModuleCommand::Status(a) => super::ctl::finish(super::ctl::module_status(&a)),
    }
}

fn list(t: &TreeArgs) -> Result<(), ModuleError> {
    let mut s = session(t)?;
    let mut fwd = forward_stderr;
    s.run_global_hooks(&mut fwd)?;
    s.compute_enabled(&mut fwd)?;
    let mut out = std::io::stdout().lock();
    // REQUIRES (only when some module's `module.yaml` declares
    // requirements): the dependency graph; a module that declares nothing
    // runs after the lower orders.
    let graph = !s.tree.graph.declaring.is_empty();
    let rows: Vec<Vec<String>> = s
        .tree
        .modules
        .iter()
        .map(|m| {
            let st = s.enabled.get(&m.name);
            let mut row = vec![
                m.order.to_string(),
                m.name.clone(),
                if st.is_some_and(|x| x.enabled) {
                    "enabled"
                } else {
                    "disabled"
                }
                .to_string(),
            ];
            if graph {
                let requires = s.tree.graph.requirements_text(&m.name);
                row.push(if requires.is_empty() {
                    "-".into()
                } else {
                    requires
                });
            }
            row.push(st.map(|x| x.reason.clone()).unwrap_or_default());
            row
        })
        .collect();
    let mut header: Vec<String> = vec!["ORDER".into(), "NAME".into(), "STATE".into()];
    if graph {
        header.push("REQUIRES".into());
    }
    header.push("REASON".into());
    let mut widths = vec![0usize; header.len() - 1];
    for r in std::iter::once(&header).chain(rows.iter()) {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(&header).chain(rows.iter()) {
        let mut line = String::new();
        for (c, w) in r.iter().zip(widths.iter()) {
            line.push_str(&format!("{c:<w$}  "));
        }
        line.push_str(r.last().map(String::as_str).unwrap_or(""));
        let _ = writeln!(out, "{line}");
    }
    Ok(())
}

fn values(a: &ValuesArgs) -> Result<(), ModuleError> {
    let mut s = session(&a.tree)?;
    if s.tree.get(&a.name).is_none() {
        return Err(ModuleError::UnknownModule(a.name.clone()));
    }
    let mut fwd = forward_stderr;
    if !a.no_hooks {
        s.run_global_hooks(&mut fwd)?;
        s.compute_enabled(&mut fwd)?;
        if s.enabled.get(&a.name).is_some_and(|x| x.enabled) {
            s.run_module_hooks(&a.name, &mut fwd)?;
        }
    }
    let v = s.module_values(&a.name, a.global, &mut fwd)?;
    let text = match a.output {
        Format::Yaml => values_to_yaml(&v),
        Format::Json => values_to_json(&v),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = writeln!(out);
    }
    Ok(())
}

pub fn run_hook(cmd: HookCommand) -> i32 {
    let HookCommand::Config(a) = cmd;
    let name = a
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.path.display().to_string());
    let scope = if a.global {
        HookScope::Global
    } else {
        // The module is unknown here; its key only matters for patches.
        HookScope::Module {
            module: "module".into(),
            values_key: values_key("module"),
        }
    };
    let found = FoundHook {
        name,
        path: a.path.clone(),
    };
    match Hook::load(found, scope, &run_options()) {
        Ok(h) => match serde_json::to_string_pretty(&h.config) {
            Ok(text) => {
                let _ = writeln!(std::io::stdout(), "{text}");
                0
            }
            Err(e) => fail(e),
        },
        Err(e) => fail(e),
    }
}

pub fn run_render(a: RenderArgs) -> i32 {
    if a.write_config && a.tree.config.is_none() {
        return fail("--write-config needs --config FILE (the ConfigMap manifest to write)");
    }
    let mut tree = a.tree.clone();
    // --write-config may create the file: a missing one is an empty config.
    if a.write_config && tree.config.as_ref().is_some_and(|p| !p.exists()) {
        tree.config = None;
    }
    let mut s = match session(&tree) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if let Some(p) = &a.snapshots {
        match crate::module::session::SnapshotInput::read(p) {
            Ok(si) => s.snapshots = si,
            Err(e) => return fail(e),
        }
    }
    let opts = RenderOptions {
        namespace: a.namespace,
        only: a.modules,
        // The operator's limits, so a module that renders here renders there.
        limits: a.limits.limits(crate::engine::Limits::operator()),
    };
    let mut fwd = forward_stderr;
    let report = match render_tree(&mut s, &opts, &mut fwd) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let ok = write_results(
        &report.modules,
        a.output_dir.as_deref(),
        &mut out,
        &mut std::io::stderr(),
    );
    let _ = out.flush();
    let mut code = match ok {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => fail(e),
    };
    if let Some(e) = &report.after_all {
        code = fail(e);
    }
    if a.write_config
        && let Some(path) = &a.tree.config
    {
        let written = s
            .remembered_config()
            .and_then(|updates| match updates.is_empty() {
                true => Ok(()),
                false => write_config_data(path, &updates),
            });
        if let Err(e) = written {
            code = fail(e);
        }
    }
    code
}
