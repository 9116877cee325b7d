//! The request handler: routing from the resource table, discovery, CRUD, server-side apply,
//! LIST/WATCH, DELETE with finalizers, and `Status` error bodies — all on one in-memory store
//! guarded by a mutex (every mutation runs to completion under the lock, so there are no races
//! between a write, its resourceVersion and its watch event).

// Errors here *are* the HTTP responses (a Status body), built at most once per request; boxing
// them would only add noise.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::fieldset::{FieldSet, PathElement};
use crate::openapi;
use crate::patch;
use crate::protobuf;
use crate::resources::{self, Resource};
use crate::selector::{FieldSelector, LabelSelector};
use crate::ssa::{self, ApplyError, Manager, Schema};
use crate::{Fault, FaultAction, Stats};

/// The body of every response (whole JSON, or a watch stream). A watch stream killed by
/// [`WatchControl::Kill`] ends with an error, so hyper drops the connection mid-body, as a
/// broken network or a crashed apiserver would.
pub type ResponseBody = UnsyncBoxBody<Bytes, BodyError>;

/// Why a response body broke off.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// How often open watches that allow bookmarks get one by default (the watch cache's
/// `bookmarkFrequency`).
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// What tests do to the watches open at the time ([`crate::FakeApiServer::kill_watches`], …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchControl {
    /// Break every open watch connection abruptly (the body ends with an error: no final
    /// chunk, the TCP connection is dropped).
    Kill,
    /// Keep every open watch connection open but send nothing more, bookmarks included (a
    /// frozen watch still obeys `Kill` and `Expire`).
    Freeze,
    /// End every open watch with an `ERROR` event `410 Expired`, as the watch cache does to a
    /// watcher it dropped; the client must list again.
    Expire,
    /// The resource stopped being served (its CRD was deleted): its watches end, as the real
    /// apiserver ends them when it tears down a custom resource's storage.
    Unserve(StoreKey),
}

/// The Secret size limit (`corevalidation.MaxSecretSize`).
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// How many events per resource the watch log keeps before older resourceVersions expire (410).
const EVENT_LOG_CAP: usize = 10_000;

type StoreKey = (String, String);
type ObjKey = (String, String);

/// A watch event as stored in the log and broadcast to open watches.
#[derive(Clone, Debug)]
pub struct Event {
    pub key: StoreKey,
    pub kind: &'static str,
    pub rv: u64,
    pub object: Value,
    /// The object before a MODIFIED (for selector transitions).
    pub old: Option<Value>,
}

pub struct State {
    pub rv: u64,
    pub resources: Vec<Resource>,
    pub objects: BTreeMap<StoreKey, BTreeMap<ObjKey, Value>>,
    pub log: BTreeMap<StoreKey, VecDeque<Event>>,
    /// Watches from a resourceVersion below this get 410 Expired.
    pub floor: u64,
    pub tx: broadcast::Sender<Arc<Event>>,
    pub stats: Stats,
    pub faults: Vec<Fault>,
    pub watch_cap: Option<Duration>,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// Tells the open watches to break, freeze or end.
    pub watch_ctl: broadcast::Sender<WatchControl>,
    /// Watch streams open now.
    pub open_watches: Arc<std::sync::atomic::AtomicUsize>,
    /// What the absent controllers would do, when a test asks for it.
    pub controllers: Controllers,
}

/// Switches that stand in for kube-controller-manager and the kubelet: without them objects
/// only ever have the status clients write, as on a server with no controllers running.
#[derive(Clone, Copy, Debug, Default)]
pub struct Controllers {
    /// A Job (and a Pod with `restartPolicy: Never`/`OnFailure`) completes as soon as it is
    /// written: `Complete`/`Succeeded`, as chart hooks and hook Jobs wait for.
    pub complete_jobs: bool,
    /// Deployments, StatefulSets, DaemonSets and ReplicaSets report every replica ready and
    /// available for their current generation.
    pub workloads_ready: bool,
}

pub type Shared = Arc<Mutex<State>>;

