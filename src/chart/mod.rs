//! Helm charts: loading, values, and rendering to what `helm template` prints.

pub mod types;

/// The engine's render limits, for callers that render charts (modules, the
/// operator) without using the engine directly.
pub use crate::engine::Limits;
pub use types::{Chart, Data, Dependency, File, Maintainer, Metadata};

// Rendering and `helm template` output (render helper).
pub mod capabilities;
pub mod chart_json;
pub mod convert;
pub mod files;
pub mod helmfuncs;
pub mod manifest;
pub mod render;
pub mod workers;
// Loading and values (chart helper).
pub mod coalesce;
pub mod dependencies;
pub mod ignore;
pub mod load;
pub mod lookup;
pub mod metadata;
pub mod schema;
pub mod strvals;
pub mod template;
