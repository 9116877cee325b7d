//! antiopa: a Kubernetes addon operator that renders Helm charts natively
//! and applies them with server-side apply.
//!
//! - [`scan`]: byte searches without run-time CPU detection (a leaf, for engine, yaml and chart).
//! - [`gocompat`]: what Go's standard library does that several layers need exactly (a leaf).
//! - [`engine`]: Go `text/template` with Sprig, ported; pure and synchronous.
//! - [`yaml`]: YAML and JSON exactly as Helm reads and writes them.
//! - [`chart`]: Helm charts: load, values, render, `helm template` output.
//! - [`values`]: addon-operator's module values: merge order, OpenAPI schemas, hook patches.
//! - [`hooks`]: addon-operator hooks: discovery, `--config`, runs, binding contexts, outputs.
//! - [`module`]: addon-operator modules offline: discovery, config, enabled state, render.
//! - [`diff`]: rendered manifests compared object by object (`antiopa diff`); pure.
//! - [`cluster`]: the API server connection: kube client, discovery cache, rate limit.
//! - [`apply`]: rendered manifests onto a cluster: server-side apply, order, prune, live diff.
//! - [`release`]: helm-format release records: upgrade --install, uninstall, history.
//! - [`watch`]: shared metadata-only watches of named objects.
//! - [`drift`]: what of a release was deleted or changed on the cluster, and restoring it.
//! - [`ui`]: the status page of `antiopa run` (`/ui/`): Tera templates, live phases by SSE.
//! - [`cli`]: the command line; each subcommand calls one library function.

pub mod apply;
pub mod chart;
pub mod cli;
pub mod cluster;
pub mod diff;
pub mod drift;
pub mod engine;
pub mod gocompat;
pub mod hooks;
pub mod module;
pub mod operator;
pub mod release;
pub mod scan;
pub mod ui;
pub mod values;
pub mod watch;
pub mod yaml;
