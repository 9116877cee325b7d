//! The shipped `modules/300-mysql-operator`, end to end: the real `antiopa
//! run` on the shipped modules tree against fake apiserver, kubectl as the
//! user creating, deleting, re-creating and editing a `MySQL` object. The
//! module's CRD is installed from its `crds/`; its bash + jq hook adds a
//! finalizer, backs up on delete (the object stays until the backup Job has
//! completed), restores on re-create, and runs a password Job on a password
//! change, reporting each step in the object's status; an operator restarted
//! in the middle of a backup carries on from the cluster's state.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster_operator::{Operator, eventually, kubectl, prepare};
use crate::cluster_support::*;

const APP_NS: &str = "shop";
const MYSQLS: &str = "otus.homework/v1/mysqls";

fn mysql_yaml(password: &str) -> String {
    format!(
        "apiVersion: otus.homework/v1\nkind: MySQL\nmetadata:\n  name: db\n  namespace: {APP_NS}\nspec:\n  image: mysql:8.0\n  database: otus-database\n  password: {password}\n  storage_size: 1Gi\n"
    )
}

async fn apply(kc: &Path, dir: &Path, text: &str) {
    let f = dir.join("mysql.yaml");
    std::fs::write(&f, text).unwrap();
    kubectl(kc, &["apply", "-f", f.to_str().unwrap()]).await;
}

/// The Jobs of instance `db` with label `purpose`.
fn jobs(fake: &FakeApiServer, purpose: &str) -> Vec<Value> {
    fake.list("batch/v1/jobs")
        .into_iter()
        .filter(|j| {
            let l = &j["metadata"]["labels"];
            j["metadata"]["namespace"] == APP_NS
                && l["mysql.otus.homework/instance"] == "db"
                && l["mysql.otus.homework/purpose"] == purpose
        })
        .collect()
}

fn complete(job: &Value) -> bool {
    job["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Complete" && c["status"] == "True")
    })
}

fn status(fake: &FakeApiServer) -> Option<String> {
    fake.get(MYSQLS, Some(APP_NS), "db")
        .and_then(|m| m["status"]["message"].as_str().map(str::to_string))
}

fn uid8(fake: &FakeApiServer) -> String {
    fake.get(MYSQLS, Some(APP_NS), "db").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()[..8]
        .to_string()
}

