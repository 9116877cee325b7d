//! Server-side apply: merging, field sets, comparison, pruning and the manager bookkeeping of
//! structured-merge-diff's `merge.Updater` (`Apply`, `Update`, `update`, `prune`).
//!
//! Objects are `serde_json::Value`s; the shape of lists and maps comes from [`crate::schema`].

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::fieldset::{FieldSet, Path, PathElement, path_string};
use crate::schema::{ListType, key_default, list_type, map_atomic};

/// The type context of an object: lists and maps are typed by group, kind and field path.
#[derive(Clone, Copy, Debug)]
pub struct Schema<'a> {
    pub group: &'a str,
    pub kind: &'a str,
}

impl Schema<'_> {
    fn list(&self, names: &[&str]) -> ListType {
        list_type(self.group, self.kind, names)
    }
    fn atomic_map(&self, names: &[&str]) -> bool {
        map_atomic(self.group, self.kind, names)
    }
}

/// A list item's path element, or an error naming the field like the apiserver's
/// "associative list with keys has an element that omits key field".
fn item_element(ty: &ListType, item: &Value, names: &[&str]) -> Result<PathElement, String> {
    match ty {
        ListType::Map(keys) => {
            let mut key = Map::new();
            for k in keys.iter() {
                let v = item
                    .get(*k)
                    .cloned()
                    .or_else(|| key_default(k))
                    .ok_or_else(|| {
                        format!(
                            ".{}: associative list with keys has an element that omits key field {:?} (and doesn't have default value)",
                            names.join("."),
                            k
                        )
                    })?;
                key.insert((*k).to_string(), v);
            }
            Ok(PathElement::Key(Value::Object(key).to_string()))
        }
        ListType::Set => Ok(PathElement::Value(item.to_string())),
        ListType::Atomic => Err("atomic list has no item elements".to_string()),
    }
}

/// The path set an applied configuration claims (`TypedValue.ToFieldSet`): scalars, atomic lists
/// and maps, and list items are members; granular maps only through their children.
pub fn to_field_set(schema: Schema, v: &Value) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    walk_set(schema, v, &mut Vec::new(), &mut Vec::new(), &mut set, false)?;
    Ok(set)
}

/// Walks `v` inserting paths into `set`. With `include_maps`, granular maps are members too (how
/// an added subtree appears in a comparison).
fn walk_set<'a>(
    schema: Schema,
    v: &'a Value,
    path: &mut Path,
    names: &mut Vec<&'a str>,
    set: &mut FieldSet,
    include_maps: bool,
) -> Result<(), String> {
    match v {
        Value::Object(m) => {
            if schema.atomic_map(names) {
                set.insert(path);
                return Ok(());
            }
            if include_maps {
                set.insert(path);
            }
            for (k, child) in m {
                path.push(PathElement::Field(k.clone()));
                names.push(k);
                walk_set(schema, child, path, names, set, include_maps)?;
                names.pop();
                path.pop();
            }
        }
        Value::Array(items) => {
            let ty = schema.list(names);
            if ty == ListType::Atomic {
                set.insert(path);
                return Ok(());
            }
            if include_maps {
                set.insert(path);
            }
            for item in items {
                let pe = item_element(&ty, item, names)?;
                path.push(pe);
                set.insert(path);
                if matches!(ty, ListType::Map(_)) {
                    walk_set(schema, item, path, names, set, include_maps)?;
                }
                path.pop();
            }
        }
        _ => set.insert(path),
    }
    Ok(())
}

/// `live.Merge(config)`: config wins on scalars and atomic values; granular maps merge by field,
/// list-maps by key and sets by value, keeping live's order and slotting in new items where the
/// config puts them.
pub fn merge(schema: Schema, live: &Value, config: &Value) -> Result<Value, String> {
    merge_at(schema, live, config, &mut Vec::new())
}

