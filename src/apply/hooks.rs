//! Helm chart hooks (helm v3.17 `pkg/action/hooks.go` `execHook`): the
//! hooks of one event run one at a time, in kind order then by
//! `helm.sh/hook-weight` and name; each is deleted first when its policy
//! says `before-hook-creation` (the default when no policy is given),
//! written, and waited for — a Job until its `Complete` or `Failed`
//! condition, a Pod until phase `Succeeded` or `Failed`, every other kind
//! is ready at once (`WatchUntilReady`) —, then deleted on
//! `hook-succeeded` / `hook-failed`.
//!
//! Differences from helm: hooks are written with server-side apply
//! (helm 3 creates them), and the wait polls instead of watching.

use std::time::Duration;

use serde_json::Value as Json;

use super::objects::Object;
use super::run::{ApplyError, ApplyOptions, api_for_object, delete_object, resolve_object};
use crate::cluster::{Cluster, is_not_found, is_transient};

/// One hook to run: its object, weight and policies.
#[derive(Clone, Debug)]
pub struct HookRun {
    pub object: Object,
    pub weight: i64,
    pub delete_policies: Vec<String>,
}

/// The result of one hook.
#[derive(Clone, Debug, PartialEq)]
pub struct HookResult {
    pub name: String,
    pub kind: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub completed_at: chrono::DateTime<chrono::Utc>,
    pub succeeded: bool,
}

/// Why a hook failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{event} hook {kind} {name} failed: {reason}")]
    Failed {
        event: String,
        kind: String,
        name: String,
        reason: String,
    },
    #[error("{event} hook {kind} {name}: timed out waiting for the condition")]
    Timeout {
        event: String,
        kind: String,
        name: String,
    },
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

fn has(policies: &[String], p: &str) -> bool {
    policies.iter().any(|x| x == p)
}

/// Run the hooks (already filtered to `event`) in helm's order. Returns a
/// result per hook run; stops at the first failure.
pub async fn run_hooks(
    cluster: &Cluster,
    event: &str,
    mut hooks: Vec<HookRun>,
    opts: &ApplyOptions,
    timeout: Duration,
    results: &mut Vec<HookResult>,
) -> Result<(), HookError> {
    // Kind order first (as helm sorts hooks), then weight and name, stably.
    hooks.sort_by_key(|h| h.object.order());
    hooks.sort_by(|a, b| (a.weight, &a.object.name).cmp(&(b.weight, &b.object.name)));
    let mut succeeded: Vec<(HookRun, super::Resolved)> = Vec::new();
    for h in hooks {
        let policies = if h.delete_policies.is_empty() {
            vec!["before-hook-creation".to_string()]
        } else {
            h.delete_policies.clone()
        };
        let (obj, resolved) = resolve_object(cluster, h.object.clone(), &opts.namespace).await?;
        if has(&policies, "before-hook-creation") {
            delete_object(cluster, &resolved, &obj).await?;
            if !wait_gone(cluster, &resolved, &obj, timeout).await? {
                return Err(HookError::Timeout {
                    event: event.into(),
                    kind: obj.kind.clone(),
                    name: obj.name.clone(),
                });
            }
        }
        let started_at = chrono::Utc::now();
        super::run::apply_object(cluster, &resolved, &obj, opts, true).await?;
        let outcome = wait_ready(cluster, &resolved, &obj, timeout).await?;
        let completed_at = chrono::Utc::now();
        let ok = outcome.is_none();
        results.push(HookResult {
            name: obj.name.clone(),
            kind: obj.kind.clone(),
            started_at,
            completed_at,
            succeeded: ok,
        });
        match outcome {
            None => {
                if has(&policies, "hook-succeeded") {
                    succeeded.push((HookRun { object: obj, ..h }, resolved));
                }
            }
            Some(WaitEnd::Failed(reason)) => {
                if has(&policies, "hook-failed") {
                    delete_object(cluster, &resolved, &obj).await?;
                }
                return Err(HookError::Failed {
                    event: event.into(),
                    kind: obj.kind.clone(),
                    name: obj.name.clone(),
                    reason,
                });
            }
            Some(WaitEnd::Timeout) => {
                return Err(HookError::Timeout {
                    event: event.into(),
                    kind: obj.kind.clone(),
                    name: obj.name.clone(),
                });
            }
        }
    }
    // hook-succeeded deletions, in reverse order.
    for (h, r) in succeeded.into_iter().rev() {
        delete_object(cluster, &r, &h.object).await?;
    }
    Ok(())
}

