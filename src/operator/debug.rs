//! The debug API, addon-operator's routes on its debug socket
//! (`DEBUG_UNIX_SOCKET`) and optionally on `DEBUG_HTTP_SERVER_ADDR`:
//!
//! - `/module/list[.json|.yaml|.text]`: `{"enabledModules": […]}` as
//!   addon-operator, plus `modules`: each module's order, state and last run;
//! - `/module/NAME/values`, `/module/NAME/config` (`.json`/`.yaml`,
//!   `?global=true` adds the global section): the module's values as its
//!   last run left them (what it rendered with), its config values;
//! - `/module/NAME/render[?show-secrets=true]`: the module's chart rendered
//!   now with those values; Secret `data`/`stringData` values are masked
//!   (`***`) unless asked for;
//! - `/module/NAME/status`, `/module/NAME/snapshots` (its hooks' kubernetes
//!   bindings' objects);
//! - `/global/values`, `/global/config`, `/global/list` (global hooks);
//! - `/queue/list[.json|.yaml|.text]` (also `/queue/main…`): the work due;
//! - `/watch/list[.json|.yaml|.text]`: the kubernetes bindings' shared
//!   watches, their state, objects, restarts and relists, and the totals;
//! - `/leader[.json|.yaml|.text]`: this replica's identity and whether it
//!   leads (`--leader-elect`), also in `/module/list` as `leader`.
//!
//! `/module/NAME/status` adds the state of the module's release as
//! Octopod names it (`releaseState`: running, failure, archived, …), read
//! from its latest release record.
//!
//! The format comes from the extension: `.json`, `.yaml`, else text
//! (tables for lists, JSON for the rest). Errors are plain text with 400,
//! 404, 500, or 503 while the operator's session stays busy (hooks run).
//! Data is read from the operator's status and session; the session lock
//! is taken only to copy what a route needs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use serde_json::{Value as Json, json};

use super::Ctx;
use crate::module::{ModuleError, Session};
use crate::release::Next;

/// How long a route waits for the session, busy with a hook or render.
const SESSION_WAIT: Duration = Duration::from_secs(10);

/// What the converge loop publishes for the debug API: its queue and the
/// modules' order.
#[derive(Clone, Debug, Default)]
pub struct View {
    pub queue: Vec<QueuedTask>,
    /// What the loop does now (`idle`, `ConvergeModules`, `ModuleRun …`).
    pub doing: String,
    /// (module, order), in module order.
    pub order: Vec<(String, u32)>,
    /// The kubernetes bindings' live snapshots.
    pub live: Option<crate::module::LiveSnapshots>,
}

/// One task due in the main queue.
#[derive(Clone, Debug, Serialize)]
pub struct QueuedTask {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Seconds until it is due (0: now).
    pub due_in_seconds: f64,
}

pub(crate) fn routes() -> Router<Ctx> {
    Router::new()
        .route("/module/{file}", get(module_list))
        .route("/module/{name}/{file}", get(module_route))
        .route("/global/{file}", get(global_route))
        .route("/queue/{file}", get(queue_route))
        .route("/watch/{file}", get(watch_route))
        .route("/leader", get(|c| leader_route(c, Format::Text)))
        .route("/leader.text", get(|c| leader_route(c, Format::Text)))
        .route("/leader.json", get(|c| leader_route(c, Format::Json)))
        .route("/leader.yaml", get(|c| leader_route(c, Format::Yaml)))
}

/// An API error: a status and a plain text.
pub(super) struct ApiError(pub(super) StatusCode, pub(super) String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{}\n", self.1),
        )
            .into_response()
    }
}