fn merge_at<'a>(
    schema: Schema,
    live: &'a Value,
    config: &'a Value,
    names: &mut Vec<&'a str>,
) -> Result<Value, String> {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !schema.atomic_map(names) => {
            let mut out = l.clone();
            for (k, cv) in c {
                names.push(k);
                let merged = match l.get(k) {
                    Some(lv) => merge_at(schema, lv, cv, names)?,
                    None => cv.clone(),
                };
                names.pop();
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Value::Array(l), Value::Array(c)) => {
            let ty = schema.list(names);
            if ty == ListType::Atomic {
                return Ok(config.clone());
            }
            let lkeys = l
                .iter()
                .map(|i| item_element(&ty, i, names))
                .collect::<Result<Vec<_>, _>>()?;
            let ckeys = c
                .iter()
                .map(|i| item_element(&ty, i, names))
                .collect::<Result<Vec<_>, _>>()?;
            check_unique(&ckeys, names)?;
            let lpos: BTreeMap<&PathElement, usize> =
                lkeys.iter().enumerate().map(|(i, k)| (k, i)).collect();
            let cpos: BTreeMap<&PathElement, usize> =
                ckeys.iter().enumerate().map(|(i, k)| (k, i)).collect();
            // A port of structured-merge-diff's `mergingWalker.visitListItems`: live-only items
            // stay where live has them, config items come in config order, and an item on both
            // sides is merged where the config puts it relative to the other shared items.
            let merge_item = |li: Option<usize>, ci: usize, names: &mut Vec<&'a str>| match li {
                Some(lj) if matches!(ty, ListType::Map(_)) => {
                    merge_at(schema, &l[lj], &c[ci], names)
                }
                _ => Ok(c[ci].clone()),
            };
            let mut shared = ckeys.iter().filter(|k| lpos.contains_key(k));
            let mut next_shared = shared.next();
            let mut out = Vec::new();
            let (mut li, mut ci) = (0, 0);
            while li < l.len() || ci < c.len() {
                if li < l.len() && ci < c.len() {
                    let pe = &lkeys[li];
                    if *pe == ckeys[ci] {
                        out.push(merge_item(Some(li), ci, names)?);
                        li += 1;
                        ci += 1;
                        next_shared = shared.next();
                        continue;
                    }
                    if cpos.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                        // A shared item, but not the one wanted in this round.
                        li += 1;
                        continue;
                    }
                }
                if li < l.len() && !cpos.contains_key(&lkeys[li]) {
                    out.push(l[li].clone());
                    li += 1;
                    continue;
                }
                if ci < c.len() {
                    let pe = &ckeys[ci];
                    out.push(merge_item(lpos.get(pe).copied(), ci, names)?);
                    ci += 1;
                    if next_shared == Some(pe) {
                        next_shared = shared.next();
                    }
                } else {
                    // Only shared live items already merged remain.
                    li += 1;
                }
            }
            Ok(Value::Array(out))
        }
        _ => Ok(config.clone()),
    }
}

fn check_unique(keys: &[PathElement], names: &[&str]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for k in keys {
        if !seen.insert(k) {
            return Err(format!(
                ".{}: duplicate entries for key {}",
                names.join("."),
                path_string(std::slice::from_ref(k))
            ));
        }
    }
    Ok(())
}

/// What changed from `old` to `new` (`TypedValue.Compare`): added subtrees (the subtree root and
/// everything in it), modified leaves and atomic values, removed subtrees.
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

pub fn compare(schema: Schema, old: &Value, new: &Value) -> Result<Comparison, String> {
    let mut c = Comparison::default();
    compare_at(schema, old, new, &mut Vec::new(), &mut Vec::new(), &mut c)?;
    Ok(c)
}

fn compare_at<'a>(
    schema: Schema,
    old: &'a Value,
    new: &'a Value,
    path: &mut Path,
    names: &mut Vec<&'a str>,
    c: &mut Comparison,
) -> Result<(), String> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) if !schema.atomic_map(names) => {
            for (k, nv) in n {
                path.push(PathElement::Field(k.clone()));
                names.push(k);
                match o.get(k) {
                    Some(ov) => compare_at(schema, ov, nv, path, names, c)?,
                    None => walk_set(schema, nv, path, names, &mut c.added, true)?,
                }
                names.pop();
                path.pop();
            }
            for (k, ov) in o {
                if !n.contains_key(k) {
                    path.push(PathElement::Field(k.clone()));
                    names.push(k);
                    walk_set(schema, ov, path, names, &mut c.removed, true)?;
                    names.pop();
                    path.pop();
                }
            }
        }
        (Value::Array(o), Value::Array(n)) if schema.list(names) != ListType::Atomic => {
            let ty = schema.list(names);
            let okeys: BTreeMap<PathElement, &Value> = o
                .iter()
                .map(|i| item_element(&ty, i, names).map(|k| (k, i)))
                .collect::<Result<_, _>>()?;
            let nkeys: BTreeMap<PathElement, &Value> = n
                .iter()
                .map(|i| item_element(&ty, i, names).map(|k| (k, i)))
                .collect::<Result<_, _>>()?;
            for (k, nv) in &nkeys {
                path.push(k.clone());
                match okeys.get(k) {
                    Some(ov) => {
                        if matches!(ty, ListType::Map(_)) {
                            compare_at(schema, ov, nv, path, names, c)?;
                        }
                    }
                    None => {
                        c.added.insert(path);
                        if matches!(ty, ListType::Map(_)) {
                            walk_set(schema, nv, path, names, &mut c.added, true)?;
                        }
                    }
                }
                path.pop();
            }
            for (k, ov) in &okeys {
                if !nkeys.contains_key(k) {
                    path.push(k.clone());
                    c.removed.insert(path);
                    if matches!(ty, ListType::Map(_)) {
                        walk_set(schema, ov, path, names, &mut c.removed, true)?;
                    }
                    path.pop();
                }
            }
        }
        _ => {
            if old != new {
                c.modified.insert(path);
            }
        }
    }
    Ok(())
}

