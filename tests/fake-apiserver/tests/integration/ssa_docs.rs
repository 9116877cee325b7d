//! Server-side apply against fake apiserver: the examples of the Kubernetes documentation
//! (kubernetes.io/docs/reference/using-api/server-side-apply/, quoted in comments) reproduced
//! through the fake, plus the field-set rules of structured-merge-diff that the applier relies on.

use crate::common::{apply, call, managers, merge_patch, yaml};
use fake_apiserver::FakeApiServer;
use serde_json::json;

const CM: &str = "/api/v1/namespaces/default/configmaps/test-cm";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments/nginx-deployment";

const TEST_CM: &str = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: test-cm
  namespace: default
  labels:
    test-label: test
data:
  key: some value
";

/// Doc, "Field management / Example": "A simple example of an object created using Server-Side
/// Apply could look like this: ... managedFields: - manager: kubectl, operation: Apply, apiVersion:
/// v1, fieldsType: FieldsV1, fieldsV1: {f:metadata: {f:labels: {f:test-label: {}}}, f:data:
/// {f:key: {}}}".
#[tokio::test]
async fn docs_example_configmap_managed_fields_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, obj) = apply(&s, CM, "kubectl", false, TEST_CM).await;
    assert_eq!(code, 201, "{obj}");
    let mf = &obj["metadata"]["managedFields"];
    assert_eq!(mf.as_array().map(Vec::len), Some(1));
    let entry = &mf[0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        entry["fieldsV1"],
        yaml(
            "
f:metadata:
  f:labels:
    f:test-label: {}
f:data:
  f:key: {}
"
        )
    );
    assert_eq!(obj["data"], json!({"key": "some value"}));
    assert!(obj["metadata"]["uid"].is_string());
    assert!(obj["metadata"]["resourceVersion"].is_string());
}

/// Doc, "Operations in scope for field management": "An example object with multiple managers ...
/// a second operation was run as an update by the manager called kube-controller-manager. The
/// update request succeeded and changed a value in the data field, which caused that field's
/// management to change to the kube-controller-manager. If this update has instead been attempted
/// using Server-Side Apply, the request would have failed due to conflicting ownership."
#[tokio::test]
async fn docs_multiple_managers_update_takes_ownership_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(&s, CM, "kubectl", false, TEST_CM).await;

    // The same change as an apply by another manager conflicts.
    let (code, st) = apply(
        &s,
        CM,
        "kube-controller-manager",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: new value}}",
    )
    .await;
    assert_eq!(code, 409, "{st}");

    // As an update it succeeds and moves ownership of data.key.
    let (code, obj) = merge_patch(
        &s,
        CM,
        "kube-controller-manager",
        r#"{"data":{"key":"new value"}}"#,
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["data"]["key"], "new value");
    assert_eq!(
        managers(&obj),
        vec![
            (
                "kubectl".into(),
                "Apply".into(),
                yaml("f:metadata: {f:labels: {f:test-label: {}}}")
            ),
            (
                "kube-controller-manager".into(),
                "Update".into(),
                yaml("f:data: {f:key: {}}")
            ),
        ]
    );
}

/// Doc, "Conflicts": "A conflict is a special status error that occurs when an Apply operation
/// tries to change a field that another manager also claims to manage." The body is the
/// apiserver's Status: reason Conflict, one FieldManagerConflict cause per field, and the message
/// of `getConflictMessage` (apiserver fieldmanager/internal/conflict.go).
#[tokio::test]
async fn docs_conflict_status_body_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(&s, CM, "kubectl", false, TEST_CM).await;
    let rv = s.resource_version();
    let (code, st) = apply(
        &s,
        CM,
        "other",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: other value}}",
    )
    .await;
    assert_eq!(code, 409);
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["status"], "Failure");
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(st["code"], 409);
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl\": .data.key"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\"", "field": ".data.key"}])
    );
    // Nothing was written.
    assert_eq!(s.resource_version(), rv);

    // Several conflicts, grouped by manager; an Update manager is named with version and time.
    merge_patch(
        &s,
        CM,
        "editor",
        r#"{"metadata":{"labels":{"test-label":"edited"}}}"#,
    )
    .await;
    let (code, st) = apply(
        &s,
        CM,
        "other",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, labels: {test-label: mine}}, data: {key: mine}}",
    )
    .await;
    assert_eq!(code, 409);
    let msg = st["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("Apply failed with 2 conflicts: conflicts with \"editor\" using v1 at "),
        "{msg}"
    );
    assert!(
        msg.ends_with(":\n- .metadata.labels.test-label\nconflicts with \"kubectl\":\n- .data.key"),
        "{msg}"
    );
    assert_eq!(st["details"]["causes"].as_array().map(Vec::len), Some(2));
}