pub fn lock(s: &Shared) -> MutexGuard<'_, State> {
    // A panic in another test thread must not poison every later request.
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    pub fn new() -> State {
        let (tx, _) = broadcast::channel(4096);
        let mut st = State {
            rv: 1,
            resources: resources::builtins(),
            objects: BTreeMap::new(),
            log: BTreeMap::new(),
            floor: 0,
            tx,
            stats: Stats::default(),
            faults: Vec::new(),
            watch_cap: None,
            bookmark_interval: BOOKMARK_INTERVAL,
            watch_ctl: broadcast::channel(16).0,
            open_watches: Arc::default(),
            controllers: Controllers::default(),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let res = st.resource_by_plural("", "namespaces").cloned();
            if let Some(res) = res {
                let _ = st.create(&res, "", obj, "kube-apiserver", false);
            }
        }
        st
    }

    pub fn resource_by_plural(&self, group: &str, plural: &str) -> Option<&Resource> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.plural == plural)
    }

    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<&Resource> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    pub fn get_obj(&self, res: &Resource, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&res.key())?
            .get(&(ns.to_string(), name.to_string()))
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn emit(&mut self, key: StoreKey, kind: &'static str, object: Value, old: Option<Value>) {
        let rv = self.rv;
        let ev = Event {
            key: key.clone(),
            kind,
            rv,
            object,
            old,
        };
        let log = self.log.entry(key).or_default();
        log.push_back(ev.clone());
        if log.len() > EVENT_LOG_CAP
            && let Some(dropped) = log.pop_front()
        {
            self.floor = self.floor.max(dropped.rv);
        }
        let _ = self.tx.send(Arc::new(ev));
    }

    /// Stores a new version of an object: bumps the global counter, stamps the object and emits.
    fn store(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        mut obj: Value,
        kind: &'static str,
    ) -> Value {
        let rv = self.next_rv();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        let old = self
            .objects
            .entry(res.key())
            .or_default()
            .insert((ns.to_string(), name.to_string()), obj.clone());
        self.emit(res.key(), kind, obj.clone(), old);
        // A controller's status write follows the client's write, as its own event.
        if kind != "DELETED"
            && let Some(status) = self.simulated_status(res, &obj)
        {
            let mut next = obj;
            next["status"] = status;
            return self.store(res, ns, name, next, "MODIFIED");
        }
        obj
    }

    /// The status the switched-on [`Controllers`] would write for `obj`, if it differs from
    /// what it has.
    fn simulated_status(&self, res: &Resource, obj: &Value) -> Option<Value> {
        if !obj["metadata"]["deletionTimestamp"].is_null() {
            return None;
        }
        let c = self.controllers;
        let status = match (res.group.as_str(), res.plural.as_str()) {
            ("batch", "jobs") if c.complete_jobs => {
                let done = obj["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Complete" && c["status"] == "True")
                });
                if done {
                    return None;
                }
                let t = now();
                json!({
                    "startTime": t, "completionTime": t, "succeeded": 1, "ready": 0, "active": 0,
                    "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": t, "lastTransitionTime": t},
                        {"type": "Complete", "status": "True", "lastProbeTime": t, "lastTransitionTime": t},
                    ],
                })
            }
            ("", "pods") if c.complete_jobs => {
                let restart = obj["spec"]["restartPolicy"].as_str().unwrap_or("Always");
                if restart == "Always" || obj["status"]["phase"] == "Succeeded" {
                    return None;
                }
                json!({"phase": "Succeeded", "startTime": now()})
            }
            ("apps", "deployments" | "statefulsets" | "replicasets") if c.workloads_ready => {
                let n = obj["spec"]["replicas"].as_i64().unwrap_or(1);
                let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
                if obj["status"]["observedGeneration"].as_i64() == Some(generation)
                    && obj["status"]["readyReplicas"].as_i64().unwrap_or(0) == n
                {
                    return None;
                }
                let mut st = json!({
                    "observedGeneration": generation, "replicas": n, "readyReplicas": n,
                    "availableReplicas": n, "updatedReplicas": n,
                });
                if res.plural == "deployments" {
                    let t = now();
                    st["conditions"] = json!([
                        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": t, "lastTransitionTime": t},
                        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": t, "lastTransitionTime": t},
                    ]);
                } else if res.plural == "statefulsets" {
                    st["currentReplicas"] = json!(n);
                }
                st
            }
            ("apps", "daemonsets") if c.workloads_ready => {
                let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
                if obj["status"]["observedGeneration"].as_i64() == Some(generation) {
                    return None;
                }
                json!({
                    "observedGeneration": generation, "desiredNumberScheduled": 1,
                    "currentNumberScheduled": 1, "numberReady": 1, "numberAvailable": 1,
                    "updatedNumberScheduled": 1, "numberMisscheduled": 0,
                })
            }
            _ => return None,
        };
        Some(status)
    }

    /// Removes an object for real: DELETED event with the deletion's resourceVersion, then the
    /// minimal garbage collection (dependents whose every owner is gone) and namespace cleanup.
    fn remove(&mut self, res: &Resource, ns: &str, name: &str) -> Option<Value> {
        let mut obj = self
            .objects
            .get_mut(&res.key())?
            .remove(&(ns.to_string(), name.to_string()))?;
        let rv = self.next_rv();
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.emit(res.key(), "DELETED", obj.clone(), None);
        if res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions" {
            let crd = obj["metadata"]["name"].as_str().map(str::to_string);
            let gone: Vec<Resource> = self
                .resources
                .iter()
                .filter(|r| r.crd.is_some() && r.crd == crd)
                .cloned()
                .collect();
            // Its custom resources go first, each with a DELETED event.
            if let Some(r) = gone.first() {
                let names: Vec<ObjKey> = self
                    .objects
                    .get(&r.key())
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
                for (ons, oname) in names {
                    self.remove(r, &ons, &oname);
                }
                self.objects.remove(&r.key());
            }
            for r in &gone {
                let _ = self.watch_ctl.send(WatchControl::Unserve(r.key()));
            }
            self.resources
                .retain(|r| !(r.crd.is_some() && r.crd == crd));
        }
        if res.group.is_empty() && res.plural == "namespaces" {
            self.delete_namespace_contents(name);
        }
        self.collect_garbage();
        if !ns.is_empty() {
            self.finish_namespace(ns);
        }
        Some(obj)
    }

    fn all_uids(&self) -> std::collections::BTreeSet<String> {
        self.objects
            .values()
            .flat_map(|m| m.values())
            .filter_map(|o| o["metadata"]["uid"].as_str().map(str::to_string))
            .collect()
    }

    /// Deletes objects all of whose owners are gone (the background garbage collector, run at once).
    fn collect_garbage(&mut self) {
        loop {
            let uids = self.all_uids();
            let mut victims = Vec::new();
            for (key, objs) in &self.objects {
                for ((ns, name), o) in objs {
                    if let Some(refs) = o["metadata"]["ownerReferences"].as_array()
                        && !refs.is_empty()
                        && refs
                            .iter()
                            .all(|r| !r["uid"].as_str().is_some_and(|u| uids.contains(u)))
                        && o["metadata"]["deletionTimestamp"].is_null()
                    {
                        victims.push((key.clone(), ns.clone(), name.clone()));
                    }
                }
            }
            if victims.is_empty() {
                return;
            }
            for (key, ns, name) in victims {
                if let Some(res) = self.resource_by_plural(&key.0, &key.1).cloned() {
                    self.delete_inner(&res, &ns, &name, "Background");
                }
            }
        }
    }

    fn delete_namespace_contents(&mut self, ns: &str) {
        let mut victims = Vec::new();
        for (key, objs) in &self.objects {
            for (ons, name) in objs.keys() {
                if ons == ns {
                    victims.push((key.clone(), name.clone()));
                }
            }
        }
        for (key, name) in victims {
            if let Some(res) = self.resource_by_plural(&key.0, &key.1).cloned() {
                self.delete_inner(&res, ns, &name, "Background");
            }
        }
    }

    /// A terminating namespace goes once it is empty.
    fn finish_namespace(&mut self, ns: &str) {
        let Some(nsres) = self.resource_by_plural("", "namespaces").cloned() else {
            return;
        };
        let terminating = self
            .get_obj(&nsres, "", ns)
            .is_some_and(|o| !o["metadata"]["deletionTimestamp"].is_null());
        let empty = self
            .objects
            .iter()
            .all(|(_, objs)| objs.keys().all(|(ons, _)| ons != ns));
        if terminating && empty {
            self.remove(&nsres, "", ns);
        }
    }

    /// Deletes (or starts deleting) an object. Returns the object if it stays (finalizers), or
    /// `None` if it is gone.
    fn delete_inner(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        policy: &str,
    ) -> Option<Value> {
        let live = self.get_obj(res, ns, name)?.clone();
        let mut obj = live.clone();
        let mut finalizers: Vec<Value> = obj["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let uid = obj["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // The garbage collector runs at once: Orphan strips this owner from dependents, Foreground
        // deletes them first; neither finalizer then needs to stay.
        match policy {
            "Orphan" => self.orphan_dependents(&uid),
            "Foreground" => self.delete_dependents(&uid),
            _ => {}
        }
        if res.group.is_empty() && res.plural == "namespaces" {
            self.delete_namespace_contents(name);
            let still_has_content = self
                .objects
                .iter()
                .any(|(_, objs)| objs.keys().any(|(ons, _)| ons == name));
            if still_has_content {
                if obj["metadata"]["deletionTimestamp"].is_null() {
                    obj["metadata"]["deletionTimestamp"] = json!(now());
                    obj["status"]["phase"] = json!("Terminating");
                    return Some(self.store(res, ns, name, obj, "MODIFIED"));
                }
                return Some(live);
            }
        }
        finalizers.retain(|f| !matches!(f.as_str(), Some("orphan" | "foregroundDeletion")));
        if finalizers.is_empty() {
            self.remove(res, ns, name);
            return None;
        }
        if obj["metadata"]["deletionTimestamp"].is_null() {
            obj["metadata"]["deletionTimestamp"] = json!(now());
            obj["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            return Some(self.store(res, ns, name, obj, "MODIFIED"));
        }
        Some(live)
    }

    fn dependents(&self, uid: &str) -> Vec<(Resource, String, String)> {
        let mut out = Vec::new();
        for (key, objs) in &self.objects {
            for ((ns, name), o) in objs {
                let owned = o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|r| r["uid"].as_str() == Some(uid)));
                if owned && let Some(res) = self.resource_by_plural(&key.0, &key.1) {
                    out.push((res.clone(), ns.clone(), name.clone()));
                }
            }
        }
        out
    }

    fn orphan_dependents(&mut self, uid: &str) {
        for (res, ns, name) in self.dependents(uid) {
            if let Some(mut o) = self.get_obj(&res, &ns, &name).cloned() {
                if let Some(refs) = o["metadata"]["ownerReferences"].as_array_mut() {
                    refs.retain(|r| r["uid"].as_str() != Some(uid));
                    if refs.is_empty() {
                        o["metadata"]
                            .as_object_mut()
                            .map(|m| m.remove("ownerReferences"));
                    }
                }
                self.store(&res, &ns, &name, o, "MODIFIED");
            }
        }
    }

    fn delete_dependents(&mut self, uid: &str) {
        for (res, ns, name) in self.dependents(uid) {
            self.delete_inner(&res, &ns, &name, "Foreground");
        }
    }

    /// Creates an object (POST semantics) as `manager`. Used for seeding namespaces too.
    fn create(
        &mut self,
        res: &Resource,
        ns: &str,
        mut obj: Value,
        manager: &str,
        dry_run: bool,
    ) -> Result<Value, Response<ResponseBody>> {
        let Value::Object(_) = obj else {
            return Err(status(
                400,
                "BadRequest",
                "the body of the request was not a JSON object",
                None,
            ));
        };
        check_type(res, &mut obj)?;
        let name = match obj["metadata"]["name"].as_str() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => match obj["metadata"]["generateName"].as_str() {
                Some(prefix) if !prefix.is_empty() => {
                    let suffix: String = uuid::Uuid::new_v4()
                        .simple()
                        .to_string()
                        .chars()
                        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                        .take(5)
                        .collect();
                    format!("{prefix}{suffix}")
                }
                _ => {
                    return Err(invalid(
                        res,
                        "",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        check_namespace(self, res, ns, &mut obj)?;
        if self.get_obj(res, ns, &name).is_some() {
            return Err(status(
                409,
                "AlreadyExists",
                &format!("{} {:?} already exists", qualified(res), name),
                Some(details(res, &name)),
            ));
        }
        obj["metadata"]["name"] = json!(name);
        strip_server_fields(&mut obj);
        if res.status {
            drop_status_on_create(res, &mut obj);
        }
        normalize(res, &mut obj)?;
        validate(res, None, &obj, &name)?;
        let writer = update_manager(manager, res, "");
        let base = create_base(&obj);
        let managers = ssa::update(
            schema(res),
            &base,
            &strip_managed(&obj),
            Vec::new(),
            writer,
            &|s| ignored(res, "", s),
        )
        .map_err(|e| status(422, "Invalid", &e, None))?;
        let stamped = stamp_managers(&strip_managed(&obj), managers, Some(manager), None, true);
        let mut obj = stamped;
        obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
        obj["metadata"]["creationTimestamp"] = json!(now());
        if res.generation {
            obj["metadata"]["generation"] = json!(1);
        }
        on_create_hook(res, &mut obj);
        allocate_service_ip(self, res, &mut obj);
        if dry_run {
            return Ok(obj);
        }
        let stored = self.store(res, ns, &name, obj, "ADDED");
        self.after_write(res, &stored);
        Ok(stored)
    }

    /// Side effects of stored objects: CRDs join the resource table.
    fn after_write(&mut self, res: &Resource, obj: &Value) {
        if res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions" {
            let new = resources::from_crd(obj);
            let name = obj["metadata"]["name"].as_str().map(str::to_string);
            self.resources.retain(|r| r.crd.is_none() || r.crd != name);
            self.resources.extend(new);
        }
    }

    /// The common end of every update of an existing object: normalisation, validation, no-op
    /// detection (nothing bumps, nothing is emitted), generation, storing, and the real removal
    /// of a terminating object whose last finalizer went.
    #[allow(clippy::too_many_arguments)]
    fn finish_update(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        live: &Value,
        mut new: Value,
        managers: Vec<Manager>,
        writer: &str,
        dry_run: bool,
    ) -> Result<Value, Response<ResponseBody>> {
        // Server-owned metadata always comes from the live object.
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match live["metadata"].get(k) {
                Some(v) => new["metadata"][k] = v.clone(),
                None => {
                    if let Some(m) = new["metadata"].as_object_mut() {
                        m.remove(k);
                    }
                }
            }
        }
        new["metadata"]["name"] = json!(name);
        if res.namespaced {
            new["metadata"]["namespace"] = json!(ns);
        }
        new["apiVersion"] = json!(res.api_version());
        new["kind"] = json!(res.kind);
        keep_allocated_values(res, live, &mut new);
        normalize(res, &mut new)?;
        validate(res, Some(live), &new, name)?;
        let live_managers = managers_of(live);
        let same_sets = live_managers.len() == managers.len()
            && live_managers
                .iter()
                .zip(&managers)
                .all(|(a, b)| a.same_identity(b) && a.set == b.set);
        let same_content = strip_managed(live) == strip_managed(&new);
        if same_content && same_sets {
            return Ok(live.clone());
        }
        let mut new = stamp_managers(
            &strip_managed(&new),
            managers,
            Some(writer),
            Some(&live_managers),
            !same_content,
        );
        if res.generation && spec_changed(live, &new) {
            let g = live["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(g);
        }
        if dry_run {
            return Ok(new);
        }
        let terminating = !new["metadata"]["deletionTimestamp"].is_null();
        let no_finalizers = new["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty());
        if terminating && no_finalizers {
            self.objects
                .entry(res.key())
                .or_default()
                .insert((ns.to_string(), name.to_string()), new.clone());
            return Ok(self.remove(res, ns, name).unwrap_or(new));
        }
        let stored = self.store(res, ns, name, new, "MODIFIED");
        self.after_write(res, &stored);
        Ok(stored)
    }
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn schema(res: &Resource) -> Schema<'_> {
    Schema {
        group: &res.group,
        kind: &res.kind,
    }
}

/// `configmaps` or `deployments.apps`, as NotFound/AlreadyExists messages name a resource.
fn qualified(res: &Resource) -> String {
    if res.group.is_empty() {
        res.plural.clone()
    } else {
        format!("{}.{}", res.plural, res.group)
    }
}

fn details(res: &Resource, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": res.plural});
    if !res.group.is_empty() {
        d["group"] = json!(res.group);
    }
    d
}

/// A whole body.
pub fn full(b: Bytes) -> ResponseBody {
    Full::new(b).map_err(|never| match never {}).boxed_unsync()
}

pub fn json_response(code: u16, v: &Value) -> Response<ResponseBody> {
    let body = serde_json::to_vec(v).unwrap_or_default();
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .body(full(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

pub fn status_value(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if reason.is_empty() {
        v.as_object_mut().map(|m| m.remove("reason"));
    }
    if let Some(d) = details {
        v["details"] = d;
    }
    v
}

pub fn status(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
) -> Response<ResponseBody> {
    json_response(code, &status_value(code, reason, message, details))
}

fn not_found(res: &Resource, name: &str) -> Response<ResponseBody> {
    status(
        404,
        "NotFound",
        &format!("{} {:?} not found", qualified(res), name),
        Some(details(res, name)),
    )
}

/// A 422 Invalid: `ConfigMap "x" is invalid: data: Too long: ...` with one FieldValueInvalid cause.
fn invalid(res: &Resource, name: &str, field: &str, msg: &str) -> Response<ResponseBody> {
    let cause_reason = if msg.starts_with("Required value") {
        "FieldValueRequired"
    } else if msg.starts_with("Forbidden") {
        "FieldValueForbidden"
    } else if msg.starts_with("Too long") {
        "FieldValueTooLong"
    } else {
        "FieldValueInvalid"
    };
    let mut d = json!({
        "name": name,
        "kind": res.kind,
        "causes": [{"reason": cause_reason, "message": msg, "field": field}],
    });
    if !res.group.is_empty() {
        d["group"] = json!(res.group);
    }
    status(
        422,
        "Invalid",
        &format!("{} {:?} is invalid: {}: {}", res.kind, name, field, msg),
        Some(d),
    )
}

fn check_type(res: &Resource, obj: &mut Value) -> Result<(), Response<ResponseBody>> {
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if k != res.kind => {
            return Err(status(
                400,
                "BadRequest",
                &format!(
                    "the kind of the provided object ({k}) does not match the kind of the URL ({})",
                    res.kind
                ),
                None,
            ));
        }
        _ => {}
    }
    obj["apiVersion"] = json!(res.api_version());
    obj["kind"] = json!(res.kind);
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    Ok(())
}

fn check_namespace(
    st: &State,
    res: &Resource,
    ns: &str,
    obj: &mut Value,
) -> Result<(), Response<ResponseBody>> {
    if !res.namespaced {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        return Ok(());
    }
    match obj["metadata"]["namespace"].as_str() {
        Some(b) if !b.is_empty() && b != ns => {
            return Err(status(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
                None,
            ));
        }
        _ => {}
    }
    obj["metadata"]["namespace"] = json!(ns);
    let Some(nsres) = st.resource_by_plural("", "namespaces") else {
        return Ok(());
    };
    match st.get_obj(nsres, "", ns) {
        None => Err(status(
            404,
            "NotFound",
            &format!("namespaces {ns:?} not found"),
            Some(json!({"name": ns, "kind": "namespaces"})),
        )),
        Some(n) if !n["metadata"]["deletionTimestamp"].is_null() => Err(status(
            403,
            "Forbidden",
            &format!(
                "{} {:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                qualified(res),
                obj["metadata"]["name"].as_str().unwrap_or_default()
            ),
            Some(
                json!({"name": obj["metadata"]["name"], "kind": res.plural, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}),
            ),
        )),
        Some(_) => Ok(()),
    }
}

fn strip_server_fields(obj: &mut Value) {
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            m.remove(k);
        }
    }
}

fn drop_status_on_create(res: &Resource, obj: &mut Value) {
    // PrepareForCreate of resources with a status subresource resets status.
    if !(res.group.is_empty() && res.plural == "namespaces")
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
}

/// The object a create is compared against: the Go zero value of the type carries an empty
/// `metadata` and, for spec-bearing types, an empty `spec`, so those are never "added" maps.
fn create_base(obj: &Value) -> Value {
    let mut base = json!({"metadata": {}});
    if obj["spec"].is_object() {
        base["spec"] = json!({});
    }
    base
}

pub fn strip_managed(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    o
}

pub fn managers_of(obj: &Value) -> Vec<Manager> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(Manager::from_json).collect())
        .unwrap_or_default()
}

/// Writes managers into the object: the entry whose set changed (or the writer's) gets the current
/// time, others keep theirs; the list is sorted like the apiserver's.
/// `managedFieldsUpdater`: the writer's entry is stamped when the write changed the object or its
/// own set.
fn stamp_managers(
    obj: &Value,
    mut managers: Vec<Manager>,
    writer: Option<&str>,
    before: Option<&[Manager]>,
    content_changed: bool,
) -> Value {
    let t = now();
    for m in managers.iter_mut() {
        let prev = before.and_then(|b| b.iter().find(|p| p.same_identity(m)));
        let changed = content_changed || prev.is_none_or(|p| p.set != m.set);
        if m.time.is_none() || (writer == Some(m.manager.as_str()) && changed) {
            m.time = Some(t.clone());
        }
    }
    ssa::sort_managers(&mut managers);
    let mut o = obj.clone();
    if !managers.is_empty() {
        o["metadata"]["managedFields"] =
            Value::Array(managers.iter().map(Manager::to_json).collect());
    }
    o
}

fn update_manager(manager: &str, res: &Resource, subresource: &str) -> Manager {
    Manager {
        manager: manager.to_string(),
        operation: "Update".to_string(),
        api_version: res.api_version(),
        time: None,
        subresource: subresource.to_string(),
        set: FieldSet::new(),
    }
}

/// The fields the field manager never tracks (`stripMeta` and the status/main-resource split).
pub fn ignored(res: &Resource, subresource: &str, s: &FieldSet) -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut out = s.clone();
    if subresource == "status" {
        let mut keep = FieldSet::new();
        for p in s.paths() {
            if p.first() == Some(&f("status")) {
                keep.insert(&p);
            }
        }
        return keep;
    }
    out.remove_subtree(&[f("apiVersion")]);
    out.remove_subtree(&[f("kind")]);
    for m in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        out.remove_subtree(&[f("metadata"), f(m)]);
    }
    if res.status {
        out.remove_subtree(&[f("status")]);
    }
    out
}

