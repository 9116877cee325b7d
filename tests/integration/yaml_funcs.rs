//! Helm template functions over the yaml module, with expected texts taken
//! from helm v3.17.3 (`helm template` of a throw-away chart whose template
//! called each function; the comments show the template expression).

use antiopa::yaml::{
    Mapping, Yaml, from_toml, from_yaml, from_yaml_array, from_yaml_map, to_json, to_toml, to_yaml,
    to_yaml_pretty,
};

/// Helm's toYaml: Marshal with one trailing newline trimmed.
fn helm_to_yaml(v: &Yaml) -> String {
    let s = to_yaml(v);
    s.strip_suffix('\n').unwrap_or(&s).to_string()
}

fn helm_to_yaml_pretty(v: &Yaml) -> String {
    let s = to_yaml_pretty(v);
    s.strip_suffix('\n').unwrap_or(&s).to_string()
}

/// Helm's fromYaml: the map, or {"Error": text}.
fn helm_from_yaml(s: &str) -> String {
    let m = from_yaml_map(s, "map[string]interface {}").unwrap_or_else(|e| {
        let mut m = Mapping::new();
        m.insert("Error".into(), Yaml::Str(e.to_string()));
        m
    });
    to_json(&Yaml::Map(m)).unwrap_or_default()
}

/// Helm's fromYamlArray: the list, or [text].
fn helm_from_yaml_array(s: &str) -> String {
    let l = from_yaml_array(s).unwrap_or_else(|e| vec![Yaml::Str(e.to_string())]);
    to_json(&Yaml::Seq(l)).unwrap_or_default()
}

#[test]
fn to_yaml_numbers_from_template_literals() {
    // toYaml (list 1 1.5 1e21 100000000000000000000.0 3.0 -0.0 0.1 1e-7)
    let l = Yaml::Seq(vec![
        Yaml::Int(1),
        Yaml::Float(1.5),
        Yaml::Float(1e21),
        Yaml::Float(1e20),
        Yaml::Float(3.0),
        Yaml::Float(-0.0),
        Yaml::Float(0.1),
        Yaml::Float(1e-7),
    ]);
    assert_eq!(
        helm_to_yaml(&l),
        "- 1\n- 1.5\n- 1e+21\n- 1e+20\n- 3\n- 0\n- 0.1\n- 1e-07"
    );
    // toYamlPretty (list 1 1.5 1e21 3.0 "yes" "x")
    let l = Yaml::Seq(vec![
        Yaml::Int(1),
        Yaml::Float(1.5),
        Yaml::Float(1e21),
        Yaml::Float(3.0),
        Yaml::Str("yes".into()),
        Yaml::Str("x".into()),
    ]);
    assert_eq!(
        helm_to_yaml_pretty(&l),
        "- 1\n- 1.5\n- 1e+21\n- 3\n- \"yes\"\n- x"
    );
}

#[test]
fn to_yaml_scalars_and_empties() {
    // toYaml "" / toYaml "multi\nline" / toYaml 5 / toYaml (dict "k" (list) "m" (dict))
    assert_eq!(helm_to_yaml(&Yaml::Str(String::new())), "\"\"");
    assert_eq!(
        helm_to_yaml(&Yaml::Str("multi\nline".into())),
        "|-\n  multi\n  line"
    );
    assert_eq!(helm_to_yaml(&Yaml::Int(5)), "5");
    let mut m = Mapping::new();
    m.insert("k".into(), Yaml::Seq(vec![]));
    m.insert("m".into(), Yaml::Map(Mapping::new()));
    assert_eq!(helm_to_yaml(&Yaml::Map(m)), "k: []\nm: {}");
    // toYaml .Values.missing
    assert_eq!(helm_to_yaml(&Yaml::Null), "null");
    // NaN cannot go through json.Marshal: toYaml gives "".
    assert_eq!(helm_to_yaml(&Yaml::Float(f64::NAN)), "");
}

#[test]
fn from_yaml_results() {
    // fromYaml "x: [1, 2]\ny: 0755\nz: 1e3" | toJson
    assert_eq!(
        helm_from_yaml("x: [1, 2]\ny: 0755\nz: 1e3"),
        r#"{"true":493,"x":[1,2],"z":1000}"#
    );
    assert_eq!(
        helm_from_yaml("- a\n- b"),
        r#"{"Error":"error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"}"#
    );
    assert_eq!(
        helm_from_yaml("a: b: c"),
        r#"{"Error":"error converting YAML to JSON: yaml: mapping values are not allowed in this context"}"#
    );
    assert_eq!(helm_from_yaml(""), "{}");
    assert_eq!(helm_from_yaml("~"), "{}");
    assert_eq!(
        helm_from_yaml("scalar"),
        r#"{"Error":"error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}"}"#
    );
    assert_eq!(
        helm_from_yaml("a: .nan"),
        r#"{"Error":"error converting YAML to JSON: json: unsupported value: NaN"}"#
    );
    assert_eq!(
        helm_from_yaml("a: 1\n b: 2"),
        r#"{"Error":"error converting YAML to JSON: yaml: line 2: mapping values are not allowed in this context"}"#
    );
}

#[test]
fn from_yaml_array_results() {
    assert_eq!(helm_from_yaml_array("- a\n- 1"), r#"["a",1]"#);
    assert_eq!(
        helm_from_yaml_array("a: 1"),
        r#"["error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}"]"#
    );
    assert_eq!(helm_from_yaml_array(""), "[]");
    assert_eq!(
        helm_from_yaml_array("x"),
        r#"["error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}"]"#
    );
}

#[test]
fn to_yaml_from_yaml_is_stable() {
    let v = from_yaml("a:\n  b: [1, \"2\", yes, ~]\n  c: |\n    text\n").unwrap_or_default();
    let again = from_yaml(&to_yaml(&v)).unwrap_or_default();
    assert_eq!(v, again);
}

#[test]
fn toml_round_trip() {
    // toToml (dict "a" 1 "b" "x" "c" (dict "d" (list 1 2)) "e" 1.5 "f" true)
    let m = from_toml(b"a = 1\nb = \"x\"\ne = 1.5\nf = true\n\n[c]\n  d = [1, 2]\n")
        .unwrap_or_default();
    assert_eq!(
        to_toml(&Yaml::Map(m)),
        "a = 1\nb = \"x\"\ne = 1.5\nf = true\n\n[c]\n  d = [1, 2]\n"
    );
}
