//! Shared metadata-only watches of named objects: one kube-runtime
//! `watcher` per (resource, namespace) over `PartialObjectMeta`, so the
//! server sends `metadata` alone (the `as=PartialObjectMetadata` Accept
//! header) and nothing of an object's content is held here. Subscribers
//! (drift: one per module) name the objects they care about; a watch starts
//! with the first name on its (resource, namespace), is shared by every
//! subscriber asking for the same one, and ends with the last name.
//!
//! Events reach one channel: an object's [`Meta`] each time it is listed
//! or changes (resourceVersion, uid, labels, managedFields), its last
//! one when it is deleted, and after every (re)list the names listed,
//! so what disappeared while a watch was broken is seen too. The last
//! event of a name nobody subscribed to is kept for 30 s and passed on when
//! the name is subscribed (a release's objects are named after the run
//! that wrote them, whose events come first). A kind the
//! server stops serving (its CRD removed) makes the watch start afresh with
//! backoff, reported once, and its next list tells what is gone.
//!
//! Memory: an object's metadata is cut down to a [`Meta`] (name, uid, the
//! subscriber's digest, two flags) on the watch's task, as soon as it is
//! decoded, so neither the channel nor a subscriber ever holds the full
//! `ObjectMeta` (managedFields are most of it); list pages are dropped as
//! they are consumed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, ObjectMeta, PartialObjectMeta};

use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, error_text};

/// What one watch asks the server: a resource, in a namespace (`None`:
/// cluster-scoped), with a label selector.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    pub namespace: Option<String>,
    /// `key=value`, or empty for every object.
    pub label_selector: String,
}

impl Target {
    fn resource(&self) -> ApiResource {
        let (group, version) = crate::cluster::split_api_version(&self.api_version);
        let gvk = kube::core::GroupVersionKind::gvk(group, version, &self.kind);
        ApiResource::from_gvk_with_plural(&gvk, &self.plural)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {} in {ns}", self.api_version, self.plural),
            None => write!(f, "{} {}", self.api_version, self.plural),
        }
    }
}

/// Digests an object's metadata for a subscriber (what of it counts as a
/// change is the subscriber's business).
pub type Digest = fn(&ObjectMeta) -> u64;

/// What a watch passes on of an object's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    pub name: String,
    pub uid: Option<String>,
    /// The subscribers' [`Digest`] of the metadata.
    pub digest: u64,
    /// Its labels still match the watch's selector (a DELETED event for an
    /// object that no longer does means relabelled, not gone).
    pub selected: bool,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// The object as it was when the watch (re)listed or the name was
    /// subscribed, not a change that followed: a subscriber with no
    /// earlier state takes it as its starting point.
    pub initial: bool,
}

impl Meta {
    fn of(meta: &ObjectMeta, target: &Target, digest: Digest, initial: bool) -> Option<Meta> {
        Some(Meta {
            name: meta.name.clone()?,
            uid: meta.uid.clone(),
            digest: digest(meta),
            selected: selector_matches(&target.label_selector, meta.labels.as_ref()),
            deleting: meta.deletion_timestamp.is_some(),
            initial,
        })
    }
}

/// How long a watch remembers the last event of a name nobody subscribed
/// to: a subscriber names the objects of a release after the run that
/// wrote them, so their writes' events come first; they are passed on when
/// the name is subscribed within this time.
const RECENT: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether `labels` match an equality selector (`a=b,c=d`; empty: all).
fn selector_matches(selector: &str, labels: Option<&BTreeMap<String, String>>) -> bool {
    selector
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => {
                let (k, v) = (
                    k.trim().trim_end_matches('='),
                    v.trim_start_matches('=').trim(),
                );
                labels.and_then(|l| l.get(k)).is_some_and(|x| x == v)
            }
            None => labels.is_some_and(|l| l.contains_key(term.trim())),
        })
}

/// What a watch saw.
#[derive(Debug)]
pub enum Seen {
    /// A subscribed object as listed, created or changed.
    Applied(Arc<Target>, Meta),
    /// A subscribed object deleted (or no longer matching the selector):
    /// its last metadata.
    Deleted(Arc<Target>, Meta),
    /// A (re)list ended: the subscribed names it held. Subscribed objects
    /// not among them are gone.
    Listed(Arc<Target>, HashSet<String>),
}

/// A watch in force.
struct Running {
    token: CancellationToken,
    names: watch::Sender<Arc<HashSet<String>>>,
    /// Names by subscriber.
    subscribers: BTreeMap<String, BTreeSet<String>>,
    target: Arc<Target>,
}

