//! A module's chart rendered for a release revision: what `helm upgrade
//! --install <module> <dir> --values <values>` renders in addon-operator,
//! CRDs from `crds/` included, tests left out, with `lookup` reading the
//! cluster. Called on a blocking thread (rendering is synchronous).

use std::rc::Rc;

use serde_json::Value as Json;

use crate::apply::{ClusterLookup, Rendered, split_rendered};
use crate::chart::Limits;
use crate::chart::strvals::ValueOptions;
use crate::chart::template::{self, TemplateSettings};
use crate::cluster::Cluster;
use crate::module::{Module, ModuleError};
use crate::release::Next;
use crate::values::{Values, values_to_yaml};

/// A render ready for the release code.
pub struct ModuleRender {
    pub rendered: Rendered,
    /// `chart.Chart` JSON for the release record.
    pub chart: Json,
    /// The values given to the chart (the release's `config`).
    pub config: serde_json::Map<String, Json>,
    pub notes: String,
}

/// Renders module `m`'s chart with `values` for revision `next`.
pub fn render_module(
    m: &Module,
    values: &Values,
    namespace: &str,
    next: Next,
    limits: Limits,
    cluster: &Cluster,
) -> Result<ModuleRender, ModuleError> {
    let fail = |message: String| ModuleError::Render {
        module: m.name.clone(),
        message,
    };
    // The values travel through a file until chart/ takes them in memory.
    let mut file = tempfile::Builder::new()
        .prefix("antiopa-values-")
        .tempfile()
        .map_err(|e| fail(format!("cannot write the values file: {e}")))?;
    std::io::Write::write_all(&mut file, values_to_yaml(values).as_bytes())
        .map_err(|e| fail(format!("cannot write the values file: {e}")))?;
    let mut settings = TemplateSettings {
        args: vec![m.name.clone(), m.path.display().to_string()],
        namespace: namespace.to_string(),
        values: ValueOptions {
            values_files: vec![file.path().display().to_string()],
            ..Default::default()
        },
        include_crds: true,
        skip_tests: true,
        is_upgrade: next.is_upgrade,
        revision: next.version,
        ..Default::default()
    };
    settings.env.set_limits(limits);
    let provider = Rc::new(ClusterLookup::new(cluster));
    let mut out = Vec::new();
    let mut log = Vec::new();
    let run = crate::chart::lookup::with_lookup(provider, || {
        template::run_keeping(&settings, &mut out, &mut log)
    });
    for line in String::from_utf8_lossy(&log).lines() {
        tracing::warn!(module = %m.name, "{line}");
    }
    let notes = run.map_err(|e| fail(e.to_string()))?.notes().to_string();
    let text = String::from_utf8(out).map_err(|e| fail(e.to_string()))?;
    let chart = crate::chart::load::load(&m.path).map_err(|e| fail(e.to_string()))?;
    Ok(ModuleRender {
        rendered: split_rendered(&text),
        chart: crate::chart::release_json(&chart),
        config: values.clone(),
        notes,
    })
}
