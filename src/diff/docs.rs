//! Reading rendered manifests into keyed objects: a YAML stream is split
//! into documents, each parsed as kubectl reads it (sigs.k8s.io/yaml, so
//! formatting, key order, quoting styles and comments — helm's
//! `# Source:` lines included — do not matter), keyed by
//! apiVersion/kind/namespace/name, and printed back in one normal form.

use std::collections::BTreeSet;

use super::{DiffError, ObjectKey, Source};
use crate::yaml::{Numbers, Yaml, load, try_to_yaml};

/// One object (or keyless document) of one side.
#[derive(Clone, Debug)]
pub(crate) struct Doc {
    pub key: ObjectKey,
    /// The module or file it came from, as headers show it.
    pub origin: String,
    /// The normal form compared and printed: sigs.k8s.io/yaml.Marshal.
    pub text: String,
    /// The parsed document `text` prints (for masking Secrets).
    pub value: Yaml,
}

/// A document's text and the 0-based line it starts at.
struct RawDoc<'a> {
    text: &'a str,
    first_line: usize,
    /// The `# module: NAME` header (`antiopa render` output) in effect.
    module: Option<&'a str>,
}

/// Splits a YAML stream at `---` lines (a document start marker, possibly
/// followed by a comment or content) and drops `...` end markers. Block
/// scalars cannot hold a column-0 `---` line, so a line scan is exact for
/// manifests. `# module: NAME` lines, which `antiopa render` writes before
/// each module's documents, set the origin of what follows.
fn split_stream(text: &str) -> Vec<RawDoc<'_>> {
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 0usize;
    let mut module: Option<&str> = None;
    let mut doc_module: Option<&str> = None;
    let mut offset = 0usize;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        let is_start = bare == "---" || bare.starts_with("--- ") || bare.starts_with("---\t");
        let is_end = bare == "..." || bare.starts_with("... ");
        if let Some(name) = bare.strip_prefix("# module: ") {
            module = Some(name.trim());
        }
        if is_start || is_end {
            docs.push(RawDoc {
                text: &text[start..offset],
                first_line: start_line,
                module: doc_module,
            });
            // Content after `--- ` on the same line belongs to the next
            // document; it is kept by starting there (the marker blanked).
            start = if is_start && bare.len() > 3 {
                offset + 3
            } else {
                offset + line.len()
            };
            start_line = if start == offset + line.len() {
                n + 1
            } else {
                n
            };
            doc_module = module;
        }
        if !is_start && !is_end && doc_module.is_none() {
            doc_module = module;
        }
        offset += line.len();
    }
    docs.push(RawDoc {
        text: &text[start..],
        first_line: start_line,
        module: doc_module,
    });
    docs
}

/// Kinds the Kubernetes API serves cluster-scoped (core and common
/// add-ons); CRDs in the inputs add theirs (`spec.scope: Cluster`). Any
/// other kind is taken as namespaced.
const CLUSTER_SCOPED: &[&str] = &[
    "APIService",
    "AuditSink",
    "CSIDriver",
    "CSINode",
    "CertificateSigningRequest",
    "ClusterIssuer",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterTrustBundle",
    "ComponentStatus",
    "CustomResourceDefinition",
    "FlowSchema",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PodSecurityPolicy",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "RuntimeClass",
    "SelfSubjectAccessReview",
    "SelfSubjectReview",
    "SelfSubjectRulesReview",
    "StorageClass",
    "StorageVersionMigration",
    "SubjectAccessReview",
    "TokenReview",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
    "VolumeAttributesClass",
];

