//! Values JSON patches: what hooks write to `VALUES_JSON_PATCH_PATH`, and how
//! addon-operator checks, applies and keeps them (`pkg/utils/values_patch.go`,
//! `pkg/utils/jsonpatch.go`, module-sdk's `ValuesPatchOperation`).
//!
//! Rules, each from the Go function named:
//! - The file is a JSON stream of RFC 6902 operations: arrays of operations
//!   and single operation objects, in any mix; other JSON values in the stream
//!   are skipped; an empty file is no patch (`JsonPatchFromReader`,
//!   `ValuesPatchFromFile`).
//! - An operation keeps only `op`, `path` and `value` (module-sdk
//!   `ValuesPatchOperation`), so `move` and `copy` always fail for want of
//!   `from`.
//! - `replace` is refused, and a hook may only touch its own root: `/global`
//!   for global hooks (which may also set `/<camelName>Enabled` flags),
//!   `/<camelName>` for module hooks (`ValidateHookValuesPatch`).
//! - A hook's patch is first applied strictly to the current values (an
//!   error fails the hook); the accumulated patches are then re-applied over
//!   the merged values on every recalculation, where a `remove` of a missing
//!   path is ignored (`ApplyValuesPatch` with `Strict` /
//!   `IgnoreNonExistentPaths`).
//! - Patches accumulate compacted: only the last operation per path is kept,
//!   an `add` or `remove` drops earlier operations below its path, and the
//!   result is sorted by path (`CompactPatches`).
//!
//! Operations are applied with the `json-patch` crate, one at a time so that
//! failures can be reported with evanphx/json-patch's wording.