impl From<ModuleError> for ApiError {
    fn from(e: ModuleError) -> ApiError {
        let code = match e {
            ModuleError::UnknownModule(_) => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(code, e.to_string())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Yaml,
}

/// `values.json` → ("values", Json).
fn split(file: &str) -> (&str, Format) {
    for (ext, f) in [
        (".json", Format::Json),
        (".yaml", Format::Yaml),
        (".yml", Format::Yaml),
        (".text", Format::Text),
    ] {
        if let Some(stem) = file.strip_suffix(ext) {
            return (stem, f);
        }
    }
    (file, Format::Text)
}

/// `value` in `format`; `text` is what the text format shows (JSON when
/// `None`).
fn respond(format: Format, value: &Json, text: Option<String>) -> Response {
    let (ctype, body) = match format {
        Format::Yaml => ("application/yaml", to_yaml(value)),
        Format::Json => ("application/json", json_text(value)),
        Format::Text => (
            "text/plain; charset=utf-8",
            text.unwrap_or_else(|| json_text(value)),
        ),
    };
    ([(header::CONTENT_TYPE, ctype)], body).into_response()
}

fn json_text(v: &Json) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn to_yaml(v: &Json) -> String {
    let y = crate::values::convert::to_yaml(v);
    crate::yaml::to_yaml(&y)
}

/// Runs `f` on the session on a blocking thread, waiting at most
/// [`SESSION_WAIT`] for the converge loop to let go of it.
pub(super) async fn with_session<T: Send + 'static>(
    ctx: &Ctx,
    f: impl FnOnce(&mut Session) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let session = ctx.session.clone();
    let task = tokio::task::spawn_blocking(move || {
        let end = Instant::now() + SESSION_WAIT;
        loop {
            match session.try_lock() {
                Ok(mut s) => return Some(f(&mut s)),
                Err(std::sync::TryLockError::Poisoned(p)) => return Some(f(&mut p.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(std::sync::TryLockError::WouldBlock) => return None,
            }
        }
    });
    match task.await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the operator is busy (hooks or a render) for more than {}s; try again",
                SESSION_WAIT.as_secs()
            ),
        )),
        Err(e) => Err(ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

fn not_found(what: &str) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, format!("no such route: {what}"))
}

fn truthy(q: &BTreeMap<String, String>, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| v.is_empty() || v == "true" || v == "yes" || v == "1")
}

/// The module list with each module's state, in module order.
fn module_rows(ctx: &Ctx) -> Json {
    let order = ctx.view().order.clone();
    let st = ctx.status.read().unwrap_or_else(|p| p.into_inner());
    let mut enabled = Vec::new();
    let mut modules = Vec::new();
    for (name, ord) in &order {
        let m = st.modules.get(name).cloned().unwrap_or_default();
        let on = m.phase != super::Phase::Disabled;
        if on {
            enabled.push(name.clone());
        }
        modules.push(json!({
            "name": name,
            "order": ord,
            "enabled": on,
            "phase": m.phase,
            "reason": m.enabled_reason,
            "revision": m.revision,
            "runs": m.runs,
            "failures": m.failures,
            "lastError": m.last_error,
            "waitingFor": m.waiting_for,
            "drift": m.drift,
        }));
    }
    json!({ "enabledModules": enabled, "modules": modules, "leader": st.leader })
}

async fn module_list(State(ctx): State<Ctx>, Path(file): Path<String>) -> Response {
    let (stem, format) = split(&file);
    if stem != "list" {
        return not_found(&format!("/module/{file}")).into_response();
    }
    let v = module_rows(&ctx);
    let text = v["enabledModules"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m.as_str())
                .map(|m| format!("{m}\n"))
                .collect::<String>()
        })
        .unwrap_or_default();
    respond(format, &v, Some(text))
}

async fn module_route(
    State(ctx): State<Ctx>,
    Path((name, file)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let (stem, format) = split(&file);
    let with_global = truthy(&q, "global");
    let r = match stem {
        "values" | "config" => {
            let n = name.clone();
            let config = stem == "config";
            with_session(&ctx, move |s| {
                if config {
                    s.tree
                        .get(&n)
                        .ok_or_else(|| ModuleError::UnknownModule(n.clone()))?;
                    Ok(s.values
                        .module_config_values(&n, with_global)
                        .unwrap_or_default())
                } else {
                    s.module_values(&n, with_global, &mut super::hook_log)
                }
            })
            .await
            .and_then(|r: Result<_, ModuleError>| r.map_err(ApiError::from))
            .map(|v| respond(format, &Json::Object(v), None))
        }
        "status" => module_status(&ctx, &name, format).await,
        "render" => render(&ctx, &name, truthy(&q, "show-secrets")).await,
        "snapshots" => snapshots(&ctx, &name, format).await,
        _ => Err(not_found(&format!("/module/{name}/{file}"))),
    };
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The module's status, with its release's lifecycle state.
async fn module_status(ctx: &Ctx, name: &str, format: Format) -> Result<Response, ApiError> {
    let m = ctx
        .status
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .modules
        .get(name)
        .cloned()
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("module '{name}' not found")))?;
    let mut v = serde_json::to_value(&m).unwrap_or_default();
    // The release is named after the module; none yet is `null`. A read
    // that fails says why in the field rather than failing the route.
    let state = match crate::release::history(&ctx.cluster, name, &ctx.settings.namespace).await {
        Ok(h) => h
            .last()
            .map(|r| Json::from(crate::release::lifecycle::state(r).as_str())),
        Err(e) => Some(Json::from(format!("unknown ({e})"))),
    };
    v["release_state"] = state.unwrap_or(Json::Null);
    Ok(respond(format, &v, None))
}

