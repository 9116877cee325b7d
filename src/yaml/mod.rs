//! Helm-exact YAML, JSON and TOML: loading with yaml.v2's resolution rules
//! (through sigs.k8s.io/yaml's JSON round trip) and writing what go-yaml v2,
//! go-yaml v3, encoding/json and BurntSushi/toml write inside Helm 3.17.
//!
//! Reading:
//! - [`from_yaml`]: sigs.k8s.io/yaml.Unmarshal into `interface{}` — numbers are
//!   `Yaml::Float`, keys strings, only the first document, errors with Helm's
//!   text ("error converting YAML to JSON: yaml: line 3: …").
//! - [`from_yaml_map`]: into a map (values files, `fromYaml`): null → `{}`,
//!   other kinds → json's "cannot unmarshal … into Go value of type …".
//! - [`from_yaml_array`]: into a list (`fromYamlArray`).
//! - [`from_yaml_map_bytes`] / [`check_input`]: a file's raw bytes, with
//!   libyaml's reader errors for invalid UTF-8.
//! - [`load`] with [`Numbers::Yaml`]: plain yaml.v2 types (ints stay
//!   `Yaml::Int`), e.g. for Chart.yaml, whose string fields then go through
//!   [`go_string_field`] (`appVersion: 1.10` → "1.1").
//! - [`from_toml`] reads `fromToml` input (a port of BurntSushi/toml's
//!   decoder, for its error texts).
//!
//! Writing:
//! - [`to_yaml`] / [`try_to_yaml`]: sigs.k8s.io/yaml.Marshal (`toYaml`,
//!   `mustToYaml`), text ending in "\n" — Helm trims one "\n" itself.
//! - [`to_yaml_pretty`]: `toYamlPretty` (yaml.v3 encoder, indent 2).
//! - [`to_json`]: json.Marshal (`toJson`); [`to_toml`]: `toToml`.
//! - [`natural_cmp`]: yaml.v2's map key order.

pub mod emit;
mod fast;
pub mod json;
pub mod load;
mod num;
mod resolve;
pub mod toml;
mod toml_parse;
pub mod value;

pub use emit::{EmitError, natural_cmp, to_yaml, to_yaml_pretty, try_to_yaml};
pub use json::{JsonError, to_json};
pub use load::{
    Keep, LoadError, Numbers, check_input, from_yaml, from_yaml_array, from_yaml_map,
    from_yaml_map_bytes, from_yaml_pruned, go_string_field, load,
};
pub use num::format_json_float;
pub use toml::{FromTomlError, from_toml, to_toml};
pub use value::{Mapping, Yaml};