fn spec_changed(old: &Value, new: &Value) -> bool {
    let body = |v: &Value| {
        let mut o = v.clone();
        if let Some(m) = o.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        o
    };
    body(old) != body(new)
}

/// The value at `path` if every step is an object field (never creates anything, unlike
/// `serde_json`'s `IndexMut`).
fn at_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, seg| v.get_mut(*seg))
}

/// The object map at `key` of `v`, created if absent; `None` if `v` is not an object or the
/// field holds something else (left for validation to reject, never a panic).
fn object_at<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut serde_json::Map<String, Value>> {
    let m = v.as_object_mut()?;
    m.entry(key.to_string())
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// Defaults `protocol: TCP` on every item of a ports list.
fn default_protocols(ports: Option<&mut Value>) {
    for p in ports.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(m) = p.as_object_mut()
            && m.get("protocol").is_none_or(Value::is_null)
        {
            m.insert("protocol".to_string(), json!("TCP"));
        }
    }
}

/// Removes `null` map entries: Go's typed objects never serialise a nil field, so an applied
/// `annotations: null` leaves no key behind (the applier still owns the path).
fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Server-side defaulting and type rules applied to every stored object.
fn normalize(res: &Resource, obj: &mut Value) -> Result<(), Response<ResponseBody>> {
    drop_nulls(obj);
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match (res.group.as_str(), res.kind.as_str()) {
        ("", "Secret") => {
            // stringData is write-only: merged into data, never stored.
            let string_data = obj.as_object_mut().and_then(|m| m.remove("stringData"));
            if let Some(Value::Object(sd)) = string_data {
                use base64::Engine;
                if let Some(data) = object_at(obj, "data") {
                    for (k, v) in sd {
                        let s = v.as_str().unwrap_or_default();
                        data.insert(
                            k,
                            json!(base64::engine::general_purpose::STANDARD.encode(s)),
                        );
                    }
                }
            }
            if obj["type"].is_null()
                && let Some(m) = obj.as_object_mut()
            {
                m.insert("type".to_string(), json!("Opaque"));
            }
        }
        ("", "Service") => {
            if let Some(ports) = at_mut(obj, &["spec", "ports"]).and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if p.get("protocol").is_none_or(Value::is_null) {
                        p.insert("protocol".to_string(), json!("TCP"));
                    }
                    if p.get("targetPort").is_none_or(Value::is_null)
                        && let Some(port) = p.get("port").cloned()
                    {
                        p.insert("targetPort".to_string(), port);
                    }
                }
            }
            if let Some(spec) = at_mut(obj, &["spec"]).and_then(Value::as_object_mut)
                && spec.get("type").is_none_or(Value::is_null)
            {
                spec.insert("type".to_string(), json!("ClusterIP"));
            }
        }
        ("", "Namespace") => {
            let phase = if obj["metadata"]["deletionTimestamp"].is_null() {
                "Active"
            } else {
                "Terminating"
            };
            if let Some(st) = object_at(obj, "status") {
                st.insert("phase".to_string(), json!(phase));
            }
            if let Some(spec) = object_at(obj, "spec") {
                spec.entry("finalizers".to_string())
                    .or_insert_with(|| json!(["kubernetes"]));
            }
            if let Some(labels) = obj.get_mut("metadata").and_then(|m| object_at(m, "labels")) {
                labels.insert("kubernetes.io/metadata.name".to_string(), json!(name));
            }
        }
        _ => {}
    }
    if let Some(prefix) = pod_spec_path(res)
        && let Some(spec) = at_mut(obj, prefix)
    {
        for list in ["containers", "initContainers"] {
            for c in spec
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                default_protocols(c.get_mut("ports"));
            }
        }
    }
    Ok(())
}

