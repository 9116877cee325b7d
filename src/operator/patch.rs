//! The kubernetes operations hooks write to `KUBERNETES_PATCH_PATH`,
//! executed against the cluster as shell-operator's object patcher does
//! (`pkg/kube/object_patch`):
//!
//! - `Create`, `CreateOrUpdate`, `CreateIfNotExists`: POST (to the
//!   `subresource` when given); an object that exists already is an
//!   error, replaced (PUT with the live `resourceVersion`), or left alone.
//! - `Delete`, `DeleteInBackground`, `DeleteNonCascading`: propagation
//!   Foreground (then waiting for the object to go), Background, Orphan; an
//!   object already gone is fine.
//! - `MergePatch`, `JSONPatch`: PATCH; `JQPatch`: GET, the jq program run
//!   on the object (in the jq sandbox, as hooks' filters are), PUT, again
//!   on a conflict. With `ignoreMissingObject` a missing object is fine.
//!
//! Every operation is tried, in order; the errors, each naming the hook
//! and the operation, come back together.

use std::time::{Duration, Instant};

use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, PropagationPolicy,
};
use serde_json::Value;

use crate::cluster::{Cluster, api_status, error_text, is_not_found};
use crate::hooks::JqRunner;
use crate::hooks::output::{CreateMode, DeleteMode, KubeOperation, ObjectRef, PatchBody};
use crate::module::HookOperations;

/// How long a foreground `Delete` waits for the object to go.
const DELETE_WAIT: Duration = Duration::from_secs(20);

/// How often a `JQPatch` is tried when the object changes under it.
const CONFLICT_TRIES: usize = 5;

/// Executes the operations of `batch`, in order. `Err` lists every
/// failure as `<hook>: operation [i] <Operation> <kind> <ns/name>: why`.
pub(crate) async fn execute(
    cluster: &Cluster,
    jq: &JqRunner,
    batch: &[HookOperations],
) -> Result<(), String> {
    let mut errors = Vec::new();
    for h in batch {
        for (i, op) in h.operations.iter().enumerate() {
            match execute_one(cluster, jq, op).await {
                Ok(()) => tracing::info!("{}: {} done", h.hook, describe(op)),
                Err(e) => errors.push(format!("{}: operation [{i}] {}: {e}", h.hook, describe(op))),
            }
        }
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors.join("; ")),
    }
}

/// `CreateOrUpdate v1/ConfigMap ns/name`, for messages.
pub(crate) fn describe(op: &KubeOperation) -> String {
    let target = |t: &ObjectRef| {
        let av = match t.api_version.as_str() {
            "" => String::new(),
            av => format!("{av}/"),
        };
        match t.namespace.as_str() {
            "" => format!("{av}{} {}", t.kind, t.name),
            ns => format!("{av}{} {ns}/{}", t.kind, t.name),
        }
    };
    match op {
        KubeOperation::Create { mode, object, .. } => {
            let s = |k: &str| object[k].as_str().unwrap_or_default().to_string();
            let meta = &object["metadata"];
            let t = ObjectRef {
                api_version: s("apiVersion"),
                kind: s("kind"),
                namespace: meta["namespace"].as_str().unwrap_or_default().into(),
                name: meta["name"].as_str().unwrap_or_default().into(),
            };
            format!("{mode:?} {}", target(&t))
        }
        KubeOperation::Delete {
            mode, target: t, ..
        } => {
            let op = match mode {
                DeleteMode::Foreground => "Delete",
                DeleteMode::Background => "DeleteInBackground",
                DeleteMode::NonCascading => "DeleteNonCascading",
            };
            format!("{op} {}", target(t))
        }
        KubeOperation::Patch {
            target: t, body, ..
        } => {
            let op = match body {
                PatchBody::Jq(_) => "JQPatch",
                PatchBody::Merge(_) => "MergePatch",
                PatchBody::Json(_) => "JSONPatch",
            };
            format!("{op} {}", target(t))
        }
    }
}

