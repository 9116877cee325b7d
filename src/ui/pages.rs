//! The pages as HTML: the operator's state turned into plain rows of text,
//! then Tera templates (HTML-escaped). Pure: no I/O, no locks.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value as Json};
use tera::{Context, Tera};

use crate::operator::{HookRun, ModulePage, ModuleStatus, Overview, Phase};

/// A template that cannot be loaded or rendered.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error("status page template {template}: {message}")]
    Template { template: String, message: String },
}

fn template_error(template: &str, e: tera::Error) -> UiError {
    // Tera's Display is the outer message only; the cause says what broke.
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    UiError::Template {
        template: template.to_string(),
        message,
    }
}

/// The compiled templates.
pub struct Pages {
    tera: Tera,
}

const TEMPLATES: [(&str, &str); 5] = [
    ("base.html", include_str!("templates/base.html")),
    ("overview.html", include_str!("templates/overview.html")),
    ("module.html", include_str!("templates/module.html")),
    ("message.html", include_str!("templates/message.html")),
    ("hook_runs.html", include_str!("templates/hook_runs.html")),
];

/// The mask that replaces secret-looking values.
const MASK: &str = "***";

impl Pages {
    pub fn new() -> Result<Pages, UiError> {
        let mut tera = Tera::default();
        tera.add_raw_templates(TEMPLATES)
            .map_err(|e| template_error("(loading)", e))?;
        // `.html` templates are HTML-escaped by default; keep it so.
        tera.autoescape_on(vec![".html"]);
        Ok(Pages { tera })
    }

    fn render(&self, template: &str, ctx: &Context) -> Result<String, UiError> {
        self.tera
            .render(template, ctx)
            .map_err(|e| template_error(template, e))
    }

    /// The overview: every module, the queues, the watches, this replica's role.
    pub fn overview(&self, o: &Overview) -> Result<String, UiError> {
        let st = &o.status;
        let mut names: Vec<&str> = o.order.iter().map(|(n, _)| n.as_str()).collect();
        let listed: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        names.extend(
            st.modules
                .keys()
                .map(String::as_str)
                .filter(|n| !listed.contains(n)),
        );
        let default = ModuleStatus::default();
        let modules: Vec<Row> = names
            .into_iter()
            .map(|n| Row::new(n, st.modules.get(n).unwrap_or(&default)))
            .collect();
        let queues: Vec<Json> = st
            .queues
            .iter()
            .map(
                |q| serde_json::json!({"name": q.name, "tasks": q.tasks_count, "status": q.status}),
            )
            .collect();
        let watches: Vec<Json> = st
            .watches
            .iter()
            .map(|w| {
                serde_json::json!({
                    "kind": w.kind,
                    "namespaces": if w.namespaces.is_empty() { "all".to_string() } else { w.namespaces.join(", ") },
                    "state": format!("{:?}", w.state),
                    "objects": w.objects,
                    "restarts": w.restarts,
                    "bindings": w.bindings.join(", "),
                    "error": w.last_error.as_deref().map(first_line).unwrap_or_default(),
                })
            })
            .collect();
        let mut c = Context::new();
        c.insert("namespace", &o.namespace);
        c.insert(
            "role",
            match o.leading {
                None => "leader (no leader election)",
                Some(true) => "leader",
                Some(false) => "standby",
            },
        );
        c.insert("converges", &st.converges);
        c.insert("ready", &st.first_converge_done);
        c.insert("doing", if o.doing.is_empty() { "idle" } else { &o.doing });
        c.insert("global_error", &st.global_error.as_deref().map(first_line));
        c.insert("config_error", &st.config_error.as_deref().map(first_line));
        c.insert("modules", &modules);
        c.insert("main_queue", &o.main_queue);
        c.insert("queues", &queues);
        c.insert("watches", &watches);
        c.insert("global_hook_runs", &hook_rows(&o.global_hook_runs));
        self.render("overview.html", &c)
    }