/// Removes the value at `path` (if present). Returns whether something was removed.
pub fn remove_path(schema: Schema, v: &mut Value, path: &[PathElement]) -> bool {
    remove_at(schema, v, path, &mut Vec::new())
}

fn remove_at(schema: Schema, v: &mut Value, path: &[PathElement], names: &mut Vec<String>) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match (v, first) {
        (Value::Object(m), PathElement::Field(f)) => {
            if rest.is_empty() {
                return m.remove(f).is_some();
            }
            let Some(child) = m.get_mut(f) else {
                return false;
            };
            names.push(f.clone());
            let removed = remove_at(schema, child, rest, names);
            names.pop();
            // Pruning the last entry of a map leaves no empty map behind (Go's `omitempty`).
            if removed && matches!(child, Value::Object(c) if c.is_empty()) {
                m.remove(f);
            }
            removed
        }
        (Value::Array(items), pe @ (PathElement::Key(_) | PathElement::Value(_))) => {
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let ty = schema.list(&name_refs);
            let Some(idx) = items
                .iter()
                .position(|i| item_element(&ty, i, &name_refs).ok().as_ref() == Some(pe))
            else {
                return false;
            };
            if rest.is_empty() {
                items.remove(idx);
                return true;
            }
            remove_at(schema, &mut items[idx], rest, names)
        }
        _ => false,
    }
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Manager {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    pub set: FieldSet,
}

impl Manager {
    pub fn same_identity(&self, other: &Manager) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == "Apply" || self.api_version == other.api_version)
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> Option<Manager> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Manager {
            manager: s("manager").unwrap_or_default(),
            operation: s("operation")?,
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time"),
            subresource: s("subresource").unwrap_or_default(),
            set: v
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }
}

/// The managers of an object in apiserver order (`sortEncodedManagedFields`: operation, then time,
/// then manager, apiVersion, subresource).
pub fn sort_managers(ms: &mut [Manager]) {
    ms.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| p.time.cmp(&q.time))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
}

/// An apply conflict: the other manager's entry (name, operation, version, time, subresource)
/// and the path.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    pub manager: Manager,
    pub path: Path,
}

/// The apiserver's `printManager` (fieldmanager/internal/conflict.go): `"name"`, plus
/// ` with subresource "status"`, plus ` using <apiVersion> at <RFC 3339 time>` for Update managers.
pub fn print_manager(m: &Manager) -> String {
    let mut s = format!("{:?}", m.manager);
    if !m.subresource.is_empty() {
        s.push_str(&format!(" with subresource {:?}", m.subresource));
    }
    if m.operation == "Update" {
        match &m.time {
            Some(t) => s.push_str(&format!(" using {} at {t}", m.api_version)),
            None => s.push_str(&format!(" using {}", m.api_version)),
        }
    }
    s
}

