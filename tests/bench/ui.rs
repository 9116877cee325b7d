//! `cargo bench --bench ui` (or `cargo test --bench ui` for the debug
//! build): issue 32's figures for the status page. The overview of a
//! synthetic operator state with 200 modules (every phase, errors, drift,
//! queues, 40 watches) is rendered as the `/ui/` route does: the state
//! copied out of the operator (a `Status` clone), then the templates.
//! Prints the page weight (bytes, and per module) and the server time
//! (median and max over 200 renders; goal: under 100 ms for 200 modules).

use std::time::{Duration, Instant, SystemTime};

use antiopa::operator::state::{QueueStatus, WatchHealth, WatchState};
use antiopa::operator::{ModuleStatus, Overview, Phase};
use antiopa::ui::Pages;

fn state(modules: usize) -> Overview {
    let mut o = Overview {
        namespace: "addons".into(),
        doing: "idle".into(),
        leading: Some(true),
        ..Overview::default()
    };
    let phases = [
        Phase::Ready,
        Phase::Ready,
        Phase::Ready,
        Phase::Failed,
        Phase::Running,
        Phase::Pending,
        Phase::Disabled,
        Phase::Waiting,
    ];
    for i in 0..modules {
        let name = format!("module-{i:03}");
        let phase = phases[i % phases.len()];
        let m = ModuleStatus {
            phase,
            enabled_reason: format!("values.yaml: module{i:03}Enabled: true"),
            last_error: (phase == Phase::Failed).then(|| {
                format!("module '{name}': hook 'hooks/check.sh' failed (binding beforeHelm): exit status 1\nstderr: connection refused to db-{i}.svc:5432")
            }),
            failures: u32::from(phase == Phase::Failed),
            runs: 3 + i as u64,
            revision: Some(1 + (i % 7) as i64),
            last_run: Some(Duration::from_millis(40 + i as u64)),
            last_run_at: Some(SystemTime::now()),
            waiting_for: (phase == Phase::Waiting).then(|| "waiting for 'db' (disabled)".into()),
            ..ModuleStatus::default()
        };
        o.order.push((name.clone(), 10 * (i as u32 / 10)));
        o.status.modules.insert(name, m);
    }
    o.status.queues = (0..5)
        .map(|q| QueueStatus {
            name: if q == 0 {
                "main".into()
            } else {
                format!("queue-{q}")
            },
            tasks_count: q,
            status: if q == 1 {
                "run module-001:hooks/sync.sh".into()
            } else {
                String::new()
            },
            tasks: Vec::new(),
        })
        .collect();
    o.status.watches = (0..40)
        .map(|w| WatchHealth {
            id: w,
            key: format!("v1/ConfigMap ns=ns-{w} labels=app=x"),
            kind: "ConfigMap".into(),
            namespaces: vec![format!("ns-{w}")],
            bindings: vec![format!("module-{w:03}/hooks/watch.sh: configmaps")],
            state: WatchState::Synced,
            started_at: SystemTime::now(),
            last_event_at: Some(SystemTime::now()),
            objects: 10 * w as usize,
            relists: 0,
            restarts: 0,
            last_error: None,
        })
        .collect();
    o
}

fn main() {
    let pages = Pages::new().expect("templates load");
    let live = state(200);
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..200 {
        let t = Instant::now();
        let snapshot = live.clone();
        let html = pages.overview(&snapshot).expect("overview renders");
        times.push(t.elapsed());
        bytes = html.len();
    }
    times.sort();
    let median = times[times.len() / 2];
    let max = *times.last().unwrap();
    println!(
        "ui overview, 200 modules: page weight {bytes} bytes ({} bytes per module)",
        bytes / 200
    );
    println!(
        "ui overview, 200 modules: server time median {:.2} ms, max {:.2} ms over {} renders (goal < 100 ms)",
        median.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3,
        times.len()
    );
}