    /// One module's page. `actions`: a token file is configured.
    pub fn module(&self, p: &ModulePage, actions: bool) -> Result<String, UiError> {
        let m = &p.status;
        let mut c = Context::new();
        c.insert("name", &p.name);
        c.insert("m", &Row::new(&p.name, m));
        c.insert("reason", &m.enabled_reason);
        c.insert("runs", &m.runs);
        c.insert("failures", &m.failures);
        c.insert("retry_at", &m.retry_at.map(time));
        c.insert("error", &m.last_error);
        c.insert("actions", &actions);
        c.insert("drift", &m.drift);
        // Newest first.
        let drift_events: Vec<Json> = m
            .drift
            .iter()
            .flat_map(|d| d.events.iter().rev())
            .map(|e| serde_json::json!({"at": time(e.at), "what": e.what, "outcome": e.outcome}))
            .collect();
        c.insert("drift_events", &drift_events);
        let values = match &p.values {
            Ok(v) => {
                let mut v = Json::Object(v.clone());
                mask_values(&mut v);
                serde_json::to_string_pretty(&v).unwrap_or_default()
            }
            Err(e) => format!("(not available: {e})"),
        };
        c.insert("values", &values);
        match &p.history {
            Ok(h) => {
                let rows: Vec<Json> = h
                    .iter()
                    .map(|r| {
                        let info = r.info.as_ref();
                        serde_json::json!({
                            "version": r.version,
                            "status": r.status().as_str(),
                            "state": crate::release::lifecycle::state(r).as_str(),
                            "deployed": info.map(|i| i.last_deployed.clone()).unwrap_or_default(),
                            "description": info.map(|i| first_line(&i.description)).unwrap_or_default(),
                        })
                    })
                    .collect();
                c.insert("history", &rows);
                c.insert("history_error", &None::<String>);
            }
            Err(e) => {
                c.insert("history", &Vec::<Json>::new());
                c.insert("history_error", &Some(e));
            }
        }
        c.insert(
            "manifest",
            p.manifest.as_deref().unwrap_or("(no release record)"),
        );
        let change = match &p.last_change {
            None => serde_json::json!({"title": "no release record", "text": ""}),
            Some(Err(e)) => serde_json::json!({"title": "cannot compare the revisions", "text": e}),
            Some(Ok(ch)) => serde_json::json!({
                "title": match ch.from {
                    Some(f) => format!("revision {f} → {}", ch.to),
                    None => format!("revision {} (the first: every object added)", ch.to),
                },
                "text": if ch.diff.is_empty() { "no object changed" } else { ch.diff.as_str() },
            }),
        };
        c.insert("change", &change);
        c.insert("hook_runs", &hook_rows(&p.hook_runs));
        self.render("module.html", &c)
    }

    /// A short page: what an action did, or why not.
    pub fn message(
        &self,
        title: &str,
        text: &str,
        module: Option<&str>,
    ) -> Result<String, UiError> {
        let mut c = Context::new();
        c.insert("title", title);
        c.insert("text", text);
        c.insert("module", &module);
        self.render("message.html", &c)
    }
}

/// Hook runs as the tables show them (stderr with secret-looking values
/// masked).
fn hook_rows(runs: &[HookRun]) -> Vec<Json> {
    runs.iter()
        .map(|r| {
            let outcome = match (&r.error, r.allow_failure) {
                (None, _) => "ok".to_string(),
                (Some(e), true) => format!("failed, allowed: {}", first_line(e)),
                (Some(e), false) => format!("failed: {}", first_line(e)),
            };
            serde_json::json!({
                "at": time(r.finished),
                "hook": r.hook,
                "binding": r.binding,
                "queue": r.queue,
                "took": took(r.duration),
                "ok": r.error.is_none(),
                "outcome": outcome,
                "stderr": mask_text(&r.stderr_tail),
            })
        })
        .collect()
}

