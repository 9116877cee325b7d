//! `antiopa run --leader-elect`, real binaries against fake apiserver:
//! of replicas started together exactly one takes the Lease and writes
//! (writes counted per replica by its User-Agent), the standby writes
//! nothing but its Lease attempts; kill -9 of the leader hands the work to
//! the standby within 15 s, which re-installs a release kubectl deleted;
//! SIGTERM releases the Lease for a quick hand-over and exits 0; a leader
//! whose Lease is taken stops writing at once (not even a drift check, a
//! dry-run apply, is made) and repairs the drift it put off once it leads
//! again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster_support::*;

const NS: &str = "ha";
const LEASE: &str = "antiopa-leader-election";

/// Two modules, each writing one ConfigMap with its greeting.
fn tree(dir: &Path) -> (PathBuf, PathBuf) {
    let modules = dir.join("modules");
    let global = dir.join("global-hooks");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        dir.join("values.yaml"),
        "alphaEnabled: true\nbetaEnabled: true\n",
    )
    .unwrap();
    for (d, name) in [("010-alpha", "alpha"), ("020-beta", "beta")] {
        let m = modules.join(d);
        std::fs::create_dir_all(m.join("templates")).unwrap();
        std::fs::write(
            m.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        )
        .unwrap();
        std::fs::write(
            m.join("values.yaml"),
            format!("{name}:\n  greeting: hello\n"),
        )
        .unwrap();
        std::fs::write(
            m.join("templates/cm.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  greeting: {{{{ .Values.{name}.greeting | quote }}}}\n"
            ),
        )
        .unwrap();
    }
    std::fs::rename(dir.join("values.yaml"), modules.join("values.yaml")).unwrap();
    (modules, global)
}

