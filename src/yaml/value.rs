//! The data model YAML and JSON documents load into and are written from:
//! the JSON model Helm works in after sigs.k8s.io/yaml's round trip through
//! JSON (string keys only; numbers are ints or float64s).

use std::collections::BTreeMap;

/// A YAML/JSON document node in Helm's JSON model.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Yaml {
    #[default]
    Null,
    Bool(bool),
    /// An integer (only produced where Go would have an int: `--set`, or
    /// the JSON→YAML step of `toYaml`).
    Int(i64),
    /// float64: every number read from a YAML or JSON file.
    Float(f64),
    Str(String),
    Seq(Vec<Yaml>),
    Map(Mapping),
}

/// A mapping; keys are strings, kept in bytewise order.
pub type Mapping = BTreeMap<String, Yaml>;
