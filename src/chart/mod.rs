//! Helm charts: loading, values, rendering a release into structured
//! manifests, hooks, CRDs, notes and warnings ([`render_chart`]), and
//! printing them as `helm template` does ([`template`]).

pub mod types;

/// The engine's environment (randomness, time) and render limits, for
/// callers that render charts (modules, the operator) without using the
/// engine directly.
pub use crate::engine::{Env, Limits};
pub use pipeline::{
    ChartRenderError, CrdFile, LoadedChart, RenderFailure, RenderOptions, Rendered, render_chart,
};
pub use record::release_json;
pub use types::{Chart, Data, Dependency, File, Maintainer, Metadata};

// Rendering and `helm template` output (render helper).
pub mod capabilities;
pub mod chart_json;
pub mod convert;
pub mod files;
pub mod helmfuncs;
pub mod manifest;
pub mod pipeline;
pub mod render;
pub mod workers;
// Loading and values (chart helper).
pub mod coalesce;
pub mod dependencies;
pub mod ignore;
pub mod load;
pub mod lookup;
pub mod metadata;
pub mod record;
pub mod schema;
pub mod strvals;
pub mod template;
