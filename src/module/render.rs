//! `antiopa render`: global hooks, enabled state, then for each enabled
//! module (in module order) its `onStartup` and `beforeHelm` hooks, its
//! values (validated with `x-required-for-helm`), the chart pipeline with
//! `helm template <module-name> <module-dir> --namespace NS --values
//! <effective values>` semantics, so the output is what that command prints,
//! and its `afterHelm` hooks; global `afterAll` hooks last. Hooks that
//! change values after a render make addon-operator run again, and so does
//! this (see [`render_tree`]): the output is what addon-operator ends up
//! deploying.
//!
//! A module that fails (hook, values, render) renders nothing and keeps its
//! error; the others still render. A failing global hook stops everything,
//! as it blocks every module in addon-operator.
//!
//! A chart without `Chart.yaml` (only `templates/`) is rendered with the
//! `Chart.yaml` addon-operator writes for it (`name: <module>`, `version:
//! 0.2.0`; `HelmModule.createChartYaml`), given to the loader in memory:
//! rendering writes no file.

use std::io::Write;
use std::path::Path;

use super::ModuleError;
use super::discovery::Module;
use super::meta::DependencyGraph;
use super::session::Session;
use crate::chart::template;
use crate::chart::{self, Env, Limits, LoadedChart};
use crate::hooks::BindingType;
use crate::values::Values;
use crate::values::convert::map_to_yaml;

/// What to render.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// Release namespace (`-n`).
    pub namespace: String,
    /// Only these modules (all enabled modules when empty).
    pub only: Vec<String>,
    /// Render limits for each module's chart (default: none, as helm).
    pub limits: Limits,
}

/// One module's result.
#[derive(Debug)]
pub struct RenderedModule {
    pub name: String,
    /// `helm template`'s stdout, or why there is none.
    pub result: Result<String, ModuleError>,
}

/// How many times a module is run while its `afterHelm` hooks keep
/// changing its values, and how many times the whole tree converges while
/// `afterAll` hooks keep changing global values. addon-operator has no
/// limit (it re-runs forever); offline such a module is an error.
pub const MAX_RUNS: usize = 10;

/// Everything one `antiopa render` produced.
#[derive(Debug, Default)]
pub struct RenderReport {
    /// Per module, in module order (of the last convergence).
    pub modules: Vec<RenderedModule>,
    /// A failing global `afterAll` hook, or `afterAll` hooks that never
    /// stop changing global values. The modules above rendered; in
    /// addon-operator the convergence would be retried.
    pub after_all: Option<ModuleError>,
}

