//! Hook run queues, as shell-operator's and addon-operator's task queues:
//! every `schedule` and `kubernetes` binding runs its hook through the
//! queue its `queue:` names (`main` when unset). The `main` queue is
//! drained by the converge loop between module runs; each named queue has
//! a worker task of its own, so named queues run beside the main queue and
//! beside each other, while each runs its tasks in order, one at a time.
//!
//! - **Batching**: when a task starts, the consecutive tasks behind it for
//!   the same hook (and binding type) join it: one run with every context,
//!   a `group`'s consecutive contexts compacted to the last one
//!   (`CombineBindingContextForHook`). Snapshots (`includeSnapshotsFrom`,
//!   groups) and Synchronization objects are refreshed when the run starts
//!   (`HookController.UpdateSnapshots`).
//! - **Failures**: a task whose hook fails stays at the head of its queue
//!   and is retried with addon-operator's backoff ([`super::backoff`]),
//!   the queue waiting behind it; with `allowFailure` it is logged and
//!   dropped.
//! - **Synchronization first** (shell-operator #212): a hook's tasks wait
//!   while its module's Synchronization has not run (a global hook's: the
//!   global one); other hooks' tasks go on meanwhile.
//! - **Rate** (`settings.executionMinInterval`/`executionBurst`): a token
//!   bucket per hook (Go's `rate.Limiter`); a task waits for its token at
//!   the head of its queue, and what arrives meanwhile joins its run.
//!
//! The queues' lengths and tasks are published in [`Status::queues`] in
//! the shape of addon-operator's `queue list`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::state::{QueueStatus, QueueTask, Status};
use super::{Ctx, backoff, hook_log, patch};
use crate::hooks::config::{ScheduleBinding, Settings};
use crate::hooks::context::{KubeEvent, Snapshots, combine_contexts};
use crate::hooks::{BindingContext, BindingType};
use crate::module::{HookKey, HookOperations, LiveSnapshots};

/// The queue of bindings without `queue:`, and of module runs.
pub(crate) const MAIN: &str = "main";

/// One hook run to do.
#[derive(Clone, Debug)]
pub(crate) struct Task {
    /// `None`: a global hook.
    pub module: Option<String>,
    pub hook: String,
    /// `Kubernetes` or `Schedule`.
    pub binding_type: BindingType,
    /// The bindings' names, for logs and the queue list.
    pub bindings: Vec<String>,
    pub contexts: Vec<BindingContext>,
    /// A failure is logged only (every joined task allows it).
    pub allow_failure: bool,
}

impl Task {
    /// The task of a `schedule` binding that fired.
    pub fn schedule(module: Option<String>, hook: String, b: &ScheduleBinding) -> Task {
        let context = BindingContext {
            binding: b.name.clone(),
            binding_type: BindingType::Schedule,
            // Filled when the run starts.
            snapshots: (!b.include_snapshots_from.is_empty()).then(|| {
                b.include_snapshots_from
                    .iter()
                    .map(|n| (n.clone(), Vec::new()))
                    .collect()
            }),
            group: b.group.clone(),
            event: None,
            has_jq_filter: false,
        };
        Task {
            module,
            hook,
            binding_type: BindingType::Schedule,
            bindings: vec![b.name.clone()],
            contexts: vec![context],
            allow_failure: b.allow_failure,
        }
    }

    fn key(&self) -> HookKey {
        (self.module.clone(), self.hook.clone())
    }

    fn joins(&self, other: &Task) -> bool {
        self.module == other.module
            && self.hook == other.hook
            && self.binding_type == other.binding_type
    }

    fn join(&mut self, other: Task) {
        for b in other.bindings {
            if !self.bindings.contains(&b) {
                self.bindings.push(b);
            }
        }
        self.contexts.extend(other.contexts);
        self.allow_failure &= other.allow_failure;
    }

    /// Who runs, for messages: `module 'M': hook 'H'` or `hook 'H'`.
    pub fn who(&self) -> String {
        match &self.module {
            Some(m) => format!("module '{m}': hook '{}'", self.hook),
            None => format!("hook '{}'", self.hook),
        }
    }

