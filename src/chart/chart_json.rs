//! `.Chart` as Go's `encoding/json` sees it (`toJson`, `toPrettyJson`, and
//! `toYaml`, which marshals through JSON): Helm's `struct { chart.Metadata;
//! IsRoot bool }`, the embedded struct's fields promoted, each under its
//! `json` tag in declaration order, the `omitempty` ones left out when
//! empty; and the `*chart.Maintainer` and `*chart.Dependency` values
//! `.Chart.Maintainers` and `.Chart.Dependencies` hold, whose fields
//! templates read and encoding/json writes.

use std::any::Any;
use std::rc::Rc;

use crate::chart::convert::yaml_to_value;
use crate::chart::types::{Dependency, Maintainer, Metadata};
use crate::engine::{Entries, Key, Map, MapKind, Member, Object, Value};

/// The encoded fields of `.Chart`.
pub fn chart_fields(m: &Metadata, is_root: bool) -> Vec<(&'static str, Value)> {
    let mut f = Fields::default();
    f.str("name", &m.name, true);
    f.str("home", &m.home, true);
    f.strs("sources", &m.sources);
    f.str("version", &m.version, true);
    f.str("description", &m.description, true);
    f.strs("keywords", &m.keywords);
    f.structs("maintainers", m.maintainers.iter().map(maintainer));
    f.str("icon", &m.icon, true);
    f.str("apiVersion", &m.api_version, true);
    f.str("condition", &m.condition, true);
    f.str("tags", &m.tags, true);
    f.str("appVersion", &m.app_version, true);
    if m.deprecated {
        f.0.push(("deprecated", Value::Bool(true)));
    }
    if !m.annotations.is_empty() {
        let e: Entries = m
            .annotations
            .iter()
            .map(|(k, v)| (Key::from(k.as_str()), Value::str(v)))
            .collect();
        f.0.push((
            "annotations",
            Value::Map(Rc::new(Map::new(MapKind::Str, e))),
        ));
    }
    f.str("kubeVersion", &m.kube_version, true);
    f.structs("dependencies", m.dependencies.iter().map(dependency));
    f.str("type", &m.chart_type, true);
    f.0.push(("IsRoot", Value::Bool(is_root)));
    f.0
}

/// A `*chart.Maintainer`.
pub fn maintainer(x: &Maintainer) -> Value {
    let mut f = Fields::default();
    f.str("name", &x.name, true);
    f.str("email", &x.email, true);
    f.str("url", &x.url, true);
    Value::Object(Rc::new(GoStruct {
        type_name: "*chart.Maintainer",
        fields: vec![
            ("Name", Value::str(&x.name)),
            ("Email", Value::str(&x.email)),
            ("URL", Value::str(&x.url)),
        ],
        json: f.0,
    }))
}

/// A `*chart.Dependency`.
pub fn dependency(d: &Dependency) -> Value {
    let tags = || crate::chart::convert::str_list(d.tags.iter().cloned());
    let import_values = || Value::list(d.import_values.iter().map(yaml_to_value).collect());
    let mut f = Fields::default();
    f.str("name", &d.name, false);
    f.str("version", &d.version, true);
    f.str("repository", &d.repository, false);
    f.str("condition", &d.condition, true);
    if !d.tags.is_empty() {
        f.0.push(("tags", tags()));
    }
    if d.enabled {
        f.0.push(("enabled", Value::Bool(true)));
    }
    if !d.import_values.is_empty() {
        f.0.push(("import-values", import_values()));
    }
    f.str("alias", &d.alias, true);
    Value::Object(Rc::new(GoStruct {
        type_name: "*chart.Dependency",
        fields: vec![
            ("Name", Value::str(&d.name)),
            ("Version", Value::str(&d.version)),
            ("Repository", Value::str(&d.repository)),
            ("Condition", Value::str(&d.condition)),
            ("Tags", tags()),
            ("Enabled", Value::Bool(d.enabled)),
            ("ImportValues", import_values()),
            ("Alias", Value::str(&d.alias)),
        ],
        json: f.0,
    }))
}

#[derive(Default)]
struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn str(&mut self, name: &'static str, v: &str, omitempty: bool) {
        if !(omitempty && v.is_empty()) {
            self.0.push((name, Value::str(v)));
        }
    }
    fn strs(&mut self, name: &'static str, v: &[String]) {
        if !v.is_empty() {
            let list = crate::chart::convert::str_list(v.iter().cloned());
            self.0.push((name, list));
        }
    }
    fn structs(&mut self, name: &'static str, items: impl Iterator<Item = Value>) {
        let items: Vec<Value> = items.collect();
        if !items.is_empty() {
            self.0.push((name, Value::list(items)));
        }
    }
}

/// A pointer to a Go struct of plain fields.
struct GoStruct {
    type_name: &'static str,
    /// The fields by their Go names, in declaration order.
    fields: Vec<(&'static str, Value)>,
    /// What encoding/json writes.
    json: Vec<(&'static str, Value)>,
}

impl Object for GoStruct {
    fn type_name(&self) -> &str {
        self.type_name
    }
    fn member(&self, name: &str) -> Option<Member> {
        let (_, v) = self.fields.iter().find(|(k, _)| *k == name)?;
        Some(Member::Field(v.clone()))
    }
    /// Go's `%v` of a struct pointer: `&{me a@b }` (inside a slice Go
    /// prints the address, which no output can rely on).
    fn fmt_v(&self, out: &mut String) {
        out.push_str("&{");
        for (i, (_, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            crate::engine::gofmt::fmt_v(v, out);
        }
        out.push('}');
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(self.json.clone())
    }
}