fn str_at<'a>(v: &'a Yaml, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        match cur {
            Yaml::Map(m) => cur = m.get(*p)?,
            _ => return None,
        }
    }
    match cur {
        Yaml::Str(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// A parsed document before keying.
pub(crate) struct Parsed {
    source: usize,
    index: usize,
    origin: String,
    value: Yaml,
}

/// Parses every document of every source. Empty documents (only comments
/// or whitespace, as helm prints for templates that render nothing) are
/// skipped; `index` still counts them so errors and keyless documents
/// name the document as it stands in the file (1-based).
pub(crate) fn parse_sources(sources: &[Source]) -> Result<Vec<Parsed>, DiffError> {
    let mut out = Vec::new();
    for (si, s) in sources.iter().enumerate() {
        for (i, raw) in split_stream(&s.text).into_iter().enumerate() {
            if raw.text.trim().is_empty() {
                continue;
            }
            // Padding with the lines before the document makes the
            // parser's "line N" the line in the file.
            let mut padded = "\n".repeat(raw.first_line);
            padded.push_str(raw.text);
            // yaml.v2 types (ints stay ints, no float64 rounding of big
            // numbers); the normal form's JSON step still prints `3.0` as
            // `3`, as the API server would read it.
            let value = load(&padded, Numbers::Yaml).map_err(|e| DiffError {
                file: s.name.clone(),
                document: i + 1,
                message: e.0,
            })?;
            if value == Yaml::Null {
                continue;
            }
            let origin = match raw.module {
                Some(m) => format!("module {m}"),
                None => s.origin.clone(),
            };
            for value in expand_list(value) {
                out.push(Parsed {
                    source: si,
                    index: i + 1,
                    origin: origin.clone(),
                    value,
                });
            }
        }
    }
    Ok(out)
}

/// A `kind: List` (or `*List`) document with `items` stands for its items,
/// as kubectl applies them one by one.
fn expand_list(value: Yaml) -> Vec<Yaml> {
    let is_list = str_at(&value, &["kind"]).is_some_and(|k| k.ends_with("List"));
    match value {
        Yaml::Map(mut m) if is_list && matches!(m.get("items"), Some(Yaml::Seq(_))) => {
            match m.remove("items") {
                Some(Yaml::Seq(items)) => items,
                _ => Vec::new(),
            }
        }
        v => vec![v],
    }
}

/// Kinds CRDs in `docs` declare cluster-scoped.
pub(crate) fn crd_cluster_kinds(docs: &[Parsed]) -> BTreeSet<String> {
    docs.iter()
        .filter(|d| str_at(&d.value, &["kind"]) == Some("CustomResourceDefinition"))
        .filter(|d| str_at(&d.value, &["spec", "scope"]) == Some("Cluster"))
        .filter_map(|d| str_at(&d.value, &["spec", "names", "kind"]).map(str::to_string))
        .collect()
}

/// Keys and normalises parsed documents. A namespaced object without
/// `metadata.namespace` gets `default_namespace` in its key (it lands
/// there when applied with `-n`); cluster-scoped ones keep none. Documents
/// without a kind or name are keyed by their file and position.
pub(crate) fn key_docs(
    parsed: Vec<Parsed>,
    sources: &[Source],
    default_namespace: &str,
    cluster_kinds: &BTreeSet<String>,
) -> Result<Vec<Doc>, DiffError> {
    let mut out = Vec::with_capacity(parsed.len());
    for p in parsed {
        let v = &p.value;
        let kind = str_at(v, &["kind"]);
        let name = str_at(v, &["metadata", "name"]);
        let key = match (kind, name) {
            (Some(kind), Some(name)) => {
                let cluster = CLUSTER_SCOPED.contains(&kind) || cluster_kinds.contains(kind);
                let namespace = match str_at(v, &["metadata", "namespace"]) {
                    Some(ns) => ns.to_string(),
                    None if cluster => String::new(),
                    None => default_namespace.to_string(),
                };
                ObjectKey::Object {
                    api_version: str_at(v, &["apiVersion"]).unwrap_or_default().to_string(),
                    kind: kind.to_string(),
                    namespace,
                    name: name.to_string(),
                }
            }
            _ => ObjectKey::Document {
                source: sources[p.source].origin.clone(),
                index: p.index,
            },
        };
        let text = try_to_yaml(v).map_err(|e| DiffError {
            file: sources[p.source].name.clone(),
            document: p.index,
            message: e.to_string(),
        })?;
        out.push(Doc {
            key,
            origin: p.origin,
            text,
            value: p.value,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<(String, usize, Option<String>)> {
        split_stream(s)
            .into_iter()
            .map(|d| {
                (
                    d.text.to_string(),
                    d.first_line,
                    d.module.map(str::to_string),
                )
            })
            .collect()
    }

    #[test]
    fn splits_at_marker_lines_only() {
        let got = texts("a: 1\n---\nb: |\n  ---x\n--- # c\nc: 3\n");
        assert_eq!(
            got,
            vec![
                ("a: 1\n".into(), 0, None),
                ("b: |\n  ---x\n".into(), 2, None),
                (" # c\nc: 3\n".into(), 4, None),
            ]
        );
    }

    #[test]
    fn module_headers_set_the_origin() {
        let got = texts("# module: a\n---\nx: 1\n# module: b\n---\ny: 2\n");
        assert_eq!(got[1].2.as_deref(), Some("a"));
        assert_eq!(got[2].2.as_deref(), Some("b"));
    }
}
