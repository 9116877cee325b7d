//! `fake-apiserver`: a dev-only, in-memory Kubernetes API server for antiopa's tests.
//!
//! No real kube-apiserver can be installed here (see `shared/research/apiserver.md`), so tests
//! that say "against fake apiserver" run against this crate. It aims to be faithful where
//! antiopa's applier depends on the server:
//!
//! - routing and discovery (`/api`, `/apis`, `/api/v1`, `/apis/{g}/{v}`, `/version`) driven by one
//!   resource table ([`resources`]), with CRDs adding their served versions (Established at once) and taking them away
//!   when deleted (their objects deleted with DELETED events first, their watches ended);
//!   `/openapi/v3` lists every group version with its PATCH operations' `fieldValidation`
//!   parameter, so kubectl and helm leave validation to the server as with a real 1.32 server
//!   ([`openapi`]; no schemas, `/openapi/v2` answers 404);
//! - objects with `uid`, `creationTimestamp`, `generation` and a `resourceVersion` from one global
//!   counter; a write that changes nothing bumps nothing and emits no event;
//! - LIST with label and field selectors and pages (`limit`/`continue`), WATCH from a resourceVersion (410 Expired below the
//!   retained log, see [`FakeApiServer::compact`]), selector transitions, `timeoutSeconds` (capped
//!   by [`FakeApiServer::set_watch_timeout`]) and periodic and closing BOOKMARKs when bookmarks
//!   are allowed;
//!   `as=PartialObjectMetadata` responses for kube's `*_metadata` calls;
//! - the `/status` subresource (main-resource writes keep status; `generation` follows spec) and
//!   `/scale` for Deployments, StatefulSets and ReplicaSets (`kubectl scale`, the HPA), plus the
//!   `all` discovery category (`kubectl get all`);
//! - server-side apply with structured-merge-diff's field-set model ([`ssa`], [`fieldset`],
//!   [`schema`]): managedFields in FieldsV1, merge by list-map keys, prune, conflicts in the real
//!   Status format, `force`, `dryRun=All`, `before-first-apply`; non-apply writes (POST, PUT, JSON
//!   merge / strategic merge / JSON patch) take ownership as `Update` managers;
//! - DELETE with propagation policies, finalizers, preconditions, and an instant garbage collector
//!   (dependents whose owners are all gone are deleted; namespaces take their contents with them);
//! - request bodies in JSON, YAML, or Kubernetes protobuf (`k8s\0` + `runtime.Unknown`) for
//!   Secret, ConfigMap, Namespace, Service, ServiceAccount, the RBAC kinds and DeleteOptions
//!   ([`protobuf`]), which client-go's typed clients send (helm's release store,
//!   `kubectl create secret|configmap|role|…`);
//! - Service cluster IPs allocated from 10.96.0.0/12 on create and kept by updates that leave
//!   them out (helm's `--wait` needs them);
//! - `Status` error bodies (404, 409 AlreadyExists/Conflict, 410, 415, 422 Invalid), Secrets with
//!   `stringData`, immutable `type`/`immutable`, and the 1 MiB size limit.
//!
//! Use it in-process with [`FakeApiServer::client`] (a `kube::Client` over a `tower::Service`, no
//! network) or over plain HTTP with [`FakeApiServer::serve`] plus [`FakeApiServer::write_kubeconfig`]
//! for real `kubectl`/`helm`. [`FakeApiServer::stats`] counts requests per verb;
//! [`FakeApiServer::inject`] fails, delays, or deletes-before the next matching requests. Setting
//! `FAKE_APISERVER_LOG` logs each request's method, URI and media types to stderr.
//!
//! Watch faults: [`FakeApiServer::kill_watches`] breaks every open watch connection abruptly,
//! [`FakeApiServer::freeze_watches`] keeps them open but silent, [`FakeApiServer::expire_watches`]
//! compacts and ends them with `410 Expired`; over HTTP the same are
//! `POST /fake-admin/watches/kill` and `POST /fake-admin/watches/freeze` (answering
//! `{"watches": N}`, the number open). Bookmark-enabled watches get a BOOKMARK every
//! [`FakeApiServer::set_bookmark_interval`] (one minute by default); a deleted CRD ends the
//! watches of its kinds.
//!
//! ```no_run
//! # async fn demo() {
//! let server = fake_apiserver::FakeApiServer::new();
//! let client = server.client(); // needs a running tokio runtime
//! # let _ = client;
//! assert!(server.get("v1/namespaces", None, "default").is_some());
//! # }
//! ```
//!
//! Test helpers beyond the shape above: [`FakeApiServer::seed`] (store without managedFields, so
//! the next apply meets `before-first-apply`), [`FakeApiServer::list`], [`FakeApiServer::compact`],
//! [`FakeApiServer::clear_faults`].
//!
//! Known simplifications: one stored version per resource (no conversion), no admission, no
//! protobuf or Table output (protobuf *input* is decoded only for the kinds [`protobuf`]
//! declares; others get 415), no aggregated discovery (clients fall back to the legacy
//! endpoints), LIST pages (`limit`/`continue`) show later pages as they are now rather than as of the first page, only the built-in list/map types in [`schema`]
//! are typed (CRD schemas' `x-kubernetes-list-type` is not read), Update managers are not
//! capped at 10, no kubectl client-side-apply annotation handling, and the garbage collector
//! runs synchronously.

