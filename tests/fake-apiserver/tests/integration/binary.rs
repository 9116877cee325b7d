//! The `fake-apiserver` binary against fake apiserver clients: it prints its bound address on one
//! stdout line, writes a kubeconfig, and serves kube clients configured from that kubeconfig.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[tokio::test]
async fn binary_serves_kubeconfig_clients_against_fake_apiserver() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn fake-apiserver");
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out)
            .read_line(&mut line)
            .expect("address line");
    }
    let addr: std::net::SocketAddr = line.trim().parse().expect("a socket address");
    let text = std::fs::read_to_string(&kc).expect("kubeconfig written");
    assert!(text.contains(&format!("server: http://{addr}")), "{text}");

    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kc).expect("parse kubeconfig"),
        &KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    let client = kube::Client::try_from(config).expect("client");
    let names: Vec<String> = Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .expect("list namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
}
