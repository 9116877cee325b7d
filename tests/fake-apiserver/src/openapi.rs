//! The OpenAPI v3 documents (`/openapi/v3` and `/openapi/v3/{api/v1|apis/g/v}`), cut down to
//! what clients read from them when they talk to the resources the fake serves.
//!
//! Why v3 and not v2, and why no schemas: kubectl 1.32 and helm 3.17 (through kubectl's
//! `Factory.Validator`) validate manifests only when the server cannot do it itself. Their
//! `paramVerifyingSchema` asks a `FallbackQueryParamVerifier` whether the kind's PATCH operation
//! takes the `fieldValidation` query parameter: first in the v3 document of the kind's group
//! version (cli-runtime `queryParamVerifierV3.HasSupport`), and only if that fails in the v2
//! document, which is served as gnostic protobuf only. A real 1.32 server lists
//! `fieldValidation` on every PATCH, so clients skip client-side validation and leave it to the
//! server; these documents say the same, so helm and kubectl behave here as against a real
//! server (without them, `helm install` fails with "failed to download openapi").
//!
//! The PATCH operations carry their kind (`x-kubernetes-group-version-kind`) and query
//! parameters but no request body and there are no component schemas: kubectl's client-side
//! apply (`Patcher.gvkSupportsPatchOpenAPIV3`) then computes strategic merge patches from its
//! compiled-in types, whose patch metadata is the one the real schemas publish. `/openapi/v2`
//! stays 404; clients only reach it when v3 fails. Field validation itself (`fieldValidation`)
//! is not performed by the fake: unknown fields are stored as sent.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use serde_json::{Value, json};

use crate::resources::Resource;

/// The `/openapi/v3` discovery document (kube-openapi `handler3.OpenAPIV3Discovery`): one
/// entry per served group version, keyed `api/v1` or `apis/{group}/{version}`, pointing at the
/// version's document with a content `hash` (clients cache by URL).
pub fn root(resources: &[Resource]) -> Value {
    let mut paths = serde_json::Map::new();
    for (key, rs) in by_group_version(resources) {
        let doc = group_version_doc(&rs);
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(&doc))}),
        );
    }
    json!({ "paths": paths })
}

/// The document of one group version (`api/v1`, `apis/apps/v1`), `None` when nothing is served
/// there (the real server answers 404).
pub fn group_version(resources: &[Resource], key: &str) -> Option<Value> {
    by_group_version(resources)
        .remove(key)
        .map(|rs| group_version_doc(&rs))
}

fn by_group_version(resources: &[Resource]) -> BTreeMap<String, Vec<&Resource>> {
    let mut m: BTreeMap<String, Vec<&Resource>> = BTreeMap::new();
    for r in resources {
        let key = if r.group.is_empty() {
            format!("api/{}", r.version)
        } else {
            format!("apis/{}/{}", r.group, r.version)
        };
        m.entry(key).or_default().push(r);
    }
    m
}

fn hash(doc: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// A query parameter as the real document lists it (`in: query`, string or boolean schema).
fn query_param(name: &str, ty: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn group_version_doc(rs: &[&Resource]) -> Value {
    let mut paths = serde_json::Map::new();
    for r in rs {
        let prefix = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let op = |action: &str, params: Vec<Value>| {
            json!({
                "operationId": format!("{action}{}", r.kind),
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK"}},
            })
        };
        let dry_run = query_param(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted.",
        );
        let manager = query_param(
            "fieldManager",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        );
        let validation = query_param(
            "fieldValidation",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.",
        );
        let force = query_param(
            "force",
            "boolean",
            "Force is going to \"force\" Apply requests.",
        );
        let writes = vec![dry_run.clone(), manager.clone(), validation.clone()];
        paths.insert(
            collection.clone(),
            json!({
                "get": op("list", vec![]),
                "post": op("post", writes.clone()),
            }),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": op("get", vec![]),
                "put": op("put", writes),
                "patch": op("patch", vec![dry_run.clone(), manager, validation, force]),
                "delete": op("delete", vec![dry_run]),
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0-fake", crate::resources::KUBERNETES_MINOR)},
        "paths": paths,
        "components": {"schemas": {}},
    })
}
