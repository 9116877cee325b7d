//! Discovery cache: `apiVersion` + `kind` → REST resource (plural) and scope.
//!
//! Filled lazily, one group/version at a time (`GET /api/v1` or
//! `GET /apis/<group>/<version>`), instead of kube's `Discovery::run()` that
//! walks every group of the server: an apply touches a handful of
//! group/versions, and each one is a request against the rate limit.
//! A group/version is read again when the kind asked for is missing from it
//! (a CRD applied meanwhile) or after [`Discovery::invalidate`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::core::{ApiResource, GroupVersionKind};

/// A resolved kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// How long a group/version read stays fresh for kinds it did not list:
/// asking again for every object of a kind the server does not serve yet
/// would cost a request each.
const NEGATIVE_TTL: Duration = Duration::from_secs(1);

/// One group/version as read: when, and its kinds.
type GroupVersion = (Instant, HashMap<String, Resolved>);

/// The cache, keyed by `apiVersion`, then kind, with the time of the read.
#[derive(Default)]
pub struct Discovery {
    groups: Mutex<HashMap<String, GroupVersion>>,
}

impl Discovery {
    /// The cached resolution of a kind, if any.
    pub fn cached(&self, api_version: &str, kind: &str) -> Option<Resolved> {
        let g = self.groups.lock().ok()?;
        g.get(api_version)?.1.get(kind).cloned()
    }

    /// Whether `api_version` was read from the server within the last
    /// second (so a kind missing from it is missing).
    pub fn fresh(&self, api_version: &str) -> bool {
        self.groups
            .lock()
            .ok()
            .and_then(|g| g.get(api_version).map(|(t, _)| t.elapsed() < NEGATIVE_TTL))
            .unwrap_or(false)
    }

    /// Forget a group/version (a CRD for it was applied or deleted).
    pub fn invalidate(&self, api_version: &str) {
        if let Ok(mut g) = self.groups.lock() {
            g.remove(api_version);
        }
    }

    /// Record a kind without asking the server: used for the kinds a CRD of
    /// the same apply defines, before the server serves them.
    pub fn insert(&self, api_version: &str, kind: &str, r: Resolved) {
        if let Ok(mut g) = self.groups.lock() {
            g.entry(api_version.to_string())
                .or_insert_with(|| (Instant::now(), HashMap::new()))
                .1
                .insert(kind.to_string(), r);
        }
    }

    /// Read one group/version from the server. A 404 (group not served)
    /// leaves an empty entry, so the kind resolves to `None`.
    pub async fn refresh(
        &self,
        client: &kube::Client,
        api_version: &str,
    ) -> Result<(), kube::Error> {
        let list = if api_version.contains('/') {
            client.list_api_group_resources(api_version).await
        } else {
            client.list_core_api_resources(api_version).await
        };
        let list = match list {
            Ok(l) => l,
            Err(e) if super::is_not_found(&e) => {
                if let Ok(mut g) = self.groups.lock() {
                    g.insert(api_version.to_string(), (Instant::now(), HashMap::new()));
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let (group, version) = split_api_version(api_version);
        let mut kinds = HashMap::new();
        for r in list.resources {
            // Subresources (`deployments/scale`) share the kind of another
            // resource; only top-level resources are addressable objects.
            if r.name.contains('/') {
                continue;
            }
            let gvk = GroupVersionKind::gvk(group, version, &r.kind);
            kinds.insert(
                r.kind.clone(),
                Resolved {
                    resource: ApiResource::from_gvk_with_plural(&gvk, &r.name),
                    namespaced: r.namespaced,
                },
            );
        }
        if let Ok(mut g) = self.groups.lock() {
            g.insert(api_version.to_string(), (Instant::now(), kinds));
        }
        Ok(())
    }
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}