async fn execute_one(cluster: &Cluster, jq: &JqRunner, op: &KubeOperation) -> Result<(), String> {
    let kerr = |e: kube::Error| error_text(&e);
    match op {
        KubeOperation::Create {
            mode,
            object,
            subresource,
        } => {
            let mut obj: DynamicObject =
                serde_json::from_value(object.clone()).map_err(|e| format!("object: {e}"))?;
            let (api_version, kind) = match &obj.types {
                Some(t) => (t.api_version.clone(), t.kind.clone()),
                None => return Err("object: apiVersion and kind are required".into()),
            };
            let name = obj.metadata.name.clone().unwrap_or_default();
            let ns = obj.metadata.namespace.clone().unwrap_or_default();
            let api = api_for(cluster, &api_version, &kind, &ns).await?;
            let pp = PostParams::default();
            let created = match subresource {
                None => cluster.request(api.create(&pp, &obj)).await,
                Some(s) => {
                    cluster
                        .request(api.create_subresource::<_, DynamicObject>(s, &name, &pp, &obj))
                        .await
                }
            };
            match created {
                Ok(_) => Ok(()),
                Err(e) if api_status(&e) == Some(409) => match mode {
                    CreateMode::Create => Err(kerr(e)),
                    CreateMode::CreateIfNotExists => Ok(()),
                    CreateMode::CreateOrUpdate => {
                        let live = cluster.request(api.get(&name)).await.map_err(kerr)?;
                        obj.metadata.resource_version = live.metadata.resource_version;
                        match subresource {
                            None => cluster.request(api.replace(&name, &pp, &obj)).await,
                            Some(s) => {
                                cluster
                                    .request(api.replace_subresource(s, &name, &pp, &obj))
                                    .await
                            }
                        }
                        .map(drop)
                        .map_err(kerr)
                    }
                },
                Err(e) => Err(kerr(e)),
            }
        }
        KubeOperation::Delete {
            mode,
            target,
            subresource,
        } => {
            if subresource.is_some() {
                return Err("a subresource cannot be deleted".into());
            }
            let api = api_for(
                cluster,
                &target.api_version,
                &target.kind,
                &target.namespace,
            )
            .await?;
            let policy = match mode {
                DeleteMode::Foreground => PropagationPolicy::Foreground,
                DeleteMode::Background => PropagationPolicy::Background,
                DeleteMode::NonCascading => PropagationPolicy::Orphan,
            };
            let dp = DeleteParams {
                propagation_policy: Some(policy),
                ..Default::default()
            };
            match cluster.request(api.delete(&target.name, &dp)).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => return Ok(()),
                Err(e) => return Err(kerr(e)),
            }
            if *mode != DeleteMode::Foreground {
                return Ok(());
            }
            let end = Instant::now() + DELETE_WAIT;
            loop {
                match cluster.request(api.get_opt(&target.name)).await {
                    Ok(None) => return Ok(()),
                    Ok(Some(_)) if Instant::now() < end => {
                        tokio::time::sleep(Duration::from_millis(250)).await
                    }
                    Ok(Some(_)) => {
                        return Err(format!(
                            "still there {}s after the delete",
                            DELETE_WAIT.as_secs()
                        ));
                    }
                    Err(e) => return Err(kerr(e)),
                }
            }
        }
        KubeOperation::Patch {
            target,
            body,
            subresource,
            ignore_missing_object,
            ..
        } => {
            let api = api_for(
                cluster,
                &target.api_version,
                &target.kind,
                &target.namespace,
            )
            .await?;
            let r = match body {
                PatchBody::Merge(v) => {
                    patch(cluster, &api, target, subresource, Patch::Merge(v)).await
                }
                PatchBody::Json(v) => {
                    let p =
                        serde_json::from_value(v.clone()).map_err(|e| format!("jsonPatch: {e}"))?;
                    patch(cluster, &api, target, subresource, Patch::<Value>::Json(p)).await
                }
                PatchBody::Jq(filter) => {
                    jq_patch(cluster, jq, &api, target, subresource, filter).await
                }
            };
            match r {
                Err(e) if *ignore_missing_object && is_not_found(&e) => Ok(()),
                Err(e) if is_not_found(&e) => Err(format!(
                    "{} (set ignoreMissingObject to allow a missing object)",
                    kerr(e)
                )),
                r => r.map_err(kerr),
            }
        }
    }
}