/// The module's chart rendered now with its values: manifests as
/// `helm template` prints them, Secret values masked unless `show`.
async fn render(ctx: &Ctx, name: &str, show: bool) -> Result<Response, ApiError> {
    let n = name.to_string();
    let (module, values) = with_session(ctx, move |s| {
        let m = s
            .tree
            .get(&n)
            .cloned()
            .ok_or_else(|| ModuleError::UnknownModule(n.clone()))?;
        let v = s.helm_values(&n, &mut super::hook_log)?;
        Ok::<_, ModuleError>((m, v))
    })
    .await?
    .map_err(ApiError::from)?;
    if !module.has_chart {
        return Ok((StatusCode::OK, String::new()).into_response());
    }
    let revision = ctx
        .status
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .modules
        .get(name)
        .and_then(|m| m.revision)
        .unwrap_or(1);
    let next = Next {
        version: revision,
        is_upgrade: revision > 1,
    };
    let (ns, limits, cluster, pool) = (
        ctx.settings.namespace.clone(),
        ctx.settings.limits,
        ctx.cluster.clone(),
        ctx.pool.clone(),
    );
    let rendered = tokio::task::spawn_blocking(move || {
        pool.enter(|| super::render::render_module(&module, &values, &ns, next, limits, &cluster))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(ApiError::from)?;
    let r = &rendered.rendered;
    let mut out = String::new();
    for d in r.crds.iter().chain(&r.manifests).chain(&r.hooks) {
        let content = if show {
            d.content.clone()
        } else {
            masked(&d.content)
        };
        out.push_str(&format!("---\n# Source: {}\n{}", d.source, content));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(([(header::CONTENT_TYPE, "application/yaml")], out).into_response())
}

/// A manifest with a v1 Secret's `data`/`stringData` values replaced by
/// `***`; other documents unchanged.
pub(super) fn masked(doc: &str) -> String {
    let Ok(y) = crate::yaml::from_yaml(doc) else {
        return doc.to_string();
    };
    let mut m = y.clone();
    crate::diff::secrets::mask_yaml(None, Some(&mut m));
    if m == y {
        doc.to_string()
    } else {
        crate::yaml::to_yaml(&m)
    }
}

/// The objects each kubernetes binding of the module's hooks holds now.
async fn snapshots(ctx: &Ctx, name: &str, format: Format) -> Result<Response, ApiError> {
    let live = ctx.view().live.clone();
    let known = ctx
        .status
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .modules
        .contains_key(name);
    if !known {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("module '{name}' not found"),
        ));
    }
    let mut out = serde_json::Map::new();
    if let Some(live) = live {
        let map = live.read().unwrap_or_else(|p| p.into_inner());
        for ((module, hook), snaps) in map.iter() {
            if module.as_deref() != Some(name) {
                continue;
            }
            let bindings: serde_json::Map<String, Json> = snaps
                .iter()
                .map(|(binding, objects)| {
                    let objs = objects
                        .iter()
                        .map(|o| {
                            let mut e = serde_json::Map::new();
                            if let Some(obj) = &o.object {
                                e.insert("object".into(), serde_json::Value::clone(obj));
                            }
                            if let Some(f) = &o.filter_result {
                                e.insert("filterResult".into(), serde_json::Value::clone(f));
                            }
                            Json::Object(e)
                        })
                        .collect();
                    (binding.clone(), Json::Array(objs))
                })
                .collect();
            out.insert(hook.clone(), Json::Object(bindings));
        }
    }
    Ok(respond(format, &Json::Object(out), None))
}

async fn global_route(State(ctx): State<Ctx>, Path(file): Path<String>) -> Response {
    let (stem, format) = split(&file);
    let r = match stem {
        "values" | "config" => {
            let config = stem == "config";
            with_session(&ctx, move |s| {
                let g = &s.values.global;
                if config {
                    g.config_values().clone()
                } else {
                    g.values().clone()
                }
            })
            .await
            .map(|v| respond(format, &Json::Object(v), None))
        }
        "list" => with_session(&ctx, |s| {
            s.global_hooks
                .iter()
                .map(|h| h.name.clone())
                .collect::<Vec<_>>()
        })
        .await
        .map(|hooks| {
            let text = hooks.iter().map(|h| format!("{h}\n")).collect();
            respond(format, &json!({ "globalHooks": hooks }), Some(text))
        }),
        _ => Err(not_found(&format!("/global/{file}"))),
    };
    r.unwrap_or_else(IntoResponse::into_response)
}

async fn queue_route(State(ctx): State<Ctx>, Path(file): Path<String>) -> Response {
    let (stem, format) = split(&file);
    if stem != "list" && stem != "main" {
        return not_found(&format!("/queue/{file}")).into_response();
    }
    let view = ctx.view().clone();
    let v = json!({
        "queues": [{
            "name": "main",
            "length": view.queue.len(),
            "status": view.doing,
            "tasks": view.queue,
        }]
    });
    let mut text = format!(
        "Queue 'main': length {}, status: '{}'\n",
        view.queue.len(),
        view.doing
    );
    for (i, t) in view.queue.iter().enumerate() {
        let what = match &t.module {
            Some(m) => format!("{}:{m}", t.kind),
            None => t.kind.clone(),
        };
        text.push_str(&format!(
            "{:>2}. {what} (due in {:.1}s)\n",
            i + 1,
            t.due_in_seconds
        ));
    }
    respond(format, &v, Some(text))
}

async fn watch_route(State(ctx): State<Ctx>, Path(file): Path<String>) -> Response {
    let (stem, format) = split(&file);
    if stem != "list" {
        return not_found(&format!("/watch/{file}")).into_response();
    }
    let st = ctx.status.read().unwrap_or_else(|p| p.into_inner());
    let now = std::time::SystemTime::now();
    let ago = |t: Option<std::time::SystemTime>| {
        t.and_then(|t| now.duration_since(t).ok())
            .map(|d| d.as_secs_f64())
    };
    let watches: Vec<Json> = st
        .watches
        .iter()
        .map(|w| {
            json!({
                "key": w.key,
                "kind": w.kind,
                "namespaces": w.namespaces,
                "bindings": w.bindings,
                "state": w.state,
                "ageSeconds": ago(Some(w.started_at)),
                "lastEventSecondsAgo": ago(w.last_event_at),
                "objects": w.objects,
                "relists": w.relists,
                "restarts": w.restarts,
                "lastError": w.last_error,
            })
        })
        .collect();
    let v = json!({
        "watches": watches,
        "restartsTotal": st.watch_restarts_total,
        "relistsTotal": st.watch_relists_total,
        "dead": st.watches_dead,
    });
    let mut text = format!(
        "Watches: {}, dead: {}, restarts: {}, relists: {}\n",
        st.watches.len(),
        st.watches_dead,
        st.watch_restarts_total,
        st.watch_relists_total
    );
    for w in &st.watches {
        let ns = if w.namespaces.is_empty() {
            "*".to_string()
        } else {
            w.namespaces.join(",")
        };
        text.push_str(&format!(
            "{} ns={ns} state={:?} objects={} restarts={} relists={} last-event={} bindings={}{}\n",
            w.kind,
            w.state,
            w.objects,
            w.restarts,
            w.relists,
            ago(w.last_event_at)
                .map(|s| format!("{s:.1}s ago"))
                .unwrap_or_else(|| "never".into()),
            w.bindings.join(";"),
            w.last_error
                .as_deref()
                .map(|e| format!(" error={e}"))
                .unwrap_or_default(),
        ));
    }
    respond(format, &v, Some(text))
}

async fn leader_route(State(ctx): State<Ctx>, format: Format) -> Response {
    let leader = ctx
        .status
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .leader
        .clone();
    let text = match &leader {
        Some(l) if l.leading => format!("{}: leader\n", l.identity),
        Some(l) => format!("{}: standby\n", l.identity),
        None => "no leader election (--leader-elect not set): this replica works\n".into(),
    };
    respond(format, &json!({ "leader": leader }), Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_the_extension() {
        assert!(split("values.json") == ("values", Format::Json));
        assert!(split("values.yaml") == ("values", Format::Yaml));
        assert!(split("list") == ("list", Format::Text));
    }

    #[test]
    fn secret_values_are_masked_other_documents_kept() {
        let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  password: c2VjcmV0\nstringData:\n  token: plain\n";
        let m = masked(secret);
        assert!(!m.contains("c2VjcmV0") && !m.contains("plain"), "{m}");
        assert!(
            m.contains("password: '***'") || m.contains("password: \"***\""),
            "{m}"
        );
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a:   b\n";
        assert_eq!(masked(cm), cm);
    }
}
