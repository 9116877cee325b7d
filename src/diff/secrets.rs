//! Secret values never printed: `kubectl diff`'s `Masker`
//! (`pkg/cmd/diff/diff.go`). In a v1 Secret each value of `data` — and of
//! `stringData`, which kubectl leaves alone but which holds the same
//! secrets in clear — is replaced by `***`, or by `*** (before)` and
//! `*** (after)` where the two sides hold different values under one key,
//! so a diff still shows which keys changed. The comparison that decides
//! whether an object changed runs on the real values; only what is printed
//! is masked. `--show-secrets` turns it off.

use std::collections::BTreeMap;

use crate::yaml::Yaml;

pub const MASK: &str = "***";
pub const MASK_BEFORE: &str = "*** (before)";
pub const MASK_AFTER: &str = "*** (after)";
/// The maps kubectl masks (`data`), and the write-only one it forgets.
const FIELDS: [&str; 2] = ["data", "stringData"];

/// What each key of each side shows, from the two sides' values.
fn masks<V: PartialEq>(
    from: &BTreeMap<String, &V>,
    to: &BTreeMap<String, &V>,
) -> (
    BTreeMap<String, &'static str>,
    BTreeMap<String, &'static str>,
) {
    let mut f = BTreeMap::new();
    let mut t = BTreeMap::new();
    for (k, v) in from {
        match to.get(k) {
            Some(w) if w != v => {
                f.insert(k.clone(), MASK_BEFORE);
                t.insert(k.clone(), MASK_AFTER);
            }
            _ => {
                f.insert(k.clone(), MASK);
            }
        }
    }
    for k in to.keys() {
        t.entry(k.clone()).or_insert(MASK);
    }
    (f, t)
}

fn is_secret(api_version: Option<&str>, kind: Option<&str>) -> bool {
    api_version == Some("v1") && kind == Some("Secret")
}

/// Masks a Secret's values on both sides of a diff of parsed manifests
/// (either side may be absent: an added or removed object).
pub fn mask_yaml(from: Option<&mut Yaml>, to: Option<&mut Yaml>) {
    let str_of = |v: &Yaml, k: &str| match v {
        Yaml::Map(m) => match m.get(k) {
            Some(Yaml::Str(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let secret = |v: &Option<&mut Yaml>| {
        v.as_deref().is_some_and(|v| {
            is_secret(
                str_of(v, "apiVersion").as_deref(),
                str_of(v, "kind").as_deref(),
            )
        })
    };
    if !secret(&from) && !secret(&to) {
        return;
    }
    let (mut from, mut to) = (from, to);
    for field in FIELDS {
        let map_of = |v: &Option<&mut Yaml>| -> BTreeMap<String, Yaml> {
            match v.as_deref() {
                Some(Yaml::Map(m)) => match m.get(field) {
                    Some(Yaml::Map(d)) => d.clone(),
                    _ => BTreeMap::new(),
                },
                _ => BTreeMap::new(),
            }
        };
        let (a, b) = (map_of(&from), map_of(&to));
        let (fm, tm) = masks(
            &a.iter().map(|(k, v)| (k.clone(), v)).collect(),
            &b.iter().map(|(k, v)| (k.clone(), v)).collect(),
        );
        for (side, m) in [(&mut from, fm), (&mut to, tm)] {
            if let Some(Yaml::Map(root)) = side.as_deref_mut()
                && let Some(Yaml::Map(d)) = root.get_mut(field)
            {
                for (k, mask) in m {
                    d.insert(k, Yaml::Str(mask.to_string()));
                }
            }
        }
    }
}

/// [`mask_yaml`] for objects read from the cluster (a live diff).
pub fn mask_json(from: Option<&mut serde_json::Value>, to: Option<&mut serde_json::Value>) {
    use serde_json::Value as J;
    let secret = |v: &Option<&mut J>| {
        v.as_deref().is_some_and(|v| {
            is_secret(
                v.get("apiVersion").and_then(J::as_str),
                v.get("kind").and_then(J::as_str),
            )
        })
    };
    if !secret(&from) && !secret(&to) {
        return;
    }
    let (mut from, mut to) = (from, to);
    for field in FIELDS {
        let map_of = |v: &Option<&mut J>| -> serde_json::Map<String, J> {
            v.as_deref()
                .and_then(|v| v.get(field))
                .and_then(J::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (a, b) = (map_of(&from), map_of(&to));
        let (fm, tm) = masks(
            &a.iter().map(|(k, v)| (k.clone(), v)).collect(),
            &b.iter().map(|(k, v)| (k.clone(), v)).collect(),
        );
        for (side, m) in [(&mut from, fm), (&mut to, tm)] {
            if let Some(d) = side
                .as_deref_mut()
                .and_then(|v| v.get_mut(field))
                .and_then(J::as_object_mut)
            {
                for (k, mask) in m {
                    d.insert(k, J::String(mask.to_string()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_keys_show_before_and_after_the_rest_stars() {
        let mut a = json!({"apiVersion": "v1", "kind": "Secret", "data": {"same": "YQ==", "changed": "Yg==", "gone": "Yw=="}, "stringData": {"p": "hunter2"}});
        let mut b = json!({"apiVersion": "v1", "kind": "Secret", "data": {"same": "YQ==", "changed": "ZA==", "new": "ZQ=="}});
        mask_json(Some(&mut a), Some(&mut b));
        assert_eq!(
            a["data"],
            json!({"same": "***", "changed": "*** (before)", "gone": "***"})
        );
        assert_eq!(
            b["data"],
            json!({"same": "***", "changed": "*** (after)", "new": "***"})
        );
        assert_eq!(a["stringData"], json!({"p": "***"}));
    }

    #[test]
    fn only_v1_secrets_are_masked() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        mask_json(Some(&mut cm), None);
        assert_eq!(cm["data"]["a"], "b");
        let mut added = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "b"}});
        mask_json(None, Some(&mut added));
        assert_eq!(added["data"]["a"], "***");
    }
}