    /// As addon-operator describes a hook run task in its queue list.
    fn description(&self, queue: &str) -> String {
        let kind = match &self.module {
            Some(_) => "ModuleHookRun",
            None => "GlobalHookRun",
        };
        let what = match &self.module {
            Some(m) => format!("{m}:{}", self.hook),
            None => self.hook.clone(),
        };
        let types: BTreeSet<&str> = self
            .contexts
            .iter()
            .map(|c| match (&c.group, &c.event) {
                (Some(_), _) => "Group",
                (None, Some(KubeEvent::Synchronization { .. })) => "Synchronization",
                (None, Some(KubeEvent::Event { .. })) => "Event",
                (None, None) => "Schedule",
            })
            .collect();
        format!(
            "{kind}:{queue}:{}:{what}:{}:{}",
            self.binding_type.as_str(),
            self.bindings.join(","),
            types.into_iter().collect::<Vec<_>>().join(",")
        )
    }

    /// Fresh snapshots for the contexts that carry them, and fresh objects
    /// for Synchronization contexts, from the hook's current ones.
    fn refresh(&mut self, current: &Snapshots) {
        for c in &mut self.contexts {
            if let Some(snaps) = &mut c.snapshots {
                for (name, items) in snaps.iter_mut() {
                    *items = current.get(name).cloned().unwrap_or_default();
                }
            }
            if let Some(KubeEvent::Synchronization { objects }) = &mut c.event {
                *objects = current.get(&c.binding).cloned().unwrap_or_default();
            }
        }
    }
}

/// Go's `rate.Limiter` per hook: `executionBurst` tokens, one more every
/// `executionMinInterval`; a run takes one, waiting for it when none is
/// left.
#[derive(Default)]
pub(crate) struct RateLimits {
    buckets: HashMap<HookKey, Bucket>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimits {
    /// Reserves a token for a run of `key` at `now`: how long to wait for
    /// it (zero: at once).
    pub fn reserve(
        &mut self,
        key: &HookKey,
        settings: Option<&Settings>,
        now: Instant,
    ) -> Duration {
        let Some(s) = settings.filter(|s| !s.execution_min_interval.is_zero()) else {
            return Duration::ZERO;
        };
        let burst = s.execution_burst.max(1) as f64;
        let interval = s.execution_min_interval.as_secs_f64();
        let b = self.buckets.entry(key.clone()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed / interval).min(burst);
        b.at = now;
        b.tokens -= 1.0;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens * interval)
        }
    }
}

/// What a queue has for its runner now.
#[derive(Debug)]
pub(crate) enum Take {
    /// Run this (the head and the tasks that joined it).
    Run(Task),
    /// Nothing before this instant (a retry's backoff, a rate limit).
    WaitUntil(Instant),
    /// Nothing runnable: empty, or every task waits for a Synchronization.
    Idle,
}

/// One queue: tasks in order, one run at a time.
#[derive(Default)]
pub(crate) struct Queue {
    tasks: VecDeque<Task>,
    /// Failures in a row of the head task.
    failures: u32,
    /// The head waits until then: its retry, or its rate-limit token.
    hold_until: Option<Instant>,
    /// The head's token is reserved (its wait is the rate limit's).
    reserved: bool,
    /// A run is under way (its task is out of `tasks`).
    running: Option<Task>,
    status: String,
}

impl Queue {
    pub fn push(&mut self, t: Task) {
        self.tasks.push_back(t);
    }

    /// A Synchronization task goes before the hook's queued events: the
    /// events' objects are in the snapshot it lists.
    pub fn push_first_for_hook(&mut self, t: Task) {
        let at = self
            .tasks
            .iter()
            .position(|x| x.key() == t.key())
            .unwrap_or(self.tasks.len());
        self.tasks.insert(at, t);
    }

    pub fn len(&self) -> usize {
        self.tasks.len() + usize::from(self.running.is_some())
    }

    /// Drops the tasks `keep` refuses (a module disabled, the hooks
    /// loaded afresh).
    pub fn retain(&mut self, keep: impl Fn(&Task) -> bool) {
        let before = self.tasks.front().map(Task::key);
        self.tasks.retain(|t| keep(t));
        if self.tasks.front().map(Task::key) != before {
            self.failures = 0;
            self.hold_until = None;
            self.reserved = false;
        }
    }