/// Doc, "Conflicts", option 1: "Overwrite value, become sole manager: ... set the force query
/// parameter to true ... This forces the operation to succeed, changes the value of the field, and
/// removes the field from all other managers' entries in managedFields."
#[tokio::test]
async fn docs_conflict_force_overwrites_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(&s, CM, "kubectl", false, TEST_CM).await;
    let (code, obj) = apply(
        &s,
        CM,
        "other",
        true,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: forced}}",
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["data"]["key"], "forced");
    assert_eq!(
        managers(&obj),
        vec![
            (
                "kubectl".into(),
                "Apply".into(),
                yaml("f:metadata: {f:labels: {f:test-label: {}}}")
            ),
            ("other".into(), "Apply".into(), yaml("f:data: {f:key: {}}")),
        ]
    );
}

/// Doc, "Conflicts", option 2: "Don't overwrite value, give up management claim: ... make a new
/// request with that particular field omitted. This leaves the value unchanged, and causes the
/// field to be removed from the applier's entry in managedFields." (Here the field stays because
/// another manager owns it too.) Option 3: "Don't overwrite value, become shared manager: ...
/// change the value of that field in their local model ... so as to match the value of the object
/// on the server ... causes that field's management to be shared".
#[tokio::test]
async fn docs_conflict_give_up_or_share_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(&s, CM, "kubectl", false, TEST_CM).await;
    // Option 3: same value, shared ownership, no conflict.
    let (code, obj) = apply(
        &s,
        CM,
        "other",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: some value}}",
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        managers(&obj),
        vec![
            (
                "kubectl".into(),
                "Apply".into(),
                yaml("{f:data: {f:key: {}}, f:metadata: {f:labels: {f:test-label: {}}}}")
            ),
            ("other".into(), "Apply".into(), yaml("f:data: {f:key: {}}")),
        ]
    );
    // Doc, "Field management": "Any subsequent attempt to change the value of the shared field, by
    // any of the appliers, results in a conflict."
    let (code, _) = apply(
        &s,
        CM,
        "other",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: changed}}",
    )
    .await;
    assert_eq!(code, 409);
    // Option 2: give up the claim; the value stays (kubectl still owns it).
    let (code, obj) = apply(
        &s,
        CM,
        "other",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {other: x}}",
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["data"], json!({"key": "some value", "other": "x"}));
    assert_eq!(fields_of(&obj, "other"), yaml("f:data: {f:other: {}}"));
}

/// Doc, "Field management": "If you remove a field from a manifest and apply that manifest,
/// Server-Side Apply checks if there are any other field managers that also own the field. If the
/// field is not owned by any other field managers, it is either deleted from the live object or
/// reset to its default value ... The same rule applies to associative list or map items."
#[tokio::test]
async fn docs_field_removal_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let two = "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, labels: {a: '1', b: '2'}}, data: {a: x, b: y}}";
    apply(&s, CM, "mgr", false, two).await;
    let rv_before = s.resource_version();
    let (code, obj) = apply(
        &s,
        CM,
        "mgr",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, labels: {a: '1'}}, data: {a: x}}",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(obj["data"], json!({"a": "x"}));
    assert_eq!(obj["metadata"]["labels"], json!({"a": "1"}));
    assert!(s.resource_version() > rv_before);

    // A field co-owned by someone else stays; only the applier's claim goes.
    apply(&s, CM, "mgr", false, two).await;
    apply(
        &s,
        CM,
        "co",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {b: y}}",
    )
    .await;
    let (_, obj) = apply(
        &s,
        CM,
        "mgr",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, labels: {a: '1'}}, data: {a: x}}",
    )
    .await;
    assert_eq!(obj["data"], json!({"a": "x", "b": "y"}));
    assert_eq!(
        fields_of(&obj, "mgr"),
        yaml("{f:data: {f:a: {}}, f:metadata: {f:labels: {f:a: {}}}}")
    );
    assert_eq!(fields_of(&obj, "co"), yaml("f:data: {f:b: {}}"));

    // Fields the applier never owned (written by an update) are never pruned.
    merge_patch(&s, CM, "editor", r#"{"data":{"c":"z"}}"#).await;
    let (_, obj) = apply(
        &s,
        CM,
        "mgr",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {a: x}}",
    )
    .await;
    assert_eq!(obj["data"], json!({"a": "x", "b": "y", "c": "z"}));
}

