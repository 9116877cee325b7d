//! The live side of drift: one task that owns the metadata-only watches of
//! every tracked object ([`crate::watch`]) and acts on what they see.
//!
//! - A module run **suspends** its module (its own applies and prunes are
//!   not drift); its success **refreshes** the module with the release's
//!   objects and settings (and resets backoff and circuit breaker); a
//!   module delete **stops** it before anything is uninstalled.
//! - **Deleted** (a DELETED event, or a relist without the object):
//!   restored alone, one apply of that object with the release's manifest.
//! - **Changed**: our managedFields entry (or the uid) differs from the one
//!   last seen: a dry-run check ([`super::check_object`]) says which fields
//!   differ and who took them; `enabled` re-applies with force, `warn`
//!   reports once per distinct change.
//! - **Where an object starts**: its state when its watch listed or its
//!   name was subscribed (the run's own write, passed on by the watch); a
//!   change to an object never seen in sync is checked, and an in-sync
//!   check sets the state later events are compared with. Work due while
//!   the module runs is done after the run (a run that wrote nothing
//!   repaired nothing).
//! - **Standby**: while the caller's gate forbids writes nothing is asked
//!   of the server, not even a check (a dry-run apply); checks and restores
//!   wait, each object once, until this replica leads again.
//! - **No storms**: after each restore of an object the next waits 0.5 s,
//!   doubling (at most a minute); after [`Limits::attempts`] restores within
//!   [`Limits::window`] antiopa stops fighting for that object until the
//!   module's next run, with one error line and a Warning Event.

use std::cmp::Reverse;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use kube::core::ObjectMeta;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Finding, Metrics, Mode, ModuleDrift, Settings, Tracked, Writes, check_object_live};
use crate::apply::FIELD_MANAGER;
use crate::apply::ownership::{MANAGED_BY, MANAGED_BY_HELM};
use crate::watch::{Meta, Seen, Target, Watches};

/// How hard antiopa fights for an object.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Restores of one object within `window` before it stops.
    pub attempts: usize,
    pub window: Duration,
    /// The wait after the first restore (doubling after each one).
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            attempts: 5,
            window: Duration::from_secs(600),
            first_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// How long after a refresh an object the watch has not seen yet is looked
/// up (its ADDED may lag behind the apply that made it).
const VERIFY_AFTER: Duration = Duration::from_secs(3);

/// Module drift state changes, for the caller's status.
pub type StatusSink = Arc<dyn Fn(&str, Option<&ModuleDrift>) + Send + Sync>;

enum Command {
    Suspend(String),
    Refresh {
        module: String,
        objects: Vec<Tracked>,
        settings: Settings,
    },
    Stop(String),
}

/// The caller's end of the drift task (cheap to clone). A disabled handle
/// ignores everything.
#[derive(Clone, Default)]
pub struct Handle {
    tx: Option<mpsc::UnboundedSender<Command>>,
}

impl Handle {
    /// A handle that does nothing (`antiopa run --once` watches nothing).
    pub fn disabled() -> Handle {
        Handle { tx: None }
    }

    fn send(&self, c: Command) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(c);
        }
    }

    /// A module run starts: what it writes is not drift.
    pub fn suspend(&self, module: &str) {
        self.send(Command::Suspend(module.to_string()));
    }

    /// A module run succeeded: watch `objects` (its release's) with
    /// `settings` from now on.
    pub fn refresh(&self, module: &str, objects: Vec<Tracked>, settings: Settings) {
        self.send(Command::Refresh {
            module: module.to_string(),
            objects,
            settings,
        });
    }

    /// A module is deleted: forget it before its objects go.
    pub fn stop(&self, module: &str) {
        self.send(Command::Stop(module.to_string()));
    }

    pub fn is_enabled(&self) -> bool {
        self.tx.is_some()
    }
}