/// One module as the tables show it.
#[derive(Serialize)]
struct Row {
    name: String,
    phase: String,
    class: &'static str,
    last_run_at: String,
    took: String,
    revision: String,
    drift: String,
    /// The last error's first line.
    error: String,
}

impl Row {
    fn new(name: &str, m: &ModuleStatus) -> Row {
        let (phase, class) = phase_label(m.phase, m.waiting_for.as_deref());
        Row {
            name: name.to_string(),
            phase,
            class,
            last_run_at: m.last_run_at.map(time).unwrap_or_else(|| "never".into()),
            took: m.last_run.map(took).unwrap_or_default(),
            revision: m.revision.map(|r| r.to_string()).unwrap_or_default(),
            drift: match &m.drift {
                None => "not watched".into(),
                Some(d) if !d.stopped.is_empty() => {
                    format!("{} given up (circuit breaker)", d.stopped.len())
                }
                Some(d) if d.suspended => "suspended".into(),
                Some(d) if d.detected == 0 => format!("in sync ({} objects)", d.objects),
                Some(d) => format!("{} drifted, {} restored", d.detected, d.restored),
            },
            error: m.last_error.as_deref().map(first_line).unwrap_or_default(),
        }
    }
}

/// A phase as the page shows it, and its CSS class.
pub(crate) fn phase_label(p: Phase, waiting_for: Option<&str>) -> (String, &'static str) {
    match p {
        Phase::Pending => ("pending".into(), "pending"),
        Phase::Running => ("running".into(), "running"),
        Phase::Ready => ("ready".into(), "ready"),
        Phase::Failed => ("failed".into(), "failed"),
        Phase::Disabled => ("disabled".into(), "disabled"),
        Phase::Archived => ("archived".into(), "disabled"),
        Phase::Waiting => (
            waiting_for
                .map(String::from)
                .unwrap_or_else(|| "waiting for a dependency".into()),
            "waiting",
        ),
    }
}

fn first_line(s: &str) -> String {
    const MAX: usize = 200;
    let line = s.lines().next().unwrap_or_default();
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None if s.lines().nth(1).is_some() => format!("{line} …"),
        None => line.to_string(),
    }
}

fn time(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

fn took(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s < 1.0 => format!("{} ms", d.as_millis()),
        s => format!("{s:.1} s"),
    }
}

/// Replaces the value under every key that looks secret (password, secret,
/// token, key, cert; any case, anywhere in the key) with `***`.
pub fn mask_values(v: &mut Json) {
    match v {
        Json::Object(map) => mask_map(map),
        Json::Array(items) => items.iter_mut().for_each(mask_values),
        _ => {}
    }
}

fn mask_map(map: &mut Map<String, Json>) {
    for (k, v) in map.iter_mut() {
        if secret_key(k) {
            *v = Json::String(MASK.into());
        } else {
            mask_values(v);
        }
    }
}