fn pod_spec_path(res: &Resource) -> Option<&'static [&'static str]> {
    match (res.group.as_str(), res.kind.as_str()) {
        ("", "Pod") => Some(&["spec"]),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") | ("batch", "Job") => {
            Some(&["spec", "template", "spec"])
        }
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// Type validation the tests rely on: Secret size, type and immutability; ConfigMap immutability.
fn validate(
    res: &Resource,
    live: Option<&Value>,
    obj: &Value,
    name: &str,
) -> Result<(), Response<ResponseBody>> {
    if res.group.is_empty() && matches!(res.kind.as_str(), "Secret" | "ConfigMap") {
        if res.kind == "Secret" {
            use base64::Engine;
            let mut total = 0usize;
            if let Some(Value::Object(data)) = obj.get("data") {
                for (k, v) in data {
                    let s = v.as_str().unwrap_or_default();
                    match base64::engine::general_purpose::STANDARD.decode(s) {
                        Ok(b) => total += b.len(),
                        Err(e) => {
                            return Err(status(
                                400,
                                "BadRequest",
                                &format!(
                                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data for key {k:?}: {e}"
                                ),
                                None,
                            ));
                        }
                    }
                }
            }
            if total > MAX_SECRET_SIZE {
                return Err(invalid(
                    res,
                    name,
                    "data",
                    &format!("Too long: may not be more than {MAX_SECRET_SIZE} bytes"),
                ));
            }
            if let Some(l) = live
                && l["type"] != obj["type"]
            {
                return Err(invalid(
                    res,
                    name,
                    "type",
                    &format!("Invalid value: {}: field is immutable", obj["type"]),
                ));
            }
        } else {
            let mut total = 0usize;
            for field in ["data", "binaryData"] {
                if let Some(Value::Object(data)) = obj.get(field) {
                    total += data
                        .iter()
                        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                        .sum::<usize>();
                }
            }
            if total > MAX_SECRET_SIZE {
                return Err(invalid(
                    res,
                    name,
                    "[]",
                    &format!("Too long: may not be more than {MAX_SECRET_SIZE} bytes"),
                ));
            }
        }
        if let Some(l) = live
            && l["immutable"] == json!(true)
        {
            if l["data"] != obj["data"] || l["binaryData"] != obj["binaryData"] {
                return Err(invalid(
                    res,
                    name,
                    "data",
                    "Forbidden: field is immutable when `immutable` is set",
                ));
            }
            if obj["immutable"] != json!(true) {
                return Err(invalid(
                    res,
                    name,
                    "immutable",
                    "Forbidden: field is immutable when `immutable` is set",
                ));
            }
        }
    }
    Ok(())
}

fn on_create_hook(res: &Resource, obj: &mut Value) {
    if res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions" {
        let t = now();
        let names = obj["spec"]["names"].clone();
        obj["status"] = json!({
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t},
            ],
            "storedVersions": obj["spec"]["versions"].as_array().map(|vs| vs.iter().filter(|v| v["storage"] == json!(true)).map(|v| v["name"].clone()).collect::<Vec<_>>()).unwrap_or_default(),
        });
    }
}

/// The Service IP allocator (the service registry's create path): a Service that gets a cluster
/// IP and asks for none gets the lowest free address of 10.96.0.0/12 after 10.96.0.1 (the
/// `kubernetes` Service's), with `clusterIPs`, `ipFamilies` and `ipFamilyPolicy` to match. As on a
/// real server the allocation runs after field tracking, so no manager owns these fields. helm's
/// `--wait` counts a ClusterIP Service without an IP as not ready.
fn allocate_service_ip(st: &State, res: &Resource, obj: &mut Value) {
    if !(res.group.is_empty() && res.plural == "services") {
        return;
    }
    if obj["spec"]["type"].as_str() == Some("ExternalName") {
        return;
    }
    let ip = match obj["spec"]["clusterIP"].as_str() {
        Some(ip) if !ip.is_empty() => ip.to_string(),
        _ => {
            let used: std::collections::BTreeSet<String> = st
                .objects
                .get(&res.key())
                .into_iter()
                .flat_map(|m| m.values())
                .filter_map(|o| o["spec"]["clusterIP"].as_str().map(str::to_string))
                .collect();
            let base = u32::from(std::net::Ipv4Addr::new(10, 96, 0, 2));
            let last = u32::from(std::net::Ipv4Addr::new(10, 111, 255, 254));
            let Some(ip) = (base..=last)
                .map(|n| std::net::Ipv4Addr::from(n).to_string())
                .find(|ip| !used.contains(ip))
            else {
                return;
            };
            ip
        }
    };
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    spec.insert("clusterIP".to_string(), json!(ip));
    spec.insert("clusterIPs".to_string(), json!([ip]));
    spec.entry("ipFamilies".to_string())
        .or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy".to_string())
        .or_insert_with(|| json!("SingleStack"));
}

/// An update that leaves out a Service's allocated cluster IP keeps it (the service registry's
/// `patchAllocatedValues`), as `kubectl replace` and `helm upgrade --force` rely on.
fn keep_allocated_values(res: &Resource, live: &Value, new: &mut Value) {
    if !(res.group.is_empty() && res.plural == "services") {
        return;
    }
    if new["spec"]["type"].as_str() == Some("ExternalName") {
        return;
    }
    let unset = |v: &Value| v.as_str().is_none_or(str::is_empty);
    if unset(&new["spec"]["clusterIP"])
        && !unset(&live["spec"]["clusterIP"])
        && let Some(spec) = object_at(new, "spec")
    {
        spec.insert("clusterIP".to_string(), live["spec"]["clusterIP"].clone());
        if !live["spec"]["clusterIPs"].is_null() {
            spec.insert("clusterIPs".to_string(), live["spec"]["clusterIPs"].clone());
        }
    }
}