/// The fieldsV1 of one manager (entries of one operation sort by time, then name).
fn fields_of(obj: &serde_json::Value, manager: &str) -> serde_json::Value {
    managers(obj)
        .into_iter()
        .find(|m| m.0 == manager)
        .map(|m| m.2)
        .unwrap_or_default()
}

const NGINX: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
";

/// Doc, "Transferring ownership": the user applies nginx-deployment.yaml (replicas 3), then
/// "applies that manifest [replicas only] using a private field manager name ...
/// handover-to-hpa", then "may remove the replicas field from their manifest", and "whenever the
/// HPA controller sets the replicas field to a new value, the temporary field manager will no
/// longer own any fields and will be automatically deleted."
#[tokio::test]
async fn docs_transfer_ownership_to_hpa_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, obj) = apply(&s, DEPLOY, "kubectl", false, NGINX).await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(
        managers(&obj)[0].2,
        yaml(
            r#"
f:metadata: {f:labels: {f:app: {}}}
f:spec:
  f:replicas: {}
  f:selector: {}
  f:template:
    f:metadata: {f:labels: {f:app: {}}}
    f:spec:
      f:containers:
        k:{"name":"nginx"}:
          .: {}
          f:image: {}
          f:name: {}
"#
        )
    );
    let (code, obj) = apply(
        &s,
        DEPLOY,
        "handover-to-hpa",
        false,
        "{apiVersion: apps/v1, kind: Deployment, metadata: {name: nginx-deployment}, spec: {replicas: 3}}",
    )
    .await;
    assert_eq!(code, 200, "{obj}");
    let no_replicas = NGINX.replace("  replicas: 3\n", "");
    let (code, obj) = apply(&s, DEPLOY, "kubectl", false, &no_replicas).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        obj["spec"]["replicas"], 3,
        "replicas stays: handover-to-hpa owns it"
    );
    // The HPA controller (an update) sets replicas; the temporary manager disappears.
    let (code, obj) = merge_patch(
        &s,
        DEPLOY,
        "horizontal-pod-autoscaler",
        r#"{"spec":{"replicas":5}}"#,
    )
    .await;
    assert_eq!(code, 200);
    let names: Vec<String> = managers(&obj).into_iter().map(|m| m.0).collect();
    assert_eq!(names, vec!["kubectl", "horizontal-pod-autoscaler"]);
}

/// Doc, "Transferring ownership between managers": "Field managers can transfer ownership of a
/// field between each other by setting the field to the same value in both of their applied
/// configurations, causing them to share ownership of the field. Once the managers share ownership
/// of the field, one of them can remove the field from their applied configuration to give up
/// ownership and complete the transfer to the other field manager."
#[tokio::test]
async fn docs_transfer_between_managers_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(
        &s,
        CM,
        "a",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {k: v}}",
    )
    .await;
    apply(
        &s,
        CM,
        "b",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {k: v}}",
    )
    .await;
    let (_, obj) = apply(
        &s,
        CM,
        "a",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}}",
    )
    .await;
    assert_eq!(obj["data"], json!({"k": "v"}));
    assert_eq!(
        managers(&obj),
        vec![("b".into(), "Apply".into(), yaml("f:data: {f:k: {}}"))]
    );
}