pub mod fieldset;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod resources;
pub mod schema;
pub mod selector;
pub mod server;
pub mod ssa;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use serde_json::Value;

use server::{ResponseBody, Shared, State, lock};

/// Request counts since creation or the last [`FakeApiServer::reset_stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every request, discovery and health checks included.
    pub total: u64,
    /// Discovery requests (`/api`, `/apis`, group versions, `/version`, `/openapi/v3…`).
    pub discovery: u64,
    pub get: u64,
    pub list: u64,
    pub watch: u64,
    pub create: u64,
    pub update: u64,
    pub patch: u64,
    /// Single deletes and deletecollection.
    pub delete: u64,
    /// Writes (create, update, patch, delete) by `User-Agent` (empty: none sent), then by
    /// resource (`leases.coordination.k8s.io`, `secrets`): which client wrote what.
    pub writes_by_agent:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>,
}

impl Stats {
    /// Resource requests (every verb, discovery excluded).
    pub fn api_requests(&self) -> u64 {
        self.get + self.list + self.watch + self.create + self.update + self.patch + self.delete
    }
}

/// What an injected fault does to a matching request.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// Answer with this HTTP code and a `Status` body carrying `message` (the reason follows the
    /// code: 500 InternalError, 503 ServiceUnavailable, 409 Conflict, 429 TooManyRequests, …).
    Fail { code: u16, message: String },
    /// Wait this long, then handle the request normally.
    Delay(Duration),
    /// Delete the named object (as another client would) just before handling the request.
    DeleteObject,
}

/// A fault for the next `times` requests matching `verb` (`get`, `list`, `watch`, `create`,
/// `update`, `patch`, `delete`, `deletecollection`, or `*`), `resource` (plural such as
/// `configmaps` or `deployments.apps`, or `*`) and optionally `name`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub verb: String,
    pub resource: String,
    pub name: Option<String>,
    pub times: usize,
    pub action: FaultAction,
}

impl Fault {
    /// Fail the next matching request with `code`.
    pub fn fail(verb: &str, resource: &str, code: u16) -> Fault {
        Fault {
            verb: verb.to_string(),
            resource: resource.to_string(),
            name: None,
            times: 1,
            action: FaultAction::Fail {
                code,
                message: format!("injected fault: {verb} {resource} failed with {code}"),
            },
        }
    }

    /// Delay the next matching request.
    pub fn delay(verb: &str, resource: &str, delay: Duration) -> Fault {
        Fault {
            verb: verb.to_string(),
            resource: resource.to_string(),
            name: None,
            times: 1,
            action: FaultAction::Delay(delay),
        }
    }

    /// Delete `name` just before the next matching request (e.g. a prune's DELETE then gets 404).
    pub fn delete_before(verb: &str, resource: &str, name: &str) -> Fault {
        Fault {
            verb: verb.to_string(),
            resource: resource.to_string(),
            name: Some(name.to_string()),
            times: 1,
            action: FaultAction::DeleteObject,
        }
    }

