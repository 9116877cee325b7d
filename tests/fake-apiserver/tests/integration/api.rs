//! CRUD, discovery, LIST selectors, WATCH, DELETE and error bodies against fake apiserver, driven
//! through `kube::Client` (as antiopa does) and through raw requests where the exact status code
//! or body matters.

use std::time::Duration;

use crate::common::{apply, call, merge_patch};
use fake_apiserver::{FakeApiServer, Fault};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::Discovery;
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"},
    }))
    .expect("configmap")
}

fn api_status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn crud_with_kube_client_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", json!({"app": "x"})))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(
        created.metadata.resource_version.as_deref(),
        Some(s.resource_version().to_string().as_str())
    );

    let err = api_status(
        api.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"a\" already exists");

    let got = api.get("a").await.unwrap();
    assert_eq!(got.metadata.uid.as_deref(), Some(uid.as_str()));
    let err = api_status(api.get("missing").await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (404, "NotFound", "configmaps \"missing\" not found")
    );

    // PUT with a stale resourceVersion conflicts.
    let mut stale = got.clone();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    stale.data = Some([("k".to_string(), "z".to_string())].into());
    let err = api_status(
        api.replace("a", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Server-side apply through kube's Patch::Apply.
    let applied = api
        .patch(
            "b",
            &PatchParams::apply("antiopa"),
            &Patch::Apply(cm("b", json!({"app": "y"}))),
        )
        .await
        .unwrap();
    let mf = applied.metadata.managed_fields.unwrap();
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("antiopa"), Some("Apply"))
    );

    // Delete returns a Status for an immediate deletion.
    let res = api.delete("b", &DeleteParams::default()).await.unwrap();
    let st = res.right().expect("status");
    assert_eq!(st.details.unwrap().uid, applied.metadata.uid.unwrap());
    assert!(api.get_opt("b").await.unwrap().is_none());
}

#[tokio::test]
async fn discovery_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let d = Discovery::new(s.client()).run().await.unwrap();
    let (ar, caps) = d
        .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
        .unwrap();
    assert_eq!(ar.plural, "deployments");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(
        d.resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
            .is_some()
    );
    assert!(
        d.resolve_gvk(&GroupVersionKind::gvk(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler"
        ))
        .is_some()
    );
    let (code, _) = call(&s, "GET", "/openapi/v2", "application/json", "").await;
    assert_eq!(code, 404);
    let (code, v) = call(&s, "GET", "/version", "application/json", "").await;
    assert_eq!((code, v["major"].as_str()), (200, Some("1")));
}

#[tokio::test]
async fn list_selectors_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for (n, l) in [
        ("a", json!({"release": "r1", "tier": "fe"})),
        ("b", json!({"release": "r1"})),
        ("c", json!({"release": "r2"})),
    ] {
        api.create(&PostParams::default(), &cm(n, l)).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("release=r1"))
                .await
                .unwrap()
        ),
        ["a", "b"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("release in (r2),!tier"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("release!=r1"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier"))
                .await
                .unwrap()
        ),
        ["a"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        list.metadata.resource_version,
        Some(s.resource_version().to_string())
    );
    // All-namespaces LIST.
    let all: Api<ConfigMap> = Api::all(s.client());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );
}

#[tokio::test]
async fn watch_from_resource_version_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let rv = s.resource_version().to_string();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    // A no-op write emits nothing.
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();

    let wp = WatchParams::default().timeout(1);
    let mut events: Vec<WatchEvent<ConfigMap>> = api
        .watch(&wp, &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    // A bookmark-enabled watch ends with a BOOKMARK at the newest resourceVersion.
    match events.pop() {
        Some(WatchEvent::Bookmark(b)) => {
            assert_eq!(
                b.metadata.resource_version,
                s.resource_version().to_string()
            )
        }
        other => panic!("{other:?}"),
    }
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.clone().unwrap()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.clone().unwrap()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.clone().unwrap()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["ADDED b", "MODIFIED a", "DELETED b"]);
    if let WatchEvent::Deleted(o) = &events[2] {
        assert_eq!(
            o.metadata.resource_version,
            Some(s.resource_version().to_string()),
            "DELETED carries the deletion's RV"
        );
    }

    // From "0": synthetic ADDED for what exists, then live events.
    let mut stream = api
        .watch(&WatchParams::default().timeout(2), "0")
        .await
        .unwrap()
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    api.create(&PostParams::default(), &cm("c", json!({})))
        .await
        .unwrap();
    match stream.next().await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("c")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn watch_expired_410_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let old = s.resource_version().to_string();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    s.compact();
    let events: Vec<WatchEvent<ConfigMap>> = api
        .watch(&WatchParams::default().timeout(1), &old)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    match &events[..] {
        [WatchEvent::Error(e)] => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("{other:?}"),
    }
    // Watching from the current RV still works after a compaction.
    let now = s.resource_version().to_string();
    let events: Vec<WatchEvent<ConfigMap>> = api
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &now)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(events.is_empty());
}

