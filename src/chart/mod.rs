//! Helm charts: loading, values, and rendering to what `helm template` prints.
