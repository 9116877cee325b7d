//! The status page of `antiopa run` (`/ui/`), the real binary against fake
//! apiserver, fetched over HTTP as a browser would: the overview lists every
//! module with its phase, a failing module shows its error (first line
//! there, the whole on its page); no Secret value, nor a value under a
//! secret-looking key, appears on any page; `/ui/events` streams phases;
//! actions are POST only and refused (403) without the token of
//! `--ui-token-file`, accepted with it (bearer header or form field) and
//! the module runs again. A module's page shows its hook runs (binding,
//! outcome, the tail of stderr) and its last change as `antiopa diff`
//! prints it. The page answers loopback clients only unless `--ui-remote`.
//! A headless Chromium, when installed, renders the pages into
//! target/ui-screenshots, and a form posted from a page elsewhere without
//! the token lands on the refusal.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cluster_operator::{Operator, eventually, executable, prepare};
use crate::cluster_support::*;

const TOKEN: &str = "ui-token-4f1c9a";
/// Values no page may show.
const SECRETS: [&str; 5] = [
    "s3cr3t-value",
    "czNjcjN0LXZhbHVl", // base64 of s3cr3t-value
    "plain-token-value",
    "hunter2-db-password",
    "api-key-value",
];

/// Module `web` (a ConfigMap and a Secret; values with a password and an
/// API key), module `broken` (its beforeHelm hook always fails).
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        modules.join("values.yaml").tap_dir(),
        "webEnabled: true\nbrokenEnabled: true\n",
    )
    .unwrap();
    let web = modules.join("010-web");
    std::fs::create_dir_all(web.join("templates")).unwrap();
    std::fs::write(
        web.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        web.join("values.yaml"),
        "web:\n  greeting: hello-from-web\n  db:\n    host: db.example\n    password: hunter2-db-password\n  apiKey: api-key-value\n",
    )
    .unwrap();
    std::fs::write(
        web.join("templates/objects.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: {{ .Values.web.greeting | quote }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: web-secret\ndata:\n  password: {{ \"s3cr3t-value\" | b64enc }}\nstringData:\n  token: plain-token-value\n",
    )
    .unwrap();
    let broken = modules.join("020-broken");
    std::fs::create_dir_all(broken.join("templates")).unwrap();
    std::fs::create_dir_all(broken.join("hooks")).unwrap();
    std::fs::write(
        broken.join("Chart.yaml"),
        "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        broken.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n",
    )
    .unwrap();
    executable(
        &broken.join("hooks/fail.sh"),
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":1}'; exit 0; fi\necho 'database unreachable on purpose' >&2\nexit 1\n",
    );
    (modules, global)
}

trait TapDir {
    fn tap_dir(self) -> Self;
}

impl TapDir for PathBuf {
    /// Makes the file's directory first.
    fn tap_dir(self) -> Self {
        std::fs::create_dir_all(self.parent().unwrap()).unwrap();
        self
    }
}

/// One HTTP/1.1 request over a plain TCP connection: status, head, body.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: antiopa\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

async fn request(
    addr: &str,
    method: &'static str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String) {
    let (a, p, b) = (addr.to_string(), path.to_string(), body.to_string());
    let h: Vec<String> = headers.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        let (code, _, body) = http(&a, method, &p, &h, &b);
        (code, body)
    })
    .await
    .unwrap()
}

/// The first message of `/ui/events` (read until its blank line).
fn first_event(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /ui/events HTTP/1.1\r\nHost: antiopa\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "event stream closed: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw);
        if let Some(i) = text.find("data:")
            && text[i..].contains("\n\n")
        {
            return text.into_owned();
        }
    }
}

