//! The operator's state as the status page ([`crate::ui`]) reads it: a
//! snapshot of [`Status`] and the converge loop's view, one module's values,
//! deployed manifest (Secret data masked) and release history, and the few
//! actions the page may ask for (run a module now, archive, restore). The
//! page decides who may act; this API only does what it is asked.

use std::path::Path;

use serde_json::{Map, Value as Json};

use super::{Ctx, ModuleStatus, Phase, Status, debug, queue};
use crate::module::{HookRunRecord, ModuleError};
use crate::release::{self, Release};

/// Why a status page request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("module '{0}' not found")]
    UnknownModule(String),
    /// The session stayed busy (hooks, a render), or the loop is not up.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

/// Everything the overview shows, copied out of the operator's locks.
#[derive(Clone, Debug, Default)]
pub struct Overview {
    pub status: Status,
    /// (module, order), in module order; modules missing here (before the
    /// first discovery) are listed after, by name.
    pub order: Vec<(String, u32)>,
    /// `None`: no leader election (this replica always leads).
    pub leading: Option<bool>,
    /// What the converge loop does now.
    pub doing: String,
    /// Tasks due in the converge loop's own queue.
    pub main_queue: usize,
    pub namespace: String,
    /// The newest runs of the global hooks, newest first.
    pub global_hook_runs: Vec<HookRun>,
}

/// One module's page.
#[derive(Clone, Debug)]
pub struct ModulePage {
    pub name: String,
    pub status: ModuleStatus,
    /// Its values as its last run left them, unmasked (the page masks).
    pub values: Result<Map<String, Json>, String>,
    /// Its release records, oldest first.
    pub history: Result<Vec<Release>, String>,
    /// The manifest of the newest release record, Secret data masked.
    pub manifest: Option<String>,
    /// What the newest release record changed (`None`: no record; an
    /// error: the manifests cannot be compared).
    pub last_change: Option<Result<LastChange, String>>,
    /// The newest runs of its hooks, newest first.
    pub hook_runs: Vec<HookRun>,
}

/// What a module's newest release record changed, object by object, as
/// `antiopa diff` prints it (Secret values masked).
#[derive(Clone, Debug)]
pub struct LastChange {
    /// The revision before (`None`: the newest is the first).
    pub from: Option<i64>,
    pub to: i64,
    /// The diff; empty when no object changed.
    pub diff: String,
}

/// One hook run as the page shows it.
#[derive(Clone, Debug)]
pub struct HookRun {
    pub hook: String,
    /// `onStartup`, `schedule`, `kubernetes`, `beforeHelm`, …
    pub binding: String,
    pub queue: String,
    pub duration: std::time::Duration,
    /// Why it failed; `None`: it succeeded.
    pub error: Option<String>,
    /// Its bindings allow it to fail.
    pub allow_failure: bool,
    pub finished: std::time::SystemTime,
    /// The last lines of its stderr (unmasked: the page masks).
    pub stderr_tail: String,
}

impl From<&HookRunRecord> for HookRun {
    fn from(r: &HookRunRecord) -> HookRun {
        HookRun {
            hook: r.hook.clone(),
            binding: r.binding.as_str().to_string(),
            queue: r.queue.clone(),
            duration: r.duration,
            error: r.error.clone(),
            allow_failure: r.allow_failure,
            finished: r.finished,
            stderr_tail: r.stderr_tail.clone(),
        }
    }
}

/// A handle on the operator's state for the status page.
#[derive(Clone)]
pub struct StatusApi {
    ctx: Ctx,
}

impl StatusApi {
    pub(crate) fn new(ctx: Ctx) -> StatusApi {
        StatusApi { ctx }
    }

    /// The file holding the bearer token the page's actions need.
    pub fn token_file(&self) -> Option<&Path> {
        self.ctx.settings.ui_token_file.as_deref()
    }

    /// Whether the page is served to clients on other hosts.
    pub fn remote_allowed(&self) -> bool {
        self.ctx.settings.ui_remote
    }

    pub fn overview(&self) -> Overview {
        let status = self
            .ctx
            .status
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let view = self.ctx.view();
        Overview {
            status,
            order: view.order.clone(),
            leading: self.ctx.leading.as_ref().map(|rx| *rx.borrow()),
            doing: view.doing.clone(),
            main_queue: view.queue.len(),
            namespace: self.ctx.settings.namespace.clone(),
            global_hook_runs: self.hook_runs(None),
        }
    }

    /// Each module's phase and what it waits for, by name (cheap: for the
    /// page's live updates).
    pub fn phases(&self) -> Vec<(String, Phase, Option<String>)> {
        let st = self.ctx.status.read().unwrap_or_else(|p| p.into_inner());
        st.modules
            .iter()
            .map(|(n, m)| (n.clone(), m.phase, m.waiting_for.clone()))
            .collect()
    }

