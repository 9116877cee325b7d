//! Which release an object in the cluster belongs to, as Helm 3 decides it
//! (`pkg/action/validate.go`: `existingResourceConflict`, `checkOwnership`)
//! and with one rule stricter than Helm's.
//!
//! Every object of a release carries Helm's ownership metadata: the label
//! `app.kubernetes.io/managed-by: Helm` and the annotations
//! `meta.helm.sh/release-name`/`-namespace` (Helm's `setMetadataVisitor`,
//! which [`stamp`] mirrors). Before anything is written, each object that
//! already exists is classified by [`classify`]:
//! - it names another release, or another tool manages it (`managed-by`
//!   other than Helm): **foreign**, never touched — not even with
//!   `--take-ownership`, which in Helm 3.17 would take it from the other
//!   release too; two releases fighting over one object is never what a
//!   user of an unattended operator wants;
//! - it was in this release's previous manifest: ours (objects written
//!   before the metadata existed stay ours);
//! - it carries this release's metadata: ours;
//! - anything else (made by kubectl, or by helm before 3.2): **unowned**,
//!   refused with Helm's exact text unless the caller takes ownership
//!   (`--take-ownership`; addon-operator always does).
//!
//! Deleting (prune, uninstall) skips foreign objects alone: an object the
//! release's own record names and nobody else claims is deleted as Helm
//! deletes it.

use serde_json::Value as Json;

use super::objects::{Key, Object};

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const RELEASE_NAME: &str = "meta.helm.sh/release-name";
pub const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";
/// The value Helm (and so antiopa, for `helm` to accept our objects)
/// writes into [`MANAGED_BY`].
pub const MANAGED_BY_HELM: &str = "Helm";

/// The release objects are applied for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub release: String,
    pub namespace: String,
    /// Adopt existing objects that carry no release metadata
    /// (`--take-ownership`) instead of refusing them.
    pub take_ownership: bool,
    /// Whether this write upgrades an existing release: only Helm's error
    /// header says so ("Unable to continue with update").
    pub upgrade: bool,
}

impl Owner {
    pub fn new(release: &str, namespace: &str) -> Owner {
        Owner {
            release: release.to_string(),
            namespace: namespace.to_string(),
            take_ownership: false,
            upgrade: false,
        }
    }

    /// Whether `o` was stamped for this release (see [`stamp`]): only such
    /// objects are checked, so CRDs from `crds/` and the namespace that
    /// `--create-namespace` makes, which Helm keeps out of the release,
    /// stay out of the check too.
    pub fn stamped(&self, o: &Object) -> bool {
        o.annotation(RELEASE_NAME) == Some(self.release.as_str())
            && o.annotation(RELEASE_NAMESPACE) == Some(self.namespace.as_str())
    }
}

/// Sets Helm's ownership label and annotations on `o` (overriding what the
/// chart rendered there, as Helm's `setMetadataVisitor` with force does).
pub fn stamp(o: &mut Object, owner: &Owner) {
    let Some(root) = o.body.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Json::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let mut set = |field: &str, k: &str, v: &str| {
        let m = meta
            .entry(field)
            .or_insert_with(|| Json::Object(Default::default()));
        if !m.is_object() {
            *m = Json::Object(Default::default());
        }
        if let Some(m) = m.as_object_mut() {
            m.insert(k.to_string(), Json::String(v.to_string()));
        }
    };
    set("labels", MANAGED_BY, MANAGED_BY_HELM);
    set("annotations", RELEASE_NAME, &owner.release);
    set("annotations", RELEASE_NAMESPACE, &owner.namespace);
}

/// Who an existing object belongs to, from this release's point of view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    Ours,
    /// No (or incomplete) release metadata: Helm's validation errors,
    /// `label validation error: missing key …`, in Helm's order.
    Unowned(Vec<String>),
    /// Another release's or another tool's: why, in words.
    Foreign(String),
}

fn meta_str<'a>(live: &'a Json, field: &str, key: &str) -> Option<&'a str> {
    live.get("metadata")?.get(field)?.get(key)?.as_str()
}

/// Helm's `requireValue`.
fn require(found: Option<&str>, key: &str, want: &str) -> Option<String> {
    match found {
        None => Some(format!("missing key {key:?}: must be set to {want:?}")),
        Some(v) if v != want => Some(format!(
            "key {key:?} must equal {want:?}: current value is {v:?}"
        )),
        Some(_) => None,
    }
}

/// Classifies a live object (see the module comment). `in_previous`: the
/// release's last deployed manifest (or a later pending one) holds it.
pub fn classify(live: &Json, owner: &Owner, in_previous: bool) -> Ownership {
    let name = meta_str(live, "annotations", RELEASE_NAME);
    let ns = meta_str(live, "annotations", RELEASE_NAMESPACE);
    let managed_by = meta_str(live, "labels", MANAGED_BY);
    let other_name = name.is_some_and(|n| n != owner.release);
    let other_ns = ns.is_some_and(|n| n != owner.namespace);
    if other_name || other_ns {
        return Ownership::Foreign(format!(
            "it belongs to release {:?} in namespace {:?}",
            name.unwrap_or(&owner.release),
            ns.unwrap_or(&owner.namespace)
        ));
    }
    if in_previous {
        return Ownership::Ours;
    }
    if let Some(m) = managed_by
        && m != MANAGED_BY_HELM
        && name.is_none()
    {
        return Ownership::Foreign(format!("it is managed by {m:?} (label {MANAGED_BY})"));
    }
    let mut errs = Vec::new();
    if let Some(e) = require(managed_by, MANAGED_BY, MANAGED_BY_HELM) {
        errs.push(format!("label validation error: {e}"));
    }
    if let Some(e) = require(name, RELEASE_NAME, &owner.release) {
        errs.push(format!("annotation validation error: {e}"));
    }
    if let Some(e) = require(ns, RELEASE_NAMESPACE, &owner.namespace) {
        errs.push(format!("annotation validation error: {e}"));
    }
    if errs.is_empty() {
        Ownership::Ours
    } else {
        Ownership::Unowned(errs)
    }
}

