//! Rendered manifests onto a cluster with server-side apply: decoding
//! (`objects`), then a dry-run pass over every object followed by the real
//! apply in install order and the prune of dropped objects (`run`), and the
//! dry-run view behind `antiopa diff --live`.
//!
//! Field manager `antiopa`; `force` only when asked (`--force-conflicts`).
//! Rendering happens elsewhere: this module starts from text.

pub mod hooks;
pub mod lookup;
pub mod objects;
pub mod ownership;
pub mod run;

pub use crate::cluster::Resolved;
pub use hooks::{HookError, HookResult, HookRun, run_hooks};
pub use lookup::ClusterLookup;

pub use objects::{Doc, Key, Object, ObjectError, Rendered, decode, split_rendered};
pub use ownership::{Owner, Ownership};
pub use run::{
    ApplyError, ApplyOptions, ApplyReport, Conflict, Deleted, FIELD_MANAGER, LiveChange, Outcome,
    Plan, Progress, apply, delete_all, execute, live_diff, plan,
};