use super::convert::Values;
use super::names::{ENABLED_SUFFIX, GLOBAL_VALUES_KEY};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation, TestOperation};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One operation (module-sdk `ValuesPatchOperation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatchOp {
    pub op: String,
    pub path: String,
    /// Absent and `null` are different: absent is Go's nil `RawMessage`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub value: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl PatchOp {
    /// An `add` operation.
    pub fn add(path: impl Into<String>, value: Value) -> PatchOp {
        PatchOp {
            op: "add".into(),
            path: path.into(),
            value: Some(value),
        }
    }

    /// A `remove` operation.
    pub fn remove(path: impl Into<String>) -> PatchOp {
        PatchOp {
            op: "remove".into(),
            path: path.into(),
            value: None,
        }
    }

    /// `ValuesPatchOperation.ToString`: just the value as compact JSON
    /// (`null` when absent) — this is what addon-operator's errors quote.
    pub fn to_go_string(&self) -> String {
        self.value
            .as_ref()
            .map_or_else(|| "null".to_string(), Value::to_string)
    }

    /// The first path segment (`strings.Split(path, "/")[1]`), if any.
    fn root_key(&self) -> Option<&str> {
        self.path.split('/').nth(1)
    }
}

/// A list of operations (`utils.ValuesPatch`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValuesPatch {
    pub operations: Vec<PatchOp>,
}

/// A patch file or operation that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchParseError(pub String);

impl ValuesPatch {
    /// `ValuesPatchFromBytes`: a JSON stream of operations and arrays of
    /// operations. Errors carry the data, as Go's do ("bad json-patch data:
    /// …" then a newline and the data). Empty input is an empty patch
    /// (`ValuesPatchFromFile` returns nil for an empty file).
    pub fn from_json_stream(data: &str) -> Result<ValuesPatch, PatchParseError> {
        let mut operations = Vec::new();
        let stream = serde_json::Deserializer::from_str(data).into_iter::<Value>();
        for item in stream {
            let item = item.map_err(|e| {
                // encoding/json's Decoder says "unexpected EOF" for a
                // truncated value; other syntax errors keep serde's wording.
                let msg = if e.is_eof() {
                    "unexpected EOF".to_string()
                } else {
                    e.to_string()
                };
                PatchParseError(format!("bad json-patch data: {msg}\n{data}"))
            })?;
            match item {
                Value::Array(items) => {
                    for it in items {
                        operations.push(decode_op(it, data)?);
                    }
                }
                obj @ Value::Object(_) => operations.push(decode_op(obj, data)?),
                _ => {}
            }
        }
        Ok(ValuesPatch { operations })
    }

    /// The operations as a JSON array (what Go's `json.Marshal(ops)` writes).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.operations).unwrap_or_else(|_| "[]".into())
    }

    /// `FilterValuesPatch`: the operations whose first path segment is `root`.
    pub fn filter_root(&self, root: &str) -> ValuesPatch {
        ValuesPatch {
            operations: self
                .operations
                .iter()
                .filter(|op| op.root_key() == Some(root))
                .cloned()
                .collect(),
        }
    }

    /// `EnabledFromValuesPatch`: the operations on `/<camelName>Enabled` keys.
    pub fn enabled_operations(&self) -> ValuesPatch {
        ValuesPatch {
            operations: self
                .operations
                .iter()
                .filter(|op| op.root_key().is_some_and(|k| k.ends_with(ENABLED_SUFFIX)))
                .cloned()
                .collect(),
        }
    }

    /// True when there are no operations.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }
}

fn decode_op(v: Value, data: &str) -> Result<PatchOp, PatchParseError> {
    let Value::Object(map) = &v else {
        return Err(PatchParseError(format!(
            "bad json-patch data: unmarshal operation from bytes: json: cannot unmarshal {} into Go value of type utils.Operation\n{data}",
            kind_name(&v)
        )));
    };
    for field in ["op", "path"] {
        if let Some(f) = map.get(field)
            && !f.is_string()
            && !f.is_null()
        {
            return Err(PatchParseError(format!(
                "values patch operations: json: cannot unmarshal {} into Go struct field ValuesPatchOperation.{field} of type string\n{data}",
                kind_name(f)
            )));
        }
    }
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Ok(PatchOp {
        op: text("op"),
        path: text("path"),
        value: map.get("value").cloned(),
    })
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whose patch it is: which root it may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchScope {
    /// A global hook: `/global/…` and `/<camelName>Enabled`.
    Global,
    /// A module hook: `/<camelName>/…` only (the values key, not the name).
    Module(String),
}

impl PatchScope {
    /// The permitted root key.
    pub fn root(&self) -> &str {
        match self {
            PatchScope::Global => GLOBAL_VALUES_KEY,
            PatchScope::Module(key) => key,
        }
    }
}

/// `ValidateHookValuesPatch`: no `replace`; every path under the permitted
/// root (global hooks may also patch `*Enabled` keys). A path without a
/// second segment (`""`) is not checked, as in Go.
pub fn validate_hook_patch(patch: &ValuesPatch, scope: &PatchScope) -> Result<(), String> {
    let permitted = scope.root();
    for op in &patch.operations {
        if op.op == "replace" {
            return Err(format!(
                "unsupported patch operation '{}': '{}'",
                op.op,
                op.to_go_string()
            ));
        }
        let Some(root) = op.root_key() else { continue };
        if root == permitted {
            continue;
        }
        if root.ends_with(ENABLED_SUFFIX) && *scope == PatchScope::Global {
            continue;
        }
        let permitted_message = if *scope == PatchScope::Global {
            format!("only '{permitted}' and '*Enabled' are permitted")
        } else {
            format!("only '{permitted}' accepted")
        };
        return Err(format!(
            "unacceptable patch operation for path '{root}' ({permitted_message}): '{}'",
            op.to_go_string()
        ));
    }
    Ok(())
}

/// How missing paths are treated (`utils.ApplyPatchMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyMode {
    /// Every failure is an error (a hook's fresh patch).
    Strict,
    /// A `remove` of a missing path is skipped (re-applying stored patches).
    IgnoreNonExistentPaths,
}

/// `utils.ApplyValuesPatch`: a patched copy of `values`, and whether it
/// differs from `values`. Errors are evanphx/json-patch's texts.
pub fn apply_patch(
    values: &Values,
    patch: &ValuesPatch,
    mode: ApplyMode,
) -> Result<(Values, bool), String> {
    if patch.operations.is_empty() {
        return Ok((values.clone(), false));
    }
    let mut doc = Value::Object(values.clone());
    for op in &patch.operations {
        match apply_op(&mut doc, op) {
            Ok(()) => {}
            Err(OpError::Missing(_))
                if mode == ApplyMode::IgnoreNonExistentPaths && op.op == "remove" => {}
            Err(e) => return Err(e.text()),
        }
    }
    let Value::Object(res) = doc else {
        return Err("json: cannot unmarshal into Go value of type utils.Values".into());
    };
    let changed = res != *values;
    Ok((res, changed))
}

enum OpError {
    /// A path that does not exist (the errors `IsNonExistentPathError` knows).
    Missing(String),
    Other(String),
}

impl OpError {
    fn text(self) -> String {
        match self {
            OpError::Missing(t) | OpError::Other(t) => t,
        }
    }
}

/// evanphx/json-patch's `findObject` succeeds when every segment before the
/// last names an existing map or list.
fn parent_exists(doc: &Value, path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let segs: Vec<&str> = rest.split('/').collect();
    let mut cur = doc;
    for seg in &segs[..segs.len() - 1] {
        let key = seg.replace("~1", "/").replace("~0", "~");
        let next = match cur {
            Value::Object(m) => m.get(&key),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(v @ (Value::Object(_) | Value::Array(_))) => cur = v,
            _ => return false,
        }
    }
    true
}

fn last_key(path: &str) -> String {
    path.rsplit('/')
        .next()
        .unwrap_or("")
        .replace("~1", "/")
        .replace("~0", "~")
}

fn apply_op(doc: &mut Value, op: &PatchOp) -> Result<(), OpError> {
    let path = &op.path;
    let value = op.value.clone().unwrap_or(Value::Null);
    let kind = op.op.as_str();
    match kind {
        "add" | "remove" | "replace" | "test" => {}
        "move" | "copy" => {
            return Err(OpError::Other(format!(
                "{kind} operation failed to decode from: operation, missing from field: missing value"
            )));
        }
        other => return Err(OpError::Other(format!("unexpected kind: {other}"))),
    }
    if !parent_exists(doc, path) {
        let msg = match kind {
            "add" | "remove" => format!(
                "{kind} operation does not apply: doc is missing path: \"{path}\": missing value"
            ),
            "replace" => format!(
                "replace operation does not apply: doc is missing path: {path}: missing value"
            ),
            _ => format!("test operation does not apply: is missing path: {path}: missing value"),
        };
        return Err(OpError::Missing(msg));
    }
    let Ok(pointer) = PointerBuf::parse(path.as_str()) else {
        return Err(OpError::Other(format!(
            "{kind} operation does not apply: doc is missing path: \"{path}\": missing value"
        )));
    };
    let operation = match kind {
        "add" => PatchOperation::Add(AddOperation {
            path: pointer,
            value,
        }),
        "remove" => PatchOperation::Remove(RemoveOperation { path: pointer }),
        "replace" => PatchOperation::Replace(ReplaceOperation {
            path: pointer,
            value,
        }),
        _ => PatchOperation::Test(TestOperation {
            path: pointer,
            value,
        }),
    };
    json_patch::patch(doc, &[operation]).map_err(|e| match kind {
        "remove" => OpError::Missing(format!(
            "error in remove for path: '{path}': Unable to remove nonexistent key: {}: missing value",
            last_key(path)
        )),
        "replace" => OpError::Other(format!(
            "replace operation does not apply: doc is missing key: {path}: missing value"
        )),
        "test" => OpError::Other(format!("testing value {path} failed: test failed")),
        _ => OpError::Other(format!("error in add for path: '{path}': {}", e.kind)),
    })
}

/// `CompactPatches`: `existing` followed by `new`, keeping only the last
/// operation per path, dropping earlier operations below a path that a new
/// `add` or `remove` sets, sorted by path (bytewise, Go's sort.Strings).
pub fn compact(existing: &[PatchOp], new: &[PatchOp]) -> Vec<PatchOp> {
    let mut tree: std::collections::BTreeMap<String, Vec<PatchOp>> =
        std::collections::BTreeMap::new();
    for op in existing {
        tree.entry(op.path.clone()).or_default().push(op.clone());
    }
    for op in new {
        if op.op == "remove" || op.op == "add" {
            let prefix = format!("{}/", op.path);
            tree.retain(|p, _| !(p.len() > op.path.len() && p.starts_with(&prefix)));
        }
        tree.insert(op.path.clone(), vec![op.clone()]);
    }
    tree.into_values().flatten().collect()
}
