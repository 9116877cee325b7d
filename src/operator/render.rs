//! A module's chart rendered for a release revision: what `helm upgrade
//! --install <module> <dir> --values <values>` renders in addon-operator,
//! CRDs from `crds/` included, tests left out, with `lookup` reading the
//! cluster. Values go to the chart in memory. Called on a blocking thread
//! (rendering is synchronous).

use std::rc::Rc;

use serde_json::Value as Json;

use crate::apply::{ClusterLookup, Rendered};
use crate::chart::{self, Env, Limits};
use crate::cluster::Cluster;
use crate::module::{Module, ModuleError};
use crate::release::Next;
use crate::values::Values;

/// A render ready for the release code.
pub struct ModuleRender {
    pub rendered: Rendered,
    /// `chart.Chart` JSON for the release record.
    pub chart: Json,
    /// The values given to the chart (the release's `config`).
    pub config: serde_json::Map<String, Json>,
    pub notes: String,
}

/// Renders module `m`'s chart with `values` for revision `next`; the
/// chart's warnings are logged.
pub fn render_module(
    m: &Module,
    values: &Values,
    namespace: &str,
    next: Next,
    limits: Limits,
    cluster: &Cluster,
) -> Result<ModuleRender, ModuleError> {
    let mut warn = |line: &str| tracing::warn!(module = %m.name, "{line}");
    let loaded = crate::module::render::load_chart(m, &mut warn)?;
    let chart = chart::release_json(loaded.chart());
    let mut env = Env::new();
    env.set_limits(limits);
    let opts = chart::RenderOptions {
        release_name: m.name.clone(),
        namespace: namespace.to_string(),
        revision: next.version,
        is_upgrade: next.is_upgrade,
        // As sigs.k8s.io/yaml reads a values file: every number a float64.
        values: crate::values::convert::map_to_yaml(values),
        include_crds: true,
        env,
        ..Default::default()
    };
    let provider = Rc::new(ClusterLookup::new(cluster));
    let rendered = chart::lookup::with_lookup(provider, || chart::render_chart(loaded, &opts));
    let rendered = match rendered {
        Ok(r) => r,
        Err(failure) => {
            failure.warnings.iter().for_each(|w| warn(w));
            return Err(ModuleError::Render {
                module: m.name.clone(),
                message: failure.to_string(),
            });
        }
    };
    rendered.warnings.iter().for_each(|w| warn(w));
    Ok(ModuleRender {
        rendered: Rendered::from_chart(&rendered),
        chart,
        config: values.clone(),
        notes: rendered.notes,
    })
}
