//! From a render to objects: a chart's [`crate::chart::Rendered`] (or the
//! `# Source:` blocks of a recorded release manifest) as documents — CRD
//! files, manifests, hooks — split with helm's `releaseutil.SplitManifests`,
//! decoded as sigs.k8s.io/yaml does (YAML → JSON, numbers as float64
//! printed the way Go prints them), `null` fields dropped, and sorted into
//! install order.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::chart::manifest::{HOOK_ANNOTATION, INSTALL_ORDER, split_manifests};
use crate::yaml::Yaml;

/// `helm.sh/resource-policy: keep` keeps an object on prune and uninstall.
pub const RESOURCE_POLICY: &str = "helm.sh/resource-policy";

/// One rendered document, with the template path it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    pub source: String,
    pub content: String,
}

/// A rendered release split the way helm install sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    /// Files from charts' `crds/` directories (installed, never recorded in
    /// the release manifest, never pruned).
    pub crds: Vec<Doc>,
    /// Non-hook documents: the release manifest.
    pub manifests: Vec<Doc>,
    /// Hook documents (`helm.sh/hook`).
    pub hooks: Vec<Doc>,
}

impl Rendered {
    /// A chart's render as `helm install` takes it: its CRD files split
    /// into documents, its manifests in install order, its hooks but the
    /// test hooks (which only `helm test` runs).
    pub fn from_chart(r: &crate::chart::Rendered) -> Rendered {
        let doc = |source: &str, content: &str| Doc {
            source: source.to_string(),
            content: content.to_string(),
        };
        Rendered {
            crds: r
                .crds
                .iter()
                .flat_map(|f| {
                    split_manifests(&f.content).into_iter().map(|content| Doc {
                        source: f.path.clone(),
                        content,
                    })
                })
                .collect(),
            manifests: r
                .manifests
                .iter()
                .map(|m| doc(&m.name, &m.content))
                .collect(),
            hooks: r
                .hooks
                .iter()
                .filter(|h| !h.is_test())
                .map(|h| doc(&h.path, &h.manifest))
                .collect(),
        }
    }

    /// The release's `manifest` text as helm records it
    /// (`---\n# Source: <path>\n<content>\n` per document).
    pub fn manifest_text(&self) -> String {
        self.manifests
            .iter()
            .map(|d| crate::chart::manifest::source_block(&d.source, &d.content))
            .collect()
    }
}

/// An object that failed to decode.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ObjectError {
    #[error("YAML parse error on {source_path}: {message}")]
    Yaml {
        source_path: String,
        message: String,
    },
    #[error("{source_path}: object has no {what}")]
    Missing {
        source_path: String,
        what: &'static str,
    },
}

/// Split `helm template`-style output (blocks opened by `---\n# Source: P`)
/// into CRD files, manifests and hooks. A block whose path has no
/// `/templates/` segment but a `/crds/` one is a CRD file (templates always
/// live under `templates/`).
pub fn split_rendered(text: &str) -> Rendered {
    let mut out = Rendered::default();
    // What comes before the first marker is not a block.
    for block in text.split("---\n# Source: ").skip(1) {
        let Some((source, body)) = block.split_once('\n') else {
            continue;
        };
        for content in split_manifests(body) {
            let doc = Doc {
                source: source.to_string(),
                content,
            };
            if !source.contains("/templates/") && source.contains("/crds/") {
                out.crds.push(doc);
            } else if is_hook(&doc.content) {
                out.hooks.push(doc);
            } else {
                out.manifests.push(doc);
            }
        }
    }
    out
}

fn is_hook(content: &str) -> bool {
    crate::chart::manifest::parse_head(content)
        .ok()
        .and_then(|h| h.metadata)
        .and_then(|m| m.annotations)
        .is_some_and(|a| a.contains_key(HOOK_ANNOTATION))
}

/// Identity of an object across versions of its API: group, kind,
/// namespace, name (helm's `resource.Info` comparison ignores the version
/// too, so `extensions/v1beta1` → `apps/v1` is the same Deployment).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        };
        if self.namespace.is_empty() {
            write!(f, "{kind} {}", self.name)
        } else {
            write!(f, "{kind} {}/{}", self.namespace, self.name)
        }
    }
}

/// A decoded object ready to be applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// As written; defaulted (or dropped for cluster-scoped kinds) once the
    /// kind is resolved.
    pub namespace: Option<String>,
    pub body: Json,
    pub source: String,
}

impl Object {
    pub fn group(&self) -> &str {
        crate::cluster::split_api_version(&self.api_version).0
    }

    pub fn key(&self) -> Key {
        Key {
            group: self.group().to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: self.name.clone(),
        }
    }