/// A parsed request URL.
struct Route {
    group: String,
    version: String,
    plural: String,
    ns: String,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_route(st: &State, segs: &[&str]) -> Option<Route> {
    let (group, version, rest) = match segs {
        ["api", v, rest @ ..] => (String::new(), v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (g.to_string(), v.to_string(), rest),
        _ => return None,
    };
    let is_namespaced_plural = |p: &str| {
        st.resources
            .iter()
            .any(|r| r.group == group && r.version == version && r.plural == p && r.namespaced)
    };
    let (ns, rest): (String, &[&str]) = match rest {
        ["namespaces", ns, p, ..] if is_namespaced_plural(p) => (ns.to_string(), &rest[2..]),
        _ => (String::new(), rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (p.to_string(), None, None),
        [p, n] => (p.to_string(), Some(n.to_string()), None),
        [p, n, s] => (p.to_string(), Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    Some(Route {
        group,
        version,
        plural,
        ns,
        name,
        sub,
    })
}

fn query_map(q: Option<&str>) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for pair in q.unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let dec = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        m.insert(dec(k), dec(v));
    }
    m
}

fn discovery(st: &State, segs: &[&str]) -> Option<Value> {
    match segs {
        ["version"] => Some(json!({
            "major": "1", "minor": format!("{}", crate::resources::KUBERNETES_MINOR), "gitVersion": format!("v1.{}.0-fake", crate::resources::KUBERNETES_MINOR), "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc", "platform": "linux/amd64"
        })),
        ["api"] => Some(json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
        })),
        ["apis"] => {
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for r in st.resources.iter().filter(|r| !r.group.is_empty()) {
                match groups.iter_mut().find(|(g, _)| *g == r.group) {
                    Some((_, vs)) => {
                        if !vs.contains(&r.version) {
                            vs.push(r.version.clone());
                        }
                    }
                    None => groups.push((r.group.clone(), vec![r.version.clone()])),
                }
            }
            let groups: Vec<Value> = groups
                .iter()
                .map(|(g, vs)| {
                    let versions: Vec<Value> = vs
                        .iter()
                        .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                        .collect();
                    json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
                })
                .collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["api", v] => resource_list(st, "", v),
        ["apis", g, v] => resource_list(st, g, v),
        ["apis", g] => {
            let versions: Vec<Value> = st
                .resources
                .iter()
                .filter(|r| r.group == *g)
                .map(|r| r.version.clone())
                .fold(Vec::<String>::new(), |mut acc, v| {
                    if !acc.contains(&v) {
                        acc.push(v);
                    }
                    acc
                })
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            if versions.is_empty() {
                return None;
            }
            Some(
                json!({"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": versions, "preferredVersion": versions[0]}),
            )
        }
        _ => None,
    }
}

fn resource_list(st: &State, group: &str, version: &str) -> Option<Value> {
    let rs: Vec<&Resource> = st
        .resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for r in rs {
        list.push(r.discovery());
        if r.status {
            list.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"]}));
        }
        if r.scale() {
            list.push(json!({"name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

/// The verb a request counts as.
fn verb_of(method: &Method, route: &Route, q: &BTreeMap<String, String>) -> &'static str {
    let watch = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    match (method, route.name.is_some()) {
        (&Method::GET, true) => "get",
        (&Method::GET, false) if watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unknown",
    }
}

/// Handles one request whose body has been read.
pub async fn handle(shared: Shared, req: Request<Bytes>) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().trim_end_matches('/').to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let q = query_map(parts.uri.query());
    let user_agent = parts
        .headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let meta_only = parts
        .headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=PartialObjectMetadata"));
    let content_type = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();

    if std::env::var_os("FAKE_APISERVER_LOG").is_some() {
        // A request log for finding out what a client really sends (method, path, media types).
        eprintln!(
            "fake-apiserver: {} {} content-type={:?} accept={:?} ua={:?}",
            parts.method,
            parts.uri,
            parts.headers.get("content-type"),
            parts.headers.get("accept"),
            user_agent
        );
    }
    let (route, res, verb, fault) = {
        let mut st = lock(&shared);
        st.stats.total += 1;
        if matches!(segs.as_slice(), ["healthz" | "readyz" | "livez"]) {
            return Response::builder()
                .header("content-type", "text/plain")
                .body(full(Bytes::from_static(b"ok")))
                .unwrap_or_else(|_| Response::new(full(Bytes::new())));
        }
        if parts.method == Method::POST
            && let ["fake-admin", "watches", what @ ("kill" | "freeze")] = segs.as_slice()
        {
            let c = if *what == "kill" {
                WatchControl::Kill
            } else {
                WatchControl::Freeze
            };
            let _ = st.watch_ctl.send(c);
            let n = st.open_watches.load(std::sync::atomic::Ordering::SeqCst);
            return json_response(200, &json!({ "watches": n }));
        }
        if parts.method == Method::GET && segs.starts_with(&["openapi", "v3"]) {
            st.stats.discovery += 1;
            let doc = match &segs[2..] {
                [] => Some(openapi::root(&st.resources)),
                rest => openapi::group_version(&st.resources, &rest.join("/")),
            };
            return match doc {
                Some(d) => json_response(200, &d),
                None => status(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                    Some(json!({})),
                ),
            };
        }
        if parts.method == Method::GET
            && let Some(v) = discovery(&st, &segs)
        {
            st.stats.discovery += 1;
            return json_response(200, &v);
        }
        let Some(route) = parse_route(&st, &segs) else {
            return status(
                404,
                "NotFound",
                "the server could not find the requested resource",
                Some(json!({})),
            );
        };
        let Some(res) = st
            .resource(&route.group, &route.version, &route.plural)
            .cloned()
        else {
            return status(
                404,
                "NotFound",
                "the server could not find the requested resource",
                Some(json!({})),
            );
        };
        let verb = verb_of(&parts.method, &route, &q);
        match verb {
            "get" => st.stats.get += 1,
            "list" => st.stats.list += 1,
            "watch" => st.stats.watch += 1,
            "create" => st.stats.create += 1,
            "update" => st.stats.update += 1,
            "patch" => st.stats.patch += 1,
            "delete" | "deletecollection" => st.stats.delete += 1,
            _ => {}
        }
        if matches!(
            verb,
            "create" | "update" | "patch" | "delete" | "deletecollection"
        ) {
            let resource = match res.group.as_str() {
                "" => res.plural.clone(),
                g => format!("{}.{g}", res.plural),
            };
            *st.stats
                .writes_by_agent
                .entry(user_agent.clone())
                .or_default()
                .entry(resource)
                .or_default() += 1;
        }
        let name = route.name.clone();
        let fault = take_fault(&mut st, verb, &res, name.as_deref());
        (route, res, verb, fault)
    };

    if let Some(f) = fault {
        match f {
            FaultAction::Fail { code, message } => {
                let reason = match code {
                    400 => "BadRequest",
                    401 => "Unauthorized",
                    403 => "Forbidden",
                    404 => "NotFound",
                    409 => "Conflict",
                    410 => "Expired",
                    422 => "Invalid",
                    429 => "TooManyRequests",
                    500 => "InternalError",
                    503 => "ServiceUnavailable",
                    504 => "Timeout",
                    _ => "",
                };
                return status(code, reason, &message, None);
            }
            FaultAction::Delay(d) => tokio::time::sleep(d).await,
            FaultAction::DeleteObject => {
                let mut st = lock(&shared);
                if let Some(name) = &route.name {
                    st.delete_inner(&res, &route.ns, name, "Background");
                }
            }
        }
    }

    if !accepts_json(parts.headers.get("accept").and_then(|v| v.to_str().ok())) {
        // The fake writes JSON only. client-go's typed clients ask for
        // `application/vnd.kubernetes.protobuf,application/json` and get JSON; a client that
        // takes protobuf alone gets negotiation.NewNotAcceptableError, as from a real server for
        // a media type it cannot produce.
        return status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json",
            None,
        );
    }

    if res.namespaced && route.ns.is_empty() && !matches!(verb, "list" | "watch") {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(json!({})),
        );
    }

    let manager = q
        .get("fieldManager")
        .cloned()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| {
            // managerOrUserAgent / prefixFromUserAgent: the user agent up to the first "/" (empty
            // without a user agent, as kube's in-process client sends none; the entry then has no
            // `manager` key).
            user_agent.split('/').next().unwrap_or("").to_string()
        });
    let dry_run = q.get("dryRun").is_some_and(|d| d == "All");
    let sub = route.sub.clone().unwrap_or_default();
    let known_sub = sub.is_empty()
        || (sub == "status" && res.status)
        || (sub == "scale" && res.scale())
        || (sub == "finalize" && res.plural == "namespaces");
    if !known_sub {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(json!({})),
        );
    }

    if sub == "scale" {
        let mut st = lock(&shared);
        return scale(
            &mut st,
            &res,
            &route,
            verb,
            &body,
            &content_type,
            &manager,
            dry_run,
        );
    }

    match verb {
        "get" => {
            let st = lock(&shared);
            let name = route.name.as_deref().unwrap_or_default();
            match st.get_obj(&res, &route.ns, name) {
                Some(o) => json_response(200, &present(&with_version(o, &res), meta_only)),
                None => not_found(&res, name),
            }
        }
        "list" => list(&shared, &res, &route.ns, &q, meta_only),
        "watch" => watch(&shared, &res, &route.ns, &q, meta_only),
        "create" => {
            let obj = match parse_body(&body, &content_type, &res) {
                Ok(v) => v,
                Err(r) => return r,
            };
            let mut st = lock(&shared);
            match st.create(&res, &route.ns, obj, &manager, dry_run) {
                Ok(o) => json_response(201, &o),
                Err(r) => r,
            }
        }
        "update" => {
            let obj = match parse_body(&body, &content_type, &res) {
                Ok(v) => v,
                Err(r) => return r,
            };
            let mut st = lock(&shared);
            put(&mut st, &res, &route, obj, &manager, &sub, dry_run)
        }
        "patch" => {
            let mut st = lock(&shared);
            patch_req(
                &mut st,
                &res,
                &route,
                &body,
                &content_type,
                &q,
                &manager,
                &sub,
                dry_run,
            )
        }
        "delete" => {
            let opts = delete_options(&body, &content_type, &q);
            let mut st = lock(&shared);
            delete(&mut st, &res, &route, &opts, dry_run)
        }
        "deletecollection" => {
            let opts = delete_options(&body, &content_type, &q);
            let mut st = lock(&shared);
            let (ls, fs) = match selectors(&q) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let names: Vec<(String, String)> = st
                .objects
                .get(&res.key())
                .map(|m| {
                    m.iter()
                        .filter(|((ons, _), o)| {
                            (route.ns.is_empty() || *ons == route.ns)
                                && ls.matches(o)
                                && fs.matches(o)
                        })
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            let mut items = Vec::new();
            for (ns, name) in names {
                let policy = opts["propagationPolicy"]
                    .as_str()
                    .unwrap_or("Background")
                    .to_string();
                let last = st.get_obj(&res, &ns, &name).cloned();
                if !dry_run {
                    st.delete_inner(&res, &ns, &name, &policy);
                }
                if let Some(o) = last {
                    items.push(o);
                }
            }
            json_response(
                200,
                &json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(), "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
            )
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            None,
        ),
    }
}

fn take_fault(
    st: &mut State,
    verb: &str,
    res: &Resource,
    name: Option<&str>,
) -> Option<FaultAction> {
    let idx = st.faults.iter().position(|f| {
        f.times > 0
            && (f.verb == "*"
                || f.verb == verb
                || (f.verb == "delete" && verb == "deletecollection"))
            && (f.resource == "*" || f.resource == res.plural || f.resource == qualified(res))
            && f.name.as_deref().is_none_or(|n| Some(n) == name)
    })?;
    let f = &mut st.faults[idx];
    f.times -= 1;
    let action = f.action.clone();
    if f.times == 0 {
        st.faults.remove(idx);
    }
    Some(action)
}

fn with_version(o: &Value, res: &Resource) -> Value {
    let mut o = o.clone();
    o["apiVersion"] = json!(res.api_version());
    o
}

/// Decodes a create/update body by its media type (JSON, YAML, or Kubernetes protobuf for the
/// kinds [`protobuf`] declares), with the real apiserver's errors: 415 for a media type the
/// resource does not take, 400 for a body that does not decode.
fn parse_body(
    body: &Bytes,
    content_type: &str,
    res: &Resource,
) -> Result<Value, Response<ResponseBody>> {
    if content_type == protobuf::MEDIA_TYPE {
        return match protobuf::decode(body, &res.api_version(), &res.kind) {
            Ok(v) => Ok(v),
            // negotiation.NewUnsupportedMediaTypeError, as for a resource that does not serve
            // protobuf: the fake takes JSON and YAML for every kind.
            Err(protobuf::DecodeError::Unsupported(..)) => Err(unsupported_media_type(&[
                "application/json",
                "application/yaml",
            ])),
            // handlers.transformDecodeError
            Err(protobuf::DecodeError::Malformed { gvk, message }) => Err(status(
                400,
                "BadRequest",
                &match gvk {
                    Some((version, kind)) => format!(
                        "{kind} in version {version:?} cannot be handled as a {}: {message}",
                        res.kind
                    ),
                    None => format!(
                        "the object provided is unrecognized (must be of type {}): {message}",
                        res.kind
                    ),
                },
                None,
            )),
        };
    }
    if !matches!(
        content_type,
        "application/json" | "application/yaml" | "*/*" | ""
    ) {
        return Err(unsupported_media_type(&[
            "application/json",
            "application/yaml",
            protobuf::MEDIA_TYPE,
        ]));
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    if content_type.contains("yaml")
        && let Ok(v) = serde_yaml_ng::from_slice::<Value>(body)
    {
        return Ok(v);
    }
    let text = String::from_utf8_lossy(body);
    let err = serde_json::from_str::<Value>(&text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    Err(status(
        400,
        "BadRequest",
        &format!("couldn't get version/kind; json parse error: {err}"),
        None,
    ))
}

/// Whether an `Accept` header lets the fake answer in JSON (no header means anything).
fn accepts_json(accept: Option<&str>) -> bool {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return true;
    };
    accept.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or_default().trim();
        matches!(media, "application/json" | "application/*" | "*/*")
    })
}

/// 415 UnsupportedMediaType (`negotiation.NewUnsupportedMediaTypeError`).
fn unsupported_media_type(accepted: &[&str]) -> Response<ResponseBody> {
    status(
        415,
        "UnsupportedMediaType",
        &format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
        None,
    )
}

fn selectors(
    q: &BTreeMap<String, String>,
) -> Result<(LabelSelector, FieldSelector), Response<ResponseBody>> {
    let ls = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| status(400, "BadRequest", &e, None))?;
    let fs = FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| status(400, "BadRequest", &e, None))?;
    Ok((ls, fs))
}

/// The `as=PartialObjectMetadata` form of an object (kube's `get_metadata`, `list_metadata`,
/// `watch_metadata`), or the object itself.
fn present(o: &Value, meta_only: bool) -> Value {
    if meta_only {
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o["metadata"]})
    } else {
        o.clone()
    }
}

