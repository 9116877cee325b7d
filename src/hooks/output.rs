//! What a hook writes back: values patches, metrics and kubernetes
//! operations, parsed and validated as addon-operator and shell-operator do
//! before anything is applied.
//!
//! - Values patches (`VALUES_JSON_PATCH_PATH`, `CONFIG_VALUES_JSON_PATCH_PATH`)
//!   are read and checked by [`crate::values::patch`] (`ValuesPatch::
//!   from_json_stream`, `validate_hook_patch`); [`PatchTarget`] names them.
//! - Metrics (`METRICS_PATH`): shell-operator `MetricOperationsFromReader`
//!   and `ValidateMetricOperation`.
//! - Kubernetes operations (`KUBERNETES_PATCH_PATH`): shell-operator
//!   `object_patch.ParseOperations`: a JSON stream of operation specs, else a
//!   YAML stream, each checked against its schema's rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::jq::JqFilter;

/// Which values a patch targets, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchTarget {
    /// `VALUES_JSON_PATCH_PATH`: values kept in memory.
    Values,
    /// `CONFIG_VALUES_JSON_PATCH_PATH`: config values, written to the ConfigMap.
    ConfigValues,
}

impl PatchTarget {
    pub fn describe(self) -> &'static str {
        match self {
            PatchTarget::Values => "values",
            PatchTarget::ConfigValues => "config values",
        }
    }
}

// ---- metrics -------------------------------------------------------------------

/// One metric operation (shell-operator `MetricOperation`), after the
/// `set`/`add` shortcuts are turned into `action` + `value`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricOperation {
    pub name: String,
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<f64>>,
    pub labels: BTreeMap<String, String>,
    /// The group; the hook's name when the hook gave none.
    pub group: String,
}

#[derive(Deserialize)]
struct RawMetric {
    #[serde(default)]
    name: String,
    add: Option<f64>,
    set: Option<f64>,
    value: Option<f64>,
    buckets: Option<Vec<f64>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    group: String,
    #[serde(default)]
    action: String,
}

/// Parses and validates `METRICS_PATH` content (JSON objects, one after
/// another). `hook_name` is the default group, as in addon-operator.
pub fn parse_metrics(text: &str, hook_name: &str) -> Result<Vec<MetricOperation>, String> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for item in serde_json::Deserializer::from_str(text).into_iter::<RawMetric>() {
        let m = item.map_err(|e| e.to_string())?;
        let mut action = m.action.clone();
        let mut value = m.value;
        if m.set.is_some() && m.add.is_none() {
            action = "set".into();
            value = m.set;
        }
        if m.add.is_some() && m.set.is_none() {
            action = "add".into();
            value = m.add;
        }
        let explicit_group = !m.group.is_empty();
        let desc = format!(
            "[{}name={}, action={}]",
            if explicit_group {
                format!("group={}, ", m.group)
            } else {
                String::new()
            },
            m.name,
            action
        );
        // ValidateMetricOperation. The group rule is applied to the group the
        // hook wrote: the default group (the hook name) is filled in after.
        if action.is_empty() {
            errors.push(format!(
                "one of: 'action', 'set' or 'add' is required: {desc}"
            ));
        } else {
            let allowed: &[&str] = if explicit_group {
                &["expire", "set", "add"]
            } else {
                &["set", "add", "observe"]
            };
            if !allowed.contains(&action.as_str()) {
                errors.push(format!("unsupported action '{action}': {desc}"));
            }
        }
        if m.name.is_empty() && !explicit_group {
            errors.push(format!("'name' is required: {desc}"));
        }
        if m.name.is_empty() && explicit_group && action != "expire" {
            errors.push(format!(
                "'name' is required when action is not 'expire': {desc}"
            ));
        }
        if matches!(action.as_str(), "set" | "add" | "observe") && value.is_none() {
            errors.push(format!("'value' is required for action '{action}': {desc}"));
        }
        if action == "observe" && m.buckets.is_none() {
            errors.push(format!(
                "'buckets' is required for action 'observe': {desc}"
            ));
        }
        if m.set.is_some() && m.add.is_some() {
            errors.push(format!("'set' and 'add' are mutual exclusive: {desc}"));
        }
        out.push(MetricOperation {
            name: m.name,
            action,
            value,
            buckets: m.buckets,
            labels: m.labels.unwrap_or_default(),
            group: if explicit_group {
                m.group
            } else {
                hook_name.to_string()
            },
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("; "))
    }
}

// ---- kubernetes operations ---------------------------------------------------

/// The object a delete or patch operation addresses.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// How a create operation treats an existing object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CreateMode {
    /// `Create`: an existing object is an error.
    Create,
    /// `CreateOrUpdate`: update an existing object.
    CreateOrUpdate,
    /// `CreateIfNotExists`: leave an existing object alone.
    CreateIfNotExists,
}

/// Deletion propagation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DeleteMode {
    /// `Delete`: foreground, waits for the object to go.
    Foreground,
    /// `DeleteInBackground`.
    Background,
    /// `DeleteNonCascading`: orphans dependents.
    NonCascading,
}

