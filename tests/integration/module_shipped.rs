//! The example modules shipped under modules/ and global-hooks/ work: the
//! README's first commands list and render them with no cluster.

use std::path::Path;
use std::process::Command;

fn antiopa(args: &[&str]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_antiopa"))
        .args(args)
        .current_dir(root)
        .env_remove("MODULES_DIR")
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR")
        .env_remove("ADDON_OPERATOR_GLOBAL_HOOKS_DIR")
        .output()
        .expect("run antiopa")
}

#[test]
fn shipped_modules_are_listed_enabled_but_the_opt_in_mysql_operator() {
    let r = antiopa(&["module", "list"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["100", "echo-server", "enabled"],
            vec!["200", "node-exporter", "enabled"],
            vec!["300", "mysql-operator", "disabled"],
        ]
    );
}

#[test]
fn shipped_modules_render_with_hook_and_global_values() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = antiopa(&[
        "render",
        "-n",
        "demo",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let echo = std::fs::read_to_string(out.join("echo-server.yaml")).unwrap();
    assert!(echo.contains("kind: Deployment"), "{echo}");
    assert!(echo.contains("enabledModules: \"echo-server,node-exporter\""));
    assert!(echo.contains("checksum/config: \""));
    let node = std::fs::read_to_string(out.join("node-exporter.yaml")).unwrap();
    // Generated Chart.yaml (templates-only module), hook default, global hook value.
    assert!(
        node.contains("helm.sh/chart: node-exporter-0.2.0"),
        "{node}"
    );
    assert!(node.contains("--web.listen-address=:9100"), "{node}");
    assert!(node.contains("kubernetes.io/os: linux"), "{node}");
}

#[test]
fn disabling_echo_server_disables_node_exporter_through_its_script() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cm.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\ndata:\n  echoServerEnabled: \"false\"\n",
    )
    .unwrap();
    let r = antiopa(&["module", "list", "--config", cfg.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        text.contains("config: echoServerEnabled: \"false\""),
        "{text}"
    );
    assert!(
        text.contains("enabled script: false: echo-server is not enabled"),
        "{text}"
    );
}

#[test]
fn mysql_operator_renders_its_instances_from_binding_snapshots_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cm.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\ndata:\n  mysqlOperatorEnabled: \"true\"\n",
    )
    .unwrap();
    // Enabled with no MySQL objects: nothing but the CRD (installed from crds/).
    let r = antiopa(&[
        "render",
        "mysql-operator",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(!text.contains("kind:"), "{text}");
    // One MySQL, and a finished backup of an earlier object of its name.
    let snap = tmp.path().join("snap.yaml");
    std::fs::write(
        &snap,
        r#"apiVersion: v1
kind: List
items:
- apiVersion: otus.homework/v1
  kind: MySQL
  metadata: {name: db, namespace: shop, uid: 0a1b2c3d-0000-4000-8000-000000000000}
  spec: {image: "mysql:8.0", database: otus, password: secret, storage_size: 2Gi}
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: db-backup-99999999
    namespace: shop
    labels: {mysql.otus.homework/instance: db, mysql.otus.homework/purpose: backup, mysql.otus.homework/uid: "99999999"}
  status:
    conditions: [{type: Complete, status: "True"}]
"#,
    )
    .unwrap();
    let r = antiopa(&[
        "render",
        "mysql-operator",
        "--config",
        cfg.to_str().unwrap(),
        "--snapshots",
        snap.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    for want in [
        "kind: Deployment",
        "kind: Service",
        "kind: PersistentVolumeClaim",
        "storage: \"2Gi\"",
        "namespace: shop",
        "image: \"mysql:8.0\"",
        // sha256("secret"), first 16 hex digits: a new password rolls the pods.
        "checksum/password: \"2bb80d537b1da3e3\"",
        "name: db-restore-0a1b2c3d",
        "claimName: backup-db",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}