/// Starts the drift task; it ends with `shutdown`.
pub fn start(
    writes: Writes,
    metrics: Metrics,
    status: StatusSink,
    limits: Limits,
    shutdown: CancellationToken,
) -> Handle {
    let (tx, rx) = mpsc::unbounded_channel();
    let (watches, seen) = Watches::new(writes.cluster().clone(), shutdown.clone(), digest);
    let engine = Engine {
        writes,
        metrics,
        status,
        limits,
        watches,
        targets: HashMap::new(),
        listed: HashSet::new(),
        unserved: HashSet::new(),
        jobs: tokio::task::JoinSet::new(),
        slots: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_RESTORES)),
        modules: HashMap::new(),
        objects: HashMap::new(),
        timers: BinaryHeap::new(),
        seq: 0,
        deferred: HashSet::new(),
    };
    tokio::spawn(engine.run(rx, seen, shutdown));
    Handle { tx: Some(tx) }
}

/// An object: (target id, name).
type Id = (u32, String);

/// (when, order, object, what, seen at).
type Timer = (Instant, u64, Id, Due, Instant);

struct Obj {
    module: Arc<str>,
    tracked: Tracked,
    /// Digest of our managedFields entry and the uid, as last seen.
    digest: Option<u64>,
    present: bool,
    /// Gone, or due to be looked at, while its module ran: looked at once
    /// the run is over, for a run that wrote nothing repaired nothing.
    recheck: bool,
    /// Only for objects drift acted on since the last refresh: most
    /// objects never drift, and this is kept per watched object.
    fight: Option<Box<Fight>>,
}

/// What drift remembers of acting on one object, until the next refresh.
#[derive(Default)]
struct Fight {
    /// Restores within the window.
    attempts: VecDeque<Instant>,
    next_allowed: Option<Instant>,
    /// Circuit breaker open until the next refresh.
    stopped: bool,
    /// The last change reported (warn mode reports each once).
    reported: Option<u64>,
    /// A backoff timer is pending.
    waiting: bool,
    /// A restore is under way.
    in_flight: bool,
    /// Another was asked for meanwhile (seen at).
    again: Option<Instant>,
}

/// Restores run at most this many at a time, so one hung request does not
/// hold up the others.
const CONCURRENT_RESTORES: usize = 4;

/// A restore's outcome, back on the engine's task.
struct Restored {
    id: Id,
    seen_at: Instant,
    due: Due,
    what: String,
    tracked: Tracked,
    done: Instant,
    result: Result<ObjectMeta, super::DriftError>,
}

impl Obj {
    fn fight(&mut self) -> &mut Fight {
        self.fight.get_or_insert_with(Default::default)
    }

    fn stopped(&self) -> bool {
        self.fight.as_ref().is_some_and(|f| f.stopped)
    }
}

struct ModuleState {
    settings: Settings,
    suspended: bool,
    drift: ModuleDrift,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// After a refresh: look the object up unless the watch has seen it.
    Verify,
    /// A check or restore waiting out the object's backoff.
    Check,
    Restore,
}

struct Engine {
    writes: Writes,
    metrics: Metrics,
    status: StatusSink,
    limits: Limits,
    watches: Watches,
    targets: HashMap<Target, u32>,
    /// Targets whose watch has listed (their objects' presence is known).
    listed: HashSet<u32>,
    /// Targets whose kind the server stopped serving (a restore found its
    /// CRD gone): nothing of theirs is restored until their watch lists
    /// again, so a removed CRD makes one failed restore, not one per
    /// object and retry.
    unserved: HashSet<u32>,
    /// Restores under way.
    jobs: tokio::task::JoinSet<Restored>,
    slots: Arc<tokio::sync::Semaphore>,
    modules: HashMap<String, ModuleState>,
    objects: HashMap<Id, Obj>,
    timers: BinaryHeap<Reverse<Timer>>,
    seq: u64,
    /// Checks put off while writes are not allowed (a standby): each
    /// object once, looked at again every second until this replica leads.
    deferred: HashSet<Id>,
}

fn target_of(t: &Tracked) -> Target {
    Target {
        api_version: t.resolved.resource.api_version.clone(),
        kind: t.resolved.resource.kind.clone(),
        plural: t.resolved.resource.plural.clone(),
        namespace: t.resolved.namespaced.then(|| t.key.namespace.clone()),
        label_selector: format!("{MANAGED_BY}={MANAGED_BY_HELM}"),
    }
}

