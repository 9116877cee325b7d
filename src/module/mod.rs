//! addon-operator modules, offline: discovery of a modules tree, the offline
//! config source, enabled state, and a run of global and module hooks ending
//! in the values each enabled module renders with.
//!
//! - [`discovery`]: `MODULES_DIR`, module directory names and order, charts,
//!   CRDs, the original antiopa layout per module.
//! - [`config`]: `--config FILE`, a ConfigMap manifest (addon-operator's and
//!   the original antiopa's keys).
//! - [`enabled`]: the enabled-state chain and `enabled` scripts.
//! - [`session`]: one run in addon-operator's start-up order.
//! - [`render`]: `antiopa render`: each enabled module through the chart
//!   pipeline (`helm template <module> <dir> --namespace NS --values …`).
//! - [`tree_render`]: the sides `antiopa diff` compares: rendered files,
//!   trees rendered whole, trees at a git revision.

pub mod config;
pub mod discovery;
pub mod enabled;
pub mod meta;
pub mod render;
pub mod session;
pub mod tree_render;

pub use config::{OfflineConfig, write_config_data};
pub use discovery::{Module, ModulesSettings, ModulesTree, discover};
pub use enabled::{EnabledScriptError, EnabledState};
pub use meta::{DependencyGraph, Edge, ModuleMeta, Requirement};
pub use render::{RenderOptions, RenderedModule, render_modules};
pub use session::{
    ConfigDelta, HookKey, HookOperations, HookRunRecord, KubeBindingRef, LiveSnapshots,
    PreparedRun, ScheduleBindingRef, Session, SnapshotInput, hook_key,
};

/// Errors of this layer. Hook errors carry the hooks layer's text, which
/// names the hook and the binding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleError {
    #[error("{0}")]
    Settings(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("bad module directory name '{0}'")]
    BadDirName(String),
    #[error("module directory '{dir}': {message}")]
    BadName { dir: String, message: String },
    #[error("module '{name}' found twice: '{first}' and '{second}'")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error("config '{path}': {message}")]
    Config { path: String, message: String },
    #[error("{}", values_text(module, message))]
    Values { module: String, message: String },
    #[error("{0}")]
    Hook(String),
    /// A `requirements.modules` entry that cannot be met.
    #[error("module '{module}': {message}")]
    Dependency { module: String, message: String },
    /// Declared requirements that make a cycle, as `[a, b, a]`.
    #[error("module dependency cycle: {}", .0.join(" → "))]
    DependencyCycle(Vec<String>),
    #[error("module '{0}' not found")]
    UnknownModule(String),
    #[error("module '{module}': render: {message}")]
    Render { module: String, message: String },
    /// `enabled` scripts that gave no answer, one per module.
    #[error("{}", enabled_failures_text(.0))]
    EnabledScripts(Vec<enabled::EnabledScriptError>),
}

fn enabled_failures_text(failed: &[enabled::EnabledScriptError]) -> String {
    failed
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Values errors mostly name their module already (`module 'x': validate
/// values: …`); the others get the name in front.
fn values_text(module: &str, message: &str) -> String {
    if module == "*" || message.contains(&format!("'{module}'")) {
        message.to_string()
    } else {
        format!("module '{module}': {message}")
    }
}

impl ModuleError {
    pub(crate) fn values(module: &str, e: &dyn std::fmt::Display) -> ModuleError {
        ModuleError::Values {
            module: module.to_string(),
            message: e.to_string(),
        }
    }

    pub(crate) fn global_values(e: &dyn std::fmt::Display) -> ModuleError {
        ModuleError::Values {
            module: "*".into(),
            message: e.to_string(),
        }
    }
}