/// The operator's HTTP address, from its log.
async fn address(op: &Operator) -> String {
    let mut addr = String::new();
    eventually(Duration::from_secs(30), "HTTP server listening", || {
        addr = op
            .log()
            .lines()
            .find(|l| l.contains("HTTP server (metrics, health) listening"))
            .and_then(|l| l.split("address=").nth(1))
            .map(|a| a.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_default();
        let found = !addr.is_empty();
        async move { found }
    })
    .await;
    addr
}

/// `runs` on a module page: `<th>runs</th><td>N (`.
fn runs(page: &str) -> u64 {
    page.split("<th>runs</th><td>")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no runs on the page:\n{page}"))
}

fn no_secrets(what: &str, page: &str) {
    for s in SECRETS {
        assert!(
            !page.contains(s),
            "{what} shows the secret value {s}:\n{page}"
        );
    }
}

/// The operator started with a token file, the page once `web` is deployed.
async fn started(dir: &Path, kc: &Path) -> (Operator, String) {
    let (modules, global) = tree(dir);
    prepare(kc, Some("global=logLevel: info")).await;
    let token_file = dir.join("ui-token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let tf = token_file.display().to_string();
    let op = Operator::start(
        kc,
        &modules,
        &global,
        &dir.join("op.log"),
        &["--ui-token-file", &tf],
    );
    let addr = address(&op).await;
    eventually(Duration::from_secs(60), "web ready, broken failed", || {
        let a = addr.clone();
        async move {
            let (_, page) = request(&a, "GET", "/ui/", &[], "").await;
            page.contains("id=\"phase-web\" class=\"phase ready\"")
                && page.contains("id=\"phase-broken\" class=\"phase failed\"")
        }
    })
    .await;
    (op, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_shows_modules_masks_secrets_and_gates_actions_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (op, addr) = started(dir.path(), &s.kubeconfig).await;

    // The overview: both modules, the failing one's error (first line only)
    // linking to its page, this replica's role, the queues.
    let started_at = std::time::Instant::now();
    let (code, page) = request(&addr, "GET", "/ui/", &[], "").await;
    println!(
        "GET /ui/: {} bytes in {:?} (with the HTTP round trip)",
        page.len(),
        started_at.elapsed()
    );
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("hook &#x27;hooks&#x2F;fail.sh&#x27; failed (binding beforeHelm)"),
        "{page}"
    );
    assert!(page.contains("href=\"/ui/module/broken#error\""), "{page}");
    assert!(page.contains("leader (no leader election)"), "{page}");
    assert!(
        page.contains("<h2>Queues</h2>") && page.contains("<h2>Watches"),
        "{page}"
    );
    no_secrets("/ui/", &page);

    // The failing module's page: the whole error, and its hook runs with
    // binding, outcome and the tail of the hook's stderr.
    let (code, page) = request(&addr, "GET", "/ui/module/broken", &[], "").await;
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("<h2 id=\"error\">Last error</h2><pre class=\"err\">module &#x27;broken&#x27;: hook &#x27;hooks&#x2F;fail.sh&#x27; failed (binding beforeHelm): exit status 1"),
        "{page}"
    );
    let hooks = &page[page.find("<h2 id=\"hooks\">").expect("a hook runs section")..];
    assert!(
        hooks.contains("<td>hooks&#x2F;fail.sh</td><td>beforeHelm</td><td>main</td>"),
        "{hooks}"
    );
    assert!(
        hooks.contains("failed: module &#x27;broken&#x27;"),
        "{hooks}"
    );
    assert!(
        hooks.contains("database unreachable on purpose"),
        "the stderr tail:\n{hooks}"
    );

    // web's page: values with secret-looking keys masked, its deployed
    // manifest with the Secret's data masked, its release history.
    let (code, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
    assert_eq!(code, 200, "{page}");
    no_secrets("/ui/module/web", &page);
    assert!(
        page.contains("hello-from-web") && page.contains("db.example"),
        "values shown:\n{page}"
    );
    assert!(
        page.contains("&quot;password&quot;: &quot;***&quot;"),
        "{page}"
    );
    assert!(
        page.contains("name: web-secret") && page.contains("name: web-config"),
        "manifest shown:\n{page}"
    );
    assert!(
        page.contains("<td>1</td><td>deployed</td><td>running</td>"),
        "history:\n{page}"
    );
    // Which source decided that it is enabled.
    assert!(
        page.contains("<tr><th>enabled</th><td>values.yaml: webEnabled: true</td></tr>"),
        "{page}"
    );
    // The last change, object by object as `antiopa diff` prints it: the
    // first revision adds both objects (the Secret's values masked).
    let change = &page[page
        .find("<h2 id=\"change\">")
        .expect("a last change section")..];
    assert!(
        change.contains("revision 1 (the first: every object added)"),
        "{change}"
    );
    assert!(
        change.contains("+ v1 ConfigMap addons&#x2F;web-config")
            && change.contains("+ v1 Secret addons&#x2F;web-secret"),
        "{change}"
    );
    let before = runs(&page);

    let (code, _) = request(&addr, "GET", "/ui/module/nope", &[], "").await;
    assert_eq!(code, 404);

    // The live phases.
    let a = addr.clone();
    let ev = tokio::task::spawn_blocking(move || first_event(&a))
        .await
        .unwrap();
    assert!(ev.contains("text/event-stream"), "{ev}");
    assert!(
        ev.contains("\"web\":[\"ready\",\"ready\"]")
            && ev.contains("\"broken\":[\"failed\",\"failed\"]"),
        "{ev}"
    );

    // Actions: never by GET; refused without the token, or with a wrong one.
    let (code, _) = request(&addr, "GET", "/ui/module/web/run", &[], "").await;
    assert_eq!(code, 405, "no GET actions");
    let (code, body) = request(&addr, "POST", "/ui/module/web/run", &[], "").await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = request(
        &addr,
        "POST",
        "/ui/module/web/run",
        &["Authorization: Bearer wrong"],
        "",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = request(
        &addr,
        "POST",
        "/ui/module/web/run",
        &["Content-Type: application/x-www-form-urlencoded"],
        "token=wrong",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
    assert_eq!(runs(&page), before, "a refused action ran nothing");

    // With the token (bearer), the module runs again.
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let (code, body) = request(&addr, "POST", "/ui/module/web/run", &[&bearer], "").await;
    assert!((200..300).contains(&code), "{code}: {body}");
    eventually(Duration::from_secs(30), "web ran again", || {
        let a = addr.clone();
        async move {
            let (_, page) = request(&a, "GET", "/ui/module/web", &[], "").await;
            runs(&page) > before
        }
    })
    .await;
    assert!(
        op.log().contains("a run was asked for on the status page"),
        "{}",
        op.log()
    );
    // And with the token as a form field (the page's own form, no script).
    let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
    let after = runs(&page);
    let form = format!("token={TOKEN}");
    let (code, body) = request(
        &addr,
        "POST",
        "/ui/module/web/run",
        &["Content-Type: application/x-www-form-urlencoded"],
        &form,
    )
    .await;
    assert!((200..300).contains(&code), "{code}: {body}");
    eventually(Duration::from_secs(30), "web ran a third time", || {
        let a = addr.clone();
        async move {
            let (_, page) = request(&a, "GET", "/ui/module/web", &[], "").await;
            runs(&page) > after
        }
    })
    .await;
    no_secrets("the operator's log", &op.log());
    assert!(!op.log().contains(TOKEN), "the token is never logged");
}

/// Without a token file every action is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_without_a_token_file_is_read_only_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(&s.kubeconfig, None).await;
    let op = Operator::start(
        &s.kubeconfig,
        &modules,
        &global,
        &dir.path().join("op.log"),
        &[],
    );
    let addr = address(&op).await;
    let (code, page) = request(&addr, "GET", "/ui/", &[], "").await;
    assert_eq!(code, 200, "{page}");
    let (code, body) = request(
        &addr,
        "POST",
        "/ui/module/web/run",
        &["Authorization: Bearer anything"],
        "",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("--ui-token-file"), "{body}");
}

/// Screenshots and the DOM of the pages in headless Chromium, when it is
/// installed (skipped with the reason printed otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_in_a_headless_browser_against_fake_apiserver() {
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        println!("SKIPPED: no chromium on this machine (apt-get install chromium to run it)");
        return;
    };
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (_op, addr) = started(dir.path(), &s.kubeconfig).await;
    // A released object deleted by kubectl: drift restores it, and the
    // page says so.
    crate::cluster_operator::kubectl(
        &s.kubeconfig,
        &["-n", "addons", "delete", "configmap", "web-config"],
    )
    .await;
    eventually(Duration::from_secs(20), "the drift restore shown", || {
        let addr = addr.clone();
        async move {
            let (_, page) = request(&addr, "GET", "/ui/", &[], "").await;
            page.contains("1 drifted, 1 restored")
        }
    })
    .await;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ui-screenshots");
    std::fs::create_dir_all(&out).unwrap();
    for (file, path) in [
        ("overview", "/ui/"),
        ("module-web", "/ui/module/web"),
        ("module-broken", "/ui/module/broken"),
    ] {
        let url = format!("http://{addr}{path}");
        let shot = out.join(format!("{file}.png"));
        let run = |args: Vec<String>| {
            let mut a = vec!["--window-size=1280,1000".to_string()];
            a.extend(args);
            headless(chromium, a)
        };
        let o = run(vec![
            format!("--screenshot={}", shot.display()),
            url.clone(),
        ]);
        assert!(
            shot.exists(),
            "no screenshot: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dom = run(vec!["--dump-dom".into(), url]);
        let dom = String::from_utf8_lossy(&dom.stdout);
        no_secrets(path, &dom);
        assert!(dom.contains("phase-"), "{dom}");
        if file == "overview" {
            // The failing module's error and the drift restore, as the
            // browser shows them.
            assert!(dom.contains("exit status 1"), "{dom}");
            assert!(dom.contains("1 drifted, 1 restored"), "{dom}");
        }
        if file == "module-web" {
            // The drift event: the object, and that it was restored.
            let events = &dom[dom.find("id=\"drift-events\"").expect("drift events")..];
            assert!(
                events.contains("web-config") && events.contains("restored in"),
                "{events}"
            );
        }
        if file == "module-broken" {
            assert!(dom.contains("database unreachable on purpose"), "{dom}");
        }
        println!("{}", shot.display());
    }
    // An action from a page elsewhere (a form posted without the token, as
    // a cross-site page would): the browser lands on the refusal, and
    // nothing runs.
    let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
    let before = runs(&page);
    let forged = dir.path().join("forged.html");
    std::fs::write(
        &forged,
        format!(
            "<form method=post action=\"http://{addr}/ui/module/web/run\"><input name=token value=guess></form><script>document.forms[0].submit()</script>"
        ),
    )
    .unwrap();
    let o = headless(
        chromium,
        vec!["--dump-dom".into(), format!("file://{}", forged.display())],
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains("Refused") && dom.contains("wrong token"),
        "{dom}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
    assert_eq!(runs(&page), before, "a refused action ran nothing");
}

/// This machine's address on its outbound interface (none: no network
/// but loopback).
fn outbound_ip() -> Option<std::net::IpAddr> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // Connecting a UDP socket sends nothing; it picks the interface.
    sock.connect("10.255.255.255:9").ok()?;
    let ip = sock.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// On an HTTP port open to every interface, the page answers loopback
/// clients only (as `kubectl port-forward` connects), while metrics and
/// health stay open; `--ui-remote` serves everyone (unit-tested in
/// `ui::tests`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_answers_loopback_clients_only_by_default_against_fake_apiserver() {
    let Some(ip) = outbound_ip() else {
        println!("SKIPPED: this machine has no address but loopback");
        return;
    };
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (modules, global) = tree(dir.path());
    prepare(&s.kubeconfig, None).await;
    let op = Operator::start(
        &s.kubeconfig,
        &modules,
        &global,
        &dir.path().join("op.log"),
        &["--listen-address", "0.0.0.0"],
    );
    let addr = address(&op).await;
    let port = addr.rsplit(':').next().unwrap().to_string();
    let local = format!("127.0.0.1:{port}");
    let remote = match ip {
        std::net::IpAddr::V4(v4) => format!("{v4}:{port}"),
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    };
    let (code, page) = request(&local, "GET", "/ui/", &[], "").await;
    assert_eq!(code, 200, "{page}");
    let (code, page) = request(&remote, "GET", "/ui/", &[], "").await;
    assert_eq!(code, 403, "{page}");
    assert!(page.contains("--ui-remote"), "{page}");
    let (code, page) = request(&remote, "GET", "/ui/module/web", &[], "").await;
    assert_eq!(code, 403, "{page}");
    let (code, _) = request(&remote, "GET", "/metrics", &[], "").await;
    assert_eq!(code, 200, "metrics stay open");
    assert!(
        op.log()
            .contains("status page: refused a client on another host"),
        "{}",
        op.log()
    );
}

/// Headless Chromium with `args`, killed after a minute (`timeout`): a
/// browser that hangs fails the test instead of holding it.
fn headless(chromium: &str, args: Vec<String>) -> std::process::Output {
    std::process::Command::new("timeout")
        .args([
            "-k",
            "5",
            "60",
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .args(args)
        .output()
        .unwrap()
}

/// Archive and restore from the page: the objects go (drift repair does
/// not bring them back) and come back, the release's history says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_archives_and_restores_a_release_against_fake_apiserver() {
    let s = serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (op, addr) = started(dir.path(), &s.kubeconfig).await;
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let (code, _) = request(&addr, "POST", "/ui/module/web/archive", &[], "").await;
    assert_eq!(code, 403);
    let (code, body) = request(&addr, "POST", "/ui/module/web/archive", &[&bearer], "").await;
    assert_eq!(code, 200, "{body}\n{}", op.log());
    assert!(body.contains("web-archived"), "{body}");
    let gone = || {
        s.fake
            .get(
                "v1/configmaps",
                Some(crate::cluster_operator::NS),
                "web-config",
            )
            .is_none()
    };
    eventually(Duration::from_secs(20), "web archived", || {
        let addr = addr.clone();
        async move {
            let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
            page.contains("<td>archived</td>")
        }
    })
    .await;
    assert!(gone(), "objects deleted\n{}", op.log());
    // Neither drift repair nor a run of the module brings them back.
    let (code, _) = request(&addr, "POST", "/ui/module/web/run", &[&bearer], "").await;
    assert!(code < 500);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(gone(), "not restored while archived\n{}", op.log());
    let (code, body) = request(&addr, "POST", "/ui/module/web/restore", &[&bearer], "").await;
    assert_eq!(code, 200, "{body}\n{}", op.log());
    eventually(Duration::from_secs(20), "web restored", || {
        let addr = addr.clone();
        async move {
            let (_, page) = request(&addr, "GET", "/ui/module/web", &[], "").await;
            page.contains("<td>2</td><td>deployed</td><td>running</td>")
                || page.contains("<td>3</td><td>deployed</td><td>running</td>")
        }
    })
    .await;
    assert!(!gone(), "restored");
}
