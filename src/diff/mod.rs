//! `antiopa diff`'s core: two sets of rendered manifests compared object by
//! object. Pure: it takes texts (with the names errors and headers use)
//! and returns a [`DiffResult`]; [`render`] prints it as a terminal diff or
//! as Markdown for a pull request. Reading files, rendering module trees
//! and git revisions happen in the callers.
//!
//! Objects are keyed by apiVersion, kind, namespace and name, so they match
//! across files and modules; the comparison is on parsed values printed in
//! one normal form (sigs.k8s.io/yaml.Marshal, as `toYaml`), so formatting,
//! key order, quoting and comments (helm's `# Source:` lines) never count
//! as changes.

mod docs;
mod render;
pub mod secrets;

use std::collections::BTreeMap;
use std::fmt;

pub use render::{Format, RenderOptions, render};

/// One input text: a file, or one module's rendered output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// What errors call it: a path, or `module NAME (OLD)`.
    pub name: String,
    /// What headers show in parentheses and what objects sort by: a path
    /// relative to the compared directory, or `module NAME`. A `# module:
    /// NAME` line in the text (as `antiopa render` prints) overrides it for
    /// the documents that follow.
    pub origin: String,
    pub text: String,
}

impl Source {
    pub fn new(
        name: impl Into<String>,
        origin: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Source {
            name: name.into(),
            origin: origin.into(),
            text: text.into(),
        }
    }
}

/// What identifies an object across the two sides.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKey {
    /// A Kubernetes object. `namespace` is empty for cluster-scoped kinds.
    Object {
        api_version: String,
        kind: String,
        namespace: String,
        name: String,
    },
    /// A document without `kind` or `metadata.name`: its source's origin
    /// and its 1-based position there.
    Document { source: String, index: usize },
}

impl fmt::Display for ObjectKey {
    /// `apps/v1 Deployment web/echo`, `v1 Namespace web`, `notes.yaml document 2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectKey::Object {
                api_version,
                kind,
                namespace,
                name,
            } => {
                if !api_version.is_empty() {
                    write!(f, "{api_version} ")?;
                }
                write!(f, "{kind} ")?;
                if !namespace.is_empty() {
                    write!(f, "{namespace}/")?;
                }
                write!(f, "{name}")
            }
            ObjectKey::Document { source, index } if source.is_empty() => {
                write!(f, "document {index}")
            }
            ObjectKey::Document { source, index } => write!(f, "{source} document {index}"),
        }
    }
}

/// How an object differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added,
    Removed,
    Changed,
}

impl Change {
    /// The header's first character: `+`, `-`, `~`.
    pub fn sign(self) -> char {
        match self {
            Change::Added => '+',
            Change::Removed => '-',
            Change::Changed => '~',
        }
    }
}

/// One object that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub change: Change,
    pub key: ObjectKey,
    /// Where it is: NEW's origin, OLD's for removed objects.
    pub origin: String,
    /// The normalised YAML on each side (`None` on the side it is absent).
    pub old: Option<String>,
    pub new: Option<String>,
}

/// Everything that differs, in a stable order: by origin, then key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffResult {
    pub entries: Vec<Entry>,
    pub unchanged: usize,
}

impl DiffResult {
    pub fn count(&self, change: Change) -> usize {
        self.entries.iter().filter(|e| e.change == change).count()
    }

    pub fn has_differences(&self) -> bool {
        !self.entries.is_empty()
    }

    /// `1 added, 0 removed, 2 changed, 5 unchanged`.
    pub fn summary(&self) -> String {
        format!(
            "{} added, {} removed, {} changed, {} unchanged",
            self.count(Change::Added),
            self.count(Change::Removed),
            self.count(Change::Changed),
            self.unchanged
        )
    }
}

/// A document that cannot be read; the text names the file and document
/// (`old/app.yaml: document 2: yaml: line 14: mapping values are not
/// allowed in this context`; the line counts from the file's start).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: document {document}: {message}")]
pub struct DiffError {
    pub file: String,
    pub document: usize,
    pub message: String,
}