/// Free text (a hook's stderr) with the value after a secret-looking word
/// (`password=…`, `token: …`) masked, line by line. Text cannot be masked
/// as surely as values: hooks should not print secrets.
fn mask_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let lower = line.to_ascii_lowercase();
        let at = ["password", "secret", "token", "key", "cert"]
            .iter()
            .filter_map(|w| lower.find(w).map(|i| i + w.len()))
            .min();
        let sep = at.and_then(|i| line[i..].find([':', '=']).map(|j| i + j + 1));
        match sep {
            Some(j) => {
                out.push_str(&line[..j]);
                out.push_str(" ***");
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

fn secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["password", "secret", "token", "key", "cert"]
        .iter()
        .any(|w| k.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_keys_are_masked_at_any_depth() {
        let mut v = serde_json::json!({
            "db": {"Password": "hunter2", "host": "db"},
            "apiToken": {"nested": "x"},
            "tlsCert": "PEM", "sshKey": "k", "list": [{"clientSecret": "s", "name": "n"}],
        });
        mask_values(&mut v);
        let s = v.to_string();
        for secret in ["hunter2", "nested", "PEM", "\"k\"", "\"s\""] {
            assert!(!s.contains(secret), "{secret} in {s}");
        }
        assert!(
            s.contains("\"host\":\"db\"") && s.contains("\"name\":\"n\""),
            "{s}"
        );
    }

    #[test]
    fn secret_looking_values_in_hook_stderr_are_masked() {
        let text = "connecting to db\nDB_PASSWORD=hunter2 used\n  apiToken: abc123\nkeyboard ok\n";
        let m = mask_text(text);
        assert_eq!(
            m,
            "connecting to db\nDB_PASSWORD= ***\n  apiToken: ***\nkeyboard ok\n"
        );
    }

    #[test]
    fn module_page_shows_hook_runs_and_the_last_change() {
        let run = |error: Option<&str>, stderr: &str| HookRun {
            hook: "hooks/a.sh".into(),
            binding: "schedule".into(),
            queue: "cron".into(),
            duration: Duration::from_millis(1500),
            error: error.map(String::from),
            allow_failure: false,
            finished: SystemTime::UNIX_EPOCH,
            stderr_tail: stderr.into(),
        };
        let p = ModulePage {
            name: "web".into(),
            status: ModuleStatus::default(),
            values: Ok(Map::new()),
            history: Ok(Vec::new()),
            manifest: None,
            last_change: Some(Ok(crate::operator::LastChange {
                from: Some(1),
                to: 2,
                diff: "~ v1 ConfigMap ns/web\n-a\n+b\n".into(),
            })),
            hook_runs: vec![
                run(Some("exit status 2\nmore"), "boom <b>\npassword: x\n"),
                run(None, ""),
            ],
        };
        let html = Pages::new().unwrap().module(&p, false).unwrap();
        assert!(html.contains("revision 1 → 2"), "{html}");
        assert!(
            html.contains("~ v1 ConfigMap ns&#x2F;web\n-a\n+b"),
            "{html}"
        );
        assert!(
            html.contains("<td>hooks&#x2F;a.sh</td><td>schedule</td><td>cron</td><td>1.5 s</td><td class=\"err\">failed: exit status 2 …"),
            "{html}"
        );
        assert!(html.contains("boom &lt;b&gt;\npassword: ***"), "{html}");
        assert!(html.contains("<td class=\"ok\">ok</td>"), "{html}");
    }

    #[test]
    fn overview_escapes_html_and_shows_phases() {
        let mut o = Overview::default();
        let m = ModuleStatus {
            phase: Phase::Failed,
            last_error: Some("<script>boom</script>\nsecond line".into()),
            ..ModuleStatus::default()
        };
        o.status.modules.insert("web".into(), m);
        o.status.modules.insert(
            "app".into(),
            ModuleStatus {
                phase: Phase::Waiting,
                waiting_for: Some("waiting for 'db' (disabled)".into()),
                ..ModuleStatus::default()
            },
        );
        o.global_hook_runs = vec![HookRun {
            hook: "global-hooks/startup.sh".into(),
            binding: "onStartup".into(),
            queue: "main".into(),
            duration: Duration::from_millis(12),
            error: None,
            allow_failure: false,
            finished: SystemTime::UNIX_EPOCH,
            stderr_tail: String::new(),
        }];
        let html = Pages::new().unwrap().overview(&o).unwrap();
        assert!(
            html.contains(
                "<td>global-hooks&#x2F;startup.sh</td><td>onStartup</td><td>main</td><td>12 ms</td>"
            ),
            "{html}"
        );
        assert!(!html.contains("<script>boom"), "{html}");
        assert!(html.contains("&lt;script&gt;boom"), "{html}");
        assert!(!html.contains("second line"), "{html}");
        assert!(
            html.contains("waiting for &#x27;db&#x27; (disabled)"),
            "{html}"
        );
        assert!(
            html.contains("id=\"phase-web\" class=\"phase failed\">failed<"),
            "{html}"
        );
    }
}