/// One object an apply refused to touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub key: Key,
    pub ownership: Ownership,
}

/// Helm's `resourceString`: `ConfigMap "web" in namespace "apps"`.
fn resource_string(k: &Key) -> String {
    format!("{} {:?} in namespace {:?}", k.kind, k.name, k.namespace)
}

/// The error text: Helm's for unowned objects (`Unable to continue with
/// install: ConfigMap "x" in namespace "y" exists and cannot be imported
/// into the current release: invalid ownership metadata; …`), one line per
/// object (Helm stops at the first), then what to do.
pub fn refused_text(upgrade: bool, refused: &[Refused]) -> String {
    let mut s = format!(
        "Unable to continue with {}: ",
        if upgrade { "update" } else { "install" }
    );
    let mut unowned = false;
    for (i, r) in refused.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&resource_string(&r.key));
        match &r.ownership {
            Ownership::Unowned(errs) => {
                unowned = true;
                s.push_str(
                    " exists and cannot be imported into the current release: invalid ownership metadata",
                );
                for e in errs {
                    s.push_str("; ");
                    s.push_str(e);
                }
            }
            Ownership::Foreign(why) => {
                s.push_str(&format!(" exists and is not this release's: {why}"));
            }
            Ownership::Ours => s.push_str(" exists"),
        }
    }
    s.push_str("\nnothing was changed");
    if unowned {
        s.push_str(
            "; --take-ownership adopts objects that carry no release metadata (never another release's)",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> Owner {
        Owner::new("web", "apps")
    }

    #[test]
    fn a_kubectl_made_object_is_unowned_with_helms_three_errors() {
        let live = json!({"metadata": {"name": "x"}});
        assert_eq!(
            classify(&live, &owner(), false),
            Ownership::Unowned(vec![
                "label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"".into(),
                "annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"web\"".into(),
                "annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"apps\"".into(),
            ])
        );
    }

    #[test]
    fn another_release_is_foreign_even_when_the_record_names_the_object() {
        let live = json!({"metadata": {"annotations": {RELEASE_NAME: "other", RELEASE_NAMESPACE: "apps"}, "labels": {MANAGED_BY: "Helm"}}});
        for prev in [false, true] {
            assert!(matches!(
                classify(&live, &owner(), prev),
                Ownership::Foreign(w) if w.contains("release \"other\"")
            ));
        }
        let other_ns =
            json!({"metadata": {"annotations": {RELEASE_NAME: "web", RELEASE_NAMESPACE: "prod"}}});
        assert!(matches!(
            classify(&other_ns, &owner(), false),
            Ownership::Foreign(_)
        ));
    }

    #[test]
    fn other_managers_are_foreign_helms_own_metadata_is_ours() {
        let argo = json!({"metadata": {"labels": {MANAGED_BY: "argocd"}}});
        assert!(matches!(
            classify(&argo, &owner(), false),
            Ownership::Foreign(w) if w.contains("\"argocd\"")
        ));
        let ours = json!({"metadata": {"labels": {MANAGED_BY: "Helm"}, "annotations": {RELEASE_NAME: "web", RELEASE_NAMESPACE: "apps"}}});
        assert_eq!(classify(&ours, &owner(), false), Ownership::Ours);
        // Written by an earlier revision before the metadata existed.
        assert_eq!(
            classify(&json!({"metadata": {}}), &owner(), true),
            Ownership::Ours
        );
    }

    #[test]
    fn a_wrong_value_is_named_as_helm_names_it() {
        let live = json!({"metadata": {"labels": {MANAGED_BY: "helm"}, "annotations": {RELEASE_NAME: "web", RELEASE_NAMESPACE: "apps"}}});
        assert_eq!(
            classify(&live, &owner(), false),
            Ownership::Unowned(vec![
                "label validation error: key \"app.kubernetes.io/managed-by\" must equal \"Helm\": current value is \"helm\"".into()
            ])
        );
    }

    #[test]
    fn stamping_overrides_the_charts_values_and_marks_the_object() {
        let mut o = Object {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "x".into(),
            namespace: None,
            body: json!({"metadata": {"name": "x", "labels": {MANAGED_BY: "me", "a": "b"}}}),
            source: String::new(),
        };
        assert!(!owner().stamped(&o));
        stamp(&mut o, &owner());
        assert!(owner().stamped(&o));
        assert_eq!(o.body["metadata"]["labels"][MANAGED_BY], "Helm");
        assert_eq!(o.body["metadata"]["labels"]["a"], "b");
        assert_eq!(o.body["metadata"]["annotations"][RELEASE_NAMESPACE], "apps");
    }

    #[test]
    fn the_error_text_is_helms_for_the_first_line() {
        let k = Key {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: "foo".into(),
        };
        let text = refused_text(
            false,
            &[Refused {
                key: k,
                ownership: classify(&json!({}), &Owner::new("rel", "default"), false),
            }],
        );
        assert_eq!(
            text.lines().next().unwrap(),
            "Unable to continue with install: ConfigMap \"foo\" in namespace \"default\" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"rel\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"default\""
        );
    }
}