/// `Updater.update`: computes conflicts of the change `old → new` with every manager other than
/// `workflow`, and (with `force`, or for non-apply writes) takes the changed paths away from them.
fn update_managers(
    schema: Schema,
    old: &Value,
    new: &Value,
    managers: &mut Vec<Manager>,
    workflow: &Manager,
    force: bool,
    ignored: &dyn Fn(&FieldSet) -> FieldSet,
) -> Result<Comparison, Vec<Conflict>> {
    let mut cmp = compare(schema, old, new).map_err(|_| Vec::new())?;
    cmp.added = ignored(&cmp.added);
    cmp.modified = ignored(&cmp.modified);
    cmp.removed = ignored(&cmp.removed);
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    for m in managers.iter() {
        if m.same_identity(workflow) {
            continue;
        }
        for p in m.set.intersection(&changed).paths() {
            conflicts.push(Conflict {
                manager: m.clone(),
                path: p,
            });
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(conflicts);
    }
    for m in managers.iter_mut() {
        if m.same_identity(workflow) {
            continue;
        }
        m.set = m.set.difference(&changed).difference(&cmp.removed);
    }
    managers.retain(|m| !m.set.is_empty() || m.same_identity(workflow));
    Ok(cmp)
}

/// The outcome of an apply or update: the new object (without managedFields) and managers.
pub struct Outcome {
    pub object: Value,
    pub managers: Vec<Manager>,
}

/// Errors of [`apply`].
#[derive(Debug)]
pub enum ApplyError {
    Conflicts(Vec<Conflict>),
    Invalid(String),
}

/// `Updater.Apply`. `live` and `config` carry no managedFields; `ignored` strips the paths the
/// apiserver never tracks (apiVersion, kind, server-owned metadata, status on the main resource).
pub fn apply(
    schema: Schema,
    live: &Value,
    config: &Value,
    mut managers: Vec<Manager>,
    applier: Manager,
    force: bool,
    ignored: &dyn Fn(&FieldSet) -> FieldSet,
) -> Result<Outcome, ApplyError> {
    let mut merged = merge(schema, live, config).map_err(ApplyError::Invalid)?;
    let new_set = ignored(&to_field_set(schema, config).map_err(ApplyError::Invalid)?);
    let last_set = managers
        .iter()
        .find(|m| m.same_identity(&applier))
        .map(|m| m.set.clone())
        .unwrap_or_default();
    // prune: what the applier owned before and no longer claims, and no one else owns, goes.
    let mut others = FieldSet::new();
    for m in managers.iter().filter(|m| !m.same_identity(&applier)) {
        others = others.union(&m.set);
    }
    let owned = others.union(&new_set);
    for p in last_set.difference(&owned).paths() {
        // addBackOwnedItems: a list item or map whose descendants someone owns stays.
        if owned.has_descendants(&p) {
            continue;
        }
        remove_path(schema, &mut merged, &p);
    }
    let mut entry = applier;
    entry.set = new_set;
    if let Some(existing) = managers.iter_mut().find(|m| m.same_identity(&entry)) {
        entry.time = existing.time.clone();
        *existing = entry.clone();
    } else {
        managers.push(entry.clone());
    }
    update_managers(schema, live, &merged, &mut managers, &entry, force, ignored)
        .map_err(ApplyError::Conflicts)?;
    managers.retain(|m| !m.set.is_empty());
    Ok(Outcome {
        object: merged,
        managers,
    })
}

/// `Updater.Update`: a non-apply write never conflicts; the writer gains what it added or modified
/// and everyone else loses it.
pub fn update(
    schema: Schema,
    live: &Value,
    new: &Value,
    mut managers: Vec<Manager>,
    writer: Manager,
    ignored: &dyn Fn(&FieldSet) -> FieldSet,
) -> Result<Vec<Manager>, String> {
    let cmp = update_managers(schema, live, new, &mut managers, &writer, true, ignored)
        .map_err(|_| "internal error comparing objects".to_string())?;
    let prev = managers
        .iter()
        .find(|m| m.same_identity(&writer))
        .map(|m| m.set.clone())
        .unwrap_or_default();
    let set = prev
        .difference(&cmp.removed)
        .union(&cmp.modified)
        .union(&cmp.added);
    let mut entry = writer;
    entry.set = set;
    if let Some(existing) = managers.iter_mut().find(|m| m.same_identity(&entry)) {
        entry.time = existing.time.clone();
        *existing = entry;
    } else {
        managers.push(entry);
    }
    managers.retain(|m| !m.set.is_empty());
    Ok(managers)
}

/// The Status message of an apply conflict (`getConflictMessage`): one conflict reads
/// `Apply failed with 1 conflict: conflict with "x": .data.a`; several are grouped by manager
/// (sorted) as `conflicts with "x":` followed by `- <path>` lines.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&c.manager),
            path_string(&c.path)
        );
    }
    let mut by_manager: BTreeMap<String, Vec<&Conflict>> = BTreeMap::new();
    for c in conflicts {
        by_manager
            .entry(c.manager.manager.clone())
            .or_default()
            .push(c);
    }
    let mut lines = Vec::new();
    for cs in by_manager.values() {
        lines.push(format!("conflicts with {}:", print_manager(&cs[0].manager)));
        for c in cs {
            lines.push(format!("- {}", path_string(&c.path)));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: &Value) -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|i| i["name"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// List-map merge order as structured-merge-diff's `visitListItems` produces it.
    #[test]
    fn list_merge_order_against_fake_apiserver_merge() {
        let schema = Schema {
            group: "",
            kind: "Pod",
        };
        let merge_names = |live: Value, config: Value| {
            let l = json!({"spec": {"containers": live}});
            let c = json!({"spec": {"containers": config}});
            names(&merge(schema, &l, &c).unwrap()["spec"]["containers"])
        };
        let n = |xs: &[&str]| json!(xs.iter().map(|x| json!({"name": x})).collect::<Vec<_>>());
        assert_eq!(
            merge_names(n(&["a", "x", "b"]), n(&["b", "a"])),
            ["x", "b", "a"]
        );
        assert_eq!(merge_names(n(&["a", "b"]), n(&["b", "a"])), ["b", "a"]);
        assert_eq!(merge_names(n(&["a", "b"]), n(&["c"])), ["a", "b", "c"]);
        assert_eq!(merge_names(n(&["a", "b"]), n(&["c", "b"])), ["a", "c", "b"]);
        assert_eq!(merge_names(n(&["b", "a"]), n(&["a"])), ["b", "a"]);
    }
}
