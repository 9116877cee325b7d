//! The status page, served by `antiopa run` on its HTTP port under `/ui/`:
//! server-rendered HTML from Tera templates compiled into the binary, usable
//! without JavaScript; a tiny inline script swaps the phase cells as
//! `/ui/events` (server-sent events) reports changes. It reads the
//! operator's state through [`crate::operator::StatusApi`] only. Pages show
//! no secret values: values under keys that look secret are masked, and so
//! is every Secret's data in manifests. Actions (run a module now, archive,
//! restore its release) are POST only and need the bearer token of
//! `--ui-token-file`, sent as `Authorization: Bearer …` or as the form
//! field `token`; a cross-site form cannot know it, so no CSRF. Without a
//! token file the page is read-only and every action is refused (403).

mod pages;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use crate::operator::{ApiError, StatusApi};
pub use pages::{Pages, UiError, mask_values};

/// How often `/ui/events` looks for phase changes.
const EVENTS_EVERY: Duration = Duration::from_millis(500);

#[derive(Clone)]
struct Ui {
    api: StatusApi,
    pages: Arc<Pages>,
    /// Ends the event streams, so that the server's graceful shutdown is
    /// not held by an open page.
    shutdown: CancellationToken,
}

/// The `/ui/` routes, to merge into the operator's HTTP server.
pub fn router<S: Clone + Send + Sync + 'static>(
    api: StatusApi,
    shutdown: CancellationToken,
) -> Result<Router<S>, UiError> {
    let ui = Ui {
        api,
        pages: Arc::new(Pages::new()?),
        shutdown,
    };
    Ok(Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(overview))
        .route("/ui/events", get(events))
        .route("/ui/module/{name}", get(module))
        .route("/ui/module/{name}/{action}", post(action))
        .route_layer(axum::middleware::from_fn_with_state(ui.clone(), local_only))
        .with_state(ui))
}

/// Refuses clients on other hosts unless `--ui-remote` (a server without
/// peer addresses, as in tests of the router alone, is not restricted).
async fn local_only(
    State(ui): State<Ui>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0);
    match peer {
        Some(p) if !serves(p.ip(), ui.api.remote_allowed()) => {
            tracing::warn!(peer = %p, "status page: refused a client on another host (--ui-remote serves them)");
            message(
                &ui,
                StatusCode::FORBIDDEN,
                "Refused",
                "the status page answers local clients only (kubectl port-forward); antiopa run --ui-remote serves others",
                None,
            )
        }
        _ => next.run(req).await,
    }
}

/// Whether a client at `ip` is served.
fn serves(ip: std::net::IpAddr, remote: bool) -> bool {
    remote || ip.is_loopback() || ip.to_canonical().is_loopback()
}

fn html(r: Result<String, UiError>) -> Response {
    match r {
        Ok(body) => Html(body).into_response(),
        Err(e) => {
            tracing::error!("status page: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response()
        }
    }
}

async fn overview(State(ui): State<Ui>) -> Response {
    html(ui.pages.overview(&ui.api.overview()))
}

async fn module(State(ui): State<Ui>, Path(name): Path<String>) -> Response {
    match ui.api.module(&name).await {
        Ok(page) => html(ui.pages.module(&page, ui.api.token_file().is_some())),
        Err(e) => message(&ui, code(&e), "Error", &e.to_string(), None),
    }
}

fn code(e: &ApiError) -> StatusCode {
    match e {
        ApiError::UnknownModule(_) => StatusCode::NOT_FOUND,
        ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        ApiError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn message(ui: &Ui, code: StatusCode, title: &str, text: &str, module: Option<&str>) -> Response {
    let mut r = html(ui.pages.message(title, text, module));
    if r.status() == StatusCode::OK {
        *r.status_mut() = code;
    }
    r
}

/// `POST /ui/module/NAME/{run,archive,restore}`.
async fn action(
    State(ui): State<Ui>,
    Path((name, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !matches!(action.as_str(), "run" | "archive" | "restore") {
        return message(
            &ui,
            StatusCode::NOT_FOUND,
            "No such action",
            &format!("'{action}': the actions are run, archive and restore"),
            Some(&name),
        );
    }
    if let Err(why) = authorize(&ui, &headers, &body).await {
        tracing::warn!(module = %name, action = %action, "status page action refused: {why}");
        return message(&ui, StatusCode::FORBIDDEN, "Refused", &why, Some(&name));
    }
    tracing::info!(module = %name, action = %action, "status page action");
    let actor = "antiopa-ui";
    let r = match action.as_str() {
        "run" => ui
            .api
            .run_now(&name)
            .map(|()| format!("a run of module {name} is queued")),
        "archive" => ui.api.archive(&name, actor).await,
        _ => ui.api.restore(&name, actor).await,
    };
    match r {
        Ok(text) => message(&ui, StatusCode::OK, "Done", &text, Some(&name)),
        Err(e) => message(&ui, code(&e), "Failed", &e.to_string(), Some(&name)),
    }
}

/// The request carries the token of `--ui-token-file` (read on each
/// request: a mounted Secret may be rotated).
async fn authorize(ui: &Ui, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let Some(file) = ui.api.token_file() else {
        return Err("actions are disabled: antiopa runs without --ui-token-file".into());
    };
    let path = file.to_path_buf();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(path))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    let want = read.map_err(|e| {
        tracing::error!("status page: token file {}: {e}", file.display());
        "the token file cannot be read (see the operator's log)".to_string()
    })?;
    let want = want.trim();
    if want.is_empty() {
        return Err("the token file is empty: actions are disabled".into());
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    let given = bearer.or_else(|| {
        form_urlencoded::parse(body)
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.trim().to_string())
    });
    match given {
        None => Err("no token: send Authorization: Bearer TOKEN or the form field token".into()),
        Some(t) if same(t.as_bytes(), want.as_bytes()) => Ok(()),
        Some(_) => Err("wrong token".into()),
    }
}

/// Compares in time independent of where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// `/ui/events`: one `data:` message with every module's phase
/// (`{"name": ["label", "class"]}`) at once, then the ones that changed.
async fn events(
    State(ui): State<Ui>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold(
        (ui, std::collections::BTreeMap::new(), true),
        |(ui, mut last, first)| async move {
            loop {
                if !first {
                    tokio::select! {
                        _ = ui.shutdown.cancelled() => return None,
                        _ = tokio::time::sleep(EVENTS_EVERY) => {}
                    }
                }
                let mut changed = serde_json::Map::new();
                for (name, phase, waiting) in ui.api.phases() {
                    let (label, class) = pages::phase_label(phase, waiting.as_deref());
                    let cell = serde_json::json!([label, class]);
                    if last.get(&name) != Some(&cell) {
                        changed.insert(name.clone(), cell.clone());
                        last.insert(name, cell);
                    }
                }
                if first || !changed.is_empty() {
                    let ev = Event::default().data(serde_json::Value::Object(changed).to_string());
                    return Some((Ok(ev), (ui, last, false)));
                }
                if ui.shutdown.is_cancelled() {
                    return None;
                }
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_clients_are_served_unless_remote_is_allowed() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        for local in ["127.0.0.1", "127.0.0.53", "::1", "::ffff:127.0.0.1"] {
            assert!(serves(ip(local), false), "{local}");
        }
        for remote in ["10.0.0.7", "192.168.1.2", "::ffff:10.0.0.7", "fe80::1"] {
            assert!(!serves(ip(remote), false), "{remote}");
            assert!(serves(ip(remote), true), "{remote}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }
}
