//! Kubernetes protobuf request bodies, media type negotiation and the OpenAPI v3 documents
//! against fake apiserver: objects encoded with prost (as client-go's typed clients send them)
//! are stored exactly as their JSON twins, unsupported kinds get the real 415 Status, and
//! responses stay JSON unless the client refuses it.

use std::collections::BTreeMap;

use crate::common::{call, call_bytes};
use fake_apiserver::FakeApiServer;
use fake_apiserver::protobuf::{
    ConfigMap, DeleteOptions, MEDIA_TYPE, Namespace, ObjectMeta, OwnerReference, Preconditions,
    Secret, envelope,
};
use prost::Message;
use serde_json::{Value, json};

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The stored object without what differs between two creations (name, uid, resourceVersion,
/// timestamps).
fn comparable(mut v: Value) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        for k in ["name", "uid", "resourceVersion", "creationTimestamp"] {
            m.remove(k);
        }
    }
    if let Some(mf) = v["metadata"]["managedFields"].as_array_mut() {
        for e in mf.iter_mut().filter_map(Value::as_object_mut) {
            e.remove("time");
        }
    }
    v
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn post_proto(s: &FakeApiServer, uri: &str, kind: &str, raw: Vec<u8>) -> (u16, Value) {
    call_bytes(
        s,
        "POST",
        uri,
        MEDIA_TYPE,
        Some("application/vnd.kubernetes.protobuf,application/json"),
        envelope("v1", kind, raw),
    )
    .await
}

#[tokio::test]
async fn protobuf_secret_is_stored_as_its_json_twin_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, owner) = call(
        &s,
        "POST",
        CONFIGMAPS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner"}}"#,
    )
    .await;
    assert_eq!(code, 201);
    let owner_uid = owner["metadata"]["uid"].as_str().unwrap().to_string();

    let json_body = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "as-json",
            "labels": {"name": "web", "owner": "helm", "status": "deployed"},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner_uid, "controller": true, "blockOwnerDeletion": false}],
            "finalizers": ["example.com/keep"],
        },
        "data": {"release": "aGVsbG8=", "empty": ""},
        "type": "helm.sh/release.v1",
        "immutable": false,
    });
    let (code, from_json) = call(
        &s,
        "POST",
        &format!("{SECRETS}?fieldManager=helm"),
        "application/json",
        &json_body.to_string(),
    )
    .await;
    assert_eq!(code, 201, "{from_json}");

    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: Some("as-proto".into()),
            // Go's marshaller writes empty strings for non-pointer fields.
            namespace: Some(String::new()),
            generate_name: Some(String::new()),
            labels: map(&[("name", "web"), ("owner", "helm"), ("status", "deployed")]),
            annotations: map(&[("note", "x")]),
            owner_references: vec![OwnerReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some("owner".into()),
                uid: Some(owner_uid.clone()),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }],
            finalizers: vec!["example.com/keep".into()],
            ..Default::default()
        }),
        data: [
            ("release".to_string(), b"hello".to_vec()),
            ("empty".to_string(), Vec::new()),
        ]
        .into(),
        r#type: Some("helm.sh/release.v1".into()),
        immutable: Some(false),
        ..Default::default()
    };
    let (code, from_proto) = call_bytes(
        &s,
        "POST",
        &format!("{SECRETS}?fieldManager=helm"),
        MEDIA_TYPE,
        Some("application/vnd.kubernetes.protobuf,application/json"),
        envelope("v1", "Secret", secret.encode_to_vec()),
    )
    .await;
    assert_eq!(code, 201, "{from_proto}");
    assert_eq!(from_proto["metadata"]["name"], "as-proto");
    assert_eq!(comparable(from_proto), comparable(from_json.clone()));
    let stored = s.get("secrets", Some("default"), "as-proto").unwrap();
    let stored_json = s.get("secrets", Some("default"), "as-json").unwrap();
    assert_eq!(comparable(stored.clone()), comparable(stored_json));
    assert_eq!(stored["data"]["release"], "aGVsbG8=");
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "helm");

    // PUT in protobuf (helm marks a release superseded this way), with the resourceVersion as
    // precondition.
    let mut update = secret.clone();
    let meta = update.metadata.as_mut().unwrap();
    meta.resource_version = stored["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string);
    meta.labels.insert("status".into(), "superseded".into());
    let put = |body: Secret| {
        call_bytes(
            &s,
            "PUT",
            "/api/v1/namespaces/default/secrets/as-proto",
            MEDIA_TYPE,
            None,
            envelope("v1", "Secret", body.encode_to_vec()),
        )
    };
    let (code, v) = put(update.clone()).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["metadata"]["labels"]["status"], "superseded");
    let (code, v) = put(update).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (409, Some("Conflict")),
        "a stale resourceVersion conflicts: {v}"
    );
}

