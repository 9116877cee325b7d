//! Helm charts: loading, values, and rendering to what `helm template` prints.

pub mod types;

pub use types::{Chart, Dependency, File, Maintainer, Metadata};
