//! A chart as Helm records it in a release (`chart.Chart`'s JSON: the
//! metadata with Go's `omitempty` fields dropped, and the default values;
//! templates and files are left out, as antiopa never reads them back).

use serde_json::{Map, Value as Json};

use super::Chart;
use crate::yaml::Yaml;
use crate::yaml::json::to_serde as to_json;

/// `chart.Chart` as helm's JSON, metadata and values only.
pub fn release_json(c: &Chart) -> Json {
    let m = &c.metadata;
    let mut md = Map::new();
    let mut put = |k: &str, v: Json| {
        let empty = match &v {
            Json::String(s) => s.is_empty(),
            Json::Array(a) => a.is_empty(),
            Json::Object(o) => o.is_empty(),
            Json::Bool(b) => !b,
            _ => false,
        };
        if !empty {
            md.insert(k.to_string(), v);
        }
    };
    put("name", m.name.clone().into());
    put("home", m.home.clone().into());
    put("sources", m.sources.clone().into());
    put("version", m.version.clone().into());
    put("description", m.description.clone().into());
    put("keywords", m.keywords.clone().into());
    put(
        "maintainers",
        Json::Array(
            m.maintainers
                .iter()
                .map(|x| serde_json::json!({"name": x.name, "email": x.email, "url": x.url}))
                .collect(),
        ),
    );
    put("icon", m.icon.clone().into());
    put("apiVersion", m.api_version.clone().into());
    put("condition", m.condition.clone().into());
    put("tags", m.tags.clone().into());
    put("appVersion", m.app_version.clone().into());
    put("deprecated", m.deprecated.into());
    put(
        "annotations",
        Json::Object(
            m.annotations
                .iter()
                .map(|(k, v)| (k.clone(), Json::String(v.clone())))
                .collect(),
        ),
    );
    put("kubeVersion", m.kube_version.clone().into());
    put(
        "dependencies",
        Json::Array(
            m.dependencies
                .iter()
                .map(|d| {
                    serde_json::json!({"name": d.name, "version": d.version, "repository": d.repository,
                        "condition": d.condition, "tags": d.tags, "enabled": d.enabled, "alias": d.alias})
                })
                .collect(),
        ),
    );
    put("type", m.chart_type.clone().into());
    serde_json::json!({
        "metadata": md,
        "lock": null,
        "templates": null,
        "values": to_json(&Yaml::Map(c.values.clone())),
        "schema": null,
        "files": null,
    })
}
