//! `lookup` reading the cluster a chart is applied to: Helm's semantics
//! (get one object, list a namespace, list cluster-wide; an empty map when
//! absent or forbidden) through antiopa's client. Renders are
//! synchronous, so each lookup blocks its thread on the requests
//! (`block_in_place` on a runtime worker).

use serde_json::{Map, Value as Json};

use crate::cluster::Cluster;

/// A [`crate::chart::lookup::Lookup`] answered from a cluster.
pub struct ClusterLookup {
    cluster: Cluster,
    handle: tokio::runtime::Handle,
}

impl ClusterLookup {
    /// Reads `cluster` through the current tokio runtime (call it from
    /// within one; the lookups may then run on any thread).
    pub fn new(cluster: &Cluster) -> ClusterLookup {
        ClusterLookup {
            cluster: cluster.clone(),
            handle: tokio::runtime::Handle::current(),
        }
    }
}

impl crate::chart::lookup::Lookup for ClusterLookup {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Json, String> {
        use kube::api::{Api, DynamicObject, ListParams};
        let absent = || Json::Object(Map::new());
        let c = &self.cluster;
        tokio::task::block_in_place(|| {
            self.handle.block_on(async {
                let gone = |e: &kube::Error| {
                    matches!(crate::cluster::api_status(e), Some(403 | 404))
                };
                let r = match c.resolve(api_version, kind).await {
                    Ok(Some(r)) => r,
                    Ok(None) => return Ok(absent()),
                    Err(e) if gone(&e) => return Ok(absent()),
                    Err(e) => return Err(crate::cluster::error_text(&e)),
                };
                let api: Api<DynamicObject> = if r.namespaced && !namespace.is_empty() {
                    Api::namespaced_with(c.client().clone(), namespace, &r.resource)
                } else {
                    Api::all_with(c.client().clone(), &r.resource)
                };
                let typed = |mut v: Json| {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("apiVersion".into(), Json::String(api_version.to_string()));
                        o.insert("kind".into(), Json::String(kind.to_string()));
                    }
                    v
                };
                if !name.is_empty() {
                    return match c.request(api.get(name)).await {
                        Ok(o) => Ok(typed(serde_json::to_value(&o).map_err(|e| e.to_string())?)),
                        Err(e) if gone(&e) => Ok(absent()),
                        Err(e) => Err(crate::cluster::error_text(&e)),
                    };
                }
                match c.request(api.list(&ListParams::default())).await {
                    Ok(list) => {
                        let items = list
                            .items
                            .iter()
                            .map(|o| serde_json::to_value(o).map(typed))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(|e| e.to_string())?;
                        Ok(serde_json::json!({
                            "apiVersion": api_version,
                            "kind": format!("{kind}List"),
                            "metadata": {"resourceVersion": list.metadata.resource_version.unwrap_or_default()},
                            "items": items,
                        }))
                    }
                    Err(e) if gone(&e) => Ok(absent()),
                    Err(e) => Err(crate::cluster::error_text(&e)),
                }
            })
        })
    }
}
