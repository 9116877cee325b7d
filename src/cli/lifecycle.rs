//! `antiopa archive`, `restore`, `cleanup`: a release's life after install
//! (see [`crate::release::lifecycle`]), each action named with who did it;
//! `antiopa actions`: that action log printed.

use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::apply::{ClusterArgs, CmdError, cerr, runtime};
use crate::cluster::Cluster;
use crate::release::lifecycle;

#[derive(Args, Debug)]
pub struct LifecycleArgs {
    /// Release name (a module's release is named after the module).
    name: String,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Who acts, for the action log (default: $USER@host).
    #[arg(long)]
    actor: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Args, Debug)]
pub struct ActionsArgs {
    /// Release name (a module's release is named after the module).
    name: String,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: ActionsFormat,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum ActionsFormat {
    Table,
    Json,
    Yaml,
}

#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Release name; with --expired, none.
    #[arg(required_unless_present = "expired")]
    name: Option<String>,
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    /// Clean up every archived release of the namespace older than --retention.
    #[arg(long)]
    expired: bool,
    /// How long archived releases are kept (Go duration: 336h, 90m; or days: 14d).
    #[arg(long, default_value = "14d", env = "ANTIOPA_ARCHIVE_RETENTION", value_parser = parse_retention)]
    retention: Duration,
    /// Who acts, for the action log (default: $USER@host).
    #[arg(long)]
    actor: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `14d`, or a Go duration.
pub fn parse_retention(s: &str) -> Result<Duration, String> {
    if let Some(d) = s.strip_suffix('d')
        && let Ok(n) = d.parse::<u64>()
    {
        return Ok(Duration::from_secs(n * 24 * 3600));
    }
    crate::gocompat::time::parse_duration(s)
        .map_err(|e| format!("'{s}': {e} (a Go duration such as 336h, or days: 14d)"))
        .and_then(|d| u64::try_from(d).map_err(|_| format!("'{s}': a negative retention")))
        .map(Duration::from_nanos)
}

fn stderr_log() -> impl FnMut(&str) + Send {
    |line: &str| {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

pub fn run_archive(a: LifecycleArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let rep = lifecycle::archive(&cluster, &a.name, &a.namespace, &actor, &mut log)
            .await
            .map_err(cerr)?;
        let mut out = std::io::stdout().lock();
        for k in &rep.kept {
            let _ = writeln!(out, "kept: {k}");
        }
        for (k, why) in &rep.foreign {
            let _ = writeln!(std::io::stderr(), "warning: {k} left in place: {why}");
        }
        writeln!(
            out,
            "release \"{}\" archived (revision {}, {} objects deleted, {} kept)",
            a.name,
            rep.version,
            rep.deleted.len(),
            rep.kept.len()
        )
        .map_err(cerr)
    })
}

pub fn run_restore(a: LifecycleArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let v = lifecycle::restore(&cluster, &a.name, &a.namespace, &actor, &mut log)
            .await
            .map_err(cerr)?;
        writeln!(
            std::io::stdout(),
            "release \"{}\" restored (revision {v})",
            a.name
        )
        .map_err(cerr)
    })
}

pub fn run_cleanup(a: CleanupArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actor = a.actor.clone().unwrap_or_else(lifecycle::default_actor);
        let mut log = stderr_log();
        let names: Vec<String> = match (&a.name, a.expired) {
            (Some(n), false) => vec![n.clone()],
            _ => lifecycle::expired_archives(&cluster, &a.namespace, a.retention)
                .await
                .map_err(cerr)?
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
        };
        let mut out = std::io::stdout().lock();
        for name in names {
            let rep = lifecycle::cleanup(&cluster, &name, &a.namespace, &actor, &mut log)
                .await
                .map_err(cerr)?;
            writeln!(
                out,
                "release \"{name}\" cleaned up ({} claims deleted, history removed)",
                rep.deleted.len()
            )
            .map_err(cerr)?;
        }
        Ok(())
    })
}

/// `antiopa actions NAME`: the release's action log, oldest first.
pub fn run_actions(a: ActionsArgs) -> Result<(), CmdError> {
    let rt = runtime()?;
    rt.block_on(async {
        let cluster = Cluster::connect(&a.cluster.options()).await.map_err(cerr)?;
        let actions = lifecycle::action_log(&cluster, &a.name, &a.namespace)
            .await
            .map_err(cerr)?;
        if actions.is_empty() {
            return Err(CmdError(format!(
                "release '{}' in namespace '{}': no history and no recorded actions",
                a.name, a.namespace
            )));
        }
        let text = match a.output {
            ActionsFormat::Json => serde_json::to_string_pretty(&actions).map_err(cerr)?,
            ActionsFormat::Yaml => {
                // A YAML list of the JSON objects, as `history -o yaml`.
                let mut out = String::new();
                for x in &actions {
                    let serde_json::Value::Object(m) = serde_json::to_value(x).map_err(cerr)?
                    else {
                        continue;
                    };
                    let doc = crate::values::values_to_yaml(&m);
                    for (i, line) in doc.lines().enumerate() {
                        out.push_str(if i == 0 { "- " } else { "  " });
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                out.trim_end().to_string()
            }
            ActionsFormat::Table => actions_table(&actions),
        };
        writeln!(std::io::stdout().lock(), "{text}").map_err(cerr)
    })
}

/// WHEN, ACTION, BY, OUTCOME, REVISION in aligned columns.
fn actions_table(actions: &[lifecycle::Action]) -> String {
    let mut rows = vec![[
        "WHEN".to_string(),
        "ACTION".into(),
        "BY".into(),
        "OUTCOME".into(),
        "REVISION".into(),
    ]];
    for x in actions {
        rows.push([
            x.when.clone(),
            x.action.clone(),
            if x.by.is_empty() {
                "-".into()
            } else {
                x.by.clone()
            },
            x.outcome.clone(),
            x.revision.map_or_else(|| "-".into(), |r| r.to_string()),
        ]);
    }
    let mut w = [0usize; 5];
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect();
            line.join("   ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actions_table_has_a_column_each() {
        let t = actions_table(&[lifecycle::Action {
            when: "2026-01-02T03:04:05Z".into(),
            action: "archive".into(),
            by: "antiopa (config)".into(),
            outcome: "archived".into(),
            revision: Some(2),
        }]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("WHEN"), "{t}");
        assert!(lines[1].contains("antiopa (config)   archived   2"), "{t}");
    }
}
