//! Helpers shared by the fake apiserver's integration tests: raw requests through the in-process
//! service, so tests control content types and see status codes and bodies exactly.

#![allow(dead_code)]

use fake_apiserver::FakeApiServer;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// One request through the in-process service: (status code, parsed JSON body).
pub async fn call(
    s: &FakeApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("request");
    let resp = s.service().oneshot(req).await.expect("infallible");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, v)
}

/// One request with a raw body and an optional `Accept` header: (status code, parsed JSON
/// body).
pub async fn call_bytes(
    s: &FakeApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    accept: Option<&str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let req = req.body(kube::client::Body::from(body)).expect("request");
    let resp = s.service().oneshot(req).await.expect("infallible");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, v)
}

/// Server-side apply of a YAML (or JSON) body as `manager`.
pub async fn apply(
    s: &FakeApiServer,
    uri: &str,
    manager: &str,
    force: bool,
    yaml: &str,
) -> (u16, Value) {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let uri = format!(
        "{uri}{sep}fieldManager={manager}{}",
        if force { "&force=true" } else { "" }
    );
    call(s, "PATCH", &uri, "application/apply-patch+yaml", yaml).await
}

/// A JSON merge patch as `manager` (an `Update` operation).
pub async fn merge_patch(s: &FakeApiServer, uri: &str, manager: &str, json: &str) -> (u16, Value) {
    let uri = format!("{uri}?fieldManager={manager}");
    call(s, "PATCH", &uri, "application/merge-patch+json", json).await
}

/// managedFields as (manager, operation, fieldsV1) triples, in stored order.
pub fn managers(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| {
                    (
                        m["manager"].as_str().unwrap_or_default().to_string(),
                        m["operation"].as_str().unwrap_or_default().to_string(),
                        m["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// YAML text to JSON, for writing expected values the way the documentation shows them.
pub fn yaml(s: &str) -> Value {
    serde_yaml_ng::from_str(s).expect("test yaml")
}