    /// The next run: the first task whose hook is `ready`, with the
    /// consecutive tasks of the same hook behind it, once its rate-limit
    /// token (`limits`, `settings`) is there.
    pub fn take(
        &mut self,
        now: Instant,
        ready: &dyn Fn(&Task) -> bool,
        limits: &mut RateLimits,
        settings: &dyn Fn(&HookKey) -> Option<Settings>,
    ) -> Take {
        if self.running.is_some() {
            return Take::Idle;
        }
        if let Some(t) = self.hold_until.filter(|t| *t > now) {
            return Take::WaitUntil(t);
        }
        let Some(i) = self.tasks.iter().position(ready) else {
            self.status = match self.tasks.is_empty() {
                true => String::new(),
                false => "waiting for Synchronization".into(),
            };
            return Take::Idle;
        };
        if !self.reserved {
            let key = self.tasks[i].key();
            let wait = limits.reserve(&key, settings(&key).as_ref(), now);
            self.reserved = true;
            if !wait.is_zero() {
                self.hold_until = Some(now + wait);
                self.status = format!(
                    "waiting {:.1}s for executionMinInterval",
                    wait.as_secs_f64()
                );
                return Take::WaitUntil(now + wait);
            }
        }
        self.hold_until = None;
        self.reserved = false;
        let mut task = self.tasks.remove(i).expect("index found above");
        while self.tasks.get(i).is_some_and(|next| task.joins(next)) {
            let next = self.tasks.remove(i).expect("checked above");
            task.join(next);
        }
        task.contexts = combine_contexts(vec![std::mem::take(&mut task.contexts)]);
        self.status = format!("run {}", task.hook);
        self.running = Some(task.clone());
        Take::Run(task)
    }

    /// Ends the run of `task`. A failure not allowed goes back to the head
    /// and holds the queue for the backoff delay, returned.
    pub fn done(&mut self, task: Task, failed: bool, now: Instant) -> Option<Duration> {
        self.running = None;
        if failed && !task.allow_failure {
            self.failures += 1;
            let delay = backoff::delay_with_jitter(self.failures);
            self.hold_until = Some(now + delay);
            self.status = format!(
                "sleep after fail for {:.1}s (attempt {})",
                delay.as_secs_f64(),
                self.failures
            );
            self.tasks.push_front(task);
            return Some(delay);
        }
        self.failures = 0;
        self.status.clear();
        None
    }

    fn status(&self, name: &str) -> QueueStatus {
        let tasks = self
            .running
            .iter()
            .chain(self.tasks.iter())
            .enumerate()
            .map(|(i, t)| QueueTask {
                index: i + 1,
                description: t.description(name),
            })
            .collect();
        QueueStatus {
            name: name.to_string(),
            tasks_count: self.len(),
            status: self.status.clone(),
            tasks,
        }
    }
}

/// What the queues need to know of the hooks, kept by the converge loop.
#[derive(Default)]
pub(crate) struct HookState {
    /// Global hooks' Synchronization has run.
    pub global_started: bool,
    /// Modules whose Synchronization has run.
    pub started: BTreeSet<String>,
    pub enabled: BTreeSet<String>,
    /// Hooks' `settings`.
    pub settings: HashMap<HookKey, Settings>,
}

impl HookState {
    fn ready(&self, t: &Task) -> bool {
        match &t.module {
            None => self.global_started,
            Some(m) => self.enabled.contains(m) && self.started.contains(m),
        }
    }
}

/// What a named queue's run asks of the converge loop.
#[derive(Debug)]
pub(crate) enum Request {
    /// A module hook changed its module's values.
    ModuleRun(String),
    /// A global hook changed global values.
    Converge,
    /// Run the module now (asked for on the status page).
    RunNow(String),
}

struct Shared {
    queues: Mutex<BTreeMap<String, Queue>>,
    limits: Mutex<RateLimits>,
    hooks: RwLock<HookState>,
    /// A named queue's worker wakes on its notify.
    wake: Mutex<BTreeMap<String, Arc<Notify>>>,
    status: Arc<RwLock<Status>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn publish(&self, queues: &BTreeMap<String, Queue>) {
        let mut list: Vec<QueueStatus> = queues.iter().map(|(n, q)| q.status(n)).collect();
        // `main` first, as addon-operator lists them.
        list.sort_by_key(|q| (q.name != MAIN, q.name.clone()));
        self.status
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .queues = list;
    }