/// What of an object's metadata says "ours changed": the uid and our
/// field manager's Apply entry (its field set, not its time).
fn digest(meta: &ObjectMeta) -> u64 {
    let mut h = DefaultHasher::new();
    meta.uid.hash(&mut h);
    for e in meta.managed_fields.iter().flatten() {
        if e.manager.as_deref() == Some(FIELD_MANAGER)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref().unwrap_or("").is_empty()
        {
            e.api_version.hash(&mut h);
            serde_json::to_string(&e.fields_v1)
                .unwrap_or_default()
                .hash(&mut h);
        }
    }
    h.finish()
}

fn hash_of(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl Engine {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut seen: mpsc::UnboundedReceiver<Seen>,
        shutdown: CancellationToken,
    ) {
        loop {
            let next = self.timers.peek().map(|Reverse(t)| t.0);
            let far = Instant::now() + Duration::from_secs(3600);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                c = commands.recv() => match c {
                    Some(c) => self.command(c),
                    None => return,
                },
                Some(s) = seen.recv() => self.seen(s).await,
                Some(r) = self.jobs.join_next(), if !self.jobs.is_empty() => {
                    if let Ok(r) = r {
                        self.restored(r);
                    }
                }
                _ = tokio::time::sleep_until(next.unwrap_or(far)), if next.is_some() => {
                    self.fire_due().await;
                }
            }
        }
    }

    fn publish(&self, module: &str) {
        if let Some(m) = self.modules.get(module) {
            (self.status)(module, Some(&m.drift));
        }
    }

    fn schedule(&mut self, at: Instant, id: Id, due: Due, seen_at: Instant) {
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, id, due, seen_at)));
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Suspend(m) => {
                if let Some(st) = self.modules.get_mut(&m) {
                    st.suspended = true;
                    st.drift.suspended = true;
                }
                self.publish(&m);
            }
            Command::Stop(m) => {
                self.forget(&m);
                self.modules.remove(&m);
                (self.status)(&m, None);
            }
            Command::Refresh {
                module,
                objects,
                settings,
            } => self.refresh(module, objects, settings),
        }
    }

    /// Drops every object of `module` and its watch subscriptions.
    fn forget(&mut self, module: &str) {
        self.objects.retain(|_, o| *o.module != *module);
        self.watches.unsubscribe_all(module);
        self.forget_stopped_watches();
    }

    /// A watch that stopped lists again when it restarts.
    fn forget_stopped_watches(&mut self) {
        let running: HashSet<u32> = self
            .targets
            .iter()
            .filter(|(t, _)| self.watches.target(t).is_some())
            .map(|(_, id)| *id)
            .collect();
        self.listed.retain(|id| running.contains(id));
    }

    fn refresh(&mut self, module: String, objects: Vec<Tracked>, settings: Settings) {
        let mode = settings.mode;
        let st = self.modules.entry(module.clone()).or_insert(ModuleState {
            settings: settings.clone(),
            suspended: false,
            drift: ModuleDrift::default(),
        });
        st.settings = settings;
        st.suspended = false;
        st.drift.suspended = false;
        st.drift.mode = mode;
        st.drift.stopped.clear();
        if mode == Mode::Disabled {
            self.forget(&module);
            if let Some(st) = self.modules.get_mut(&module) {
                st.drift.objects = 0;
            }
            self.publish(&module);
            return;
        }
        let name: Arc<str> = Arc::from(module.as_str());
        let mut by_target: BTreeMap<Target, BTreeSet<String>> = BTreeMap::new();
        let mut wanted: HashSet<Id> = HashSet::new();
        let mut fresh = Vec::new();
        for t in objects {
            let target = target_of(&t);
            let next = self.targets.len() as u32;
            let tid = *self.targets.entry(target.clone()).or_insert(next);
            let id = (tid, t.key.name.clone());
            by_target
                .entry(target)
                .or_default()
                .insert(t.key.name.clone());
            wanted.insert(id.clone());
            match self.objects.get_mut(&id) {
                // Another module's object of the same name: the first keeps it.
                Some(o) if *o.module != *module => continue,
                Some(o) => {
                    o.tracked = t;
                    o.fight = None;
                    if !o.present {
                        fresh.push(id);
                    }
                }
                None => {
                    self.objects.insert(
                        id.clone(),
                        Obj {
                            module: name.clone(),
                            tracked: t,
                            digest: None,
                            present: false,
                            recheck: false,
                            fight: None,
                        },
                    );
                    fresh.push(id);
                }
            }
        }
        // Objects the new release no longer has (pruned by the run).
        self.objects
            .retain(|id, o| *o.module != *module || wanted.contains(id));
        let subscribed: BTreeSet<Target> = by_target.keys().cloned().collect();
        let stale: Vec<Target> = self
            .targets
            .keys()
            .filter(|t| !subscribed.contains(*t))
            .cloned()
            .collect();
        for t in stale {
            self.watches.subscribe(&t, &module, BTreeSet::new());
        }
        for (t, names) in by_target {
            self.watches.subscribe(&t, &module, names);
        }
        self.forget_stopped_watches();
        let count = wanted
            .iter()
            .filter(|id| self.objects.get(*id).is_some_and(|o| *o.module == *module))
            .count();
        drop(wanted);
        // A new watch's list tells which objects exist; on a watch that
        // listed before, an object not seen yet is looked up a little later.
        let now = Instant::now();
        let recheck: Vec<Id> = self
            .objects
            .iter_mut()
            .filter(|(_, o)| *o.module == *module && o.recheck)
            .map(|(id, o)| {
                o.recheck = false;
                id.clone()
            })
            .collect();
        for id in recheck {
            self.schedule(now, id, Due::Check, now);
        }
        for id in fresh {
            if self.listed.contains(&id.0) {
                self.schedule(now + VERIFY_AFTER, id, Due::Verify, now);
            }
        }
        if let Some(st) = self.modules.get_mut(&module) {
            st.drift.objects = count;
        }
        tracing::debug!(module = %module, watches = self.watches.len(), "drift: watching the release's objects");
        self.publish(&module);
    }

    fn id_of(&self, target: &Target, meta: &Meta) -> Option<Id> {
        let tid = *self.targets.get(target)?;
        let id = (tid, meta.name.clone());
        self.objects.contains_key(&id).then_some(id)
    }

    /// The module of an object, when drift acts for it now.
    fn active(&self, id: &Id) -> Option<(Arc<str>, Mode)> {
        let o = self.objects.get(id)?;
        let st = self.modules.get(&*o.module)?;
        (!st.suspended && st.settings.mode != Mode::Disabled && !self.unserved.contains(&id.0))
            .then(|| (o.module.clone(), st.settings.mode))
    }

    /// Marks an object of a module that runs now to be looked at after
    /// the run; whether it was.
    fn put_off(&mut self, id: &Id) -> bool {
        let Some(o) = self.objects.get_mut(id) else {
            return false;
        };
        let suspended = self.modules.get(&*o.module).is_some_and(|st| st.suspended);
        o.recheck |= suspended;
        suspended
    }

    async fn seen(&mut self, s: Seen) {
        let now = Instant::now();
        match s {
            Seen::Applied(target, meta) => {
                let Some(id) = self.id_of(&target, &meta) else {
                    return;
                };
                let d = meta.digest;
                let Some(o) = self.objects.get_mut(&id) else {
                    return;
                };
                o.present = true;
                let suspended = self.modules.get(&*o.module).is_some_and(|st| st.suspended)
                    || o.fight.as_ref().is_some_and(|f| f.in_flight);
                let before = o.digest;
                // What it was when the watch listed or the name was
                // subscribed is where it starts; so is a change while its
                // module runs or drift restores it (most likely that write:
                // not put off, that would cost a check per write). A change
                // to an object never seen in sync is looked at.
                if before.is_some() || meta.initial || suspended {
                    o.digest = Some(d);
                }
                if before == Some(d) || (before.is_none() && (meta.initial || suspended)) {
                    return;
                }
                if self.active(&id).is_some() {
                    self.check(id, now).await;
                }
            }
            Seen::Deleted(target, meta) => {
                let Some(id) = self.id_of(&target, &meta) else {
                    return;
                };
                let relabelled = !meta.selected && !meta.deleting;
                if let Some(o) = self.objects.get_mut(&id) {
                    o.present = false;
                    o.digest = None;
                }
                if self.put_off(&id) || self.active(&id).is_none() {
                    return;
                }
                if relabelled {
                    // Out of the watch's selector, not gone: our label changed.
                    self.check(id, now).await;
                } else {
                    self.missing(id, now).await;
                }
            }
            Seen::Listed(target, names) => {
                let Some(tid) = self.targets.get(&*target).copied() else {
                    return;
                };
                if self.listed.insert(tid) {
                    tracing::info!(target = %target, objects = names.len(), "drift: released objects listed");
                }
                if self.unserved.remove(&tid) {
                    tracing::info!(target = %target, "drift: the kind is served again; restoring what is missing");
                    for (_, o) in self.objects.iter_mut().filter(|((t, _), _)| *t == tid) {
                        o.fight = None;
                    }
                }
                let ids: Vec<Id> = self
                    .objects
                    .keys()
                    .filter(|(t, _)| *t == tid)
                    .cloned()
                    .collect();
                for id in ids {
                    let listed = names.contains(&id.1);
                    let Some(o) = self.objects.get_mut(&id) else {
                        continue;
                    };
                    o.present = listed;
                    if listed {
                        continue;
                    }
                    o.digest = None;
                    if self.active(&id).is_some() {
                        self.missing(id, now).await;
                    }
                }
            }
        }
    }

    async fn fire_due(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((at, ..))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((_, _, id, due, seen_at))) = self.timers.pop() else {
                break;
            };
            if due == Due::Check {
                self.deferred.remove(&id);
            }
            if self.put_off(&id) || self.active(&id).is_none() {
                continue;
            }
            if let Some(o) = self.objects.get_mut(&id)
                && due != Due::Verify
            {
                o.fight().waiting = false;
            }
            match due {
                Due::Verify => {
                    if !self.objects.get(&id).is_some_and(|o| o.present) {
                        self.check(id, seen_at).await
                    }
                }
                Due::Check => self.check(id, seen_at).await,
                Due::Restore => self.missing(id, seen_at).await,
            }
        }
    }

    /// An object is gone: restore it (enabled) or report it (warn).
    async fn missing(&mut self, id: Id, seen_at: Instant) {
        let Some((module, mode)) = self.active(&id) else {
            return;
        };
        let Some(o) = self.objects.get(&id) else {
            return;
        };
        let what = format!("{} deleted", o.tracked.key);
        if mode == Mode::Warn {
            self.report(&id, &module, what, hash_of(&"deleted")).await;
            return;
        }
        self.detected(&module, &id, &what);
        self.restore(id, seen_at, false, what, Due::Restore).await;
    }

    /// Whether the object waits out its backoff (then a timer for `due`
    /// is set, once).
    fn backing_off(&mut self, id: &Id, due: Due, seen_at: Instant) -> bool {
        let now = Instant::now();
        let Some(o) = self.objects.get_mut(id) else {
            return true;
        };
        let f = o.fight();
        let Some(at) = f.next_allowed.filter(|at| *at > now) else {
            return false;
        };
        if !f.waiting {
            f.waiting = true;
            self.schedule(at, id.clone(), due, seen_at);
        }
        true
    }

    /// Our entry changed: what differs now?
    async fn check(&mut self, id: Id, seen_at: Instant) {
        let Some((module, mode)) = self.active(&id) else {
            return;
        };
        if self.objects.get(&id).is_none_or(|o| o.stopped())
            || (mode == Mode::Enabled && self.backing_off(&id, Due::Check, seen_at))
        {
            return;
        }
        // A check is a dry-run apply: a replica that may not write asks
        // nothing of the server, and looks again once it leads.
        if !self.writes.allowed() {
            if self.deferred.insert(id.clone()) {
                self.schedule(
                    Instant::now() + Duration::from_secs(1),
                    id,
                    Due::Check,
                    seen_at,
                );
            }
            return;
        }
        let Some(o) = self.objects.get(&id) else {
            return;
        };
        let ignored = self
            .modules
            .get(&*module)
            .map(|st| {
                st.settings
                    .ignored_paths(&o.tracked.api_version, &o.tracked.key)
            })
            .unwrap_or_default();
        let t = o.tracked.clone();
        let finding = match check_object_live(self.writes.cluster(), &t, &ignored).await {
            Ok((f, live)) => {
                // In sync as it is now: what later events are compared with.
                if f == Finding::InSync
                    && let Some(meta) = live
                    && let Some(o) = self.objects.get_mut(&id)
                {
                    o.digest = Some(digest(&meta));
                }
                f
            }
            Err(e) => {
                tracing::warn!(module = %module, "drift: checking {}: {e}", t.key);
                return;
            }
        };
        match finding {
            Finding::InSync => {
                if let Some(f) = self.objects.get_mut(&id).and_then(|o| o.fight.as_mut()) {
                    f.reported = None;
                }
            }
            Finding::Missing => self.missing(id, seen_at).await,
            Finding::Changed(c) => {
                let what = format!("{} changed: {}", t.key, c.describe());
                if mode == Mode::Warn {
                    let h = hash_of(&(&c.paths, &c.conflicts, c.live.to_string()));
                    self.report(&id, &module, what, h).await;
                    return;
                }
                self.detected(&module, &id, &what);
                self.restore(id, seen_at, true, what, Due::Check).await;
            }
        }
    }

    fn detected(&mut self, module: &str, id: &Id, what: &str) {
        let kind = self
            .objects
            .get(id)
            .map(|o| o.tracked.key.kind.clone())
            .unwrap_or_default();
        self.metrics.detected(module, &kind);
        if let Some(st) = self.modules.get_mut(module) {
            st.drift.detected += 1;
            st.drift.last = Some(what.to_string());
            st.drift.note(what, "detected");
        }
    }

    /// warn mode: each distinct drift once (log, metric, Event, status).
    async fn report(&mut self, id: &Id, module: &str, what: String, h: u64) {
        let Some(o) = self.objects.get_mut(id) else {
            return;
        };
        if o.fight().reported == Some(h) {
            return;
        }
        o.fight().reported = Some(h);
        let t = o.tracked.clone();
        self.detected(module, id, &what);
        tracing::warn!(module = %module, "drift: {what} (driftMode warn: reported, not reverted)");
        if let Some(st) = self.modules.get_mut(module) {
            st.drift
                .note(&what, "reported (driftMode warn), not reverted");
        }
        self.publish(module);
        if self.writes.allowed()
            && let Err(e) = self
                .writes
                .event(
                    &t,
                    None,
                    true,
                    "DriftDetected",
                    &format!("{what} (driftMode warn)"),
                )
                .await
        {
            tracing::debug!("drift: event: {e}");
        }
    }

    /// One restore of an object, within its backoff and circuit breaker.
    async fn restore(&mut self, id: Id, seen_at: Instant, force: bool, what: String, due: Due) {
        let now = Instant::now();
        let limits = self.limits;
        let Some(o) = self.objects.get_mut(&id) else {
            return;
        };
        if o.stopped() {
            return;
        }
        let module = o.module.clone();
        let t = o.tracked.clone();
        let f = o.fight();
        while f
            .attempts
            .front()
            .is_some_and(|t| now.duration_since(*t) > limits.window)
        {
            f.attempts.pop_front();
        }
        if f.attempts.len() >= limits.attempts {
            f.stopped = true;
            let why = format!(
                "stopped restoring after {} attempts within {}s: {what}; something keeps undoing it. Left as it is until the module runs again",
                f.attempts.len(),
                limits.window.as_secs()
            );
            tracing::error!(module = %module, "drift: {}: {why}", t.key);
            if let Some(st) = self.modules.get_mut(&*module) {
                st.drift.stopped.insert(t.key.to_string(), why.clone());
                st.drift
                    .note(&t.key.to_string(), format!("given up: {why}"));
            }
            self.publish(&module);
            if self.writes.allowed()
                && let Err(e) = self
                    .writes
                    .event(&t, None, true, "DriftRestoreStopped", &why)
                    .await
            {
                tracing::debug!("drift: event: {e}");
            }
            return;
        }
        if self.backing_off(&id, due, seen_at) {
            return;
        }
        if !self.writes.allowed() {
            self.schedule(now + Duration::from_secs(1), id, due, seen_at);
            return;
        }
        let ignored = self
            .modules
            .get(&*module)
            .map(|st| st.settings.ignored_paths(&t.api_version, &t.key))
            .unwrap_or_default();
        // Per object one restore at a time; one asked for meanwhile runs
        // after it (as a check: the object may be back by then).
        let Some(o) = self.objects.get_mut(&id) else {
            return;
        };
        let f = o.fight();
        if f.in_flight {
            f.again = Some(seen_at);
            return;
        }
        f.in_flight = true;
        let writes = self.writes.clone();
        let slots = self.slots.clone();
        self.jobs.spawn(async move {
            let _slot = slots.acquire_owned().await;
            let result = writes.restore(&t, force, &ignored).await;
            Restored {
                id,
                seen_at,
                due,
                what,
                tracked: t,
                done: Instant::now(),
                result,
            }
        });
    }

    /// A restore's answer.
    fn restored(&mut self, r: Restored) {
        let Restored {
            id,
            seen_at,
            due,
            what,
            tracked: t,
            done,
            result,
        } = r;
        let limits = self.limits;
        let Some(o) = self.objects.get_mut(&id) else {
            return;
        };
        let module = o.module.clone();
        let f = o.fight();
        f.in_flight = false;
        if let Some(again) = f.again.take() {
            let due = if due == Due::Restore {
                Due::Verify
            } else {
                due
            };
            self.schedule(done, id.clone(), due, again);
        }
        let Some(o) = self.objects.get_mut(&id) else {
            return;
        };
        let f = o.fight();
        f.attempts.push_back(done);
        let k = f.attempts.len() as u32;
        let wait = limits
            .first_backoff
            .saturating_mul(1u32 << (k - 1).min(16))
            .min(limits.max_backoff);
        f.next_allowed = Some(done + wait);
        match result {
            Ok(meta) => {
                o.digest = Some(digest(&meta));
                o.present = true;
                let took = done.duration_since(seen_at);
                self.metrics.restored(&module, &t.key.kind, took);
                if let Some(st) = self.modules.get_mut(&*module) {
                    st.drift.restored += 1;
                    let ms = took.as_secs_f64() * 1000.0;
                    st.drift.note(&what, format!("restored in {ms:.0} ms"));
                }
                tracing::info!(
                    module = %module,
                    seconds = took.as_secs_f64(),
                    "drift: {what}: restored"
                );
                self.publish(&module);
                let writes = self.writes.clone();
                tokio::spawn(async move {
                    let message = format!("{what}: restored by antiopa");
                    let uid = meta.uid.as_deref();
                    if let Err(e) = writes
                        .event(&t, uid, false, "DriftRestored", &message)
                        .await
                    {
                        tracing::debug!("drift: event: {e}");
                    }
                });
            }
            Err(e) if super::kind_gone(&e) => {
                if self.unserved.insert(id.0) {
                    tracing::warn!(module = %module, "drift: {what}: not restored: {e}; the kind is not served (its CRD removed?): its objects are left until it is served again");
                }
            }
            Err(e) => {
                tracing::warn!(module = %module, "drift: {what}: restore failed, retrying in {}s: {e}", wait.as_secs());
                if let Some(st) = self.modules.get_mut(&*module) {
                    st.drift.note(
                        &what,
                        format!("restore failed, retrying in {}s: {e}", wait.as_secs()),
                    );
                }
                self.schedule(done + wait, id, due, seen_at);
            }
        }
    }
}
