//! `antiopa manifests` (the YAML that installs the operator) and `antiopa
//! completion SHELL` (shell completion scripts from the clap command).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::operator::install::{InstallSettings, ModuleRbac, manifests};

#[derive(Args, Debug)]
pub struct ManifestsArgs {
    /// Namespace of the operator, its releases and its ConfigMap.
    #[arg(short = 'n', long, default_value = "antiopa")]
    namespace: String,
    /// The operator's image.
    #[arg(long, default_value = concat!("antiopa:", env!("CARGO_PKG_VERSION")))]
    image: String,
    /// Replicas of the Deployment (2 or more need --leader-elect; a
    /// PodDisruptionBudget is added).
    #[arg(long, default_value_t = 1)]
    replicas: u32,
    /// Run with leader election (only the Lease holder writes).
    #[arg(long = "leader-elect")]
    leader_elect: bool,
    /// The ConfigMap with the config values.
    #[arg(long = "config-map", default_value = "addon-operator")]
    config_map: String,
    /// What the modules may do cluster-wide: bind `cluster-admin` (modules
    /// can install anything) ...
    #[arg(long = "cluster-admin", conflicts_with = "rbac_rules")]
    cluster_admin: bool,
    /// ... or a ClusterRole with the PolicyRules of this YAML file (a list,
    /// or a ClusterRole whose `rules` are taken).
    #[arg(long = "rbac-rules")]
    rbac_rules: Option<PathBuf>,
}

fn rules_from(path: &PathBuf) -> Result<Vec<serde_json::Value>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--rbac-rules {}: {e}", path.display()))?;
    let bad = |e: String| format!("--rbac-rules {}: {e}", path.display());
    let y = crate::yaml::from_yaml(&text).map_err(|e| bad(e.to_string()))?;
    let json = crate::yaml::to_json(&y).map_err(|e| bad(e.to_string()))?;
    let doc: serde_json::Value = serde_json::from_str(&json).map_err(|e| bad(e.to_string()))?;
    let rules = match &doc {
        serde_json::Value::Array(a) => a.clone(),
        serde_json::Value::Object(o) => match o.get("rules") {
            Some(serde_json::Value::Array(a)) => a.clone(),
            _ => {
                return Err(format!(
                    "--rbac-rules {}: a ClusterRole without `rules`",
                    path.display()
                ));
            }
        },
        _ => {
            return Err(format!(
                "--rbac-rules {}: expected a list of PolicyRules or a ClusterRole",
                path.display()
            ));
        }
    };
    if rules.is_empty() {
        return Err(format!("--rbac-rules {}: no rules", path.display()));
    }
    Ok(rules)
}

pub fn run_manifests(a: ManifestsArgs) -> i32 {
    let fail = |e: String| super::print_error(&e);
    if a.replicas >= 2 && !a.leader_elect {
        return fail(format!(
            "--replicas {}: more than one replica needs --leader-elect (two writers would fight over every release)",
            a.replicas
        ));
    }
    let rbac = match (&a.rbac_rules, a.cluster_admin) {
        (Some(p), _) => match rules_from(p) {
            Ok(r) => ModuleRbac::Rules(r),
            Err(e) => return fail(e),
        },
        (None, true) => ModuleRbac::ClusterAdmin,
        (None, false) => {
            return fail(
                "modules can install anything: choose their cluster permissions with --cluster-admin or --rbac-rules FILE".into(),
            );
        }
    };
    let s = InstallSettings {
        namespace: a.namespace,
        image: a.image,
        replicas: a.replicas,
        leader_elect: a.leader_elect,
        config_map: a.config_map,
        rbac,
    };
    match write!(std::io::stdout().lock(), "{}", manifests(&s)) {
        Ok(()) => 0,
        Err(e) => fail(e.to_string()),
    }
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn run_completion(a: CompletionArgs, mut cmd: clap::Command) -> i32 {
    clap_complete::generate(a.shell, &mut cmd, "antiopa", &mut std::io::stdout());
    0
}