    fn take(&self, name: &str, now: Instant) -> Take {
        let hooks = self.hooks.read().unwrap_or_else(|p| p.into_inner());
        let mut limits = lock(&self.limits);
        let mut queues = lock(&self.queues);
        let take = match queues.get_mut(name) {
            Some(q) => q.take(now, &|t| hooks.ready(t), &mut limits, &|k| {
                hooks.settings.get(k).cloned()
            }),
            None => Take::Idle,
        };
        self.publish(&queues);
        take
    }

    fn done(&self, name: &str, task: Task, failed: bool) -> Option<Duration> {
        let mut queues = lock(&self.queues);
        let delay = queues
            .get_mut(name)
            .and_then(|q| q.done(task, failed, Instant::now()));
        self.publish(&queues);
        delay
    }

    fn wake_all(&self) {
        for n in lock(&self.wake).values() {
            n.notify_one();
        }
    }
}

/// The queues: `main`, drained by the converge loop ([`Queues::take_main`]),
/// and the named ones, each with its worker.
pub(crate) struct Queues {
    shared: Arc<Shared>,
    ctx: Ctx,
    live: LiveSnapshots,
    shutdown: CancellationToken,
    /// With leader election: named queues run only while it is `true`.
    leading: Option<watch::Receiver<bool>>,
    requests_tx: mpsc::UnboundedSender<Request>,
    requests_rx: mpsc::UnboundedReceiver<Request>,
}

impl Queues {
    pub fn new(
        ctx: Ctx,
        live: LiveSnapshots,
        shutdown: CancellationToken,
        leading: Option<watch::Receiver<bool>>,
    ) -> Queues {
        let (requests_tx, requests_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            queues: Mutex::new(BTreeMap::from([(MAIN.to_string(), Queue::default())])),
            limits: Mutex::new(RateLimits::default()),
            hooks: RwLock::new(HookState::default()),
            wake: Mutex::new(BTreeMap::new()),
            status: ctx.status.clone(),
        });
        Queues {
            shared,
            ctx,
            live,
            shutdown,
            leading,
            requests_tx,
            requests_rx,
        }
    }

    /// A sender of requests to the converge loop, for the status page.
    pub fn requester(&self) -> mpsc::UnboundedSender<Request> {
        self.requests_tx.clone()
    }

    /// Changes what the queues know of the hooks, then wakes every queue.
    pub fn update_hooks(&self, f: impl FnOnce(&mut HookState)) {
        {
            let mut hooks = self.shared.hooks.write().unwrap_or_else(|p| p.into_inner());
            f(&mut hooks);
            let enabled = hooks.enabled.clone();
            let mut queues = lock(&self.shared.queues);
            for q in queues.values_mut() {
                q.retain(|t| t.module.as_ref().is_none_or(|m| enabled.contains(m)));
            }
            self.shared.publish(&queues);
        }
        self.shared.wake_all();
    }

    /// Drops every queued task (the hooks are loaded afresh).
    pub fn clear(&self) {
        let mut queues = lock(&self.shared.queues);
        for q in queues.values_mut() {
            q.retain(|_| false);
        }
        self.shared.publish(&queues);
    }

    /// Queues `task` in `queue` (see [`Queues::push_all`]).
    pub fn push(&self, queue: &str, task: Task) {
        self.push_all(vec![(queue.to_string(), task)]);
    }

    /// Queues each task in its queue (a Synchronization before the hook's
    /// events), all at once so that a worker sees them together, starting
    /// a queue's worker the first time.
    pub fn push_all(&self, tasks: Vec<(String, Task)>) {
        let mut named = BTreeSet::new();
        {
            let mut queues = lock(&self.shared.queues);
            for (queue, task) in tasks {
                let sync = task
                    .contexts
                    .iter()
                    .any(|c| matches!(c.event, Some(KubeEvent::Synchronization { .. })));
                let q = queues.entry(queue.clone()).or_default();
                match sync {
                    true => q.push_first_for_hook(task),
                    false => q.push(task),
                }
                if queue != MAIN {
                    named.insert(queue);
                }
            }
            self.shared.publish(&queues);
        }
        for queue in named {
            self.wake_worker(&queue);
        }
    }

    fn wake_worker(&self, queue: &str) {
        let notify = {
            let mut wake = lock(&self.shared.wake);
            match wake.get(queue) {
                Some(n) => n.clone(),
                None => {
                    let n = Arc::new(Notify::new());
                    wake.insert(queue.to_string(), n.clone());
                    let worker = Worker {
                        name: queue.to_string(),
                        shared: self.shared.clone(),
                        ctx: self.ctx.clone(),
                        live: self.live.clone(),
                        requests: self.requests_tx.clone(),
                        wake: n.clone(),
                        leading: self.leading.clone(),
                    };
                    tokio::spawn(worker.run(self.shutdown.child_token()));
                    tracing::info!(queue = %queue, "queue started");
                    n
                }
            }
        };
        notify.notify_one();
    }

    /// The main queue's next run, if due at `now`.
    pub fn take_main(&self, now: Instant) -> Take {
        self.shared.take(MAIN, now)
    }

    /// Ends a main-queue run (see [`Queue::done`]).
    pub fn done_main(&self, task: Task, failed: bool) -> Option<Duration> {
        self.shared.done(MAIN, task, failed)
    }

    /// The next request of a named queue's run.
    pub async fn recv(&mut self) -> Request {
        // The sender lives in `self`: the channel never closes.
        match self.requests_rx.recv().await {
            Some(r) => r,
            None => std::future::pending().await,
        }
    }

    /// Runs `task` (see [`run_task`]).
    pub async fn run(&self, task: &mut Task) -> Result<bool, String> {
        run_task(&self.ctx, &self.live, task).await
    }
}