enum WaitEnd {
    Failed(String),
    Timeout,
}

const POLL: Duration = Duration::from_millis(500);

async fn get(
    cluster: &Cluster,
    r: &super::Resolved,
    o: &Object,
) -> Result<Option<Json>, ApplyError> {
    let api = api_for_object(cluster, r, o);
    match cluster.request(api.get(&o.name)).await {
        Ok(x) => Ok(serde_json::to_value(&x).ok()),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(source) => Err(ApplyError::Api {
            step: "get",
            key: o.key().to_string(),
            source,
        }),
    }
}

/// One poll of a wait: the object (`None`: gone), or a failed read that is
/// worth asking again (a timeout, 429 or 5xx); other failures end the wait.
async fn poll(
    cluster: &Cluster,
    r: &super::Resolved,
    o: &Object,
) -> Result<Result<Option<Json>, ApplyError>, ApplyError> {
    match get(cluster, r, o).await {
        Ok(v) => Ok(Ok(v)),
        Err(e) => {
            let transient = matches!(&e, ApplyError::Api { source, .. } if is_transient(source));
            if transient { Ok(Err(e)) } else { Err(e) }
        }
    }
}

/// Wait until the object is gone. `Ok(false)`: still there at the
/// deadline. A read that keeps failing transiently is retried until the
/// deadline and then reported as the error it is, not as a timeout of the
/// condition.
async fn wait_gone(
    cluster: &Cluster,
    r: &super::Resolved,
    o: &Object,
    timeout: Duration,
) -> Result<bool, ApplyError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = poll(cluster, r, o).await?;
        match last {
            Ok(None) => return Ok(true),
            Ok(Some(_)) if tokio::time::Instant::now() >= deadline => return Ok(false),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// `None` when ready (succeeded), else how the wait ended. Transient read
/// failures are retried as in [`wait_gone`].
async fn wait_ready(
    cluster: &Cluster,
    r: &super::Resolved,
    o: &Object,
    timeout: Duration,
) -> Result<Option<WaitEnd>, ApplyError> {
    if o.kind != "Job" && o.kind != "Pod" {
        return Ok(None);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match poll(cluster, r, o).await? {
            Ok(Some(live)) => match readiness(&o.kind, &live) {
                Readiness::Done => return Ok(None),
                Readiness::Failed(why) => return Ok(Some(WaitEnd::Failed(why))),
                Readiness::Pending => {}
            },
            Ok(None) => {}
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(_) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(Some(WaitEnd::Timeout));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[derive(Debug, PartialEq)]
enum Readiness {
    Done,
    Failed(String),
    Pending,
}

/// helm's `waitForJob` / `waitForPodSuccess`.
fn readiness(kind: &str, live: &Json) -> Readiness {
    if kind == "Pod" {
        return match live.pointer("/status/phase").and_then(|p| p.as_str()) {
            Some("Succeeded") => Readiness::Done,
            Some("Failed") => Readiness::Failed("pod failed".into()),
            _ => Readiness::Pending,
        };
    }
    let conds = live
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    for c in conds {
        let is_true = c.get("status").and_then(|s| s.as_str()) == Some("True");
        match c.get("type").and_then(|t| t.as_str()) {
            Some("Complete") if is_true => return Readiness::Done,
            Some("Failed") if is_true => {
                let reason = c.get("reason").and_then(|r| r.as_str()).unwrap_or_default();
                return Readiness::Failed(format!("job failed: {reason}"));
            }
            _ => {}
        }
    }
    Readiness::Pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_and_pod_readiness() {
        let done = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(readiness("Job", &done), Readiness::Done);
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(
            readiness("Job", &failed),
            Readiness::Failed("job failed: BackoffLimitExceeded".into())
        );
        assert_eq!(readiness("Job", &json!({})), Readiness::Pending);
        assert_eq!(
            readiness("Pod", &json!({"status": {"phase": "Succeeded"}})),
            Readiness::Done
        );
        assert_eq!(
            readiness("Pod", &json!({"status": {"phase": "Running"}})),
            Readiness::Pending
        );
    }
}
