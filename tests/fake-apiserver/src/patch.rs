//! Non-apply patch types: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the simple cases of
//! Kubernetes' strategic merge patch (`strategicpatch.StrategicMergePatch`) that kubectl sends.

use serde_json::{Map, Value};

use crate::schema::{ListType, list_type};

pub fn merge_patch(doc: &mut Value, patch: &Value) {
    json_patch::merge(doc, patch);
}

pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), String> {
    let p: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| e.to_string())?;
    json_patch::patch(doc, &p).map_err(|e| e.to_string())
}

/// Strategic merge patch for built-in types: maps merge (null deletes), lists with a patch merge
/// key merge by that key (`$patch: delete` removes an item, `$patch: replace` replaces the list),
/// set-like lists (finalizers) take the union, other lists are replaced. `$setElementOrder`,
/// `$retainKeys` and `$deleteFromPrimitiveList` directives are honoured where simple.
pub fn strategic_merge_patch(group: &str, kind: &str, doc: &mut Value, patch: &Value) {
    smp_at(group, kind, doc, patch, &mut Vec::new());
}

fn smp_at(group: &str, kind: &str, doc: &mut Value, patch: &Value, names: &mut Vec<String>) {
    let Value::Object(p) = patch else {
        *doc = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut m = p.clone();
        m.remove("$patch");
        *doc = Value::Object(m);
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Value::Object(d) = doc else { return };
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        d.retain(|k, _| keep.contains(&k.as_str()) || p.contains_key(k));
    }
    for (k, pv) in p {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Value::Array(del)) = (d.get_mut(field), pv) {
                items.retain(|i| !del.contains(i));
            }
            continue;
        }
        if pv.is_null() {
            d.remove(k);
            continue;
        }
        names.push(k.clone());
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        match pv {
            Value::Object(_) => {
                let child = d.entry(k.clone()).or_insert(Value::Null);
                smp_at(group, kind, child, pv, names);
            }
            Value::Array(items) => {
                let ty = list_type(group, kind, &name_refs);
                let merged = match (d.get(k), ty) {
                    (Some(Value::Array(cur)), ListType::Map(keys)) => {
                        merge_keyed(group, kind, cur, items, keys[0], names)
                    }
                    (Some(Value::Array(cur)), ListType::Set) => {
                        let mut out = cur.clone();
                        for i in items {
                            if !out.contains(i) {
                                out.push(i.clone());
                            }
                        }
                        out
                    }
                    _ => items
                        .iter()
                        .filter(|i| i.get("$patch").is_none())
                        .cloned()
                        .collect(),
                };
                d.insert(k.clone(), Value::Array(merged));
            }
            _ => {
                d.insert(k.clone(), pv.clone());
            }
        }
        names.pop();
    }
}

fn merge_keyed(
    group: &str,
    kind: &str,
    cur: &[Value],
    patch: &[Value],
    key: &str,
    names: &mut Vec<String>,
) -> Vec<Value> {
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return patch
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .cloned()
            .collect();
    }
    let mut out: Vec<Value> = cur.to_vec();
    for item in patch {
        let k = item.get(key);
        let pos = out.iter().position(|o| k.is_some() && o.get(key) == k);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => smp_at(group, kind, &mut out[i], item, names),
            (None, false) => out.push(item.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_by_container_name_against_fake_apiserver() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}});
        strategic_merge_patch(
            "apps",
            "Deployment",
            &mut d,
            &json!({"spec": {"template": {"spec": {"containers": [
                {"name": "b", "image": "b:2"}, {"name": "a", "$patch": "delete"}]}}}}),
        );
        assert_eq!(
            d,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}})
        );
    }
}
