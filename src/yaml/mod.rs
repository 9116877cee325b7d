//! Helm-exact YAML and JSON: loading with yaml.v2's resolution rules and
//! writing what go-yaml v2 (through sigs.k8s.io/yaml) and Go's
//! encoding/json write.

pub mod value;

pub use value::{Mapping, Yaml};

// TEMPORARY (render branch): stand-in for the yaml branch's API; removed at merge.
mod shim_render;
pub use shim_render::{Error, from_yaml, to_yaml, to_yaml_pretty};