/// A named queue's runner.
struct Worker {
    name: String,
    shared: Arc<Shared>,
    ctx: Ctx,
    live: LiveSnapshots,
    requests: mpsc::UnboundedSender<Request>,
    wake: Arc<Notify>,
    /// With leader election: run only while `true`.
    leading: Option<watch::Receiver<bool>>,
}

impl Worker {
    async fn run(self, token: CancellationToken) {
        loop {
            if token.is_cancelled() {
                return;
            }
            // A standby runs no hook: wait for the Lease.
            if let Some(rx) = &self.leading
                && !*rx.borrow()
            {
                let mut rx = rx.clone();
                tokio::select! {
                    _ = token.cancelled() => return,
                    r = rx.wait_for(|l| *l) => if r.is_err() { return },
                }
                continue;
            }
            match self.shared.take(&self.name, Instant::now()) {
                Take::Run(mut task) => {
                    // Leadership lost mid-run: the run is dropped at its
                    // next await (the step-down clears the queues).
                    let r = match &self.leading {
                        None => Some(run_task(&self.ctx, &self.live, &mut task).await),
                        Some(rx) => {
                            let mut rx = rx.clone();
                            tokio::select! {
                                biased;
                                _ = rx.wait_for(|l| !*l) => None,
                                r = run_task(&self.ctx, &self.live, &mut task) => Some(r),
                            }
                        }
                    };
                    let Some(r) = r else {
                        let _ = self.shared.done(&self.name, task, true);
                        continue;
                    };
                    let failed = r.is_err();
                    log_outcome(&self.name, &task, &r);
                    if let Ok(true) = r {
                        let _ = self.requests.send(match &task.module {
                            Some(m) => Request::ModuleRun(m.clone()),
                            None => Request::Converge,
                        });
                    }
                    let (who, allowed) = (task.who(), task.allow_failure);
                    if let Some(d) = self.shared.done(&self.name, task, failed)
                        && !allowed
                    {
                        tracing::warn!(queue = %self.name, "{who}: retrying in {:.1}s", d.as_secs_f64());
                    }
                }
                Take::WaitUntil(t) => tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep_until(t.into()) => {}
                    _ = self.wake.notified() => {}
                },
                Take::Idle => tokio::select! {
                    _ = token.cancelled() => return,
                    _ = self.wake.notified() => {}
                },
            }
        }
    }
}

/// Logs how a run ended, in the words the operator's logs use.
pub(crate) fn log_outcome(queue: &str, task: &Task, r: &Result<bool, String>) {
    let who = task.who();
    let what = match task.binding_type {
        BindingType::Schedule => "schedule run",
        _ => "kubernetes event run",
    };
    let binding = task.bindings.join(",");
    match r {
        Ok(_) => tracing::info!(queue = %queue, binding = %binding, "{who}: {what} done"),
        Err(e) if task.allow_failure => {
            tracing::warn!(queue = %queue, binding = %binding, "{who}: {what} failed (allowFailure): {e}")
        }
        Err(e) => {
            tracing::error!(queue = %queue, binding = %binding, "{who}: {what} failed: {e}")
        }
    }
}

