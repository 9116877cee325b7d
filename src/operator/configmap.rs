//! The config source: the operator's ConfigMap (`ADDON_OPERATOR_CONFIG_MAP`
//! in `ADDON_OPERATOR_NAMESPACE`), watched with kube-runtime's watcher so an
//! edit reaches the converge loop at once, with no restart. Only the latest
//! state matters, so it travels on a `watch` channel: edits made while a
//! converge runs collapse into one. A missing ConfigMap is an empty config,
//! as in addon-operator; a deleted one becomes empty again.
//!
//! The operator also writes to it ([`store`]): config values hooks patched
//! and what original-layout `initial_values` scripts printed, so that they
//! survive a restart.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;

/// What the ConfigMap holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// Not listed yet.
    Unknown,
    /// There is no such ConfigMap.
    Missing,
    /// Its `data`.
    Data(BTreeMap<String, String>),
}

impl ConfigSource {
    /// The data, empty when the ConfigMap is missing; `None` until known.
    pub fn data(&self) -> Option<BTreeMap<String, String>> {
        match self {
            ConfigSource::Unknown => None,
            ConfigSource::Missing => Some(BTreeMap::new()),
            ConfigSource::Data(d) => Some(d.clone()),
        }
    }
}

/// Starts watching ConfigMap `name` in `namespace` until `shutdown`;
/// the receiver sees every state it goes through (the latest one at least).
pub fn watch_config(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    shutdown: CancellationToken,
) -> watch::Receiver<ConfigSource> {
    let (tx, rx) = watch::channel(ConfigSource::Unknown);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let name = name.to_string();
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        // Whether the current (re)list has seen the object.
        let mut seen = false;
        loop {
            let ev = tokio::select! {
                _ = shutdown.cancelled() => return,
                ev = stream.next() => ev,
            };
            let state = match ev {
                None => return,
                Some(Err(e)) => {
                    tracing::warn!(configmap = %name, "watching the config: {e}; retrying");
                    continue;
                }
                Some(Ok(Event::Init)) => {
                    seen = false;
                    continue;
                }
                Some(Ok(Event::InitApply(cm) | Event::Apply(cm))) => {
                    seen = true;
                    ConfigSource::Data(cm.data.unwrap_or_default())
                }
                Some(Ok(Event::InitDone)) if seen => continue,
                Some(Ok(Event::InitDone | Event::Delete(_))) => ConfigSource::Missing,
            };
            tx.send_if_modified(|cur| {
                let changed = *cur != state;
                *cur = state;
                changed
            });
        }
    });
    rx
}

/// Stores `updates` (key → YAML text) in the ConfigMap, creating it when
/// missing: one server-side apply of just those keys under the operator's
/// field manager, so keys users manage stay theirs.
pub async fn store(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    updates: &BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": updates,
    });
    let pp = PatchParams::apply(crate::apply::FIELD_MANAGER).force();
    cluster
        .request(api.patch(name, &pp, &Patch::Apply(&body)))
        .await
        .map(drop)
}
