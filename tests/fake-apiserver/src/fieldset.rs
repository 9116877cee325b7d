//! Field sets: the trie of paths a field manager owns, and its `FieldsV1` JSON form.
//!
//! This follows structured-merge-diff's `fieldpath.Set`: each node may be a *member* (the path itself
//! is owned) and may have children. Path elements are `f:<field>`, `k:{<key fields>}` (an item of a
//! list-map), `v:<json>` (an item of a set) and `i:<index>`. Serialised, a member that also has
//! children carries `".":{}`; a member leaf is `{}` (`fieldpath/serialize.go`). Elements sort fields
//! first, then keys, then values, then indexes (`PathElement.Compare`), which the derived `Ord` of
//! [`PathElement`] reproduces.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// `f:<name>`: a field of a struct or map.
    Field(String),
    /// `k:{...}`: a list-map item, by its key fields serialised as sorted JSON.
    Key(String),
    /// `v:<json>`: an item of a set-typed list.
    Value(String),
    /// `i:<n>`: a list index (only used by atomic-less deduced lists; kept for completeness).
    Index(usize),
}

impl PathElement {
    /// The FieldsV1 spelling of this element.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(k) => format!("k:{k}"),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Option<PathElement> {
        let (prefix, rest) = s.split_at_checked(2)?;
        match prefix {
            "f:" => Some(PathElement::Field(rest.to_string())),
            "k:" => {
                // Re-serialise so key spelling is canonical (sorted, compact).
                let v: Value = serde_json::from_str(rest).ok()?;
                Some(PathElement::Key(serde_json::to_string(&v).ok()?))
            }
            "v:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                Some(PathElement::Value(serde_json::to_string(&v).ok()?))
            }
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

/// A path from the object root.
pub type Path = Vec<PathElement>;

/// Renders a path the way conflict messages do (`.spec.replicas`, `.spec.containers[name="web"].image`).
pub fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for pe in path {
        match pe {
            PathElement::Field(f) => {
                out.push('.');
                out.push_str(f);
            }
            PathElement::Key(k) => {
                // fieldpath.PathElement.String: `[name="web",port=80]` for keys.
                out.push('[');
                if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(k) {
                    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    out.push_str(&parts.join(","));
                }
                out.push(']');
            }
            PathElement::Value(v) => {
                out.push_str("[=");
                out.push_str(v);
                out.push(']');
            }
            PathElement::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    member: bool,
    children: FieldSet,
}

/// A set of paths, stored as a trie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    nodes: BTreeMap<PathElement, Node>,
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes
            .values()
            .all(|n| !n.member && n.children.is_empty())
    }

    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let node = self.nodes.entry(first.clone()).or_default();
        if rest.is_empty() {
            node.member = true;
        } else {
            node.children.insert(rest);
        }
    }

    pub fn contains(&self, path: &[PathElement]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        match self.nodes.get(first) {
            None => false,
            Some(n) if rest.is_empty() => n.member,
            Some(n) => n.children.contains(rest),
        }
    }

    /// Whether some member lies strictly below `path`.
    pub fn has_descendants(&self, path: &[PathElement]) -> bool {
        let mut cur = self;
        for pe in path {
            match cur.nodes.get(pe) {
                Some(n) => cur = &n.children,
                None => return false,
            }
        }
        !cur.is_empty()
    }

    /// Removes `path` and everything below it.
    pub fn remove_subtree(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else {
            self.nodes.clear();
            return;
        };
        if rest.is_empty() {
            self.nodes.remove(first);
        } else if let Some(n) = self.nodes.get_mut(first) {
            n.children.remove_subtree(rest);
        }
        self.compact();
    }

    fn compact(&mut self) {
        self.nodes.retain(|_, n| {
            n.children.compact();
            n.member || !n.children.nodes.is_empty()
        });
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for (pe, n) in &other.nodes {
            let e = out.nodes.entry(pe.clone()).or_default();
            e.member |= n.member;
            e.children = e.children.union(&n.children);
        }
        out
    }

    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, n) in &self.nodes {
            let (member, children) = match other.nodes.get(pe) {
                Some(o) => (n.member && !o.member, n.children.difference(&o.children)),
                None => (n.member, n.children.clone()),
            };
            if member || !children.nodes.is_empty() {
                out.nodes.insert(pe.clone(), Node { member, children });
            }
        }
        out
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, n) in &self.nodes {
            if let Some(o) = other.nodes.get(pe) {
                let member = n.member && o.member;
                let children = n.children.intersection(&o.children);
                if member || !children.nodes.is_empty() {
                    out.nodes.insert(pe.clone(), Node { member, children });
                }
            }
        }
        out
    }

    /// Every member path, in trie order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (pe, n) in &self.nodes {
            prefix.push(pe.clone());
            if n.member {
                out.push(prefix.clone());
            }
            n.children.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` JSON object.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (pe, n) in &self.nodes {
            if !n.member && n.children.is_empty() {
                continue;
            }
            let mut child = match n.children.to_fields_v1() {
                Value::Object(c) => c,
                _ => Map::new(),
            };
            if n.member && !child.is_empty() {
                let mut with_dot = Map::new();
                with_dot.insert(".".to_string(), Value::Object(Map::new()));
                with_dot.extend(child);
                child = with_dot;
            }
            m.insert(pe.encode(), Value::Object(child));
        }
        Value::Object(m)
    }

    /// Parses a `fieldsV1` object; unknown element spellings are skipped.
    pub fn from_fields_v1(v: &Value) -> FieldSet {
        let mut out = FieldSet::new();
        if let Value::Object(m) = v {
            for (k, child) in m {
                if k == "." {
                    continue;
                }
                let Some(pe) = PathElement::decode(k) else {
                    continue;
                };
                let children = FieldSet::from_fields_v1(child);
                let member = match child {
                    Value::Object(c) => c.is_empty() || c.contains_key("."),
                    _ => true,
                };
                out.nodes.insert(pe, Node { member, children });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> PathElement {
        PathElement::Field(s.to_string())
    }

    #[test]
    fn fields_v1_round_trip_with_dot_for_members_with_children() {
        let mut s = FieldSet::new();
        s.insert(&[f("data")]);
        s.insert(&[f("data"), f("key")]);
        s.insert(&[f("metadata"), f("labels"), f("a")]);
        let v = s.to_fields_v1();
        assert_eq!(
            v.to_string(),
            r#"{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:labels":{"f:a":{}}}}"#
        );
        assert_eq!(FieldSet::from_fields_v1(&v), s);
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&[f("a")]);
        a.insert(&[f("b"), f("c")]);
        let mut b = FieldSet::new();
        b.insert(&[f("b"), f("c")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("a")]]);
        assert_eq!(a.intersection(&b), b);
        assert!(a.has_descendants(&[f("b")]));
    }
}
