//! The fake apiserver's integration tests, one module per area, built into a single test binary
//! (each binary links kube and k8s-openapi; one link instead of five saves CI time and disk).

mod common;

mod api;
mod binary;
mod kubectl;
mod lease;
mod protobuf;
mod ssa_docs;