/// One run of a task's hook: snapshots refreshed, its input prepared
/// under the session, its process run without it (so other queues' hooks
/// run meanwhile), its patches applied, then the kubernetes operations it
/// wrote executed. Returns whether it changed its module's (global) values.
pub(crate) async fn run_task(
    ctx: &Ctx,
    live: &LiveSnapshots,
    task: &mut Task,
) -> Result<bool, String> {
    let current = live
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&task.key())
        .cloned()
        .unwrap_or_default();
    task.refresh(&current);
    let (module, hook, binding, contexts) = (
        task.module.clone(),
        task.hook.clone(),
        task.binding_type,
        task.contexts.clone(),
    );
    let prepared = ctx
        .with_session(move |s| {
            s.prepare_hook_run(module.as_deref(), &hook, binding, &contexts, &mut hook_log)
        })
        .await
        .map_err(|e| e.to_string())?;
    let (out, prepared, started) = tokio::task::spawn_blocking(move || {
        let mut log = hook_log;
        let started = std::time::Instant::now();
        let mut prepared = prepared;
        (prepared.execute(&mut log), prepared, started)
    })
    .await
    .map_err(|e| format!("hook run: {e}"))?;
    let (out, prepared) = ctx
        .with_session(move |s| {
            s.record_prepared(&prepared, started, &out);
            (out, prepared)
        })
        .await;
    let mut out = out.map_err(|e| e.to_string())?;
    let operations = std::mem::take(&mut out.kubernetes_operations);
    let changed = ctx
        .with_session(move |s| s.finish_hook_run(&prepared, out))
        .await
        .map_err(|e| e.to_string())?;
    if !operations.is_empty() {
        let batch = [HookOperations {
            hook: task.who(),
            operations,
        }];
        patch::execute(&ctx.cluster, &ctx.settings.hooks.jq, &batch).await?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::WatchEvent;

    fn event(module: &str, hook: &str, binding: &str, group: Option<&str>) -> Task {
        Task {
            module: Some(module.into()),
            hook: hook.into(),
            binding_type: BindingType::Kubernetes,
            bindings: vec![binding.into()],
            contexts: vec![BindingContext {
                binding: binding.into(),
                binding_type: BindingType::Kubernetes,
                snapshots: group.map(|_| Snapshots::new()),
                group: group.map(str::to_string),
                event: Some(KubeEvent::Event {
                    watch_event: WatchEvent::Added,
                    object: None,
                }),
                has_jq_filter: false,
            }],
            allow_failure: false,
        }
    }

    fn take(q: &mut Queue, now: Instant) -> Take {
        q.take(now, &|_| true, &mut RateLimits::default(), &|_| None)
    }

    #[test]
    fn consecutive_tasks_of_one_hook_run_once_and_groups_compact() {
        let mut q = Queue::default();
        q.push(event("m", "a", "x", None));
        q.push(event("m", "a", "g1", Some("g")));
        q.push(event("m", "a", "g2", Some("g")));
        q.push(event("m", "b", "y", None));
        q.push(event("m", "a", "z", None));
        let now = Instant::now();
        let Take::Run(t) = take(&mut q, now) else {
            panic!()
        };
        assert_eq!(t.bindings, ["x", "g1", "g2"]);
        // The group's two contexts: the last one only.
        let names: Vec<&str> = t.contexts.iter().map(|c| c.binding.as_str()).collect();
        assert_eq!(names, ["x", "g2"]);
        // One run at a time.
        assert!(matches!(take(&mut q, now), Take::Idle));
        assert_eq!(q.done(t, false, now), None);
        let Take::Run(t) = take(&mut q, now) else {
            panic!()
        };
        assert_eq!(t.hook, "b");
    }

    #[test]
    fn a_failed_task_holds_its_queue_with_backoff_and_takes_newcomers_along() {
        let mut q = Queue::default();
        q.push(event("m", "a", "x", None));
        q.push(event("m", "b", "y", None));
        let now = Instant::now();
        let Take::Run(t) = take(&mut q, now) else {
            panic!()
        };
        let delay = q.done(t, true, now).unwrap();
        assert!(delay >= backoff::INITIAL && delay < backoff::INITIAL + Duration::from_secs(1));
        assert!(matches!(take(&mut q, now), Take::WaitUntil(t) if t == now + delay));
        // Retried first, when its backoff is over.
        let later = now + delay;
        let Take::Run(t) = take(&mut q, later) else {
            panic!()
        };
        assert_eq!((t.hook.as_str(), q.len()), ("a", 2));
        // allowFailure: dropped.
        let mut t = t;
        t.allow_failure = true;
        assert_eq!(q.done(t, true, later), None);
        let Take::Run(t) = take(&mut q, later) else {
            panic!()
        };
        assert_eq!(t.hook, "b");
    }

    #[test]
    fn tasks_of_a_hook_not_synchronized_wait_while_others_run() {
        let mut q = Queue::default();
        q.push(event("late", "a", "x", None));
        q.push(event("ready", "b", "y", None));
        let now = Instant::now();
        let ready = |t: &Task| t.module.as_deref() == Some("ready");
        let Take::Run(t) = q.take(now, &ready, &mut RateLimits::default(), &|_| None) else {
            panic!()
        };
        assert_eq!(t.hook, "b");
        q.done(t, false, now);
        assert!(matches!(
            q.take(now, &ready, &mut RateLimits::default(), &|_| None),
            Take::Idle
        ));
        assert_eq!(q.status("n").status, "waiting for Synchronization");
        // A Synchronization goes before the hook's events.
        let mut sync = event("late", "a", "x", None);
        sync.contexts[0].event = Some(KubeEvent::Synchronization { objects: vec![] });
        sync.bindings = vec!["sync".into()];
        q.push_first_for_hook(sync);
        let Take::Run(t) = take(&mut q, now) else {
            panic!()
        };
        assert_eq!(t.bindings, ["sync", "x"]);
    }

    #[test]
    fn the_token_bucket_lets_a_burst_through_then_one_per_interval() {
        let mut limits = RateLimits::default();
        let key: HookKey = (None, "h".into());
        let s = Settings {
            execution_min_interval: Duration::from_secs(2),
            execution_burst: 2,
        };
        let now = Instant::now();
        assert_eq!(limits.reserve(&key, Some(&s), now), Duration::ZERO);
        assert_eq!(limits.reserve(&key, Some(&s), now), Duration::ZERO);
        assert_eq!(limits.reserve(&key, Some(&s), now), Duration::from_secs(2));
        // A second later the reservation above still owes a second.
        assert_eq!(
            limits.reserve(&key, Some(&s), now + Duration::from_secs(1)),
            Duration::from_secs(3)
        );
        assert_eq!(limits.reserve(&key, None, now), Duration::ZERO);
    }

    #[test]
    fn a_rate_limited_head_waits_and_what_arrives_meanwhile_joins_it() {
        let mut limits = RateLimits::default();
        let s = Settings {
            execution_min_interval: Duration::from_secs(3),
            execution_burst: 1,
        };
        let settings = |_: &HookKey| Some(s.clone());
        let mut q = Queue::default();
        let now = Instant::now();
        q.push(event("m", "a", "x", None));
        let Take::Run(t) = q.take(now, &|_| true, &mut limits, &settings) else {
            panic!()
        };
        q.done(t, false, now);
        q.push(event("m", "a", "y", None));
        let Take::WaitUntil(at) = q.take(now, &|_| true, &mut limits, &settings) else {
            panic!()
        };
        assert_eq!(at, now + Duration::from_secs(3));
        q.push(event("m", "a", "z", None));
        let Take::Run(t) = q.take(at, &|_| true, &mut limits, &settings) else {
            panic!()
        };
        assert_eq!(t.bindings, ["y", "z"]);
    }

    #[test]
    fn the_queue_list_names_each_task() {
        let mut q = Queue::default();
        q.push(event("m", "hooks/a.sh", "cms", None));
        let st = q.status("cm-queue");
        assert_eq!(st.tasks_count, 1);
        assert_eq!(
            st.tasks[0].description,
            "ModuleHookRun:cm-queue:kubernetes:m:hooks/a.sh:cms:Event"
        );
        assert_eq!(
            serde_json::to_value(&st).unwrap(),
            serde_json::json!({
                "name": "cm-queue",
                "tasksCount": 1,
                "tasks": [{"index": 1, "description": "ModuleHookRun:cm-queue:kubernetes:m:hooks/a.sh:cms:Event"}],
            })
        );
    }
}
