//! Leases as leader election uses them (kube-lease-manager: server-side apply of
//! `holderIdentity` by a field manager per replica, strategic merge patches to renew and release;
//! client-go: updates with a resourceVersion): a second replica's apply of a held Lease conflicts,
//! a release frees the fields for the next one, a stale update conflicts.

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn code_and_reason(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// kube-lease-manager's acquisition: an apply without `metadata`, not forced.
fn take(identity: &str) -> Patch<serde_json::Value> {
    Patch::Apply(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "spec": {"holderIdentity": identity, "leaseDurationSeconds": 10,
                 "acquireTime": "2026-11-28T10:00:00.000000Z", "renewTime": "2026-11-28T10:00:00.000000Z"},
    }))
}

#[tokio::test]
async fn lease_lock_conflicts_and_release_against_fake_apiserver() {
    let s = FakeApiServer::new();
    let api: Api<Lease> = Api::namespaced(s.client(), "default");
    let empty: Lease = serde_json::from_value(json!({"metadata": {"name": "lock"}})).unwrap();
    api.create(&PostParams::default(), &empty).await.unwrap();
    let pp = |m: &str| PatchParams {
        field_manager: Some(m.to_string()),
        ..Default::default()
    };

    let held = api.patch("lock", &pp("lease-a"), &take("a")).await.unwrap();
    assert_eq!(held.spec.unwrap().holder_identity.as_deref(), Some("a"));
    // b applies while a holds it: the apply conflicts, nothing changes.
    let (code, reason) = code_and_reason(
        api.patch("lock", &pp("lease-b"), &take("b"))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        api.get("lock")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("a")
    );

    // a renews (a strategic merge patch, an update: never a conflict), then releases.
    let renew = Patch::Strategic(json!({"spec": {"renewTime": "2026-11-28T10:00:06.000000Z"}}));
    api.patch("lock", &pp("lease-a"), &renew).await.unwrap();
    let release = Patch::Strategic(json!({"spec": {
        "holderIdentity": null, "acquireTime": null, "renewTime": null, "leaseDurationSeconds": null,
    }}));
    let freed = api.patch("lock", &pp("lease-a"), &release).await.unwrap();
    assert_eq!(freed.spec.unwrap_or_default().holder_identity, None);
    // Released fields belong to no one: b takes the Lease without a conflict.
    let held = api.patch("lock", &pp("lease-b"), &take("b")).await.unwrap();
    assert_eq!(held.spec.unwrap().holder_identity.as_deref(), Some("b"));

    // client-go's way: an update with a stale resourceVersion conflicts.
    let mut stale = api.get("lock").await.unwrap();
    api.patch("lock", &pp("lease-b"), &renew).await.unwrap();
    stale.spec.as_mut().unwrap().holder_identity = Some("c".into());
    let (code, _) = code_and_reason(
        api.replace("lock", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 409);
}