/// Doc, "Serialization": "{apiVersion: v1, kind: ConfigMap} (this would make a no-change update".
/// A write that changes nothing bumps no resourceVersion and emits no event.
#[tokio::test]
async fn docs_no_change_update_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (_, first) = apply(&s, CM, "kubectl", false, TEST_CM).await;
    let rv = s.resource_version();
    let (code, again) = apply(&s, CM, "kubectl", false, TEST_CM).await;
    assert_eq!(code, 200);
    assert_eq!(
        again, first,
        "re-applying the same manifest changes nothing"
    );
    assert_eq!(s.resource_version(), rv);
    // An empty intent from a manager that owns nothing: no change either.
    let (code, same) = apply(&s, CM, "nobody", false, "{apiVersion: v1, kind: ConfigMap}").await;
    assert_eq!(code, 200);
    assert_eq!(
        same["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
}

/// Doc, "Clearing managedFields": "overwriting the managedFields field with an empty entry ...
/// results in the managedFields being stripped entirely from the object. Note that setting the
/// managedFields to an empty list will not reset the field." After stripping, the next apply meets
/// every existing field as owned by `before-first-apply`.
#[tokio::test]
async fn docs_clearing_managed_fields_and_before_first_apply_against_fake_apiserver() {
    let s = FakeApiServer::new();
    apply(&s, CM, "kubectl", false, TEST_CM).await;
    let (_, obj) = merge_patch(&s, CM, "x", r#"{"metadata":{"managedFields":[]}}"#).await;
    assert_eq!(managers(&obj).len(), 1, "an empty list does not reset");
    let (_, obj) = merge_patch(&s, CM, "x", r#"{"metadata":{"managedFields":[{}]}}"#).await;
    assert!(obj["metadata"].get("managedFields").is_none(), "{obj}");
    let (code, st) = apply(
        &s,
        CM,
        "kubectl",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: changed}}",
    )
    .await;
    assert_eq!(code, 409);
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.key"
    );
    // The same value is shared, not a conflict.
    let (code, obj) = apply(&s, CM, "kubectl", false, TEST_CM).await;
    assert_eq!(code, 200, "{obj}");
}

/// Lists: containers merge by name, env by name, ports by (containerPort, protocol) with protocol
/// defaulted to TCP; `args` is atomic; dropping an env entry removes only that item.
#[tokio::test]
async fn list_map_merge_and_prune_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let v1 = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx-deployment}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web:1
        args: [a, b]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80}]
"#;
    let (code, obj) = apply(&s, DEPLOY, "antiopa", false, v1).await;
    assert_eq!(code, 201, "{obj}");
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    let fields = &obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
        ["f:containers"]["k:{\"name\":\"web\"}"];
    assert_eq!(
        fields,
        &yaml(
            r#"
.: {}
f:args: {}
f:env:
  k:{"name":"A"}: {.: {}, f:name: {}, f:value: {}}
  k:{"name":"B"}: {.: {}, f:name: {}, f:value: {}}
f:image: {}
f:name: {}
f:ports:
  k:{"containerPort":80,"protocol":"TCP"}: {.: {}, f:containerPort: {}}
"#
        )
    );
    // Another manager adds a container; the applier's next apply drops env B and an arg.
    apply(
        &s,
        DEPLOY,
        "sidecar-injector",
        false,
        "{apiVersion: apps/v1, kind: Deployment, metadata: {name: nginx-deployment}, spec: {template: {spec: {containers: [{name: proxy, image: proxy:1}]}}}}",
    )
    .await;
    let v2 = v1
        .replace(r#", {name: B, value: "2"}"#, "")
        .replace("[a, b]", "[a]");
    let (code, obj) = apply(&s, DEPLOY, "antiopa", false, &v2).await;
    assert_eq!(code, 200, "{obj}");
    let cs = &obj["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs.as_array().map(Vec::len), Some(2), "{cs}");
    assert_eq!(cs[0]["env"], json!([{"name": "A", "value": "1"}]));
    assert_eq!(cs[0]["args"], json!(["a"]));
    assert_eq!(cs[1]["name"], "proxy");
    assert_eq!(
        obj["metadata"]["generation"], 3,
        "create, the sidecar, this apply"
    );
    // Changing an item field another manager owns conflicts with a keyed path.
    let (code, st) = apply(
        &s,
        DEPLOY,
        "antiopa",
        false,
        "{apiVersion: apps/v1, kind: Deployment, metadata: {name: nginx-deployment}, spec: {template: {spec: {containers: [{name: proxy, image: proxy:2}]}}}}",
    )
    .await;
    assert_eq!(code, 409);
    assert_eq!(
        st["details"]["causes"][0]["field"],
        ".spec.template.spec.containers[name=\"proxy\"].image"
    );
}

/// dryRun=All runs the whole apply (conflicts included) but stores and emits nothing.
#[tokio::test]
async fn dry_run_apply_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, obj) = apply(&s, &format!("{CM}?dryRun=All"), "kubectl", false, TEST_CM).await;
    assert_eq!(code, 201);
    assert_eq!(obj["data"]["key"], "some value");
    assert!(s.get("configmaps", Some("default"), "test-cm").is_none());
    apply(&s, CM, "kubectl", false, TEST_CM).await;
    let rv = s.resource_version();
    let (code, obj) = apply(
        &s,
        &format!("{CM}?dryRun=All"),
        "kubectl",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm}, data: {key: new}}",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(obj["data"]["key"], "new");
    assert_eq!(s.resource_version(), rv);
    assert_eq!(
        s.get("configmaps", Some("default"), "test-cm").unwrap()["data"]["key"],
        "some value"
    );
}