    pub async fn module(&self, name: &str) -> Result<ModulePage, ApiError> {
        let status = self
            .ctx
            .status
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .modules
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::UnknownModule(name.to_string()))?;
        let n = name.to_string();
        let values = match debug::with_session(&self.ctx, move |s| {
            s.module_values(&n, false, &mut super::hook_log)
        })
        .await
        {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.1),
        };
        let history = release::history(&self.ctx.cluster, name, &self.ctx.settings.namespace)
            .await
            .map_err(|e| e.to_string());
        let manifest = history
            .as_ref()
            .ok()
            .and_then(|h| h.iter().max_by_key(|r| r.version))
            .map(|r| masked_manifest(&r.manifest));
        let last_change = history.as_ref().ok().and_then(|h| {
            let newest = h.iter().max_by_key(|r| r.version)?;
            let before = h
                .iter()
                .filter(|r| r.version < newest.version)
                .max_by_key(|r| r.version);
            Some(last_change(
                before,
                newest,
                &self.ctx.settings.namespace,
                name,
            ))
        });
        Ok(ModulePage {
            name: name.to_string(),
            status,
            values,
            history,
            manifest,
            last_change,
            hook_runs: self.hook_runs(Some(name)),
        })
    }

    fn hook_runs(&self, module: Option<&str>) -> Vec<HookRun> {
        let h = self
            .ctx
            .hook_history
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        h.of(module).iter().map(HookRun::from).collect()
    }

    /// Queues a run of `name` in the converge loop (an enabled module only).
    pub fn run_now(&self, name: &str) -> Result<(), ApiError> {
        let known = self
            .ctx
            .status
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .modules
            .get(name)
            .map(|m| m.phase != Phase::Disabled);
        match known {
            None => return Err(ApiError::UnknownModule(name.to_string())),
            Some(false) => {
                return Err(ApiError::Failed(format!(
                    "module '{name}' is disabled: nothing to run"
                )));
            }
            Some(true) => {}
        }
        let tx =
            self.ctx.requests.get().ok_or_else(|| {
                ApiError::Unavailable("the converge loop is not running yet".into())
            })?;
        tx.send(queue::Request::RunNow(name.to_string()))
            .map_err(|_| ApiError::Unavailable("the converge loop has stopped".into()))
    }

    /// Archives the module: sets its ConfigMap key `<module>-archived:
    /// "true"`, the operator's source of truth, so the archive lasts (the
    /// converge loop archives the release: workloads deleted, claims and
    /// history kept, no run while the key is set).
    pub async fn archive(&self, name: &str, _actor: &str) -> Result<String, ApiError> {
        self.set_archived(name, true).await
    }

    /// Restores the module: sets `<module>-archived: "false"`; its next run
    /// restores the archived release and renders it afresh.
    pub async fn restore(&self, name: &str, _actor: &str) -> Result<String, ApiError> {
        self.set_archived(name, false).await
    }

    async fn set_archived(&self, name: &str, on: bool) -> Result<String, ApiError> {
        self.known(name)?;
        let s = &self.ctx.settings;
        let key = format!("{name}-archived");
        let updates = std::collections::BTreeMap::from([(key.clone(), on.to_string())]);
        super::configmap::store(&self.ctx.cluster, &s.namespace, &s.config_map, &updates)
            .await
            .map_err(|e| ApiError::Failed(crate::cluster::error_text(&e)))?;
        Ok(format!(
            "ConfigMap {}: {key}: \"{on}\"; the operator {} module {name}",
            s.config_map,
            if on { "archives" } else { "restores and runs" }
        ))
    }

    fn known(&self, name: &str) -> Result<(), ApiError> {
        let st = self.ctx.status.read().unwrap_or_else(|p| p.into_inner());
        match st.modules.contains_key(name) {
            true => Ok(()),
            false => Err(ApiError::UnknownModule(name.to_string())),
        }
    }
}

impl From<ModuleError> for ApiError {
    fn from(e: ModuleError) -> ApiError {
        match e {
            ModuleError::UnknownModule(m) => ApiError::UnknownModule(m),
            e => ApiError::Failed(e.to_string()),
        }
    }
}

/// A release manifest with every Secret's `data`/`stringData` values masked,
/// document by document.
/// The object-level diff from `before` (none: the first revision) to
/// `newest`, Secret values masked.
fn last_change(
    before: Option<&Release>,
    newest: &Release,
    namespace: &str,
    module: &str,
) -> Result<LastChange, String> {
    let side = |r: Option<&Release>| match r {
        Some(r) => vec![crate::diff::Source::new(
            format!("module {module} (revision {})", r.version),
            format!("module {module}"),
            r.manifest.clone(),
        )],
        None => Vec::new(),
    };
    let opts = crate::diff::CompareOptions {
        default_namespace: namespace.to_string(),
        show_secrets: false,
    };
    let result = crate::diff::compare(&side(before), &side(Some(newest)), &opts)
        .map_err(|e| e.to_string())?;
    let text = crate::diff::render(&result, &crate::diff::RenderOptions::default());
    Ok(LastChange {
        from: before.map(|r| r.version),
        to: newest.version,
        diff: text,
    })
}

fn masked_manifest(manifest: &str) -> String {
    let mut out = String::new();
    for doc in split_documents(manifest) {
        if doc.trim().is_empty() {
            continue;
        }
        out.push_str("---\n");
        out.push_str(&debug::masked(doc));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The documents of a multi-document YAML text (split at `---` lines).
fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&text[start..pos]);
            start = pos + line.len();
        }
        pos += line.len();
    }
    docs.push(&text[start..]);
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_data_in_a_release_manifest_is_masked() {
        let m = "---\n# Source: a/templates/s.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: hunter2\n---\n# Source: a/templates/c.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n";
        let out = masked_manifest(m);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(
            out.contains("kind: ConfigMap") && out.contains("a: b"),
            "{out}"
        );
        assert_eq!(out.matches("---\n").count(), 2, "{out}");
    }
}