#[tokio::test]
async fn protobuf_configmap_namespace_and_delete_options_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some("cm".into()),
            ..Default::default()
        }),
        data: map(&[("a", "1")]),
        binary_data: [("bin".to_string(), vec![0u8, 1, 2])].into(),
        ..Default::default()
    };
    let (code, v) = post_proto(&s, CONFIGMAPS, "ConfigMap", cm.encode_to_vec()).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["data"], json!({"a": "1"}));
    assert_eq!(v["binaryData"], json!({"bin": "AAEC"}));
    assert!(v.get("immutable").is_none());

    // A Namespace as kubectl create namespace sends it: what a JSON create stores.
    let ns = Namespace {
        metadata: Some(ObjectMeta {
            name: Some("from-proto".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (code, v) = post_proto(&s, "/api/v1/namespaces", "Namespace", ns.encode_to_vec()).await;
    assert_eq!(code, 201, "{v}");
    let (code, j) = call(
        &s,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"from-json","creationTimestamp":null},"spec":{},"status":{}}"#,
    )
    .await;
    assert_eq!(code, 201, "{j}");
    let strip_name = |mut v: Value| {
        v["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!("");
        comparable(v)
    };
    assert_eq!(strip_name(v.clone()), strip_name(j));
    assert_eq!(v["status"]["phase"], "Active");

    // DeleteOptions in protobuf: a wrong uid precondition is honoured (409), then a delete
    // without it succeeds.
    let opts = |uid: Option<&str>| {
        envelope(
            "v1",
            "DeleteOptions",
            DeleteOptions {
                preconditions: uid.map(|u| Preconditions {
                    uid: Some(u.to_string()),
                    resource_version: None,
                }),
                propagation_policy: Some("Background".into()),
                ..Default::default()
            }
            .encode_to_vec(),
        )
    };
    let uri = format!("{CONFIGMAPS}/cm");
    let (code, v) = call_bytes(&s, "DELETE", &uri, MEDIA_TYPE, None, opts(Some("wrong"))).await;
    assert_eq!(code, 409, "{v}");
    assert!(s.get("configmaps", Some("default"), "cm").is_some());
    let (code, v) = call_bytes(&s, "DELETE", &uri, MEDIA_TYPE, None, opts(None)).await;
    assert_eq!(code, 200, "{v}");
    assert!(s.get("configmaps", Some("default"), "cm").is_none());
}

#[tokio::test]
async fn unsupported_protobuf_kinds_get_415_against_fake_apiserver() {
    let s = FakeApiServer::new();
    // A Deployment in protobuf: the fake declares no apps/v1 messages.
    let body = envelope(
        "apps/v1",
        "Deployment",
        vec![0x0a, 0x05, 0x0a, 0x03, b'w', b'e', b'b'],
    );
    let (code, v) = call_bytes(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        MEDIA_TYPE,
        None,
        body,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
            "reason": "UnsupportedMediaType", "code": 415,
        })
    );
    assert_eq!(code, 415);
    assert!(s.list("deployments").is_empty());

    // A media type no resource takes.
    let (code, v) = call(&s, "POST", CONFIGMAPS, "text/plain", "a=b").await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    assert_eq!(
        v["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );

    // Not protobuf at all, and a broken envelope: 400 with the serializer's reason.
    let (code, v) = call_bytes(&s, "POST", SECRETS, MEDIA_TYPE, None, b"{}".to_vec()).await;
    assert_eq!((code, v["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        v["message"],
        "the object provided is unrecognized (must be of type Secret): provided data does not appear to be a protobuf message, expected prefix [107, 56, 115, 0]"
    );
    let mut broken = envelope("v1", "Secret", vec![0x0a, 0x7f]);
    broken.truncate(broken.len() - 1);
    let (code, v) = call_bytes(&s, "POST", SECRETS, MEDIA_TYPE, None, broken).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    assert!(s.list("secrets").is_empty());
}

#[tokio::test]
async fn responses_are_json_unless_json_is_refused_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, v) = call_bytes(
        &s,
        "GET",
        CONFIGMAPS,
        "",
        Some("application/vnd.kubernetes.protobuf,application/json"),
        Vec::new(),
    )
    .await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("ConfigMapList")));
    let (code, v) = call_bytes(
        &s,
        "GET",
        CONFIGMAPS,
        "",
        Some("application/vnd.kubernetes.protobuf"),
        Vec::new(),
    )
    .await;
    assert_eq!((code, v["reason"].as_str()), (406, Some("NotAcceptable")));
}

#[tokio::test]
async fn openapi_v3_lists_field_validation_on_patch_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, root) = call(&s, "GET", "/openapi/v3", "", "").await;
    assert_eq!(code, 200);
    let url = root["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
    assert!(root["paths"]["apis/apps/v1"].is_object());
    let (code, doc) = call(&s, "GET", &url, "", "").await;
    assert_eq!(code, 200);
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/secrets/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Secret"})
    );
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
    assert!(doc["paths"]["/api/v1/namespaces/{name}"]["patch"].is_object());
    let (code, _) = call(&s, "GET", "/openapi/v3/apis/nope.example.com/v1", "", "").await;
    assert_eq!(code, 404);
    let (code, _) = call(&s, "GET", "/openapi/v2", "", "").await;
    assert_eq!(code, 404);
}