/// Validation of apply requests (apimachinery `ValidatePatchOptions` texts).
#[tokio::test]
async fn apply_validation_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, st) = call(&s, "PATCH", CM, "application/apply-patch+yaml", TEST_CM).await;
    assert_eq!(code, 422);
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let (code, st) = call(
        &s,
        "PATCH",
        &format!("{CM}?force=true&fieldManager=x"),
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    let (code, _) = apply(
        &s,
        CM,
        "x",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: other}}",
    )
    .await;
    assert_eq!(code, 400);
    let (code, _) = apply(&s, CM, "x", false, "{metadata: {name: test-cm}}").await;
    assert_eq!(code, 400);
    let (code, _) = apply(
        &s,
        CM,
        "x",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, managedFields: [{manager: x}]}}",
    )
    .await;
    assert_eq!(code, 400);
    let (code, st) = call(&s, "PATCH", CM, "application/xml", "<x/>").await;
    assert_eq!(code, 415);
    assert_eq!(st["reason"], "UnsupportedMediaType");
}

/// Custom resources: lists are atomic (the doc: "By default, Server-Side Apply treats custom
/// resources as unstructured data. All keys are treated the same as struct fields, and all lists
/// are considered atomic."), and a CRD makes its resource served at once.
#[tokio::test]
async fn custom_resources_atomic_lists_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: foos, singular: foo, kind: Foo}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;
    let (code, obj) = apply(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.example.com",
        "x",
        false,
        crd,
    )
    .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["status"]["conditions"][1]["type"], "Established");
    let uri = "/apis/example.com/v1/namespaces/default/foos/foo-sample";
    let (code, obj) = apply(&s, uri, "manager-one", false, "{apiVersion: example.com/v1, kind: Foo, metadata: {name: foo-sample}, spec: {items: [{name: a}, {name: b}], data: {key1: val1}}}").await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(
        managers(&obj)[0].2,
        yaml("f:spec: {f:items: {}, f:data: {f:key1: {}}}")
    );
    let (code, _) = apply(&s, uri, "manager-two", false, "{apiVersion: example.com/v1, kind: Foo, metadata: {name: foo-sample}, spec: {items: [{name: c}]}}").await;
    assert_eq!(code, 409, "an atomic list is owned whole");
    let (code, _) = call(
        &s,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.example.com",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = call(&s, "GET", uri, "application/json", "").await;
    assert_eq!(code, 404);
}

/// A null in an applied configuration stores nothing but is still claimed by the applier.
#[tokio::test]
async fn applied_null_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let (code, obj) = apply(
        &s,
        CM,
        "m",
        false,
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: test-cm, annotations: null}, data: {a: x}}",
    )
    .await;
    assert_eq!(code, 201, "{obj}");
    assert!(obj["metadata"].get("annotations").is_none(), "{obj}");
    assert_eq!(
        managers(&obj)[0].2,
        yaml("{f:data: {f:a: {}}, f:metadata: {f:annotations: {}}}")
    );
}