fn list(
    shared: &Shared,
    res: &Resource,
    ns: &str,
    q: &BTreeMap<String, String>,
    meta_only: bool,
) -> Response<ResponseBody> {
    let (ls, fs) = match selectors(q) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let st = lock(shared);
    // `limit` pages the list (kube-runtime's watcher asks 500 at a time); `continue` resumes
    // after the last key of the previous page. Unlike etcd, later pages show objects as they
    // are now, not as of the first page's resourceVersion (which every page reports): a
    // watch from that version still gets every change since, so watchers stay exact.
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let (after, list_rv) = match q.get("continue").filter(|c| !c.is_empty()) {
        None => (None, st.rv),
        Some(c) => match decode_continue(c) {
            Some((rv, _)) if rv < st.floor => {
                return status(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    None,
                );
            }
            Some((rv, key)) => (Some(key), rv),
            None => {
                return status(
                    400,
                    "BadRequest",
                    &format!("invalid continue token: {c}"),
                    None,
                );
            }
        },
    };
    let mut next: Option<String> = None;
    let items: Vec<Value> = st
        .objects
        .get(&res.key())
        .map(|m| {
            let from = match &after {
                Some(k) => std::ops::Bound::Excluded(k.clone()),
                None => std::ops::Bound::Unbounded,
            };
            let mut out = Vec::new();
            for ((ons, oname), o) in m.range((from, std::ops::Bound::Unbounded)) {
                if !((ns.is_empty() || ons == ns) && ls.matches(o) && fs.matches(o)) {
                    continue;
                }
                if limit.is_some_and(|l| out.len() == l) {
                    next = Some(encode_continue(list_rv, ons, oname));
                    break;
                }
                out.push(present(&with_version(o, res), meta_only));
            }
            out
        })
        .unwrap_or_default();
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if let Some(c) = next {
        metadata["continue"] = json!(c);
    }
    let (kind, api_version) = if meta_only {
        (
            "PartialObjectMetadataList".to_string(),
            "meta.k8s.io/v1".to_string(),
        )
    } else {
        (format!("{}List", res.kind), res.api_version())
    };
    json_response(
        200,
        &json!({
            "kind": kind,
            "apiVersion": api_version,
            "metadata": metadata,
            "items": items,
        }),
    )
}

/// A LIST `continue` token: the list's resourceVersion and the last key served, as base64
/// JSON (the real server's is `{"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}`).
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    use base64::Engine;
    let v = json!({"v": "meta.k8s.io/v1", "rv": rv, "ns": ns, "name": name});
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

fn decode_continue(token: &str) -> Option<(u64, ObjKey)> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v["rv"].as_u64()?,
        (
            v["ns"].as_str()?.to_string(),
            v["name"].as_str()?.to_string(),
        ),
    ))
}

/// WATCH: from no RV (or "0"), synthetic ADDED for current objects then live events; from RV N,
/// exactly the logged events after N, or one ERROR 410 Expired event if N is older than the log.
fn watch(
    shared: &Shared,
    res: &Resource,
    ns: &str,
    q: &BTreeMap<String, String>,
    meta_only: bool,
) -> Response<ResponseBody> {
    let (ls, fs) = match selectors(q) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let matches = |o: &Value| {
        (ns.is_empty() || o["metadata"]["namespace"].as_str().unwrap_or("") == ns)
            && ls.matches(o)
            && fs.matches(o)
    };
    let st = lock(shared);
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    let mut backlog: Vec<(String, Value)> = Vec::new();
    let mut expired = false;
    // Live events are those after this point; the backlog covers everything up to it.
    let since = st.rv;
    if rv_param.is_empty() || rv_param == "0" {
        if let Some(m) = st.objects.get(&res.key()) {
            for o in m.values().filter(|o| matches(o)) {
                backlog.push((
                    "ADDED".to_string(),
                    present(&with_version(o, res), meta_only),
                ));
            }
        }
    } else {
        let n: u64 = match rv_param.parse() {
            Ok(n) => n,
            Err(_) => {
                return status(
                    400,
                    "BadRequest",
                    &format!("invalid resource version: {rv_param}"),
                    None,
                );
            }
        };
        if n < st.floor {
            expired = true;
        } else if let Some(log) = st.log.get(&res.key()) {
            for ev in log.iter().filter(|e| e.rv > n) {
                if let Some((kind, obj)) = transform(ev, &matches) {
                    backlog.push((
                        kind.to_string(),
                        present(&with_version(&obj, res), meta_only),
                    ));
                }
            }
        }
    }
    let floor = st.floor;
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let mut rx = st.tx.subscribe();
    let mut ctl = st.watch_ctl.subscribe();
    let bookmark_every = st.bookmark_interval;
    let open = OpenWatch::new(&st.open_watches);
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let timeout = st.watch_cap.map_or(timeout, |c| c.min(timeout));
    drop(st);

    let (tx, out_rx) = mpsc::channel::<Result<Bytes, BodyError>>(64);
    let key = res.key();
    let res = res.clone();
    let ns = ns.to_string();
    tokio::spawn(async move {
        let _open = open;
        let line = |v: Value| {
            let mut b = serde_json::to_vec(&v).unwrap_or_default();
            b.push(b'\n');
            Ok(Bytes::from(b))
        };
        if expired {
            let err = status_value(
                410,
                "Expired",
                &format!("too old resource version: {rv_param} ({floor})"),
                None,
            );
            let _ = tx.send(line(json!({"type": "ERROR", "object": err}))).await;
            return;
        }
        for (kind, obj) in backlog {
            if tx
                .send(line(json!({"type": kind, "object": obj})))
                .await
                .is_err()
            {
                return;
            }
        }
        let matches = |o: &Value| {
            (ns.is_empty() || o["metadata"]["namespace"].as_str().unwrap_or("") == ns)
                && ls.matches(o)
                && fs.matches(o)
        };
        let bookmark = |rv: u64| {
            line(json!({"type": "BOOKMARK", "object": {
                "kind": res.kind, "apiVersion": res.api_version(),
                "metadata": {"resourceVersion": rv.to_string()},
            }}))
        };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        // The watch cache sends each bookmark-enabled watch a BOOKMARK about every minute, so
        // clients can tell a quiet watch from a dead one.
        let mut marks =
            tokio::time::interval_at(tokio::time::Instant::now() + bookmark_every, bookmark_every);
        let mut last_rv = since;
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    // Like the watch cache, end a bookmark-enabled watch with a BOOKMARK carrying
                    // the newest resourceVersion this watch has covered, so the client resumes
                    // from there instead of an older, possibly compacted, version.
                    if bookmarks {
                        let _ = tx.send(bookmark(last_rv)).await;
                    }
                    return;
                }
                _ = marks.tick(), if bookmarks => {
                    if tx.send(bookmark(last_rv)).await.is_err() {
                        return;
                    }
                }
                _ = tx.closed() => return,
                c = ctl.recv() => match c {
                    Ok(WatchControl::Kill) => return kill(&tx).await,
                    Ok(WatchControl::Expire) => return expire(&tx, last_rv).await,
                    Ok(WatchControl::Freeze) => {
                        // Silent until the client gives up and closes the connection.
                        drop(rx);
                        loop {
                            tokio::select! {
                                _ = tx.closed() => return,
                                c = ctl.recv() => match c {
                                    Ok(WatchControl::Kill) => return kill(&tx).await,
                                    Ok(WatchControl::Expire) => return expire(&tx, last_rv).await,
                                    Err(broadcast::error::RecvError::Closed) => return,
                                    _ => {}
                                },
                            }
                        }
                    }
                    Ok(WatchControl::Unserve(k)) if k == key => return,
                    _ => {}
                },
                ev = rx.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= since {
                            continue;
                        }
                        last_rv = ev.rv;
                        if ev.key != key {
                            continue;
                        }
                        if let Some((kind, obj)) = transform(&ev, &matches)
                            && tx.send(line(json!({"type": kind, "object": present(&with_version(&obj, &res), meta_only)}))).await.is_err()
                        {
                            return;
                        }
                    }
                    // A lagging watcher is closed; the client relists, as with a real apiserver.
                    Err(_) => return,
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(out_rx, |mut rx| async move {
        rx.recv().await.map(|b| (b.map(Frame::data), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(StreamBody::new(stream).boxed_unsync())
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

/// Breaks a watch stream: its body ends with an error.
async fn kill(tx: &mpsc::Sender<Result<Bytes, BodyError>>) {
    let _ = tx
        .send(Err("watch connection killed by the test".into()))
        .await;
}

/// Ends a watch stream with `ERROR 410 Expired`.
async fn expire(tx: &mpsc::Sender<Result<Bytes, BodyError>>, rv: u64) {
    let err = status_value(
        410,
        "Expired",
        &format!("The resourceVersion for the provided watch is too old: {rv}"),
        None,
    );
    let mut b = serde_json::to_vec(&json!({"type": "ERROR", "object": err})).unwrap_or_default();
    b.push(b'\n');
    let _ = tx.send(Ok(Bytes::from(b))).await;
}

/// Counts a watch stream as open while it lives.
struct OpenWatch(Arc<std::sync::atomic::AtomicUsize>);

impl OpenWatch {
    fn new(n: &Arc<std::sync::atomic::AtomicUsize>) -> OpenWatch {
        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OpenWatch(n.clone())
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Selector transitions of the watch cache: a MODIFIED object that starts matching is ADDED, one
/// that stops matching is DELETED.
fn transform(ev: &Event, matches: &dyn Fn(&Value) -> bool) -> Option<(&'static str, Value)> {
    let now_m = matches(&ev.object);
    match ev.kind {
        "MODIFIED" => {
            let was = ev.old.as_ref().is_some_and(matches);
            match (was, now_m) {
                (true, true) => Some(("MODIFIED", ev.object.clone())),
                (false, true) => Some(("ADDED", ev.object.clone())),
                (true, false) => Some(("DELETED", ev.object.clone())),
                (false, false) => None,
            }
        }
        k => now_m.then(|| (k, ev.object.clone())),
    }
}

fn precondition_rv(
    res: &Resource,
    live: &Value,
    body: &Value,
    name: &str,
) -> Result<(), Response<ResponseBody>> {
    if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
        && !rv.is_empty()
        && Some(rv) != live["metadata"]["resourceVersion"].as_str()
    {
        return Err(status(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} {:?}: the object has been modified; please apply your changes to the latest version and try again",
                qualified(res),
                name
            ),
            Some(details(res, name)),
        ));
    }
    Ok(())
}

/// The managers after a write whose body may carry managedFields. Per the SSA documentation
/// ("Clearing managedFields"): absent or an empty list keeps the live ones ("setting the
/// managedFields to an empty list will not reset the field"), a list holding one empty entry
/// `[{}]` strips them (so the next apply meets `before-first-apply`), other lists replace them.
fn managers_from_body(live: &Value, body: &Value) -> Vec<Manager> {
    match body["metadata"].get("managedFields") {
        Some(Value::Array(a)) if a.len() == 1 && a[0] == json!({}) => Vec::new(),
        Some(Value::Array(a)) if !a.is_empty() => managers_of(body),
        _ => managers_of(live),
    }
}

#[allow(clippy::too_many_arguments)]
fn write_update(
    st: &mut State,
    res: &Resource,
    route: &Route,
    live: &Value,
    mut new: Value,
    managers: Vec<Manager>,
    manager: &str,
    sub: &str,
    dry_run: bool,
) -> Result<Value, Response<ResponseBody>> {
    let name = route.name.clone().unwrap_or_default();
    if sub == "status" {
        // The status subresource changes only status.
        let status = new.get("status").cloned();
        new = live.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                new.as_object_mut().map(|m| m.remove("status"));
            }
        }
    } else if res.status {
        match live.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                new.as_object_mut().map(|m| m.remove("status"));
            }
        }
    }
    // Normalise first so the writer owns what defaulting filled in, as with real decoding.
    let mut normalized = new.clone();
    for k in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "generation",
        "resourceVersion",
    ] {
        match live["metadata"].get(k) {
            Some(v) => normalized["metadata"][k] = v.clone(),
            None => {
                normalized["metadata"].as_object_mut().map(|m| m.remove(k));
            }
        }
    }
    normalized["apiVersion"] = json!(res.api_version());
    normalized["kind"] = json!(res.kind);
    normalize(res, &mut normalized)?;
    let writer = update_manager(manager, res, sub);
    let managers = ssa::update(
        schema(res),
        &strip_managed(live),
        &strip_managed(&normalized),
        managers,
        writer,
        &|s| ignored(res, sub, s),
    )
    .map_err(|e| status(422, "Invalid", &e, None))?;
    st.finish_update(
        res, &route.ns, &name, live, normalized, managers, manager, dry_run,
    )
}