#[tokio::test]
async fn watch_label_selector_transitions_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let rv = s.resource_version().to_string();
    api.create(&PostParams::default(), &cm("a", json!({"release": "r1"})))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"release": "r2"}}})),
    )
    .await
    .unwrap();
    let wp = WatchParams::default()
        .labels("release=r1")
        .disable_bookmarks()
        .timeout(1);
    let events: Vec<WatchEvent<ConfigMap>> = api
        .watch(&wp, &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        matches!(&events[..], [WatchEvent::Added(_), WatchEvent::Deleted(_)]),
        "{events:?}"
    );
}

#[tokio::test]
async fn delete_finalizers_and_preconditions_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut c = cm("f", json!({}));
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = api.create(&PostParams::default(), &c).await.unwrap();

    // Preconditions.
    let err = api_status(
        api.delete(
            "f",
            &DeleteParams::default().preconditions(kube::api::Preconditions {
                uid: Some("nope".into()),
                resource_version: None,
            }),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition: nope"),
        "{}",
        err.message
    );

    // With a finalizer the object stays, terminating, and DELETE returns it.
    let res = api.delete("f", &DeleteParams::default()).await.unwrap();
    let obj = res.left().expect("object while finalizers remain");
    assert!(obj.metadata.deletion_timestamp.is_some());
    assert!(api.get("f").await.is_ok());
    // Removing the last finalizer deletes it for real.
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("f").await.unwrap().is_none());
    let _ = created;

    // Foreground deletion with the instant garbage collector deletes dependents first.
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let mut dep = cm("dep", json!({}));
    dep.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: owner.metadata.uid.clone().unwrap(),
            ..Default::default()
        },
    ]);
    api.create(&PostParams::default(), &dep).await.unwrap();
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    assert!(api.get_opt("dep").await.unwrap().is_none());
}

#[tokio::test]
async fn secret_size_limit_and_type_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<Secret> = Api::namespaced(s.client(), "default");
    let big = |n: usize| -> Secret {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"},
            "type": "helm.sh/release.v1",
            "data": {"release": base64_of(&"x".repeat(n))},
        }))
        .unwrap()
    };
    let err = api_status(
        api.create(&PostParams::default(), &big(1024 * 1024 + 1))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes"
    );
    api.create(&PostParams::default(), &big(1024 * 1024))
        .await
        .unwrap();
    // type is immutable.
    let (code, st) = merge_patch(
        &s,
        "/api/v1/namespaces/default/secrets/big",
        "x",
        r#"{"type":"Opaque"}"#,
    )
    .await;
    assert_eq!(code, 422, "{st}");
    // stringData is merged into data and never stored.
    let (code, obj) = apply(
        &s,
        "/api/v1/namespaces/default/secrets/sd",
        "x",
        false,
        "{apiVersion: v1, kind: Secret, metadata: {name: sd}, stringData: {a: hello}}",
    )
    .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["a"], "aGVsbG8=");
    assert!(obj.get("stringData").is_none());
    assert_eq!(obj["type"], "Opaque");
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[tokio::test]
async fn namespaces_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, st) = apply(
        &s,
        "/api/v1/namespaces/nope/configmaps/x",
        "m",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}",
    )
    .await;
    assert_eq!(
        (code, st["message"].as_str()),
        (404, Some("namespaces \"nope\" not found"))
    );
    apply(
        &s,
        "/api/v1/namespaces/web",
        "m",
        false,
        "{apiVersion: v1, kind: Namespace, metadata: {name: web}}",
    )
    .await;
    apply(
        &s,
        "/api/v1/namespaces/web/configmaps/x",
        "m",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}",
    )
    .await;
    let (code, _) = call(
        &s,
        "DELETE",
        "/api/v1/namespaces/web",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
    assert!(s.get("configmaps", Some("web"), "x").is_none());
    assert!(s.get("namespaces", None, "web").is_none());
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(s.get("v1/namespaces", None, ns).is_some());
    }
}