fn b64(v: &Value) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap_or_default())
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_operator_module_backs_up_restores_and_changes_passwords_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let fake = &s.fake;
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    prepare(kc, Some("mysqlOperatorEnabled=true")).await;
    kubectl(kc, &["create", "namespace", APP_NS]).await;
    let mut op = Operator::start(
        kc,
        &root.join("modules"),
        &root.join("global-hooks"),
        &dir.path().join("op.log"),
        &[],
    );
    let limit = Duration::from_secs(60);
    eventually(limit, "the MySQL CRD installed from crds/", || async {
        fake.get(
            "apiextensions.k8s.io/v1/customresourcedefinitions",
            None,
            "mysqls.otus.homework",
        )
        .is_some()
    })
    .await;
    fake.set_complete_jobs(true);

    // Create: Deployment, Service, PVC; status; the finalizer.
    let t = Instant::now();
    apply(kc, dir.path(), &mysql_yaml("first-pass")).await;
    eventually(limit, "the instance deployed, status created", || async {
        ["apps/v1/deployments", "v1/services"]
            .iter()
            .all(|r| fake.get(r, Some(APP_NS), "db").is_some())
            && fake
                .get("v1/persistentvolumeclaims", Some(APP_NS), "db-data")
                .is_some()
            && status(fake).as_deref() == Some("created without restore")
    })
    .await;
    println!("create → deployed and status: {:.2?}", t.elapsed());
    let pvc = fake
        .get("v1/persistentvolumeclaims", Some(APP_NS), "db-data")
        .unwrap();
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "1Gi");
    let m = fake.get(MYSQLS, Some(APP_NS), "db").unwrap();
    assert_eq!(
        m["metadata"]["finalizers"],
        serde_json::json!(["mysql.otus.homework/backup"]),
        "{}",
        op.log()
    );
    let dep = fake.get("apps/v1/deployments", Some(APP_NS), "db").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "mysql:8.0");
    assert_eq!(
        c["env"][0]["valueFrom"]["secretKeyRef"]["name"], "db-mysql",
        "{dep}"
    );
    let secret = fake.get("v1/secrets", Some(APP_NS), "db-mysql").unwrap();
    assert_eq!(b64(&secret["data"]["password"]), "first-pass");
    assert!(
        jobs(fake, "restore").is_empty(),
        "no backup yet: no restore"
    );
    let first_uid = uid8(fake);

    // Delete: the object stays, terminating, while its backup Job runs.
    fake.set_complete_jobs(false);
    let t = Instant::now();
    kubectl(kc, &["-n", APP_NS, "delete", "mysql", "db", "--wait=false"]).await;
    eventually(limit, "a backup Job for the deleted object", || async {
        !jobs(fake, "backup").is_empty()
    })
    .await;
    println!("delete → backup Job created: {:.2?}", t.elapsed());
    let backup = jobs(fake, "backup").remove(0);
    let backup_name = backup["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(backup_name, format!("db-backup-{first_uid}"));
    assert!(
        backup["metadata"]["ownerReferences"].is_null(),
        "the backup outlives the object"
    );
    let m = fake
        .get(MYSQLS, Some(APP_NS), "db")
        .expect("held by the finalizer while the backup runs");
    assert!(!m["metadata"]["deletionTimestamp"].is_null());
    assert!(
        fake.get("v1/persistentvolumeclaims", Some(APP_NS), "backup-db")
            .is_some()
    );
    // The Deployment serves the dump meanwhile.
    assert!(
        fake.get("apps/v1/deployments", Some(APP_NS), "db")
            .is_some()
    );
    // An operator restarted meanwhile knows where it stood: all its state is
    // in the cluster (the finalizer, the labelled Jobs).
    drop(op);
    op = Operator::start(
        kc,
        &root.join("modules"),
        &root.join("global-hooks"),
        &dir.path().join("op2.log"),
        &[],
    );
    eventually(limit, "the restarted operator converged", || async {
        op.log().contains("converged")
    })
    .await;
    assert_eq!(jobs(fake, "backup").len(), 1, "no second backup");
    assert!(fake.get(MYSQLS, Some(APP_NS), "db").is_some());
    // The Job controller (kubectl here) reports it complete: then it goes.
    let t = Instant::now();
    kubectl(
        kc,
        &[
            "-n",
            APP_NS,
            "patch",
            "job",
            &backup_name,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Complete","status":"True"}]}}"#,
        ],
    )
    .await;
    eventually(limit, "the MySQL object gone after its backup", || async {
        fake.get(MYSQLS, Some(APP_NS), "db").is_none()
            && fake
                .get("apps/v1/deployments", Some(APP_NS), "db")
                .is_none()
    })
    .await;
    println!(
        "backup complete → object and Deployment gone: {:.2?}",
        t.elapsed()
    );
    assert!(complete(&jobs(fake, "backup")[0]));
    assert!(
        fake.get("v1/persistentvolumeclaims", Some(APP_NS), "backup-db")
            .is_some(),
        "the backup volume stays"
    );

    // Re-create: restored from the backup.
    fake.set_complete_jobs(true);
    let t = Instant::now();
    apply(kc, dir.path(), &mysql_yaml("first-pass")).await;
    eventually(limit, "re-created with restore", || async {
        status(fake).as_deref() == Some("created with restore from backup")
            && !jobs(fake, "restore").is_empty()
            && fake
                .get("apps/v1/deployments", Some(APP_NS), "db")
                .is_some()
    })
    .await;
    println!("re-create → restore Job and status: {:.2?}", t.elapsed());
    let second_uid = uid8(fake);
    assert_ne!(first_uid, second_uid);
    let restore = jobs(fake, "restore").remove(0);
    assert_eq!(
        restore["metadata"]["name"],
        format!("db-restore-{second_uid}")
    );
    assert_eq!(
        restore["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "backup-db"
    );

    // Password change: a Job from the old to the new one; the pods roll.
    let annotation = |fake: &FakeApiServer| {
        fake.get("apps/v1/deployments", Some(APP_NS), "db").unwrap()["spec"]["template"]["metadata"]
            ["annotations"]["checksum/password"]
            .clone()
    };
    let before = annotation(fake);
    assert!(before.is_string(), "{before}");
    let t = Instant::now();
    kubectl(
        kc,
        &[
            "-n",
            APP_NS,
            "patch",
            "mysql",
            "db",
            "--type=merge",
            "-p",
            r#"{"spec":{"password":"second-pass"}}"#,
        ],
    )
    .await;
    eventually(
        limit,
        "password Job done, status and pods updated",
        || async {
            let done = jobs(fake, "password").iter().any(complete);
            done && status(fake).as_deref() == Some("password updated")
                && annotation(fake) != before
        },
    )
    .await;
    println!(
        "password change → Job, status, rollout: {:.2?}",
        t.elapsed()
    );
    let pjob = jobs(fake, "password").remove(0);
    let name = pjob["metadata"]["name"].as_str().unwrap();
    let creds = fake.get("v1/secrets", Some(APP_NS), name).unwrap();
    assert_eq!(b64(&creds["data"]["old"]), "first-pass");
    assert_eq!(b64(&creds["data"]["new"]), "second-pass");
    let secret = fake.get("v1/secrets", Some(APP_NS), "db-mysql").unwrap();
    assert_eq!(b64(&secret["data"]["password"]), "second-pass");
    assert_eq!(jobs(fake, "password").len(), 1, "one Job per change");
    // The release is helm's: one module release holds the instance.
    assert!(
        op.log().contains("mysql: 1 instances"),
        "the hook's stderr relayed: {}",
        op.log()
    );
}
