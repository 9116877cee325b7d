//! Helm-exact YAML and JSON: loading with yaml.v2's resolution rules and
//! writing what go-yaml v2 (through sigs.k8s.io/yaml) and Go's
//! encoding/json write.
//!
//! - [`from_yaml`] / [`from_yaml_map`] / [`from_yaml_array`] / [`load`]:
//!   sigs.k8s.io/yaml.Unmarshal (values files, `fromYaml`, `fromYamlArray`).
//! - [`to_yaml`] / [`try_to_yaml`]: sigs.k8s.io/yaml.Marshal (`toYaml`,
//!   `mustToYaml`); [`to_yaml_pretty`]: `toYamlPretty`.
//! - [`to_json`]: json.Marshal (`toJson`); [`to_toml`] / [`from_toml`]:
//!   `toToml` / `fromToml`.

pub mod emit;
pub mod json;
pub mod load;
mod num;
mod resolve;
pub mod toml;
pub mod value;

pub use emit::{EmitError, natural_cmp, to_yaml, to_yaml_pretty, try_to_yaml};
pub use json::{JsonError, to_json};
pub use load::{
    LoadError, Numbers, from_yaml, from_yaml_array, from_yaml_map, go_string_field, load,
};
pub use toml::{from_toml, to_toml};
pub use value::{Mapping, Yaml};