/// Comparison settings.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// The namespace objects without `metadata.namespace` go to (`-n`).
    pub default_namespace: String,
    /// Print Secret values as they are (`--show-secrets`); by default
    /// they are masked as `kubectl diff` masks them ([`secrets`]).
    pub show_secrets: bool,
}

/// Compares two sides. Objects present twice under one key on a side
/// (a conflict the cluster would resolve by overwriting) are paired with
/// the same origin first, then in order.
pub fn compare(
    old: &[Source],
    new: &[Source],
    opts: &CompareOptions,
) -> Result<DiffResult, DiffError> {
    let old_parsed = docs::parse_sources(old)?;
    let new_parsed = docs::parse_sources(new)?;
    // A CRD's scope holds for its objects on either side.
    let mut cluster = docs::crd_cluster_kinds(&old_parsed);
    cluster.extend(docs::crd_cluster_kinds(&new_parsed));
    let old_docs = docs::key_docs(old_parsed, old, &opts.default_namespace, &cluster)?;
    let new_docs = docs::key_docs(new_parsed, new, &opts.default_namespace, &cluster)?;

    let mut by_key: BTreeMap<ObjectKey, (Vec<docs::Doc>, Vec<docs::Doc>)> = BTreeMap::new();
    for d in old_docs {
        by_key.entry(d.key.clone()).or_default().0.push(d);
    }
    for d in new_docs {
        by_key.entry(d.key.clone()).or_default().1.push(d);
    }

    let mut result = DiffResult::default();
    for (key, (olds, news)) in by_key {
        let mut olds: Vec<Option<docs::Doc>> = olds.into_iter().map(Some).collect();
        let mut pairs: Vec<(Option<docs::Doc>, Option<docs::Doc>)> = Vec::new();
        let mut unpaired_new = Vec::new();
        for n in news {
            let same_origin = olds
                .iter()
                .position(|o| o.as_ref().is_some_and(|o| o.origin == n.origin));
            match same_origin.and_then(|i| olds[i].take()) {
                Some(o) => pairs.push((Some(o), Some(n))),
                None => unpaired_new.push(n),
            }
        }
        let mut rest_old = olds.into_iter().flatten();
        for n in unpaired_new {
            pairs.push((rest_old.next(), Some(n)));
        }
        pairs.extend(rest_old.map(|o| (Some(o), None)));

        for (o, n) in pairs {
            let (change, origin) = match (&o, &n) {
                (Some(o), Some(n)) if o.text == n.text => {
                    result.unchanged += 1;
                    continue;
                }
                (Some(_), Some(n)) => (Change::Changed, n.origin.clone()),
                (None, Some(n)) => (Change::Added, n.origin.clone()),
                (Some(o), None) => (Change::Removed, o.origin.clone()),
                (None, None) => continue,
            };
            let (old, new) = if opts.show_secrets {
                (o.map(|d| d.text), n.map(|d| d.text))
            } else {
                masked(o, n)
            };
            result.entries.push(Entry {
                change,
                key: key.clone(),
                origin,
                old,
                new,
            });
        }
    }
    result
        .entries
        .sort_by(|a, b| (&a.origin, &a.key).cmp(&(&b.origin, &b.key)));
    Ok(result)
}

/// The texts of a pair with Secret values masked; other kinds as they are.
fn masked(o: Option<docs::Doc>, n: Option<docs::Doc>) -> (Option<String>, Option<String>) {
    let (mut ov, mut nv) = (o.map(|d| d.value), n.map(|d| d.value));
    secrets::mask_yaml(ov.as_mut(), nv.as_mut());
    // Both printed before (that is how they were compared): they print again.
    let text =
        |v: Option<crate::yaml::Yaml>| v.map(|v| crate::yaml::try_to_yaml(&v).unwrap_or_default());
    (text(ov), text(nv))
}

#[cfg(test)]
mod tests;
