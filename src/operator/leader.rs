//! Leader election (`antiopa run --leader-elect`): of the replicas that
//! share a namespace, only the holder of a `coordination.k8s.io/v1` Lease
//! runs hooks and writes to the cluster.
//!
//! The locking protocol is kube-lease-manager's (server-side apply of
//! `holderIdentity`, so two replicas grabbing a free Lease at once conflict
//! and one wins). Around it, [`Leadership`] adds what an operator needs:
//!
//! - a watch on the Lease, so a Lease released by a leader that shuts down
//!   is taken at once by a standby (not when its last renewal would have
//!   expired);
//! - a local deadline: a leader that has not seen its own renewal by
//!   `renewTime + duration - 1 s` steps down by itself, so an apiserver it
//!   cannot reach never leaves two replicas writing;
//! - a renewal error steps down at once; the next term starts afresh.
//!
//! Leadership is published on a `watch` channel; the operator converges
//! when it turns `true` and drops the work under way when it turns `false`.

use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::runtime::watcher;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// antiopa's Lease, in the operator's namespace. Its own name, not
/// addon-operator's `addon-operator-leader-election`: the two lock it
/// differently (client-go updates by resourceVersion, we apply).
pub const DEFAULT_LEASE_NAME: &str = "antiopa-leader-election";

/// How leader election runs.
#[derive(Clone, Debug)]
pub struct LeaderSettings {
    /// Name of the Lease.
    pub lease: String,
    /// This replica's identity in `holderIdentity` (the pod's name).
    pub identity: String,
    /// How long a Lease stays valid after its last renewal: a standby takes
    /// over at most this long (plus up to a second) after the leader died.
    pub duration: Duration,
    /// The leader renews this long before its Lease would expire.
    pub grace: Duration,
}

impl LeaderSettings {
    /// Failover within 15 s of the leader dying: the Lease is valid for
    /// 10 s after a renewal and renewed every 6 s (client-go's defaults are
    /// 15/10/2 s, addon-operator's 35/30/10 s).
    pub fn new(identity: &str) -> LeaderSettings {
        LeaderSettings {
            lease: DEFAULT_LEASE_NAME.to_string(),
            identity: identity.to_string(),
            duration: Duration::from_secs(10),
            grace: Duration::from_secs(4),
        }
    }
}

/// The election running for this replica, until [`Leadership::release`].
pub struct Leadership {
    rx: watch::Receiver<bool>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// What the Lease watch last saw.
#[derive(Clone, Debug, Default, PartialEq)]
struct Seen {
    holder: Option<String>,
    renewed: Option<SystemTime>,
}

impl Leadership {
    /// Starts campaigning for `settings.lease` in `namespace`.
    pub fn start(client: kube::Client, namespace: &str, settings: LeaderSettings) -> Leadership {
        let (tx, rx) = watch::channel(false);
        let stop = CancellationToken::new();
        let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
        let (seen_tx, seen_rx) = watch::channel(Seen::default());
        let watch_task = tokio::spawn(watch_lease(
            api.clone(),
            settings.lease.clone(),
            seen_tx,
            stop.clone(),
        ));
        let ns = namespace.to_string();
        let task = tokio::spawn(campaign(
            client,
            ns,
            settings,
            tx,
            seen_rx,
            stop.clone(),
            watch_task,
        ));
        Leadership { rx, stop, task }
    }

    /// `true` while this replica leads.
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }

    /// Stops campaigning and gives the Lease up if this replica holds it,
    /// so a standby takes over at once (within 5 s, else the Lease just
    /// expires).
    pub async fn release(self) {
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(6), self.task).await;
    }
}

/// Keeps `seen` current with the Lease as the server has it.
async fn watch_lease(
    api: Api<Lease>,
    name: String,
    seen: watch::Sender<Seen>,
    stop: CancellationToken,
) {
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(kube::runtime::WatchStreamExt::default_backoff(watcher(
        api, cfg
    )));
    loop {
        let ev = tokio::select! {
            _ = stop.cancelled() => return,
            ev = events.next() => ev,
        };
        let lease = match ev {
            None => return,
            Some(Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l))) => Some(l),
            Some(Ok(watcher::Event::Delete(_))) => None,
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                tracing::debug!("leader election: watching the Lease: {e}");
                continue;
            }
        };
        let spec = lease.and_then(|l| l.spec).unwrap_or_default();
        seen.send_replace(Seen {
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            renewed: spec.renew_time.map(|t| t.0.into()),
        });
    }
}

/// Publishes `leading` when it changed, with a log line.
fn publish(tx: &watch::Sender<bool>, leading: bool, why: &str) {
    tx.send_if_modified(|v| {
        if *v == leading {
            return false;
        }
        *v = leading;
        if leading {
            tracing::info!("leader election: {why}");
        } else {
            tracing::warn!("leader election: {why}");
        }
        true
    });
}

