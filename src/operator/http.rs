//! The operator's HTTP servers, as addon-operator's:
//!
//! - on `ADDON_OPERATOR_LISTEN_ADDRESS:PORT`: `/metrics` (the operator's
//!   metrics), `/metrics/hooks` (what hooks exported), `/healthz` (200
//!   while the process runs), `/readyz` (200 once the first converge is
//!   done, 503 before; 200 for a standby of the leader election), and the
//!   status page under `/ui/` ([`crate::ui`]);
//! - the debug API ([`super::debug`]) on a unix socket
//!   (`DEBUG_UNIX_SOCKET`) and, when set, on `DEBUG_HTTP_SERVER_ADDR`.
//!
//! The servers are tasks of the operator's runtime and stop with its
//! shutdown token; the socket file is removed then. A listener that cannot
//! be set up is an error in the log, not the end of the operator (its
//! liveness probe says so).

use std::path::{Path, PathBuf};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use super::Ctx;

fn main_routes(debug: bool) -> Router<Ctx> {
    let r = Router::new()
        .route("/metrics", get(metrics))
        .route("/metrics/hooks", get(hook_metrics))
        .route("/healthz", get(|| async { "OK\n" }))
        .route("/readyz", get(readyz));
    if debug {
        r.merge(super::debug::routes())
    } else {
        r
    }
}

const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

async fn metrics(State(ctx): State<Ctx>) -> impl IntoResponse {
    let body = ctx
        .metrics
        .encode(&ctx.status.read().unwrap_or_else(|p| p.into_inner()));
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], body)
}

async fn hook_metrics(State(ctx): State<Ctx>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, TEXT_FORMAT)],
        ctx.metrics.encode_hooks(),
    )
}

async fn readyz(State(ctx): State<Ctx>) -> impl IntoResponse {
    let st = ctx.status.read().unwrap_or_else(|p| p.into_inner());
    ready(st.first_converge_done, st.config_read, st.leader.as_ref())
}

/// `/readyz`: the leader (or the only replica) once its first converge is
/// done; a standby once it knows it stands by and has read its ConfigMap
/// (its cache is warm), as addon-operator's readiness: a rollout with
/// `maxUnavailable: 0` waits for the new pod to be ready, and a new pod
/// stands by while the old one holds the Lease.
fn ready(
    first_converge_done: bool,
    config_read: bool,
    leader: Option<&super::LeaderStatus>,
) -> (StatusCode, String) {
    match leader {
        Some(l) if !l.leading && config_read => (
            StatusCode::OK,
            format!("Standby: '{}' does not hold the lease.\n", l.identity),
        ),
        _ if first_converge_done => (StatusCode::OK, "Startup converge done.\n".into()),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Startup converge in progress.\n".into(),
        ),
    }
}

/// Starts the servers `ctx.settings` asks for.
pub(crate) async fn start(ctx: &Ctx, shutdown: &CancellationToken) {
    let s = ctx.settings.clone();
    if let Some(addr) = &s.listen {
        serve_tcp(ctx, shutdown, addr, false, "HTTP server (metrics, health)").await;
    }
    if let Some(addr) = &s.debug_http_addr {
        serve_tcp(ctx, shutdown, addr, true, "debug HTTP server").await;
    }
    if let Some(path) = &s.debug_socket {
        serve_socket(ctx, shutdown, path).await;
    }
}

async fn serve_tcp(ctx: &Ctx, shutdown: &CancellationToken, addr: &str, debug: bool, what: &str) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{what}: cannot listen on {addr}: {e}; not served");
            return;
        }
    };
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_string());
    tracing::info!(address = %local, "{what} listening");
    let mut app = main_routes(debug).with_state(ctx.clone());
    if !debug {
        let api = super::StatusApi::new(ctx.clone());
        match crate::ui::router(api, shutdown.clone()) {
            Ok(ui) => app = app.merge(ui),
            Err(e) => tracing::error!("{what}: the status page is not served: {e}"),
        }
    }
    let stop = shutdown.clone();
    let what = what.to_string();
    tokio::spawn(async move {
        // The peer's address: the status page serves loopback clients only
        // unless told otherwise.
        let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let r = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = r {
            tracing::error!("{what}: {e}");
        }
    });
}

async fn serve_socket(ctx: &Ctx, shutdown: &CancellationToken, path: &Path) {
    let listener = match bind_socket(path) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(
                "debug socket {}: {e}; the debug API is not served there",
                path.display()
            );
            return;
        }
    };
    tracing::info!(socket = %path.display(), "debug API listening");
    let app = super::debug::routes().with_state(ctx.clone());
    let stop = shutdown.clone();
    let path: PathBuf = path.to_path_buf();
    tokio::spawn(async move {
        let r = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = r {
            tracing::error!("debug socket {}: {e}", path.display());
        }
        let _ = std::fs::remove_file(&path);
    });
}

/// Binds a unix socket at `path`, its directory made if missing and a
/// socket left by an earlier process replaced (never another kind of file).
fn bind_socket(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a socket",
            ));
        }
        Err(_) => {}
    }
    tokio::net::UnixListener::bind(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::LeaderStatus;

    #[test]
    fn a_standby_is_ready_a_leader_once_converged() {
        let l = |leading| LeaderStatus {
            identity: "pod-a".into(),
            leading,
        };
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        assert_eq!(ready(false, true, None).0, unavailable);
        assert_eq!(ready(true, true, None).0, StatusCode::OK);
        assert_eq!(ready(false, true, Some(&l(false))).0, StatusCode::OK);
        assert_eq!(ready(false, false, Some(&l(false))).0, unavailable);
        assert_eq!(ready(false, true, Some(&l(true))).0, unavailable);
        assert_eq!(ready(true, true, Some(&l(true))).0, StatusCode::OK);
    }
}