fn put(
    st: &mut State,
    res: &Resource,
    route: &Route,
    mut obj: Value,
    manager: &str,
    sub: &str,
    dry_run: bool,
) -> Response<ResponseBody> {
    let name = route.name.clone().unwrap_or_default();
    if let Err(r) = check_type(res, &mut obj) {
        return r;
    }
    if let Some(bn) = obj["metadata"]["name"].as_str()
        && bn != name
    {
        return status(
            400,
            "BadRequest",
            &format!("the name of the object ({bn}) does not match the name on the URL ({name})"),
            None,
        );
    }
    if res.namespaced
        && let Some(bns) = obj["metadata"]["namespace"].as_str()
        && !bns.is_empty()
        && bns != route.ns
    {
        return status(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
            None,
        );
    }
    let Some(live) = st.get_obj(res, &route.ns, &name).cloned() else {
        return not_found(res, &name);
    };
    if let Err(r) = precondition_rv(res, &live, &obj, &name) {
        return r;
    }
    let managers = managers_from_body(&live, &obj);
    match write_update(
        st,
        res,
        route,
        &live,
        strip_managed(&obj),
        managers,
        manager,
        sub,
        dry_run,
    ) {
        Ok(o) => json_response(200, &o),
        Err(r) => r,
    }
}

#[allow(clippy::too_many_arguments)]
fn patch_req(
    st: &mut State,
    res: &Resource,
    route: &Route,
    body: &Bytes,
    content_type: &str,
    q: &BTreeMap<String, String>,
    manager: &str,
    sub: &str,
    dry_run: bool,
) -> Response<ResponseBody> {
    let name = route.name.clone().unwrap_or_default();
    let force = q.get("force").is_some_and(|f| f == "true");
    let is_apply = content_type == "application/apply-patch+yaml";
    let known = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if !known.contains(&content_type)
        || (content_type == "application/strategic-merge-patch+json" && res.crd.is_some())
    {
        return status(
            415,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                known.join(", ")
            ),
            None,
        );
    }
    if force && !is_apply {
        return invalid_options("force: Forbidden: may not be specified for non-apply patch");
    }
    if is_apply {
        return apply_req(st, res, route, body, q, force, sub, dry_run);
    }
    let Some(live) = st.get_obj(res, &route.ns, &name).cloned() else {
        return not_found(res, &name);
    };
    let p: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return status(
                400,
                "BadRequest",
                &format!("error decoding patch: {e}"),
                None,
            );
        }
    };
    let mut doc = live.clone();
    match content_type {
        "application/merge-patch+json" => patch::merge_patch(&mut doc, &p),
        "application/json-patch+json" => {
            if let Err(e) = patch::json_patch(&mut doc, &p) {
                return status(422, "Invalid", &e, None);
            }
        }
        _ => patch::strategic_merge_patch(&res.group, &res.kind, &mut doc, &p),
    }
    if doc["metadata"]["name"].as_str() != Some(name.as_str()) {
        return status(
            400,
            "BadRequest",
            &format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                doc["metadata"]["name"].as_str().unwrap_or_default()
            ),
            None,
        );
    }
    if let Err(r) = precondition_rv(res, &live, &doc, &name) {
        return r;
    }
    let managers = if doc["metadata"]["managedFields"] == live["metadata"]["managedFields"] {
        managers_of(&live)
    } else {
        managers_from_body(&live, &doc)
    };
    match write_update(
        st,
        res,
        route,
        &live,
        strip_managed(&doc),
        managers,
        manager,
        sub,
        dry_run,
    ) {
        Ok(o) => json_response(200, &o),
        Err(r) => r,
    }
}

fn invalid_options(msg: &str) -> Response<ResponseBody> {
    status(
        422,
        "Invalid",
        &format!("PatchOptions.meta.k8s.io \"\" is invalid: {msg}"),
        Some(
            json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
                "reason": if msg.contains("Required") { "FieldValueRequired" } else { "FieldValueForbidden" },
                "message": msg.split_once(": ").map_or(msg, |(_, m)| m),
                "field": msg.split_once(": ").map_or("", |(f, _)| f),
            }]}),
        ),
    )
}