#[tokio::test]
async fn dynamic_objects_and_crds_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let (code, _) = call(
        &s,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &crd.to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let d = Discovery::new(s.client()).run().await.unwrap();
    let (ar, _) = d
        .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(s.client(), "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}})).unwrap();
    let applied = api
        .patch(
            "w",
            &PatchParams::apply("antiopa").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["spec"]["size"], 1);
    assert_eq!(applied.metadata.generation, Some(1));
}

#[tokio::test]
async fn fault_injection_and_stats_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    s.reset_stats();

    s.inject(Fault::fail("get", "configmaps", 500).times(2));
    for _ in 0..2 {
        let err = api_status(api.get("a").await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    }
    assert!(api.get("a").await.is_ok());

    // Delete-before: the prune's DELETE meets a 404, as when someone else deleted it first.
    s.inject(Fault::delete_before("delete", "configmaps", "a"));
    let err = api_status(api.delete("a", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(err.code, 404);

    s.inject(Fault::delay("list", "*", Duration::from_millis(50)));
    let t = std::time::Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(50));

    let st = s.stats();
    assert_eq!((st.get, st.delete, st.list), (3, 1, 1));
    assert_eq!(st.api_requests(), 5);
}

/// The status subresource: main-resource writes keep the stored status, `/status` writes change
/// only status, and generation follows spec changes only.
#[tokio::test]
async fn status_subresource_and_generation_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let uri = "/apis/apps/v1/namespaces/default/deployments/web";
    let dep = "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 1, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: web:1}]}}}, status: {replicas: 99}}";
    let (code, obj) = apply(&s, uri, "antiopa", false, dep).await;
    assert_eq!(code, 201, "{obj}");
    assert!(
        obj.get("status").is_none(),
        "status is not applied through the main resource"
    );
    assert_eq!(obj["metadata"]["generation"], 1);

    let (code, obj) = call(
        &s,
        "PATCH",
        &format!("{uri}/status?fieldManager=kube-controller-manager"),
        "application/merge-patch+json",
        r#"{"status":{"readyReplicas":1},"spec":{"replicas":7}}"#,
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["status"]["readyReplicas"], 1);
    assert_eq!(
        obj["spec"]["replicas"], 1,
        "a status write changes only status"
    );
    assert_eq!(obj["metadata"]["generation"], 1);
    let kcm = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["manager"] == "kube-controller-manager"))
        .cloned()
        .expect("status manager");
    assert_eq!(kcm["subresource"], "status");
    assert_eq!(
        kcm["fieldsV1"],
        json!({"f:status": {".": {}, "f:readyReplicas": {}}})
    );

    // A metadata-only change does not bump generation; a spec change does.
    let (_, obj) = merge_patch(&s, uri, "x", r#"{"metadata":{"labels":{"a":"b"}}}"#).await;
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(
        obj["status"]["readyReplicas"], 1,
        "main-resource writes keep status"
    );
    let (_, obj) = merge_patch(&s, uri, "x", r#"{"spec":{"replicas":2}}"#).await;
    assert_eq!(obj["metadata"]["generation"], 2);
}

/// A namespace whose contents hold finalizers stays Terminating; new content is refused with 403.
#[tokio::test]
async fn terminating_namespace_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(
        &s,
        "/api/v1/namespaces/t",
        "m",
        false,
        "{apiVersion: v1, kind: Namespace, metadata: {name: t}}",
    )
    .await;
    apply(
        &s,
        "/api/v1/namespaces/t/configmaps/held",
        "m",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: held, finalizers: [example.com/x]}}",
    )
    .await;
    let (code, obj) = call(&s, "DELETE", "/api/v1/namespaces/t", "application/json", "").await;
    assert_eq!(code, 200);
    assert_eq!(obj["status"]["phase"], "Terminating");
    let (code, st) = apply(
        &s,
        "/api/v1/namespaces/t/configmaps/new",
        "m",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: new}}",
    )
    .await;
    assert_eq!(code, 403, "{st}");
    assert_eq!(st["reason"], "Forbidden");
    // Releasing the finalizer lets the object and then the namespace go.
    merge_patch(
        &s,
        "/api/v1/namespaces/t/configmaps/held",
        "m",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert!(s.get("configmaps", Some("t"), "held").is_none());
    assert!(s.get("namespaces", None, "t").is_none());
}

/// Objects seeded without managedFields meet `before-first-apply` on their first apply.
#[tokio::test]
async fn seeded_object_before_first_apply_against_fake_apiserver() {
    let s = FakeApiServer::new();
    s.seed(
        "v1/configmaps",
        json!({"metadata": {"name": "old", "namespace": "default"}, "data": {"a": "1"}}),
    )
    .unwrap();
    let uri = "/api/v1/namespaces/default/configmaps/old";
    let (code, st) = apply(
        &s,
        uri,
        "antiopa",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: old}, data: {a: '2'}}",
    )
    .await;
    assert_eq!(code, 409, "{st}");
    let (code, obj) = apply(
        &s,
        uri,
        "antiopa",
        true,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: old}, data: {a: '2'}}",
    )
    .await;
    assert_eq!(code, 200);
    let names: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["antiopa"],
        "before-first-apply owned only data.a and lost it"
    );
}

