//! Hook patch files and their application (addon-operator's
//! `ValuesPatchFromBytes`, `ApplyValuesPatch`, `CompactPatches`,
//! `ValidateHookValuesPatch`).

use antiopa::values::patch::compact;
use antiopa::values::{
    ApplyMode, PatchOp, PatchScope, Values, ValuesPatch, apply_patch, validate_hook_patch,
};
use serde_json::{Value, json};

fn obj(v: Value) -> Values {
    match v {
        Value::Object(m) => m,
        _ => Values::new(),
    }
}

#[test]
fn patch_files_are_json_streams_of_ops_and_arrays() {
    let p = ValuesPatch::from_json_stream(
        r#"[{"op":"add","path":"/m/a","value":1},{"op":"remove","path":"/m/b"}]
{"op":"add","path":"/m/c","value":null}
"ignored" 42
[]
{"op":"add","path":"/m/d","value":{"x":[1,2]},"extra":"dropped"}"#,
    )
    .expect("stream");
    let ops: Vec<(&str, &str)> = p
        .operations
        .iter()
        .map(|o| (o.op.as_str(), o.path.as_str()))
        .collect();
    assert_eq!(
        ops,
        [
            ("add", "/m/a"),
            ("remove", "/m/b"),
            ("add", "/m/c"),
            ("add", "/m/d")
        ]
    );
    // `value: null` is kept (absent and null differ).
    assert_eq!(p.operations[2].value, Some(Value::Null));
    assert_eq!(p.operations[1].value, None);
    assert_eq!(
        p.to_json(),
        r#"[{"op":"add","path":"/m/a","value":1},{"op":"remove","path":"/m/b"},{"op":"add","path":"/m/c","value":null},{"op":"add","path":"/m/d","value":{"x":[1,2]}}]"#
    );
    assert!(ValuesPatch::from_json_stream("").expect("empty").is_empty());
    assert!(
        ValuesPatch::from_json_stream("  \n")
            .expect("blank")
            .is_empty()
    );
}

#[test]
fn bad_patch_files_are_reported_with_their_data() {
    let mut out = String::new();
    for text in [r#"["op"]"#, r#"{"op":1,"path":"/m"}"#, r#"{"op":"add""#] {
        let e = ValuesPatch::from_json_stream(text).expect_err(text);
        out.push_str(&format!("{e}\n"));
    }
    insta::assert_snapshot!("bad_patch_files", out);
}

#[test]
fn strict_and_lenient_application() {
    let v = obj(json!({"m": {"a": 1, "l": [1, 2]}}));
    let p = ValuesPatch::from_json_stream(
        r#"[{"op":"remove","path":"/m/gone"},{"op":"add","path":"/m/l/-","value":3},{"op":"test","path":"/m/a","value":1}]"#,
    )
    .expect("patch");
    let (res, changed) = apply_patch(&v, &p, ApplyMode::IgnoreNonExistentPaths).expect("lenient");
    assert!(changed);
    assert_eq!(Value::Object(res), json!({"m": {"a": 1, "l": [1, 2, 3]}}));
    let err = apply_patch(&v, &p, ApplyMode::Strict).expect_err("strict");
    assert_eq!(
        err,
        "error in remove for path: '/m/gone': Unable to remove nonexistent key: gone: missing value"
    );
    // Removing below a missing parent is also a missing path.
    let p = ValuesPatch::from_json_stream(r#"{"op":"remove","path":"/x/y/z"}"#).expect("patch");
    let (res, changed) = apply_patch(&v, &p, ApplyMode::IgnoreNonExistentPaths).expect("lenient");
    assert!(!changed);
    assert_eq!(res, v);
    // A failing test op is an error in both modes.
    let p =
        ValuesPatch::from_json_stream(r#"{"op":"test","path":"/m/a","value":2}"#).expect("patch");
    assert_eq!(
        apply_patch(&v, &p, ApplyMode::IgnoreNonExistentPaths).expect_err("test"),
        "testing value /m/a failed: test failed"
    );
    // Escaped pointer segments.
    let p = ValuesPatch::from_json_stream(r#"{"op":"add","path":"/m/a~1b~0c","value":true}"#)
        .expect("patch");
    let (res, _) = apply_patch(&v, &p, ApplyMode::Strict).expect("escaped");
    assert_eq!(res["m"]["a/b~c"], json!(true));
}

#[test]
fn scope_rules() {
    let p = |t: &str| ValuesPatch::from_json_stream(t).expect("patch");
    let module = PatchScope::Module("echoServer".into());
    assert!(
        validate_hook_patch(
            &p(r#"{"op":"add","path":"/echoServer/x","value":1}"#),
            &module
        )
        .is_ok()
    );
    assert!(validate_hook_patch(&p(r#"{"op":"remove","path":"/echoServer"}"#), &module).is_ok());
    assert!(
        validate_hook_patch(
            &p(r#"{"op":"add","path":"/echoServerX/x","value":1}"#),
            &module
        )
        .is_err()
    );
    assert!(
        validate_hook_patch(
            &p(r#"{"op":"add","path":"/fooEnabled","value":true}"#),
            &PatchScope::Global
        )
        .is_ok()
    );
    // A path with no root segment is not checked (Go splits on "/").
    assert!(validate_hook_patch(&p(r#"{"op":"add","path":"","value":1}"#), &module).is_ok());
}

#[test]
fn compaction_keeps_the_last_op_per_path_and_drops_subpaths() {
    let existing = vec![
        PatchOp::add("/m/settings/parent/field1", json!("foo")),
        PatchOp::add("/m/settings/parent/field2", json!("bar")),
        PatchOp::add("/m/other", json!(1)),
        PatchOp::add("/m/settingsX", json!(1)),
    ];
    let new = vec![
        PatchOp::add("/m/settings", json!({})),
        PatchOp::remove("/m/other"),
    ];
    let got: Vec<(String, String)> = compact(&existing, &new)
        .into_iter()
        .map(|o| (o.op, o.path))
        .collect();
    assert_eq!(
        got,
        [
            ("remove".to_string(), "/m/other".to_string()),
            ("add".to_string(), "/m/settings".to_string()),
            ("add".to_string(), "/m/settingsX".to_string()),
        ]
    );
}
