//! The OpenAPI schemas shell-operator validates `hook --config` output with
//! (`pkg/hook/config/schemas.go`, versions v0 and v1), plus addon-operator's
//! additions (`getGlobalHookConfigSchema`/`getModuleHookConfigSchema` in
//! `models/hooks/kind/shellhook.go`): `beforeAll`/`afterAll` for global hooks,
//! `beforeHelm`/`afterHelm`/`beforeDeleteHelm`/`afterDeleteHelm` for module
//! hooks. Validated with `jsonschema` as Draft 4 (go-openapi's dialect); the
//! error texts follow go-openapi's ("kubernetes[0].kind in body is required")
//! with array indices added so the field is unambiguous.

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Value, json};

use super::HookKind;

fn name_selector() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["matchNames"],
        "properties": {"matchNames": {"type": "array", "items": {"type": "string"}}}
    })
}

fn label_selector() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "minProperties": 1, "maxProperties": 2,
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            "matchExpressions": {
                "type": "array",
                "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        }
    })
}

fn field_selector() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["matchExpressions"],
        "properties": {
            "matchExpressions": {
                "type": "array",
                "items": {
                    "type": "object", "additionalProperties": false,
                    "minProperties": 3, "maxProperties": 3,
                    "properties": {
                        "field": {"type": "string"},
                        "operator": {"type": "string", "enum": ["=", "==", "Equals", "!=", "NotEquals"]},
                        "value": {"type": "string"}
                    }
                }
            }
        }
    })
}

fn kubernetes_item() -> Value {
    json!({
                "type": "object", "additionalProperties": false, "required": ["kind"],
                "patternProperties": {
                    "^(watchEvent|executeHookOnEvent)$": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["Added", "Modified", "Deleted"]}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "includeSnapshotsFrom": snapshots_list(),
                    "queue": {"type": "string"},
                    "jqFilter": {"type": "string"},
                    "keepFullObjectsInMemory": {"type": "boolean"},
                    "allowFailure": {"type": "boolean"},
                    "executeHookOnSynchronization": {"type": "boolean"},
                    "waitForSynchronization": {"type": "boolean"},
                    "resynchronizationPeriod": {"type": "string"},
                    "nameSelector": name_selector(),
                    "labelSelector": label_selector(),
                    "fieldSelector": field_selector(),
                    "group": {"type": "string"},
                    "namespace": {
                        "type": "object", "additionalProperties": false,
                        "minProperties": 1, "maxProperties": 2,
                        "properties": {
                            "nameSelector": name_selector(),
                            "labelSelector": label_selector()
                        }
                    }
                }
    })
}

fn snapshots_list() -> Value {
    json!({"type": "array", "minItems": 1, "items": {"type": "string"}})
}

fn v1_properties() -> serde_json::Map<String, Value> {
    let props = json!({
        "configVersion": {"type": "string", "enum": ["v1"]},
        "settings": {
            "type": "object", "additionalProperties": false,
            "properties": {
                "executionMinInterval": {"type": "string"},
                "executionBurst": {"type": "integer"}
            }
        },
        "onStartup": {"type": "integer"},
        "schedule": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object", "additionalProperties": false, "required": ["crontab"],
                "properties": {
                    "name": {"type": "string"},
                    "crontab": {"type": "string"},
                    "allowFailure": {"type": "boolean"},
                    "includeSnapshotsFrom": snapshots_list(),
                    "queue": {"type": "string"},
                    "group": {"type": "string"}
                }
            }
        },
        "kubernetes": {"type": "array", "minItems": 1, "items": kubernetes_item()},
        // Admission and conversion webhooks are valid shell-operator config;
        // the schema accepts them and the converter says they are unsupported.
        "kubernetesValidating": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "kubernetesMutating": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "kubernetesCustomResourceConversion": {"type": "array", "minItems": 1, "items": {"type": "object"}}
    });
    match props {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn v0_properties() -> serde_json::Map<String, Value> {
    let props = json!({
        "onStartup": {"type": "integer"},
        "schedule": {"type": "array", "items": {"type": "object"}},
        "onKubernetesEvent": {"type": "array", "items": {"type": "object"}}
    });
    match props {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn lifecycle_names(kind: HookKind) -> &'static [&'static str] {
    match kind {
        HookKind::Global => &["beforeAll", "afterAll"],
        HookKind::Module => &[
            "beforeHelm",
            "afterHelm",
            "beforeDeleteHelm",
            "afterDeleteHelm",
        ],
    }
}

fn build(version: &str, kind: HookKind) -> Value {
    let mut props = if version == "v1" {
        v1_properties()
    } else {
        v0_properties()
    };
    for name in lifecycle_names(kind) {
        props.insert((*name).to_string(), json!({"type": "integer"}));
    }
    if version == "v1" {
        json!({
            "type": "object", "additionalProperties": false,
            "required": ["configVersion"], "minProperties": 2,
            "properties": props
        })
    } else {
        json!({
            "type": "object", "additionalProperties": false,
            "minProperties": 1,
            "properties": props
        })
    }
}

type Validators = [Option<jsonschema::Validator>; 4];

fn validators() -> &'static Validators {
    static CELL: OnceLock<Validators> = OnceLock::new();
    CELL.get_or_init(|| {
        let make = |v: &str, k: HookKind| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft4)
                .build(&build(v, k))
                .ok()
        };
        [
            make("v0", HookKind::Global),
            make("v0", HookKind::Module),
            make("v1", HookKind::Global),
            make("v1", HookKind::Module),
        ]
    })
}

/// Validates a config document of `version` ("v0" or "v1") for a hook of
/// `kind`; returns one go-openapi style message per violation.
pub fn validate(doc: &Value, version: &str, kind: HookKind) -> Vec<String> {
    let idx = match (version, kind) {
        ("v0", HookKind::Global) => 0,
        ("v0", HookKind::Module) => 1,
        ("v1", HookKind::Global) => 2,
        _ => 3,
    };
    let Some(validator) = &validators()[idx] else {
        return vec!["internal error: hook config schema does not compile".into()];
    };
    let mut out: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| message(&e.instance_path().to_string(), e.kind(), e.instance()))
        .collect();
    out.dedup();
    out
}

/// `/kubernetes/0/nameSelector` → `kubernetes[0].nameSelector`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn message(pointer: &str, kind: &ValidationErrorKind, instance: &Value) -> String {
    let path = dotted(pointer);
    let at = if path.is_empty() {
        "config".to_string()
    } else {
        path.clone()
    };
    match kind {
        ValidationErrorKind::Required { property } => {
            let p = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            format!("{} in body is required", join(&path, &p))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|p| format!("{} in body is a forbidden property", join(&path, p)))
            .collect::<Vec<_>>()
            .join("; "),
        ValidationErrorKind::Type { kind } => {
            let want = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(ts) => format!("{ts:?}"),
            };
            format!(
                "{at} in body must be of type {want}: \"{}\"",
                json_type(instance)
            )
        }
        ValidationErrorKind::Enum { options } => {
            let opts = match options.as_ref() {
                Value::Array(a) => a
                    .iter()
                    .map(|o| {
                        o.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| o.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                o => o.to_string(),
            };
            format!("{at} in body should be one of [{opts}]")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("{at} in body should have at least {limit} items")
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("{at} in body should have at least {limit} properties")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("{at} in body should have at most {limit} properties")
        }
        other => format!("{at} in body is invalid: {other:?}"),
    }
}