    /// Only requests for this object name.
    pub fn name(mut self, name: &str) -> Fault {
        self.name = Some(name.to_string());
        self
    }

    /// Apply to the next `n` matching requests.
    pub fn times(mut self, n: usize) -> Fault {
        self.times = n;
        self
    }

    /// The `Status` message of a `Fail` fault.
    pub fn message(mut self, msg: &str) -> Fault {
        if let FaultAction::Fail { message, .. } = &mut self.action {
            *message = msg.to_string();
        }
        self
    }
}

/// The fake API server. Cheap to clone; clones share one store.
#[derive(Clone)]
pub struct FakeApiServer {
    shared: Shared,
}

impl Default for FakeApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeApiServer {
    /// A server with the built-in resources and the namespaces `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease`.
    pub fn new() -> Self {
        FakeApiServer {
            shared: Arc::new(Mutex::new(State::new())),
        }
    }

    /// An in-process `kube::Client` (default namespace `default`). Must be called inside a tokio
    /// runtime (kube's buffer spawns a task).
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), "default")
    }

    /// The `tower::Service` behind [`FakeApiServer::client`].
    pub fn service(&self) -> FakeService {
        FakeService {
            shared: self.shared.clone(),
        }
    }

    /// Serves plain HTTP/1.1 on `addr` (e.g. `127.0.0.1:0`) until the returned task is aborted.
    pub async fn serve(
        &self,
        addr: &str,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let shared = self.shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let shared = shared.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let bytes = server::collect(body).await.unwrap_or_default();
                                let resp =
                                    server::handle(shared, Request::from_parts(parts, bytes)).await;
                                Ok::<_, Infallible>(resp)
                            }
                        });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, svc)
                        .await;
                });
            }
        });
        Ok((local, task))
    }

    /// Writes a kubeconfig for `http://addr` (cluster, a token user, a context and
    /// current-context, namespace `default`) that kubectl and helm accept.
    pub fn write_kubeconfig(&self, addr: SocketAddr, path: &Path) -> std::io::Result<()> {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\npreferences: {{}}\nusers:\n- name: fake\n  user:\n    token: fake-token\n"
        );
        std::fs::write(path, text)
    }

    pub fn stats(&self) -> Stats {
        lock(&self.shared).stats.clone()
    }

    pub fn reset_stats(&self) {
        lock(&self.shared).stats = Stats::default();
    }

    /// Queues a fault; faults are matched in the order they were injected.
    pub fn inject(&self, fault: Fault) {
        lock(&self.shared).faults.push(fault);
    }

    /// Drops every queued fault.
    pub fn clear_faults(&self) {
        lock(&self.shared).faults.clear();
    }

    /// An object as stored (with managedFields). `resource` is `configmaps`, `v1/configmaps`,
    /// `apps/v1/deployments` or `deployments.apps`; `ns` is `None` for cluster-scoped objects.
    pub fn get(&self, resource: &str, ns: Option<&str>, name: &str) -> Option<Value> {
        let st = lock(&self.shared);
        let res = find_resource(&st, resource)?;
        st.get_obj(&res, ns.unwrap_or(""), name).cloned()
    }

    /// Every stored object of a resource (all namespaces), sorted by namespace and name.
    pub fn list(&self, resource: &str) -> Vec<Value> {
        let st = lock(&self.shared);
        let Some(res) = find_resource(&st, resource) else {
            return Vec::new();
        };
        st.objects
            .get(&res.key())
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Stores `obj` directly, without managedFields (as if written before field tracking), so the
    /// next apply meets `before-first-apply`. The namespace is not checked.
    pub fn seed(&self, resource: &str, obj: Value) -> Result<Value, String> {
        let mut st = lock(&self.shared);
        let res =
            find_resource(&st, resource).ok_or_else(|| format!("unknown resource {resource}"))?;
        server::seed(&mut st, &res, obj)
    }

    /// The global resourceVersion counter.
    pub fn resource_version(&self) -> u64 {
        lock(&self.shared).rv
    }

    /// Forgets the watch event log: watching from any resourceVersion older than now gets
    /// `410 Expired`, as after an etcd compaction.
    pub fn compact(&self) {
        let mut st = lock(&self.shared);
        st.floor = st.rv;
        st.log.clear();
    }

    /// Caps every watch stream at `d` (so reconnects happen quickly in tests); `None` restores
    /// the client's `timeoutSeconds`.
    pub fn set_watch_timeout(&self, d: Option<Duration>) {
        lock(&self.shared).watch_cap = d;
    }

    /// Breaks every open watch connection abruptly, as a network failure or a restarted
    /// apiserver would: the response body ends with an error (over HTTP, the connection is
    /// dropped without the final chunk). Clients must watch again; new watches work.
    /// Returns how many watches were open.
    pub fn kill_watches(&self) -> usize {
        self.control_watches(server::WatchControl::Kill)
    }

    /// Freezes every open watch connection: it stays open but nothing more is sent on it, not
    /// even bookmarks, as a half-dead connection behind a NAT or a stuck apiserver. Only a
    /// client-side liveness deadline gets the client out. New watches work. Returns how many
    /// watches were open.
    pub fn freeze_watches(&self) -> usize {
        self.control_watches(server::WatchControl::Freeze)
    }

    /// Forgets the watch event log ([`FakeApiServer::compact`]) and ends every open watch with
    /// an `ERROR` event `410 Expired` (frozen ones too), as the watch cache does to watchers it
    /// drops: clients must list again. Returns how many watches were open.
    pub fn expire_watches(&self) -> usize {
        self.compact();
        self.control_watches(server::WatchControl::Expire)
    }

    fn control_watches(&self, c: server::WatchControl) -> usize {
        let st = lock(&self.shared);
        let _ = st.watch_ctl.send(c);
        st.open_watches.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Watch streams open now (frozen ones included until their client closes them).
    pub fn open_watches(&self) -> usize {
        lock(&self.shared)
            .open_watches
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How often watches that allow bookmarks (`allowWatchBookmarks=true`) get a BOOKMARK
    /// (default one minute, as the watch cache); applies to watches opened afterwards.
    pub fn set_bookmark_interval(&self, d: Duration) {
        // A zero period would make no sense (and tokio's interval refuses it).
        lock(&self.shared).bookmark_interval = d.max(Duration::from_millis(1));
    }

    /// Jobs (and run-to-completion Pods) complete as soon as they are written, standing in for
    /// the Job controller and the kubelet, so chart hooks and hook Jobs finish.
    pub fn set_complete_jobs(&self, on: bool) {
        lock(&self.shared).controllers.complete_jobs = on;
    }

    /// Deployments, StatefulSets, DaemonSets and ReplicaSets report all replicas ready.
    pub fn set_workloads_ready(&self, on: bool) {
        lock(&self.shared).controllers.workloads_ready = on;
    }
}

fn find_resource(st: &State, spec: &str) -> Option<resources::Resource> {
    let parts: Vec<&str> = spec.split('/').collect();
    let (group, version, plural) = match parts.as_slice() {
        [p] => match p.split_once('.') {
            Some((plural, group)) => (Some(group.to_string()), None, plural.to_string()),
            None => (None, None, p.to_string()),
        },
        [v, p] => (Some(String::new()), Some(v.to_string()), p.to_string()),
        [g, v, p] => (Some(g.to_string()), Some(v.to_string()), p.to_string()),
        _ => return None,
    };
    st.resources
        .iter()
        .find(|r| {
            r.plural == plural
                && group.as_ref().is_none_or(|g| *g == r.group)
                && version.as_ref().is_none_or(|v| *v == r.version)
        })
        .cloned()
}

/// The in-process `tower::Service<http::Request<kube::client::Body>>`.
#[derive(Clone)]
pub struct FakeService {
    shared: Shared,
}

impl tower::Service<Request<kube::client::Body>> for FakeService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let shared = self.shared.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes: Bytes = body.collect_bytes().await.unwrap_or_default();
            Ok(server::handle(shared, Request::from_parts(parts, bytes)).await)
        })
    }
}
