//! OpenAPI schemas as addon-operator prepares and applies them
//! (`PrepareSchemas`, `ApplyDefaults`, go-openapi's error texts), on
//! fixtures/values/schemas.

use antiopa::values::SchemaType;
use antiopa::values::Values;
use antiopa::values::schema::{SchemaStorage, apply_defaults};
use serde_json::{Value, json};
use std::path::Path;

fn read(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/values/schemas")
            .join(name),
    )
    .expect("schema fixture")
}

fn storage() -> SchemaStorage {
    SchemaStorage::new(
        Some(&read("config-values.yaml")),
        Some(&read("values.yaml")),
    )
    .expect("schemas")
}

fn obj(v: Value) -> Values {
    match v {
        Value::Object(m) => m,
        _ => Values::new(),
    }
}

fn errors(kind: SchemaType, v: Value) -> String {
    match storage().validate(kind, "myModule", &obj(v)) {
        Ok(()) => "valid".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn config_schema_gets_additional_properties_false_where_unset() {
    let st = storage();
    let s = st.get(SchemaType::Config).expect("config").json();
    assert_eq!(s["additionalProperties"], json!(false));
    // $ref expanded, then transformed.
    assert_eq!(
        s["properties"]["endpoint"]["additionalProperties"],
        json!(false)
    );
    assert_eq!(
        s["properties"]["endpoint"]["properties"]["port"]["maximum"],
        json!(65535)
    );
    // A property with its own additionalProperties is left alone, subtree included.
    assert_eq!(
        s["properties"]["labels"]["additionalProperties"],
        json!(true)
    );
    assert!(
        s["properties"]["labels"]["properties"]["inner"]
            .get("additionalProperties")
            .is_none()
    );
    // Items are transformed.
    assert_eq!(
        s["properties"]["servers"]["items"]["additionalProperties"],
        json!(false)
    );
}

#[test]
fn values_schema_extends_config_schema() {
    let st = storage();
    let s = st.get(SchemaType::Values).expect("values").json();
    let props: Vec<&String> = s["properties"].as_object().expect("props").keys().collect();
    assert_eq!(
        props,
        ["endpoint", "internal", "labels", "name", "ratio", "servers"]
    );
    // Its own definition of `name` wins.
    assert_eq!(s["properties"]["name"]["enum"], json!(["alpha", "beta"]));
    // required: the parent's first.
    assert_eq!(s["required"], json!(["name", "internal"]));
    assert_eq!(s["x-config-only"], json!("kept"));
    assert_eq!(s["title"], json!("Config title"));
    assert_eq!(s["description"], json!("Values description"));
    // Without x-extend nothing is taken.
    let plain = SchemaStorage::new(Some(&read("config-values.yaml")), Some("type: object\n"))
        .expect("schemas");
    assert!(
        plain
            .get(SchemaType::Values)
            .expect("values")
            .json()
            .get("properties")
            .is_none()
    );
}

#[test]
fn x_required_for_helm_joins_required_in_the_helm_schema_only() {
    let st = storage();
    let values = st.get(SchemaType::Values).expect("values").json();
    let helm = st.get(SchemaType::Helm).expect("helm").json();
    assert!(values["properties"]["internal"].get("required").is_none());
    assert_eq!(
        helm["properties"]["internal"]["required"],
        json!(["ca", "cert"])
    );
    let v = json!({"name": "alpha", "internal": {"ca": "x"}});
    assert_eq!(errors(SchemaType::Values, v.clone()), "valid");
    insta::assert_snapshot!("helm_required", errors(SchemaType::Helm, v));
}

#[test]
fn defaults_fill_gaps_through_refs_and_items() {
    let st = storage();
    let got = st.with_defaults(
        SchemaType::Config,
        &obj(json!({"endpoint": {"port": 8080}, "servers": [{"addr": "a"}, {"addr": "b", "weight": 3}]})),
    );
    assert_eq!(
        Value::Object(got),
        json!({"endpoint": {"host": "localhost", "port": 8080},
               "servers": [{"addr": "a", "weight": 1.5}, {"addr": "b", "weight": 3}]})
    );
    // A missing object with no default stays missing; defaults inside it are not applied.
    let empty = st.with_defaults(SchemaType::Config, &Values::new());
    assert!(empty.is_empty());
}

#[test]
fn apply_defaults_recurses_into_added_defaults_and_keeps_nulls() {
    let schema = json!({"properties": {
        "a": {"type": "object", "default": {}, "properties": {"b": {"default": 1}}},
        "n": {"default": "x"},
        "z": {"default": null},
    }});
    let mut v = json!({"n": null});
    assert!(apply_defaults(&mut v, &schema));
    assert_eq!(v, json!({"a": {"b": 1}, "n": null}));
}

#[test]
fn nullable_allows_null() {
    let v = json!({"name": "alpha", "internal": {"key": null}});
    assert_eq!(errors(SchemaType::Values, v), "valid");
    let v = json!({"name": "alpha", "internal": {"ca": null}});
    insta::assert_snapshot!("not_nullable", errors(SchemaType::Values, v));
}

#[test]
fn error_texts_are_go_openapi_texts() {
    let v = json!({
        "name": "B",
        "endpoint": {"port": 70000, "extra": 1},
        "servers": [{"addr": "a", "weight": 0.7}, {"addr": "a", "weight": 0.7}, {}, {}],
        "ratio": 1e7,
    });
    insta::assert_snapshot!("config_rules", errors(SchemaType::Config, v));
    let v = json!({"name": "abcdefghijk", "servers": [], "ratio": "x"});
    insta::assert_snapshot!("config_rules_2", errors(SchemaType::Config, v));
    insta::assert_snapshot!(
        "config_missing_required",
        errors(SchemaType::Config, json!({}))
    );
}

#[test]
fn bad_schema_files_are_reported() {
    let e = SchemaStorage::new(Some("type: [object\n"), None).expect_err("bad yaml");
    insta::assert_snapshot!("bad_schema_yaml", e.to_string());
    let e = SchemaStorage::new(None, Some("- a\n")).expect_err("not a map");
    insta::assert_snapshot!("bad_schema_list", e.to_string());
    // Empty file: no schema at all; comment-only file: an empty, closed schema.
    let st = SchemaStorage::new(Some(""), None).expect("empty");
    assert!(st.get(SchemaType::Config).is_none());
    let st = SchemaStorage::new(Some("# nothing\n"), None).expect("comment");
    assert!(
        st.validate(SchemaType::Config, "m", &obj(json!({"a": 1})))
            .is_err()
    );
}

#[test]
fn go_openapi_formats_are_checked() {
    let schema = r#"
type: object
properties:
  net: {type: string, format: cidr}
  hw: {type: string, format: mac}
  id: {type: string, format: uuid}
  day: {type: string, format: date}
  addr: {type: string, format: ipv4}
  when: {type: string, format: date-time}
  custom: {type: string, format: no-such-format}
"#;
    let st = SchemaStorage::new(Some(schema), None).expect("schema");
    let ok = obj(json!({
        "net": "10.0.0.0/8", "hw": "00:1a:2B:3c:4d:5e", "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
        "day": "2024-02-29", "addr": "192.168.0.1", "when": "2024-01-02T03:04:05Z", "custom": "anything",
    }));
    assert!(st.validate(SchemaType::Config, "m", &ok).is_ok());
    let bad = obj(json!({
        "net": "10.0.0.0/33", "hw": "00:1a:2b", "id": "not-a-uuid", "day": "2023-02-29",
        "addr": "300.1.1.1", "when": "yesterday",
    }));
    let e = st
        .validate(SchemaType::Config, "m", &bad)
        .expect_err("formats");
    insta::assert_snapshot!("formats", e.to_string());
}