/// A patch body.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum PatchBody {
    /// `JQPatch`: a jq program run on the current object.
    Jq(JqFilter),
    /// `MergePatch`: RFC 7386.
    Merge(Value),
    /// `JSONPatch`: RFC 6902.
    Json(Value),
}

/// A kubernetes operation a hook asked for (executed later by the operator).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum KubeOperation {
    Create {
        mode: CreateMode,
        object: Value,
        subresource: Option<String>,
    },
    Delete {
        mode: DeleteMode,
        target: ObjectRef,
        subresource: Option<String>,
    },
    Patch {
        target: ObjectRef,
        body: PatchBody,
        subresource: Option<String>,
        ignore_missing_object: bool,
        ignore_hook_error: bool,
    },
}

const SPEC_KEYS: &[&str] = &[
    "operation",
    "namespace",
    "subresource",
    "apiVersion",
    "kind",
    "name",
    "object",
    "jsonPatch",
    "jqFilter",
    "mergePatch",
    "ignoreMissingObject",
    "ignoreHookError",
];

/// Parses `KUBERNETES_PATCH_PATH` content: a JSON stream of operation specs,
/// or (if that fails) YAML documents. Stops at the first invalid spec, as
/// shell-operator's `ParseOperations` does.
pub fn parse_kube_operations(text: &str) -> Result<Vec<KubeOperation>, String> {
    let specs: Vec<Value> = match serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(v) => v,
        Err(json_err) => yaml_stream(text)
            .map_err(|e| format!("neither a JSON stream ({json_err}) nor YAML documents ({e})"))?,
    };
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| convert_spec(s).map_err(|e| format!("operation [{i}]: {e}")))
        .collect()
}

fn yaml_stream(text: &str) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    let mut flush = |cur: &mut String| -> Result<(), String> {
        if !cur.trim().is_empty() {
            let y = crate::yaml::from_yaml(cur).map_err(|e| e.0)?;
            let v = super::config::yaml_to_json(&y);
            if !v.is_null() {
                docs.push(v);
            }
        }
        cur.clear();
        Ok(())
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut cur)?;
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    flush(&mut cur)?;
    Ok(docs)
}