/// The dynamic API of `kind` in `api_version` (`v1` when not given), for
/// namespace `ns` when the kind is namespaced.
async fn api_for(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    ns: &str,
) -> Result<Api<DynamicObject>, String> {
    let api_version = match api_version {
        "" => "v1",
        v => v,
    };
    let r = cluster
        .resolve(api_version, kind)
        .await
        .map_err(|e| format!("discovery: {}", error_text(&e)))?
        .ok_or_else(|| format!("the server has no kind {kind} in {api_version}"))?;
    match (r.namespaced, ns) {
        (true, "") => Err(format!("{kind} is namespaced: a namespace is required")),
        (true, ns) => Ok(Api::namespaced_with(
            cluster.client().clone(),
            ns,
            &r.resource,
        )),
        (false, _) => Ok(Api::all_with(cluster.client().clone(), &r.resource)),
    }
}

async fn patch(
    cluster: &Cluster,
    api: &Api<DynamicObject>,
    target: &ObjectRef,
    subresource: &Option<String>,
    p: Patch<impl serde::Serialize + std::fmt::Debug>,
) -> Result<(), kube::Error> {
    let pp = PatchParams::default();
    match subresource {
        None => cluster.request(api.patch(&target.name, &pp, &p)).await,
        Some(s) => {
            cluster
                .request(api.patch_subresource(s, &target.name, &pp, &p))
                .await
        }
    }
    .map(drop)
}

/// GET, the filter, PUT; again when the object changed meanwhile.
async fn jq_patch(
    cluster: &Cluster,
    jq: &JqRunner,
    api: &Api<DynamicObject>,
    target: &ObjectRef,
    subresource: &Option<String>,
    filter: &crate::hooks::jq::JqFilter,
) -> Result<(), kube::Error> {
    let fail = |m: String| kube::Error::Service(m.into());
    let mut tries = 0;
    loop {
        tries += 1;
        let live = match subresource {
            None => cluster.request(api.get(&target.name)).await?,
            Some(s) => {
                cluster
                    .request(api.get_subresource(s, &target.name))
                    .await?
            }
        };
        let input = serde_json::to_value(&live).map_err(|e| fail(e.to_string()))?;
        let (jq, f) = (jq.clone(), filter.clone());
        let out = tokio::task::spawn_blocking(move || jq.apply(&f, &input))
            .await
            .map_err(|e| fail(e.to_string()))?
            .map_err(|e| fail(format!("jqFilter: {e}")))?;
        let obj: DynamicObject = serde_json::from_value(out)
            .map_err(|e| fail(format!("jqFilter result is not an object: {e}")))?;
        let pp = PostParams::default();
        let r = match subresource {
            None => cluster.request(api.replace(&target.name, &pp, &obj)).await,
            Some(s) => {
                cluster
                    .request(api.replace_subresource(s, &target.name, &pp, &obj))
                    .await
            }
        };
        match r {
            Err(e) if api_status(&e) == Some(409) && tries < CONFLICT_TRIES => continue,
            r => return r.map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::output::parse_kube_operations;

    #[test]
    fn operations_are_named_in_messages() {
        let ops = parse_kube_operations(
            r#"{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}}
{"operation":"DeleteInBackground","kind":"Pod","namespace":"ns","name":"p"}
{"operation":"JQPatch","apiVersion":"apps/v1","kind":"Deployment","name":"d","namespace":"x","jqFilter":".spec.replicas = 1"}
{"operation":"MergePatch","kind":"Namespace","name":"n","mergePatch":{"metadata":{"labels":{"a":"b"}}}}"#,
        )
        .unwrap();
        let names: Vec<String> = ops.iter().map(describe).collect();
        assert_eq!(
            names,
            [
                "CreateOrUpdate v1/ConfigMap ns/a",
                "DeleteInBackground Pod ns/p",
                "JQPatch apps/v1/Deployment x/d",
                "MergePatch Namespace n",
            ]
        );
    }
}