#[allow(clippy::too_many_arguments)]
fn apply_req(
    st: &mut State,
    res: &Resource,
    route: &Route,
    body: &Bytes,
    q: &BTreeMap<String, String>,
    force: bool,
    sub: &str,
    dry_run: bool,
) -> Response<ResponseBody> {
    let name = route.name.clone().unwrap_or_default();
    let Some(manager) = q.get("fieldManager").filter(|m| !m.is_empty()).cloned() else {
        return invalid_options("fieldManager: Required value: is required for apply patch");
    };
    let mut config: Value =
        match serde_json::from_slice(body).or_else(|_| serde_yaml_ng::from_slice(body)) {
            Ok(v) => v,
            Err(e) => {
                return status(
                    400,
                    "BadRequest",
                    &format!("error decoding YAML: {e}"),
                    None,
                );
            }
        };
    if !config.is_object() || !(config["metadata"].is_object() || config["metadata"].is_null()) {
        return status(
            400,
            "BadRequest",
            "error decoding YAML: the apply configuration is not an object",
            None,
        );
    }
    let (api_version, kind) = (
        config["apiVersion"].as_str().unwrap_or(""),
        config["kind"].as_str().unwrap_or(""),
    );
    if api_version.is_empty() || kind.is_empty() {
        return status(
            400,
            "BadRequest",
            "Object 'Kind' is missing in the apply configuration",
            None,
        );
    }
    if kind != res.kind || api_version != res.api_version() {
        return status(
            400,
            "BadRequest",
            &format!(
                "the apiVersion/kind of the provided object ({api_version}, Kind={kind}) does not match the URL ({}, Kind={})",
                res.api_version(),
                res.kind
            ),
            None,
        );
    }
    match config["metadata"]["name"].as_str() {
        Some(n) if n == name => {}
        Some(n) if !n.is_empty() => {
            return status(
                400,
                "BadRequest",
                &format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                ),
                None,
            );
        }
        _ => config["metadata"]["name"] = json!(name),
    }
    if res.namespaced {
        match config["metadata"]["namespace"].as_str() {
            Some(n) if !n.is_empty() && n != route.ns => {
                return status(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                    None,
                );
            }
            _ => {}
        }
    }
    if config["metadata"]["managedFields"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        return status(
            400,
            "BadRequest",
            "metadata.managedFields must be nil",
            None,
        );
    }
    if let Some(m) = config["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    if sub.is_empty() && res.status {
        config.as_object_mut().map(|m| m.remove("status"));
    }
    let schema = schema(res);
    let applier = Manager {
        manager: manager.clone(),
        operation: "Apply".to_string(),
        api_version: res.api_version(),
        time: None,
        subresource: sub.to_string(),
        set: FieldSet::new(),
    };
    let live = st.get_obj(res, &route.ns, &name).cloned();
    let Some(live) = live else {
        if !sub.is_empty() {
            return not_found(res, &name);
        }
        // Create by apply: the object is the config itself, owned wholly by the applier.
        let mut obj = config.clone();
        if let Err(r) = check_namespace(st, res, &route.ns, &mut obj) {
            return r;
        }
        strip_server_fields(&mut obj);
        if let Err(r) = normalize(res, &mut obj) {
            return r;
        }
        if let Err(r) = validate(res, None, &obj, &name) {
            return r;
        }
        let set = match ssa::to_field_set(schema, &config) {
            Ok(s) => ignored(res, sub, &s),
            Err(e) => return invalid(res, &name, "", &e),
        };
        let mut entry = applier;
        entry.set = set;
        let mut obj = stamp_managers(&obj, vec![entry], Some(&manager), None, true);
        obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
        obj["metadata"]["creationTimestamp"] = json!(now());
        if res.generation {
            obj["metadata"]["generation"] = json!(1);
        }
        on_create_hook(res, &mut obj);
        allocate_service_ip(st, res, &mut obj);
        if dry_run {
            return json_response(201, &obj);
        }
        let stored = st.store(res, &route.ns, &name, obj, "ADDED");
        st.after_write(res, &stored);
        return json_response(201, &stored);
    };
    if let Err(r) = precondition_rv(res, &live, &config, &name) {
        return r;
    }
    if let Some(m) = config["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    let mut managers = managers_of(&live);
    let live_body = strip_managed(&live);
    if managers.is_empty() {
        // The first apply to an object written without field tracking: everything it has belongs
        // to `before-first-apply`, so changing any of it conflicts.
        if let Ok(s) = ssa::to_field_set(schema, &live_body) {
            let set = ignored(res, sub, &s);
            if !set.is_empty() {
                managers.push(Manager {
                    manager: "before-first-apply".to_string(),
                    operation: "Update".to_string(),
                    api_version: res.api_version(),
                    time: None,
                    subresource: String::new(),
                    set,
                });
            }
        }
    }
    let outcome = match ssa::apply(
        schema,
        &live_body,
        &config,
        managers,
        applier,
        force,
        &|s| ignored(res, sub, s),
    ) {
        Ok(o) => o,
        Err(ApplyError::Invalid(e)) => return invalid(res, &name, "", &e),
        Err(ApplyError::Conflicts(cs)) => {
            let causes: Vec<Value> = cs
                .iter()
                .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", ssa::print_manager(&c.manager)), "field": crate::fieldset::path_string(&c.path)}))
                .collect();
            let mut v = status_value(409, "Conflict", &ssa::conflict_message(&cs), None);
            v["details"] = json!({"causes": causes});
            return json_response(409, &v);
        }
    };
    let mut new = outcome.object;
    if sub == "status" {
        let s = new.get("status").cloned();
        new = live_body.clone();
        if let Some(s) = s {
            new["status"] = s;
        }
    } else if res.status {
        match live.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                new.as_object_mut().map(|m| m.remove("status"));
            }
        }
    }
    match st.finish_update(
        res,
        &route.ns,
        &name,
        &live,
        new,
        outcome.managers,
        &manager,
        dry_run,
    ) {
        Ok(o) => json_response(200, &o),
        Err(r) => r,
    }
}

fn delete_options(body: &Bytes, content_type: &str, q: &BTreeMap<String, String>) -> Value {
    // client-go's typed clients send DeleteOptions in protobuf.
    let decoded = if content_type == protobuf::MEDIA_TYPE {
        protobuf::decode(body, "v1", "DeleteOptions").ok()
    } else {
        serde_json::from_slice(body).ok()
    };
    let mut opts: Value = decoded.unwrap_or_else(|| json!({}));
    if !opts.is_object() {
        opts = json!({});
    }
    if let Some(p) = q.get("propagationPolicy") {
        opts["propagationPolicy"] = json!(p);
    }
    if q.get("orphanDependents").is_some_and(|o| o == "true") {
        opts["propagationPolicy"] = json!("Orphan");
    }
    if opts["orphanDependents"] == json!(true) {
        opts["propagationPolicy"] = json!("Orphan");
    }
    opts
}

fn delete(
    st: &mut State,
    res: &Resource,
    route: &Route,
    opts: &Value,
    dry_run: bool,
) -> Response<ResponseBody> {
    let name = route.name.clone().unwrap_or_default();
    let Some(live) = st.get_obj(res, &route.ns, &name).cloned() else {
        return not_found(res, &name);
    };
    let pre = &opts["preconditions"];
    let conflict = |what: &str, want: &str, have: &str| {
        status(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} {:?}: Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}",
                qualified(res),
                name
            ),
            Some(details(res, &name)),
        )
    };
    if let Some(uid) = pre["uid"].as_str() {
        let have = live["metadata"]["uid"].as_str().unwrap_or_default();
        if uid != have {
            return conflict("UID", uid, have);
        }
    }
    if let Some(rv) = pre["resourceVersion"].as_str() {
        let have = live["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        if rv != have {
            return conflict("ResourceVersion", rv, have);
        }
    }
    let uid = live["metadata"]["uid"].clone();
    if dry_run {
        return json_response(200, &live);
    }
    let policy = opts["propagationPolicy"]
        .as_str()
        .unwrap_or("Background")
        .to_string();
    match st.delete_inner(res, &route.ns, &name, &policy) {
        Some(o) => json_response(200, &o),
        None => {
            let mut d = details(res, &name);
            d["uid"] = uid;
            json_response(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d}),
            )
        }
    }
}

/// Direct insertion for tests: stores `obj` as-is (server fields filled in, no managedFields), as an
/// object written before field tracking existed.
pub fn seed(st: &mut State, res: &Resource, mut obj: Value) -> Result<Value, String> {
    if !obj["metadata"].is_object() {
        return Err("seed: metadata must be an object".to_string());
    }
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = obj["metadata"]["name"]
        .as_str()
        .ok_or("seed: metadata.name is required")?
        .to_string();
    obj["apiVersion"] = json!(res.api_version());
    obj["kind"] = json!(res.kind);
    strip_server_fields(&mut obj);
    normalize(res, &mut obj).map_err(|_| "seed: invalid object".to_string())?;
    obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    obj["metadata"]["creationTimestamp"] = json!(now());
    let kind = if st.get_obj(res, &ns, &name).is_some() {
        "MODIFIED"
    } else {
        "ADDED"
    };
    let stored = st.store(res, &ns, &name, obj, kind);
    st.after_write(res, &stored);
    Ok(stored)
}

/// Reads a whole request body.
pub async fn collect<B>(body: B) -> Result<Bytes, B::Error>
where
    B: http_body::Body<Data = Bytes>,
{
    Ok(body.collect().await?.to_bytes())
}

/// The autoscaling/v1 `Scale` view of a workload (`/scale` subresource).
fn scale_view(obj: &Value) -> Value {
    let selector = obj["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let md = &obj["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": md["name"], "namespace": md["namespace"], "uid": md["uid"],
            "resourceVersion": md["resourceVersion"], "creationTimestamp": md["creationTimestamp"],
        },
        "spec": {"replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

/// GET, PUT and non-apply PATCH of `/scale`: the replica count is written to `spec.replicas` as an
/// `Update` by the writer with subresource `scale` (how `kubectl scale` and the HPA take
/// ownership of replicas).
#[allow(clippy::too_many_arguments)]
fn scale(
    st: &mut State,
    res: &Resource,
    route: &Route,
    verb: &str,
    body: &Bytes,
    content_type: &str,
    manager: &str,
    dry_run: bool,
) -> Response<ResponseBody> {
    let name = route.name.clone().unwrap_or_default();
    let Some(live) = st.get_obj(res, &route.ns, &name).cloned() else {
        return not_found(res, &name);
    };
    let view = scale_view(&live);
    let new_view = match verb {
        "get" => return json_response(200, &view),
        "update" => match parse_body(body, content_type, res) {
            Ok(v) => v,
            Err(r) => return r,
        },
        "patch" => {
            let p: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => {
                    return status(
                        400,
                        "BadRequest",
                        &format!("error decoding patch: {e}"),
                        None,
                    );
                }
            };
            let mut doc = view.clone();
            match content_type {
                "application/json-patch+json" => {
                    if let Err(e) = patch::json_patch(&mut doc, &p) {
                        return status(422, "Invalid", &e, None);
                    }
                }
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    patch::merge_patch(&mut doc, &p)
                }
                _ => {
                    return status(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
                        None,
                    );
                }
            }
            doc
        }
        _ => {
            return status(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            );
        }
    };
    if let Err(r) = precondition_rv(res, &live, &new_view, &name) {
        return r;
    }
    let Some(replicas) = new_view["spec"]["replicas"].as_i64().filter(|r| *r >= 0) else {
        return invalid(
            res,
            &name,
            "spec.replicas",
            "Invalid value: must be greater than or equal to 0",
        );
    };
    let mut new = strip_managed(&live);
    match object_at(&mut new, "spec") {
        Some(spec) => {
            spec.insert("replicas".to_string(), json!(replicas));
        }
        None => return invalid(res, &name, "spec", "Invalid value: must be an object"),
    }
    match write_update(
        st,
        res,
        route,
        &live,
        new,
        managers_of(&live),
        manager,
        "scale",
        dry_run,
    ) {
        Ok(o) => json_response(200, &scale_view(&o)),
        Err(r) => r,
    }
}