/// The watches in force.
pub struct Watches {
    cluster: Cluster,
    shutdown: CancellationToken,
    tx: mpsc::UnboundedSender<Seen>,
    running: BTreeMap<Target, Running>,
    digest: Digest,
}

impl Watches {
    /// No watches yet; what they see arrives on the receiver, each object's
    /// metadata summed up by `digest`. Every watch ends when `shutdown`
    /// fires.
    pub fn new(
        cluster: Cluster,
        shutdown: CancellationToken,
        digest: Digest,
    ) -> (Watches, mpsc::UnboundedReceiver<Seen>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Watches {
                cluster,
                shutdown,
                tx,
                running: BTreeMap::new(),
                digest,
            },
            rx,
        )
    }

    /// Watches in force.
    pub fn len(&self) -> usize {
        self.running.len()
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The shared target of a running watch (events carry it).
    pub fn target(&self, t: &Target) -> Option<Arc<Target>> {
        self.running.get(t).map(|r| r.target.clone())
    }

    /// Sets the names `subscriber` wants on `target` (empty: none). A new
    /// target starts a watch; a target left with no names stops it.
    /// Returns the shared target when the watch runs.
    pub fn subscribe(
        &mut self,
        target: &Target,
        subscriber: &str,
        names: BTreeSet<String>,
    ) -> Option<Arc<Target>> {
        if !self.running.contains_key(target) {
            if names.is_empty() {
                return None;
            }
            let shared = Arc::new(target.clone());
            let token = self.shutdown.child_token();
            let (names_tx, names_rx) = watch::channel(Arc::new(HashSet::new()));
            tokio::spawn(run_watch(
                self.cluster.clone(),
                shared.clone(),
                names_rx,
                self.tx.clone(),
                token.clone(),
                self.digest,
            ));
            tracing::debug!(target = %target, "watch started");
            self.running.insert(
                target.clone(),
                Running {
                    token,
                    names: names_tx,
                    subscribers: BTreeMap::new(),
                    target: shared,
                },
            );
        }
        let r = self.running.get_mut(target)?;
        if names.is_empty() {
            r.subscribers.remove(subscriber);
        } else {
            r.subscribers.insert(subscriber.to_string(), names);
        }
        if r.subscribers.is_empty() {
            r.token.cancel();
            self.running.remove(target);
            tracing::debug!(target = %target, "watch stopped");
            return None;
        }
        let all: HashSet<String> = r.subscribers.values().flatten().cloned().collect();
        r.names.send_replace(Arc::new(all));
        Some(r.target.clone())
    }

    /// Drops every name of `subscriber` (watches left with none stop).
    pub fn unsubscribe_all(&mut self, subscriber: &str) {
        let targets: Vec<Target> = self
            .running
            .iter()
            .filter(|(_, r)| r.subscribers.contains_key(subscriber))
            .map(|(t, _)| t.clone())
            .collect();
        for t in targets {
            self.subscribe(&t, subscriber, BTreeSet::new());
        }
    }
}