/// The election loop: one lease manager per attempt; any doubt (an error,
/// a Lease that changed hands, a renewal not seen in time) ends the attempt
/// and the next one starts from the Lease as it is.
async fn campaign(
    client: kube::Client,
    namespace: String,
    s: LeaderSettings,
    tx: watch::Sender<bool>,
    mut seen: watch::Receiver<Seen>,
    stop: CancellationToken,
    watch_task: JoinHandle<()>,
) {
    let api: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let mut failures = 0u32;
    // The holder a standby last said it waits for.
    let mut waiting_for: Option<String> = None;
    loop {
        if stop.is_cancelled() {
            break;
        }
        let built = LeaseManagerBuilder::new(client.clone(), &s.lease)
            .with_namespace(&namespace)
            .with_identity(&s.identity)
            .with_duration(s.duration.as_secs())
            .with_grace(s.grace.as_secs())
            // Per replica (the crate's default is random per manager, and a
            // new one each term would pile up in managedFields); an apply
            // of another replica's holderIdentity must conflict.
            .with_field_manager(field_manager(&s.identity))
            .build()
            .await;
        let mgr = match built {
            Ok(m) => m,
            Err(e) => {
                failures += 1;
                publish(&tx, false, "stepping down: the Lease cannot be read");
                tracing::error!(lease = %s.lease, "leader election: {e}");
                pause(&stop, retry_delay(failures)).await;
                continue;
            }
        };
        // The Lease as it is now decides whether a term goes on.
        match api.get_opt(&s.lease).await {
            Ok(l) => {
                let spec = l.and_then(|l| l.spec).unwrap_or_default();
                let holder = spec.holder_identity.filter(|h| !h.is_empty());
                if holder.as_deref() != Some(s.identity.as_str()) {
                    publish(&tx, false, "stepping down: another replica holds the Lease");
                    if let Some(h) = &holder
                        && waiting_for.as_ref() != Some(h)
                    {
                        tracing::info!(lease = %s.lease, "leader election: standing by, {h} leads");
                        waiting_for = holder.clone();
                    }
                }
            }
            Err(e) => {
                failures += 1;
                publish(&tx, false, "stepping down: the Lease cannot be read");
                tracing::error!(lease = %s.lease, "leader election: {e}");
                pause(&stop, retry_delay(failures)).await;
                continue;
            }
        }
        // Deadline of the current term (only while leading).
        let mut deadline: Option<Instant> = None;
        // One `changed()` at a time, kept across the Lease watch's events:
        // dropped in the middle of a renewal, the manager would renew again
        // at once.
        let mut changed = Box::pin(mgr.changed());
        let again = loop {
            let sleep_until =
                deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = stop.cancelled() => break Duration::ZERO,
                r = &mut changed => match r {
                    Ok(true) => {
                        changed = Box::pin(mgr.changed());
                        failures = 0;
                        deadline = Some(Instant::now() + s.duration.saturating_sub(Duration::from_secs(1)));
                        publish(&tx, true, &format!("leading as {} (Lease {})", s.identity, s.lease));
                    }
                    Ok(false) => {
                        changed = Box::pin(mgr.changed());
                        deadline = None;
                        publish(&tx, false, "stepping down: the Lease was lost");
                    }
                    Err(e) => {
                        failures += 1;
                        publish(&tx, false, "stepping down: the Lease cannot be renewed");
                        tracing::error!(lease = %s.lease, "leader election: {e}");
                        break retry_delay(failures);
                    }
                },
                r = seen.changed() => {
                    if r.is_err() {
                        break retry_delay(1);
                    }
                    let now = seen.borrow_and_update().clone();
                    let leading = *tx.borrow();
                    match (&now.holder, leading) {
                        (Some(h), true) if *h == s.identity => {
                            if let Some(at) = now.renewed.and_then(|r| r.checked_add(s.duration)) {
                                let left = at
                                    .duration_since(SystemTime::now())
                                    .unwrap_or_default()
                                    .saturating_sub(Duration::from_secs(1));
                                deadline = Some(Instant::now() + left);
                            }
                        }
                        // Taken over (our renewal was late): look again.
                        (Some(_), true) => break Duration::ZERO,
                        // Released: try to take it now.
                        (None, false) => break Duration::from_millis(50),
                        _ => {}
                    }
                }
                _ = tokio::time::sleep_until(sleep_until.into()), if deadline.is_some() => {
                    publish(&tx, false, "stepping down: the Lease was not renewed in time");
                    break Duration::ZERO;
                }
            }
        };
        // It may hold the manager's state lock, which `release` takes.
        drop(changed);
        if stop.is_cancelled() {
            publish(&tx, false, "stepping down: shutting down");
            match tokio::time::timeout(Duration::from_secs(5), mgr.release()).await {
                Ok(Ok(())) => tracing::info!(lease = %s.lease, "leader election: Lease released"),
                Ok(Err(e)) => {
                    tracing::warn!(lease = %s.lease, "leader election: releasing the Lease: {e}")
                }
                Err(_) => {
                    tracing::warn!(lease = %s.lease, "leader election: releasing the Lease timed out; it expires by itself")
                }
            }
            break;
        }
        drop(mgr);
        pause(&stop, again).await;
    }
    watch_task.abort();
}

/// `antiopa-lease-IDENTITY`, within the apiserver's 128 characters.
fn field_manager(identity: &str) -> String {
    let mut m = format!("antiopa-lease-{identity}");
    if m.len() > 128 {
        let mut end = 128;
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        m.truncate(end);
    }
    m
}

/// 1 s, doubling up to 16 s, after consecutive failures.
fn retry_delay(failures: u32) -> Duration {
    Duration::from_secs(1 << failures.saturating_sub(1).min(4))
}

async fn pause(stop: &CancellationToken, d: Duration) {
    if d.is_zero() {
        return;
    }
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = tokio::time::sleep(d) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_managers_name_the_replica_within_the_apiservers_limit() {
        assert_eq!(
            field_manager("antiopa-7d9f-x"),
            "antiopa-lease-antiopa-7d9f-x"
        );
        // Cut at a character boundary: 15 bytes, then 37 three-byte ones.
        let long = format!("x{}", "€".repeat(50));
        assert_eq!(field_manager(&long).len(), 126);
    }

    #[test]
    fn retries_back_off_to_sixteen_seconds() {
        let d: Vec<u64> = (1..=7).map(|f| retry_delay(f).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8, 16, 16, 16]);
    }
}