/// One replica: `antiopa run --leader-elect` as pod `name`, killed on drop.
struct Replica {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(kubeconfig: &Path, dir: &Path, name: &str) -> Replica {
        let (modules, global) = (dir.join("modules"), dir.join("global-hooks"));
        let log = dir.join(format!("{name}.log"));
        let child = Command::new(antiopa())
            .args(["run", "--leader-elect"])
            .env("ADDON_OPERATOR_NAMESPACE", NS)
            .env("POD_NAME", name)
            .env("MODULES_DIR", modules)
            .env("GLOBAL_HOOKS_DIR", global)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", std::env::temp_dir())
            .env("LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Replica {
            name: name.to_string(),
            child,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Writes this replica made, by resource.
    fn writes(&self, fake: &fake_apiserver::FakeApiServer) -> BTreeMap<String, u64> {
        let agent = format!("antiopa/{} ({})", env!("CARGO_PKG_VERSION"), self.name);
        fake.stats()
            .writes_by_agent
            .get(&agent)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn holder(fake: &fake_apiserver::FakeApiServer) -> Option<String> {
    let l = fake.get("leases.coordination.k8s.io", Some(NS), LEASE)?;
    l["spec"]["holderIdentity"].as_str().map(str::to_string)
}

fn greeting(fake: &fake_apiserver::FakeApiServer, module: &str) -> Option<String> {
    let cm = fake.get("configmaps", Some(NS), &format!("{module}-config"))?;
    cm["data"]["greeting"].as_str().map(str::to_string)
}

async fn kubectl(kubeconfig: &Path, list: &[&str]) -> String {
    let out = run_args(PathBuf::from("kubectl"), args(list, kubeconfig)).await;
    ok(&out)
}

async fn until<F: FnMut() -> bool>(limit: Duration, what: &str, mut check: F) -> Duration {
    let t = Instant::now();
    while t.elapsed() < limit {
        if check() {
            return t.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not within {limit:?}: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_writes_and_hands_over_on_kill_and_sigterm_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    kubectl(kc, &["create", "namespace", NS]).await;
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "create",
            "configmap",
            "addon-operator",
            "--from-literal=beta=greeting: from-config",
        ],
    )
    .await;
    let mut a = Replica::start(kc, dir.path(), "a");
    let mut b = Replica::start(kc, dir.path(), "b");

    until(Duration::from_secs(30), "both modules deployed", || {
        greeting(&s.fake, "alpha").is_some() && greeting(&s.fake, "beta").is_some()
    })
    .await;
    assert_eq!(greeting(&s.fake, "beta").as_deref(), Some("from-config"));
    // Give the standby time to do anything it would wrongly do.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lead = holder(&s.fake).expect("a holder");
    let (leader, standby) = if lead == "a" {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let lw = leader.writes(&s.fake);
    let sw = standby.writes(&s.fake);
    eprintln!("leader {} writes: {lw:?}", leader.name);
    eprintln!("standby {} writes: {sw:?}", standby.name);
    assert!(lw.get("secrets").copied().unwrap_or(0) >= 2, "{lw:?}");
    assert!(lw.get("configmaps").copied().unwrap_or(0) >= 2, "{lw:?}");
    assert!(
        sw.keys().all(|r| r == "leases.coordination.k8s.io"),
        "the standby wrote more than its Lease: {sw:?}\n{}",
        standby.log()
    );
    let slog = standby.log();
    assert!(!slog.contains("module run done"), "{slog}");
    assert!(!slog.contains("converged"), "{slog}");

    // kubectl deletes alpha's release and object; the leader dies.
    kubectl(
        kc,
        &["-n", NS, "delete", "secret", "-l", "owner=helm,name=alpha"],
    )
    .await;
    kubectl(kc, &["-n", NS, "delete", "configmap", "alpha-config"]).await;
    leader.signal(nix::sys::signal::Signal::SIGKILL);
    let standby_name = standby.name.clone();
    let took = until(Duration::from_secs(20), "the standby takes over", || {
        holder(&s.fake).as_deref() == Some(standby_name.as_str())
    })
    .await;
    let restored = until(Duration::from_secs(20), "alpha re-installed", || {
        greeting(&s.fake, "alpha").is_some()
    })
    .await;
    eprintln!(
        "failover after kill -9: Lease taken in {:.2} s, alpha re-installed in {:.2} s",
        took.as_secs_f64(),
        (took + restored).as_secs_f64()
    );
    assert!(took < Duration::from_secs(15), "failover took {took:?}");
    drop(a);
    drop(b);

    // SIGTERM of a leader with a standby beside it: the Lease is released,
    // the standby takes it at once, the leader exits 0.
    let mut c = Replica::start(kc, dir.path(), "c");
    let took = until(Duration::from_secs(20), "c leads", || {
        holder(&s.fake).as_deref() == Some("c")
    })
    .await;
    eprintln!("c took the expired Lease in {:.2} s", took.as_secs_f64());
    let d = Replica::start(kc, dir.path(), "d");
    until(Duration::from_secs(10), "d stands by", || {
        d.log().contains("modules discovered")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.signal(nix::sys::signal::Signal::SIGTERM);
    let handover = until(Duration::from_secs(15), "d takes over", || {
        holder(&s.fake).as_deref() == Some("d")
    })
    .await;
    let st = c.wait(Duration::from_secs(10)).await.expect("c exits");
    assert!(st.success(), "{st:?}\n{}", c.log());
    assert!(c.log().contains("Lease released"), "{}", c.log());
    eprintln!("hand-over on SIGTERM: {:.2} s", handover.as_secs_f64());
    assert!(
        handover < Duration::from_secs(3),
        "hand-over took {handover:?}"
    );

    // The new leader follows the ConfigMap.
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "addon-operator",
            "--type=merge",
            "-p",
            r#"{"data":{"alpha":"greeting: from-d"}}"#,
        ],
    )
    .await;
    until(Duration::from_secs(20), "d applies the config", || {
        greeting(&s.fake, "alpha").as_deref() == Some("from-d")
    })
    .await;
    assert!(d.log().contains("this replica leads now"), "{}", d.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_lease_is_taken_stops_writing_at_once_against_fake_apiserver() {
    let s = serve().await;
    let kc = &s.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    kubectl(kc, &["create", "namespace", NS]).await;
    let a = Replica::start(kc, dir.path(), "a");
    until(Duration::from_secs(30), "a converged", || {
        greeting(&s.fake, "alpha").is_some() && a.log().contains("converged")
    })
    .await;

    // Someone else takes the Lease (as a replica whose clock ran ahead would).
    let now = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let patch = format!(
        r#"{{"spec":{{"holderIdentity":"intruder","renewTime":"{now}","acquireTime":"{now}","leaseDurationSeconds":10}}}}"#
    );
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "lease",
            LEASE,
            "--type=merge",
            "-p",
            &patch,
        ],
    )
    .await;
    until(Duration::from_secs(5), "a steps down", || {
        a.log().contains("not the leader any more")
    })
    .await;
    let before = a.writes(&s.fake);
    // Drift now is not a's to check (a check is a dry-run apply) nor to
    // repair; a config change is not a's to apply.
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "patch",
            "configmap",
            "beta-config",
            "--type=merge",
            "-p",
            r#"{"data":{"greeting":"edited"}}"#,
        ],
    )
    .await;
    kubectl(
        kc,
        &[
            "-n",
            NS,
            "create",
            "configmap",
            "addon-operator",
            "--from-literal=alpha=greeting: changed",
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = a.writes(&s.fake);
    let non_lease = |w: &BTreeMap<String, u64>| {
        w.iter()
            .filter(|(r, _)| *r != "leases.coordination.k8s.io")
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(
        non_lease(&after),
        non_lease(&before),
        "{before:?} → {after:?}"
    );
    assert_eq!(greeting(&s.fake, "alpha").as_deref(), Some("hello"));
    assert_eq!(greeting(&s.fake, "beta").as_deref(), Some("edited"));

    // The intruder never renews: a takes the Lease back and converges.
    let took = until(Duration::from_secs(20), "a leads again", || {
        greeting(&s.fake, "alpha").as_deref() == Some("changed")
    })
    .await;
    eprintln!(
        "a took the abandoned Lease back and applied the config in {:.2} s",
        took.as_secs_f64()
    );
    assert_eq!(holder(&s.fake).as_deref(), Some("a"));
    // The drift it put off is repaired in its new term.
    let end = Instant::now() + Duration::from_secs(10);
    while greeting(&s.fake, "beta").as_deref() != Some("hello") {
        assert!(
            Instant::now() < end,
            "beta-config not repaired:\n{}",
            a.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `ADDON_OPERATOR_HA` is read as addon-operator reads it ("true" turns
/// leader election on, "false" leaves it off); `--once` takes no part in it.
#[test]
fn addon_operators_ha_variable_turns_leader_election_on() {
    let run = |ha: &str| {
        let out = Command::new(antiopa())
            .args([
                "run",
                "--once",
                "-n",
                NS,
                "--kubeconfig",
                "/nonexistent/kubeconfig",
            ])
            .env("ADDON_OPERATOR_HA", ha)
            .env("HOME", std::env::temp_dir())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let on = run("true");
    assert!(on.contains("cannot take part in leader election"), "{on}");
    let off = run("false");
    assert!(!off.contains("leader election"), "{off}");
    assert!(off.contains("/nonexistent/kubeconfig"), "{off}");
}