/// Strategic merge patch (kubectl's default for built-ins) merges containers by name.
#[tokio::test]
async fn strategic_merge_patch_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let uri = "/apis/apps/v1/namespaces/default/deployments/web";
    apply(&s, uri, "antiopa", false, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: a, image: a:1}, {name: b, image: b:1}]}}}}").await;
    let (code, obj) = call(
        &s,
        "PATCH",
        &format!("{uri}?fieldManager=kubectl-set"),
        "application/strategic-merge-patch+json",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"}]}}}}"#,
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    let cs = &obj["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs[0]["image"], "a:1");
    assert_eq!(cs[1]["image"], "b:2");
    let set = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl-set")
        .cloned()
        .unwrap();
    assert_eq!(
        set["fieldsV1"],
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {"f:image": {}}}}}}})
    );
}

/// Malformed bodies get Status errors, never a crashed server.
#[tokio::test]
async fn malformed_input_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let uri = "/api/v1/namespaces/default/services/x";
    for body in [
        "{apiVersion: v1, kind: Service, metadata: x}",
        "[1, 2]",
        "{apiVersion: v1, kind: Service, metadata: {name: x}, spec: 7}",
        "{apiVersion: v1, kind: Service, metadata: {name: x}, spec: {ports: [1, {port: 80}]}}",
        ": : :",
    ] {
        let (code, _) = apply(&s, uri, "m", false, body).await;
        assert!(code == 400 || code == 422 || code == 201, "{body}: {code}");
    }
    let (code, _) = call(
        &s,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        "{not json",
    )
    .await;
    assert_eq!(code, 400);
    let (code, _) = call(&s, "GET", "/apis/nope/v1/things", "application/json", "").await;
    assert_eq!(code, 404);
}

/// `as=PartialObjectMetadata` (kube's `get_metadata` / `list_metadata`) and `immutable: true`.
#[tokio::test]
async fn metadata_only_and_immutable_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut c = cm("frozen", json!({"app": "x"}));
    c.immutable = Some(true);
    api.create(&PostParams::default(), &c).await.unwrap();
    let meta = api.get_metadata("frozen").await.unwrap();
    assert_eq!(meta.metadata.labels.unwrap()["app"], "x");
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);

    let err = api_status(
        api.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    // Labels may still change.
    api.patch(
        "frozen",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
    )
    .await
    .unwrap();
}

/// A list-map item without its key is refused (422), on create and on apply.
#[tokio::test]
async fn list_map_item_without_key_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"k"},"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#;
    let (code, st) = call(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        "application/json",
        body,
    )
    .await;
    assert_eq!(code, 422, "{st}");
    let (code, st) = apply(
        &s,
        "/apis/apps/v1/namespaces/default/deployments/k",
        "m",
        false,
        body,
    )
    .await;
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap_or_default()
            .contains("omits key field \"name\""),
        "{st}"
    );
}