    /// An annotation's value.
    pub fn annotation(&self, k: &str) -> Option<&str> {
        self.body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(k))
            .and_then(|v| v.as_str())
    }

    /// `helm.sh/resource-policy: keep`.
    pub fn keep(&self) -> bool {
        self.annotation(RESOURCE_POLICY)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("keep"))
    }

    /// Phase and position in helm's install order: Namespaces first, then
    /// CRDs, then `InstallOrder` kinds, then unknown kinds alphabetically.
    pub fn order(&self) -> (u8, usize, String) {
        match self.kind.as_str() {
            "Namespace" => (0, 0, String::new()),
            "CustomResourceDefinition" => (1, 0, String::new()),
            k => match INSTALL_ORDER.iter().position(|x| *x == k) {
                Some(i) => (2, i, String::new()),
                None => (2, INSTALL_ORDER.len(), k.to_string()),
            },
        }
    }
}

/// Decode documents into objects; empty documents (only comments) vanish,
/// as they do for helm's kube client.
pub fn decode(docs: &[Doc]) -> Result<Vec<Object>, ObjectError> {
    let mut out = Vec::new();
    for d in docs {
        let y = crate::yaml::from_yaml(&d.content).map_err(|e| ObjectError::Yaml {
            source_path: d.source.clone(),
            message: e.to_string(),
        })?;
        if matches!(y, Yaml::Null) {
            continue;
        }
        let body = strip_nulls(to_json(&y));
        let s = |p: &str| {
            body.pointer(p)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let missing = |what| ObjectError::Missing {
            source_path: d.source.clone(),
            what,
        };
        let (api_version, kind, name) = (s("/apiVersion"), s("/kind"), s("/metadata/name"));
        if api_version.is_empty() {
            return Err(missing("apiVersion"));
        }
        if kind.is_empty() {
            return Err(missing("kind"));
        }
        if name.is_empty() {
            return Err(missing("metadata.name"));
        }
        let ns = s("/metadata/namespace");
        out.push(Object {
            api_version,
            kind,
            name,
            namespace: (!ns.is_empty()).then_some(ns),
            body,
            source: d.source.clone(),
        });
    }
    Ok(out)
}

/// Stable sort into install order.
pub fn sort_install(objs: &mut [Object]) {
    objs.sort_by_key(|o| o.order());
}

/// YAML (sigs.k8s.io/yaml model: numbers are float64) to JSON as Go's
/// encoding/json prints it: integral floats as integers.
pub use crate::yaml::json::to_serde as to_json;

/// JSON back to the YAML model (for printing with helm's YAML emitter).
pub fn to_yaml(j: &Json) -> Yaml {
    match j {
        Json::Null => Yaml::Null,
        Json::Bool(b) => Yaml::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Int(i),
            None => Yaml::Float(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Yaml::Str(s.clone()),
        Json::Array(v) => Yaml::Seq(v.iter().map(to_yaml).collect()),
        Json::Object(m) => Yaml::Map(
            m.iter()
                .map(|(k, v)| (k.clone(), to_yaml(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

/// Drop `null` map entries, recursively. A `null` in an apply config would
/// mean "remove this field" to the server, while in a chart it is only an
/// unset value (kubectl and helm drop them from what they send, too).
pub fn strip_nulls(v: Json) -> Json {
    match v {
        Json::Object(m) => Json::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Json::Array(a) => Json::Array(a.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "---\n# Source: app/charts/crds/crds/crd-a.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.example.com\n---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  gone: null\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n---\n# Source: app/templates/job.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  backoffLimit: 3\n";

    #[test]
    fn splits_crds_manifests_hooks() {
        let r = split_rendered(TEXT);
        assert_eq!(r.crds.len(), 1);
        assert_eq!(r.manifests.len(), 2);
        assert_eq!(r.hooks.len(), 1);
        assert_eq!(r.manifests[1].source, "app/templates/cm.yaml");
        assert_eq!(
            r.manifest_text(),
            "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  gone: null\n---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n"
        );
    }

    #[test]
    fn decodes_strips_nulls_and_orders() {
        let r = split_rendered(TEXT);
        let mut objs = decode(&r.manifests).unwrap();
        objs.extend(decode(&r.hooks).unwrap());
        assert_eq!(objs[0].body["data"], serde_json::json!({"k": "v"}));
        assert_eq!(objs[2].body["spec"]["backoffLimit"], serde_json::json!(3));
        sort_install(&mut objs);
        let kinds: Vec<&str> = objs.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["Namespace", "ConfigMap", "Job"]);
        assert_eq!(objs[1].key().to_string(), "ConfigMap a");
    }

    #[test]
    fn missing_name_is_an_error() {
        let e = decode(&[Doc {
            source: "x/templates/a.yaml".into(),
            content: "apiVersion: v1\nkind: ConfigMap\n".into(),
        }])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "x/templates/a.yaml: object has no metadata.name"
        );
    }
}