/// Runs the whole pipeline; `Err` only for failures that stop every module
/// (discovery is already done by [`Session::load`]; global hooks, enabled
/// state, unknown module names) and for a failing `afterAll` hook.
pub fn render_modules(
    session: &mut Session,
    opts: &RenderOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<Vec<RenderedModule>, ModuleError> {
    let report = render_tree(session, opts, on_stderr)?;
    match report.after_all {
        Some(e) => Err(e),
        None => Ok(report.modules),
    }
}

/// addon-operator's convergence, offline: global `onStartup` and
/// `beforeAll` hooks, enabled state, every enabled module (see
/// [`run_module`]), then global `afterAll` hooks. If those changed global
/// values or enabled flags, addon-operator converges again (`ReloadAll`,
/// without `onStartup` hooks); so does this, up to [`MAX_RUNS`] times, and
/// the output is that of the last convergence.
pub fn render_tree(
    session: &mut Session,
    opts: &RenderOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<RenderReport, ModuleError> {
    for name in &opts.only {
        if session.tree.get(name).is_none() {
            return Err(ModuleError::UnknownModule(name.clone()));
        }
    }
    // A cycle or a missing module is one error, as the operator's.
    let graph = DependencyGraph::build(&session.tree.modules)?;
    session.run_global_hooks(on_stderr)?;
    let mut report = RenderReport::default();
    for round in 0..MAX_RUNS {
        if round > 0 {
            session.run_global_binding(BindingType::BeforeAll, on_stderr)?;
        }
        session.compute_enabled(on_stderr)?;
        report.modules = converge_modules(session, &graph, opts, on_stderr);
        match session.run_after_all(on_stderr) {
            Ok(false) => return Ok(report),
            Ok(true) => {}
            Err(e) => {
                report.after_all = Some(e);
                return Ok(report);
            }
        }
    }
    report.after_all = Some(ModuleError::Hook(format!(
        "global afterAll hooks still change global values after {MAX_RUNS} convergences; \
         addon-operator would converge again and again"
    )));
    Ok(report)
}

/// One pass over the modules: each enabled one runs; disabled ones are
/// listed only when asked for by name. As in the operator, a module that
/// requires (`module.yaml`) a disabled module is not run (it waits, and is
/// not deployed), and one whose requirement failed fails with it.
fn converge_modules(
    session: &mut Session,
    graph: &DependencyGraph,
    opts: &RenderOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Vec<RenderedModule> {
    let modules: Vec<Module> = session
        .tree
        .modules
        .iter()
        .filter(|m| opts.only.is_empty() || opts.only.contains(&m.name))
        .cloned()
        .collect();
    let mut res = Vec::new();
    for m in modules {
        let state = session.enabled.get(&m.name).cloned();
        let enabled = state.as_ref().is_some_and(|s| s.enabled);
        if !enabled {
            if !opts.only.is_empty() {
                let reason = state.map(|s| s.reason).unwrap_or_default();
                res.push(RenderedModule {
                    name: m.name.clone(),
                    result: Err(ModuleError::Render {
                        module: m.name.clone(),
                        message: format!("module is disabled ({reason})"),
                    }),
                });
            }
            continue;
        }
        let enabled = |n: &str| session.enabled.get(n).is_some_and(|s| s.enabled);
        if let Some(why) = graph.blocked_by(&m.name, enabled, |_| true) {
            on_stderr(&format!(
                "module '{}': {why}: not rendered (the operator does not deploy it)",
                m.name
            ));
            if !opts.only.is_empty() {
                res.push(RenderedModule {
                    name: m.name.clone(),
                    result: Err(ModuleError::Render {
                        module: m.name.clone(),
                        message: format!("module is {why}"),
                    }),
                });
            }
            continue;
        }
        let result = run_module(session, &m, opts, on_stderr);
        res.push(RenderedModule {
            name: m.name.clone(),
            result,
        });
    }
    // A module whose requirement failed is not deployed either (the
    // operator keeps it waiting): it fails too, transitively.
    loop {
        let failed: std::collections::BTreeSet<String> = res
            .iter()
            .filter(|r| r.result.is_err())
            .map(|r| r.name.clone())
            .collect();
        let mut changed = false;
        for r in res.iter_mut().filter(|r| r.result.is_ok()) {
            let enabled = |n: &str| session.enabled.get(n).is_some_and(|s| s.enabled);
            if let Some(why) = graph.blocked_by(&r.name, enabled, |n| !failed.contains(n)) {
                r.result = Err(ModuleError::Render {
                    module: r.name.clone(),
                    message: format!("module is {why}"),
                });
                changed = true;
            }
        }
        if !changed {
            return res;
        }
    }
}

/// addon-operator's `ModuleRun`: `onStartup` hooks (first run only),
/// `beforeHelm` hooks, values, the chart, then `afterHelm` hooks. When
/// those change the module's values addon-operator runs the module again
/// and deploys the new render; so does this, up to [`MAX_RUNS`] times. An
/// `afterHelm` failure fails the module (addon-operator retries the whole
/// run).
pub fn run_module(
    session: &mut Session,
    m: &Module,
    opts: &RenderOptions,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<String, ModuleError> {
    let namespace = &opts.namespace;
    for _ in 0..MAX_RUNS {
        session.run_module_hooks(&m.name, on_stderr)?;
        let values = session.helm_values(&m.name, on_stderr)?;
        let text = if m.has_chart {
            render_chart(m, &values, namespace, opts.limits, on_stderr)?
        } else {
            String::new()
        };
        if !session.run_after_helm(&m.name, on_stderr)? {
            return Ok(text);
        }
    }
    Err(ModuleError::Render {
        module: m.name.clone(),
        message: format!(
            "afterHelm hooks still change the module's values after {MAX_RUNS} runs; \
             addon-operator would run the module again and again"
        ),
    })
}

/// Loads module `m`'s chart; a module without `Chart.yaml` gets the one
/// addon-operator writes for it (`name: <module>`, `version: 0.2.0`;
/// `HelmModule.createChartYaml`).
pub fn load_chart(m: &Module, warn: &mut dyn FnMut(&str)) -> Result<LoadedChart, ModuleError> {
    if m.has_chart_yaml {
        LoadedChart::load(&m.path, warn)
    } else {
        let chart_yaml = format!("name: {}\nversion: 0.2.0", m.name);
        LoadedChart::load_dir_or(&m.path, &chart_yaml, warn)
    }
    .map_err(|e| ModuleError::Render {
        module: m.name.clone(),
        message: e.to_string(),
    })
}

/// `helm template <module> <dir> --namespace NS --values <values>`, with
/// the values handed over in memory and the chart loaded by [`load_chart`].
/// Warnings go to `on_stderr`, each headed by the module name.
pub fn render_chart(
    m: &Module,
    values: &Values,
    namespace: &str,
    limits: Limits,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<String, ModuleError> {
    let fail = |message: String| ModuleError::Render {
        module: m.name.clone(),
        message,
    };
    let mut warn = |line: &str| on_stderr(&format!("{}: {line}", m.name));
    let loaded = load_chart(m, &mut warn)?;
    // The engine's default environment (no seed, real clock).
    let mut env = Env::new();
    env.set_limits(limits);
    let opts = chart::RenderOptions {
        release_name: m.name.clone(),
        namespace: namespace.to_string(),
        // As sigs.k8s.io/yaml reads a values file: every number a float64.
        values: map_to_yaml(values),
        env,
        ..Default::default()
    };
    match chart::render_chart(loaded, &opts) {
        Ok(rendered) => {
            for w in &rendered.warnings {
                warn(w);
            }
            Ok(template::print_rendered(&rendered, false, false))
        }
        Err(failure) => {
            for w in &failure.warnings {
                warn(w);
            }
            Err(fail(failure.to_string()))
        }
    }
}

/// Writes results: with `output_dir`, `OUT/<module>.yaml` each; otherwise
/// all to `out`, each headed by `# module: <name>`. Returns whether every
/// module rendered; errors go to `err`, one line each.
pub fn write_results(
    results: &[RenderedModule],
    output_dir: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<bool> {
    let mut ok = true;
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir)?;
    }
    for r in results {
        match &r.result {
            Ok(text) => match output_dir {
                Some(dir) => std::fs::write(dir.join(format!("{}.yaml", r.name)), text)?,
                None => {
                    writeln!(out, "# module: {}", r.name)?;
                    out.write_all(text.as_bytes())?;
                }
            },
            Err(e) => {
                ok = false;
                writeln!(err, "Error: {e}")?;
            }
        }
    }
    Ok(ok)
}