#[tokio::test]
async fn services_get_cluster_ips_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let svc = |name: &str, spec: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
            .to_string()
    };
    let uri = "/api/v1/namespaces/default/services";
    let ports = json!([{"port": 80}]);
    let (code, a) = call(
        &s,
        "POST",
        uri,
        "application/json",
        &svc("a", json!({"ports": ports})),
    )
    .await;
    assert_eq!(code, 201, "{a}");
    assert_eq!(a["spec"]["clusterIP"], "10.96.0.2");
    assert_eq!(a["spec"]["clusterIPs"], json!(["10.96.0.2"]));
    assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
    // The allocation belongs to no manager.
    let owned = a["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].clone();
    assert!(owned.get("f:clusterIP").is_none(), "{owned}");

    // Created by server-side apply: the next free address.
    let (code, b) = apply(
        &s,
        &format!("{uri}/b"),
        "antiopa",
        false,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\nspec:\n  ports:\n  - port: 80\n",
    )
    .await;
    assert_eq!(code, 201, "{b}");
    assert_eq!(b["spec"]["clusterIP"], "10.96.0.3");
    let (code, b) = apply(
        &s,
        &format!("{uri}/b"),
        "antiopa",
        false,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\nspec:\n  ports:\n  - port: 81\n",
    )
    .await;
    assert_eq!(code, 200, "{b}");
    assert_eq!(b["spec"]["clusterIP"], "10.96.0.3");

    let (_, headless) = call(
        &s,
        "POST",
        uri,
        "application/json",
        &svc("h", json!({"clusterIP": "None", "ports": ports})),
    )
    .await;
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let (_, ext) = call(
        &s,
        "POST",
        uri,
        "application/json",
        &svc(
            "e",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
    )
    .await;
    assert!(ext["spec"].get("clusterIP").is_none(), "{ext}");

    // A PUT that leaves the IP out keeps it.
    let mut put = a.clone();
    put["spec"].as_object_mut().unwrap().remove("clusterIP");
    put["spec"].as_object_mut().unwrap().remove("clusterIPs");
    let (code, a2) = call(
        &s,
        "PUT",
        &format!("{uri}/a"),
        "application/json",
        &put.to_string(),
    )
    .await;
    assert_eq!(code, 200, "{a2}");
    assert_eq!(a2["spec"]["clusterIP"], "10.96.0.2");
    assert_eq!(
        a2["metadata"]["resourceVersion"],
        a["metadata"]["resourceVersion"]
    );
}

/// Without controllers objects keep the status clients write; the switches stand in for the
/// Job controller, the kubelet and the workload controllers, each write followed by a status
/// write of its own (a MODIFIED event a waiting client sees).
#[tokio::test]
async fn simulated_controllers_complete_jobs_and_ready_workloads_against_fake_apiserver() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::batch::v1::Job;
    let s = FakeApiServer::new();
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let deploys: Api<Deployment> = Api::namespaced(s.client(), "default");
    let job = |name: &str| -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        }))
        .unwrap()
    };
    let deploy: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap();

    jobs.create(&PostParams::default(), &job("off"))
        .await
        .unwrap();
    assert!(jobs.get("off").await.unwrap().status.is_none());

    s.set_complete_jobs(true);
    s.set_workloads_ready(true);
    let mut w = jobs
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    jobs.create(&PostParams::default(), &job("on"))
        .await
        .unwrap();
    let done = jobs.get("on").await.unwrap();
    let conds = done.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Complete" && c.status == "True")
    );
    // ADDED (no status) then MODIFIED (complete), as a watcher would see them.
    let mut seen = Vec::new();
    while let Ok(Some(Ok(ev))) = tokio::time::timeout(Duration::from_millis(200), w.next()).await {
        if let WatchEvent::Added(j) | WatchEvent::Modified(j) = ev
            && j.metadata.name.as_deref() == Some("on")
        {
            seen.push(j.status.is_some());
        }
    }
    assert_eq!(seen, [false, true]);

    deploys
        .create(&PostParams::default(), &deploy)
        .await
        .unwrap();
    let st = deploys.get("web").await.unwrap().status.unwrap();
    assert_eq!(
        (st.ready_replicas, st.available_replicas),
        (Some(3), Some(3))
    );
    assert_eq!(st.observed_generation, Some(1));
    // A scale is observed at the new generation.
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let st = deploys.get("web").await.unwrap().status.unwrap();
    assert_eq!(
        (st.ready_replicas, st.observed_generation),
        (Some(5), Some(2))
    );
}

/// The garbage collector (run at once): deleting an owner in the background deletes every
/// dependent whose owners are all gone, transitively; one with another live owner stays;
/// `Orphan` strips the reference instead.
#[tokio::test]
async fn garbage_collection_by_owner_references_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let pp = PostParams::default();
    let owner = api.create(&pp, &cm("owner", json!({}))).await.unwrap();
    let other = api.create(&pp, &cm("other", json!({}))).await.unwrap();
    let uid = |c: &ConfigMap| c.metadata.uid.clone().unwrap();
    let dependent = |name: &str, owners: &[&ConfigMap]| -> ConfigMap {
        let refs: Vec<_> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": uid(o)}))
            .collect();
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .unwrap()
    };
    let child = api
        .create(&pp, &dependent("child", &[&owner]))
        .await
        .unwrap();
    api.create(&pp, &dependent("grandchild", &[&child]))
        .await
        .unwrap();
    api.create(&pp, &dependent("shared", &[&owner, &other]))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    for gone in ["owner", "child", "grandchild"] {
        assert!(api.get_opt(gone).await.unwrap().is_none(), "{gone}");
    }
    assert!(api.get_opt("shared").await.unwrap().is_some());

    api.create(&pp, &dependent("orphan", &[&other]))
        .await
        .unwrap();
    api.delete("other", &DeleteParams::orphan()).await.unwrap();
    let orphan = api.get("orphan").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}