fn convert_spec(spec: &Value) -> Result<KubeOperation, String> {
    let Value::Object(m) = spec else {
        return Err(format!("an operation must be an object, got {spec}"));
    };
    for k in m.keys() {
        if !SPEC_KEYS.contains(&k.as_str()) {
            return Err(format!("{k} is a forbidden property"));
        }
    }
    let s = |k: &str| -> Result<Option<String>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(format!("{k} must be of type string: {v}")),
        }
    };
    let b = |k: &str| -> Result<bool, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(format!("{k} must be of type boolean: {v}")),
        }
    };
    let subresource = s("subresource")?.filter(|x| !x.is_empty());
    let operation = s("operation")?.ok_or("operation is required")?;
    let target = || -> Result<ObjectRef, String> {
        let kind = s("kind")?
            .filter(|x| !x.is_empty())
            .ok_or("kind is required")?;
        let name = s("name")?
            .filter(|x| !x.is_empty())
            .ok_or("name is required")?;
        Ok(ObjectRef {
            api_version: s("apiVersion")?.unwrap_or_default(),
            kind,
            namespace: s("namespace")?.unwrap_or_default(),
            name,
        })
    };
    // An object or patch given as a string is YAML/JSON text of it.
    let object_or_text = |k: &str, v: &Value| -> Result<Value, String> {
        match v {
            Value::String(t) => crate::yaml::from_yaml(t)
                .map(|y| super::config::yaml_to_json(&y))
                .map_err(|e| format!("{k}: {}", e.0)),
            other => Ok(other.clone()),
        }
    };
    let create = |mode| -> Result<KubeOperation, String> {
        let raw = m.get("object").ok_or("object is required")?;
        let object = object_or_text("object", raw)?;
        match &object {
            Value::Object(o) if !o.is_empty() => {}
            _ => return Err(format!("object must be a non-empty object: {raw}")),
        }
        Ok(KubeOperation::Create {
            mode,
            object,
            subresource: subresource.clone(),
        })
    };
    let delete = |mode| -> Result<KubeOperation, String> {
        Ok(KubeOperation::Delete {
            mode,
            target: target()?,
            subresource: subresource.clone(),
        })
    };
    let patch = |body| -> Result<KubeOperation, String> {
        Ok(KubeOperation::Patch {
            target: target()?,
            body,
            subresource: subresource.clone(),
            ignore_missing_object: b("ignoreMissingObject")?,
            ignore_hook_error: b("ignoreHookError")?,
        })
    };
    match operation.as_str() {
        "Create" => create(CreateMode::Create),
        "CreateOrUpdate" => create(CreateMode::CreateOrUpdate),
        "CreateIfNotExists" => create(CreateMode::CreateIfNotExists),
        "Delete" => delete(DeleteMode::Foreground),
        "DeleteInBackground" => delete(DeleteMode::Background),
        "DeleteNonCascading" => delete(DeleteMode::NonCascading),
        "JQPatch" => {
            let code = s("jqFilter")?
                .filter(|x| !x.is_empty())
                .ok_or("jqFilter is required")?;
            let f = JqFilter::compile(&code).map_err(|e| format!("jqFilter: {e}"))?;
            patch(PatchBody::Jq(f))
        }
        "MergePatch" => {
            let raw = m.get("mergePatch").ok_or("mergePatch is required")?;
            let body = object_or_text("mergePatch", raw)?;
            match &body {
                Value::Object(o) if !o.is_empty() => {}
                _ => return Err(format!("mergePatch must be a non-empty object: {raw}")),
            }
            patch(PatchBody::Merge(body))
        }
        "JSONPatch" => {
            let raw = m.get("jsonPatch").ok_or("jsonPatch is required")?;
            let body = object_or_text("jsonPatch", raw)?;
            let Value::Array(items) = &body else {
                return Err(format!("jsonPatch must be an array: {raw}"));
            };
            if items.is_empty() {
                return Err("jsonPatch must have at least 1 item".into());
            }
            serde_json::from_value::<json_patch::Patch>(body.clone())
                .map_err(|e| format!("jsonPatch: {e}"))?;
            patch(PatchBody::Json(body))
        }
        other => Err(format!(
            "operation should be one of [Create CreateOrUpdate CreateIfNotExists Delete DeleteInBackground DeleteNonCascading JQPatch MergePatch JSONPatch], got '{other}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metric_shortcuts_and_rules() {
        let m = parse_metrics(
            "{\"name\":\"a\",\"set\":2}{\"name\":\"b\",\"add\":1,\"labels\":{\"x\":\"y\"}}",
            "hooks/h",
        )
        .unwrap();
        assert_eq!(
            (m[0].action.as_str(), m[0].value, m[0].group.as_str()),
            ("set", Some(2.0), "hooks/h")
        );
        assert_eq!(m[1].labels["x"], "y");
        let err = |s: &str| parse_metrics(s, "h").unwrap_err();
        assert_eq!(
            err("{\"name\":\"a\"}"),
            "one of: 'action', 'set' or 'add' is required: [name=a, action=]"
        );
        assert_eq!(
            err("{\"name\":\"a\",\"action\":\"set\"}"),
            "'value' is required for action 'set': [name=a, action=set]"
        );
        assert_eq!(
            err("{\"action\":\"add\",\"value\":1}"),
            "'name' is required: [name=, action=add]"
        );
        assert_eq!(
            err(
                "{\"group\":\"g\",\"name\":\"a\",\"action\":\"observe\",\"value\":1,\"buckets\":[1]}"
            ),
            "unsupported action 'observe': [group=g, name=a, action=observe]"
        );
        assert!(
            err("{\"name\":\"a\",\"value\":\"1\",\"action\":\"set\"}").contains("invalid type")
        );
    }

    #[test]
    fn kube_operations_yaml_and_strings() {
        let ops = parse_kube_operations(
            "operation: Create\nobject: |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n---\noperation: DeleteNonCascading\nkind: Pod\nname: p\n",
        )
        .unwrap();
        assert!(
            matches!(&ops[0], KubeOperation::Create { mode: CreateMode::Create, object, .. } if object["kind"] == json!("ConfigMap"))
        );
        assert!(
            matches!(&ops[1], KubeOperation::Delete { mode: DeleteMode::NonCascading, target, .. } if target.name == "p")
        );
        let err = |s: &str| parse_kube_operations(s).unwrap_err();
        assert_eq!(
            err("{\"operation\":\"Create\"}"),
            "operation [0]: object is required"
        );
        assert_eq!(
            err("{\"operation\":\"Create\",\"object\":{}}"),
            "operation [0]: object must be a non-empty object: {}"
        );
        assert_eq!(
            err("{\"operation\":\"JQPatch\",\"kind\":\"A\",\"name\":\"b\"}"),
            "operation [0]: jqFilter is required"
        );
        assert!(
            err("{\"operation\":\"JQPatch\",\"kind\":\"A\",\"name\":\"b\",\"jqFilter\":\".a |\"}")
                .starts_with("operation [0]: jqFilter: expected")
        );
        assert_eq!(
            err("{\"operation\":\"JSONPatch\",\"kind\":\"A\",\"name\":\"b\",\"jsonPatch\":[]}"),
            "operation [0]: jsonPatch must have at least 1 item"
        );
        assert_eq!(
            err("{\"operation\":\"Delete\",\"kind\":\"A\",\"name\":\"b\",\"extra\":1}"),
            "operation [0]: extra is a forbidden property"
        );
        assert!(
            err("{\"operation\":\"Apply\"}")
                .starts_with("operation [0]: operation should be one of")
        );
        assert!(parse_kube_operations("").unwrap().is_empty());
    }
}