/// The first wait before a watch of a kind the server does not serve is
/// started again, and the longest.
const UNSERVED_FIRST_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
const UNSERVED_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// One watch: metadata-only, relisting with backoff after errors; only
/// subscribed names pass.
async fn run_watch(
    cluster: Cluster,
    target: Arc<Target>,
    names: watch::Receiver<Arc<HashSet<String>>>,
    tx: mpsc::UnboundedSender<Seen>,
    token: CancellationToken,
    digest: Digest,
) {
    let ar = target.resource();
    let client = cluster.client().clone();
    let api: Api<PartialObjectMeta<DynamicObject>> = match &target.namespace {
        Some(ns) => Api::namespaced_with(client, ns, &ar),
        None => Api::all_with(client, &ar),
    };
    let mut config = watcher::Config::default();
    if !target.label_selector.is_empty() {
        config = config.labels(&target.label_selector);
    }
    let start = || {
        watcher::watcher(api.clone(), config.clone())
            .default_backoff()
            .boxed()
    };
    let mut stream = start();
    let mut names = names;
    let mut current = names.borrow_and_update().clone();
    // Last events of names not subscribed (yet), for at most RECENT.
    let mut recent: HashMap<String, (std::time::Instant, Meta)> = HashMap::new();
    let mut pruned_at = std::time::Instant::now();
    // While the kind is not served, the watch is started afresh (after this
    // wait, doubling) rather than resumed: its first list once the kind is
    // back is what tells the subscriber what went with it.
    let mut unserved_wait = UNSERVED_FIRST_WAIT;
    let mut listing: Option<HashSet<String>> = None;
    let mut failing = false;
    loop {
        let ev = tokio::select! {
            _ = token.cancelled() => return,
            r = names.changed() => {
                if r.is_err() {
                    return;
                }
                let next = names.borrow_and_update().clone();
                for n in next.iter().filter(|n| !current.contains(*n)) {
                    if let Some((_, mut m)) = recent.remove(n) {
                        m.initial = true;
                        if tx.send(Seen::Applied(target.clone(), m)).is_err() {
                            return;
                        }
                    }
                }
                current = next;
                continue;
            }
            ev = stream.next() => match ev {
                Some(ev) => ev,
                None => return,
            },
        };
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                let unserved = matches!(&e,
                    watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k)
                        if crate::cluster::is_not_found(k));
                if !failing {
                    let why = match &e {
                        watcher::Error::InitialListFailed(k)
                        | watcher::Error::WatchStartFailed(k)
                            if crate::cluster::is_not_found(k) =>
                        {
                            "the kind is not served (its CRD removed?)".to_string()
                        }
                        watcher::Error::InitialListFailed(k)
                        | watcher::Error::WatchStartFailed(k)
                        | watcher::Error::WatchFailed(k) => error_text(k),
                        e => e.to_string(),
                    };
                    tracing::warn!(target = %target, "watch of released objects failing, retrying with backoff: {why}");
                }
                failing = true;
                if unserved {
                    tokio::select! {
                        _ = token.cancelled() => return,
                        _ = tokio::time::sleep(unserved_wait) => {}
                    }
                    unserved_wait = (unserved_wait * 2).min(UNSERVED_MAX_WAIT);
                    stream = start();
                    listing = None;
                }
                continue;
            }
        };
        // A fresh watcher says Init before its list is even asked for.
        if failing && !matches!(ev, Event::Init) {
            tracing::info!(target = %target, "watch of released objects working again");
            failing = false;
            unserved_wait = UNSERVED_FIRST_WAIT;
        }
        // Only the summary leaves this task; the decoded object (and with
        // it the page it came from) is dropped here. A name not subscribed
        // is remembered for a while (see RECENT) when it changes.
        let mut meta = |o: &PartialObjectMeta<DynamicObject>, initial: bool, gone: bool| {
            let name = o.metadata.name.as_deref()?;
            if current.contains(name) {
                return Meta::of(&o.metadata, &target, digest, initial);
            }
            let now = std::time::Instant::now();
            if now.duration_since(pruned_at) >= RECENT {
                recent.retain(|_, (at, _)| now.duration_since(*at) < RECENT);
                pruned_at = now;
            }
            match gone {
                true => drop(recent.remove(name)),
                false => {
                    if let Some(m) = Meta::of(&o.metadata, &target, digest, false) {
                        recent.insert(m.name.clone(), (now, m));
                    }
                }
            }
            None
        };
        let sent = match ev {
            Event::Init => {
                listing = Some(HashSet::new());
                Ok(())
            }
            Event::InitApply(o) => match meta(&o, true, false) {
                Some(m) => {
                    if let Some(l) = listing.as_mut() {
                        l.insert(m.name.clone());
                    }
                    tx.send(Seen::Applied(target.clone(), m))
                }
                None => Ok(()),
            },
            Event::InitDone => {
                let listed = listing.take().unwrap_or_default();
                tx.send(Seen::Listed(target.clone(), listed))
            }
            Event::Apply(o) => match meta(&o, false, false) {
                Some(m) => tx.send(Seen::Applied(target.clone(), m)),
                None => Ok(()),
            },
            Event::Delete(o) => match meta(&o, false, true) {
                Some(m) => tx.send(Seen::Deleted(target.clone(), m)),
                None => Ok(()),
            },
        };
        if sent.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_selectors_match_as_the_server_does() {
        let labels: BTreeMap<String, String> =
            [("app.kubernetes.io/managed-by", "Helm"), ("a", "1")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert!(selector_matches("", None));
        assert!(selector_matches(
            "app.kubernetes.io/managed-by=Helm",
            Some(&labels)
        ));
        assert!(selector_matches(
            "app.kubernetes.io/managed-by==Helm,a=1",
            Some(&labels)
        ));
        assert!(!selector_matches(
            "app.kubernetes.io/managed-by=Helm,a=2",
            Some(&labels)
        ));
        assert!(!selector_matches("app.kubernetes.io/managed-by=Helm", None));
    }
}
