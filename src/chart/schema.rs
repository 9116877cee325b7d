//! `values.schema.json` validation: Helm v3.17's `ValidateAgainstSchema`
//! (`pkg/chartutil/jsonschema.go`), checking the chart's values and each
//! subchart's values against their schemas.
//!
//! The validation is a port of gojsonschema v1.2.0, the version Helm v3.17
//! vendors (`schema.go`, `validation.go`, `locales.go`, `format_checkers.go`,
//! with gojsonreference/gojsonpointer for `$ref`). Hand-written rather than
//! built on a JSON Schema crate because Helm's output is gojsonschema's:
//! its error texts (`- policy: Invalid type. Expected: string, given:
//! null`), its field names (`(root)`, `a.b.0`), its error order and choice
//! of branch errors for anyOf/oneOf, its schema errors for an invalid schema
//! and its quirks (no meta-schema check, "hybrid" draft, numbers failing a
//! known `format`). A general-purpose crate also spends ten times the
//! validation itself parsing and checking meta-schemas.
//!
//! - [`json`]: Go's `encoding/json` decoding (number literals kept, Go's
//!   syntax errors) and `json.Marshal` for enum/const comparisons;
//! - [`num`]: exact decimals for gojsonschema's `big.Rat` limits;
//! - [`refs`]: JSON references resolved as gojsonreference does;
//! - [`compile`]: `parseSchema` into a subschema arena;
//! - [`validate`]: `validateRecursive` and friends;
//! - [`formats`]: the format checkers.
//!
//! Known differences: `pattern` and `patternProperties` use the `regex`
//! crate behind the Go-syntax translation of Sprig's regex functions (RE2
//! semantics, the same for practical patterns); Go map iteration (sibling
//! properties, definitions, the value's keys) is random in Helm, so the
//! order of their error lines changes from run to run there, and is by key
//! here; a remote `$ref` (including the draft meta-schema URLs, which
//! gojsonschema serves from memory) is an error naming it, where
//! gojsonschema would fetch it; a `file:` `$ref` is read as gojsonschema
//! reads it (`file://./s.json` relative to the working directory, Go's
//! error texts), except that a FIFO or device is refused and a file is
//! read up to 16 MiB; a schema looping through `$ref` without
//! reaching into the values is an error where helm dies of a stack
//! overflow; the format checkers approximate Go's parsers (`time.Parse`,
//! `net/mail`, `net/url`, `net.ParseIP`).

mod compile;
mod formats;
mod json;
mod num;
mod refs;
mod validate;

use std::borrow::Cow;
use std::sync::Arc;

use self::json::J;
use crate::chart::types::Chart;
use crate::yaml::{Mapping, Yaml};

/// The schemas of a chart and of its subcharts, apart from the chart, so
/// that they can be checked on another thread while the chart renders.
pub struct Schemas {
    name: String,
    schema: Option<Arc<[u8]>>,
    dependencies: Vec<Schemas>,
}

impl Schemas {
    pub fn of(chart: &Chart) -> Schemas {
        Schemas {
            name: chart.name().to_string(),
            schema: chart.schema.clone(),
            dependencies: chart.dependencies.iter().map(Schemas::of).collect(),
        }
    }

    /// Bytes of schema text, subcharts' included.
    pub fn size(&self) -> usize {
        self.schema.as_ref().map_or(0, |s| s.len())
            + self.dependencies.iter().map(Schemas::size).sum::<usize>()
    }

    /// Helm's `ValidateAgainstSchema`: `Ok` when every schema accepts its
    /// values (each subchart's those under its name); the error is the text
    /// Helm puts after "values don't meet the specifications of the
    /// schema(s) in the following chart(s):\n".
    pub fn validate(&self, values: &Mapping) -> Result<(), String> {
        let mut sb = String::new();
        if let Some(schema) = &self.schema
            && let Err(e) = validate_against_single_schema(values, schema)
        {
            sb.push_str(&format!("{}:\n", self.name));
            sb.push_str(&e);
        }
        for sub in &self.dependencies {
            let empty = Mapping::new();
            let sub_values = match values.get(&sub.name) {
                Some(Yaml::Map(m)) => m,
                _ => &empty,
            };
            if let Err(e) = sub.validate(sub_values) {
                sb.push_str(&e);
            }
        }
        if sb.is_empty() { Ok(()) } else { Err(sb) }
    }
}

/// The values document gojsonschema sees, borrowing from the values.
/// Numbers keep their exact value (Helm's YAML/JSON round trip prints a
/// float64 with the shortest digits that read back the same, so integral
/// floats are integers); a non-finite float fails `json.Marshal` inside
/// sigs.k8s.io/yaml, as in Helm.
fn instance(y: &Yaml) -> Result<J<'_>, String> {
    Ok(match y {
        Yaml::Null => J::Null,
        Yaml::Bool(b) => J::Bool(*b),
        Yaml::Int(i) => J::Int(*i),
        Yaml::Float(f) => {
            if !f.is_finite() {
                let v = if f.is_nan() {
                    "NaN"
                } else if *f > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                };
                return Err(format!(
                    "error marshaling into JSON: json: unsupported value: {v}"
                ));
            }
            J::Float(*f)
        }
        Yaml::Str(s) => J::Str(Cow::Borrowed(s)),
        Yaml::Seq(items) => J::Arr(items.iter().map(instance).collect::<Result<_, _>>()?),
        Yaml::Map(m) => instance_map(m)?,
    })
}

fn instance_map(m: &Mapping) -> Result<J<'_>, String> {
    Ok(J::Obj(
        m.iter()
            .map(|(k, v)| Ok((Cow::Borrowed(k.as_str()), instance(v)?)))
            .collect::<Result<_, String>>()?,
    ))
}

/// `ValidateAgainstSingleSchema`: `- field: description\n` per error, or
/// the error loading the schema.
pub fn validate_against_single_schema(values: &Mapping, schema: &[u8]) -> Result<(), String> {
    let doc = instance_map(values)?;
    let (doc_schema, keys) = json::decode(schema)?;
    let schema = compile::compile(doc_schema, keys)?;
    let res = schema.validate(&doc)?;
    if res.errors.is_empty() {
        return Ok(());
    }
    let mut out = String::new();
    for e in &res.errors {
        out.push_str(&format!("- {}: {}\n", e.field, e.description));
    }
    Err(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::types::Metadata;

    /// helm v3.17.3's output for the corpus case external-dns-novalues.
    #[test]
    fn external_dns_message() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        let chart_dir = root.join("charts/external-dns");
        if !chart_dir.exists() {
            return;
        }
        let mut chart = crate::chart::load::load(&chart_dir).unwrap();
        let err = crate::chart::dependencies::to_render_values(
            &mut chart,
            &Mapping::new(),
            false,
            &mut |_: &str| {},
        )
        .unwrap_err();
        let expected =
            std::fs::read_to_string(root.join("expected/external-dns-novalues.err")).unwrap();
        assert_eq!(format!("Error: {err}\n"), expected);
    }

    /// helm v3.17.3 on a throw-away chart with this schema printed these
    /// lines (its order of sibling properties varies from run to run; the
    /// root's own errors come first, a node's errors before its children's,
    /// array items before minItems, anyOf/oneOf followed by the best
    /// branch's errors). Ours: the same lines, siblings by name.
    #[test]
    fn messages_match_helm() {
        let schema = br#"{"type":"object","required":["req"],"additionalProperties":false,
 "properties":{
  "e":{"enum":["x","y",1]},
  "n":{"type":"integer","minimum":2,"maximum":5,"multipleOf":2},
  "s":{"type":"string","pattern":"^a+$","minLength":3},
  "l":{"type":"array","items":{"type":"string"},"uniqueItems":true,"minItems":5},
  "o":{"oneOf":[{"type":"string"},{"type":"integer"}]},
  "an":{"anyOf":[{"type":"string"},{"type":"integer"}]},
  "nt":{"not":{"type":"string"}},
  "c":{"const":"k"},
  "ty":{"type":["string","null","boolean"]},
  "f":{"type":"string","format":"ipv4"},
  "sub":{}
 }}"#;
        let values = crate::chart::coalesce::tests::y(
            "e: z\nn: 7\ns: b\nl: [a, a, 1]\no: 1.5\nan: true\nnt: x\nc: j\nty: 1\nf: nope\nextra: 1\n",
        );
        let err = validate_against_single_schema(&values, schema).unwrap_err();
        assert_eq!(
            err,
            r#"- (root): req is required
- (root): Additional property extra is not allowed
- (root): Additional property false is not allowed
- an: Must validate at least one schema (anyOf)
- an: Invalid type. Expected: string, given: boolean
- c: c does not match: "k"
- e: e must be one of the following: "x", "y", 1
- f: Does not match format 'ipv4'
- l.2: Invalid type. Expected: string, given: integer
- l: Array must have at least 5 items
- l: array items[0,1] must be unique
- nt: Must not validate the schema (not)
- o: Must validate one and only one schema (oneOf)
- o: Invalid type. Expected: string, given: number
- s: String length must be greater than or equal to 3
- s: Does not match pattern '^a+$'
- ty: Invalid type. Expected: [string,null,boolean], given: integer
"#
        );
        let chart = Chart {
            metadata: Metadata {
                name: "top".into(),
                ..Default::default()
            },
            schema: Some(std::sync::Arc::from(&br#"{"required":["a"]}"#[..])),
            ..Default::default()
        };
        let e = Schemas::of(&chart).validate(&Mapping::new()).unwrap_err();
        assert_eq!(e, "top:\n- (root): a is required\n");
    }

    /// allOf and if/then/else: gojsonschema's merged branch errors and its
    /// own lines, as helm v3.17.3 printed them (the same on every run).
    #[test]
    fn all_of_and_conditions_like_helm() {
        let schema = br#"{"allOf":[{"properties":{"x":{"type":"string"}}},{"required":["y"]}],"if":{"required":["z"]},"then":{"properties":{"w":{"minimum":3}}},"properties":{"arr":{"items":{"allOf":[{"type":"string"}]}}}}"#;
        let values = crate::chart::coalesce::tests::y("x: 1\nz: 1\nw: 1\narr: [a, 1]\n");
        assert_eq!(
            validate_against_single_schema(&values, schema).unwrap_err(),
            r#"- x: Invalid type. Expected: string, given: integer
- (root): y is required
- (root): Must validate all the schemas (allOf)
- (root): Must validate "then" as "if" was valid
- w: Must be greater than or equal to 3
- arr.1: Invalid type. Expected: string, given: integer
- arr.1: Must validate all the schemas (allOf)
"#
        );
    }

    /// `file:` references with an absolute path (the compat cases can
    /// only use paths relative to the working directory): the file is read,
    /// its own relative `$ref`s resolve against its URL, and its fragment
    /// is a pointer into it. helm v3.17.3 printed these lines for the same
    /// files under /tmp. A device is refused (helm reads `/dev/zero` until
    /// it is killed).
    #[test]
    fn file_refs_with_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        std::fs::write(
            dir.path().join("a.json"),
            r#"{"definitions":{"x":{"properties":{"k":{"$ref":"b.json"}}}}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("b.json"), r#"{"type":"string"}"#).unwrap();
        let values = crate::chart::coalesce::tests::y("a: {k: 1}\n");
        let schema =
            format!(r#"{{"properties":{{"a":{{"$ref":"file://{d}/a.json#/definitions/x"}}}}}}"#);
        assert_eq!(
            validate_against_single_schema(&values, schema.as_bytes()).unwrap_err(),
            "- a.k: Invalid type. Expected: string, given: integer\n"
        );
        let schema = format!(r#"{{"$ref":"file://{d}/none.json"}}"#);
        assert_eq!(
            validate_against_single_schema(&values, schema.as_bytes()).unwrap_err(),
            format!("open {d}/none.json: no such file or directory")
        );
        let err =
            validate_against_single_schema(&values, br#"{"$ref":"file:///dev/zero"}"#).unwrap_err();
        assert!(
            err.contains("/dev/zero") && err.contains("not a regular file"),
            "{err}"
        );
    }

    /// Schemas gojsonschema refuses, with the text helm v3.17.3 printed
    /// for each (values `a: 1`).
    #[test]
    fn schema_errors_like_helm() {
        let values = crate::chart::coalesce::tests::y("a: 1\n");
        for (schema, err) in [
            (
                "{\"type\":5}",
                "Invalid type. Expected: string/array of strings, given: type",
            ),
            (
                "{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"properties\":{\"a\":{\"not\":true}}}",
                "Expected: valid schema, given: Invalid JSON",
            ),
            (
                "{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"properties\":{\"a\":{\"minimum\":1,\"exclusiveMinimum\":true}}}",
                "Invalid type. Expected: number, given: exclusiveMinimum",
            ),
            ("{\"id\":5}", "Invalid type. Expected: string, given: id"),
            ("{\"$id\":5}", "Invalid type. Expected: string, given: $id"),
            (
                "{\"properties\":{\"a\":{\"minLength\":2.0}}}",
                "minLength must be of an integer",
            ),
            (
                "{\"$ref\":\"other.json\"}",
                "Reference /other.json must be canonical",
            ),
            (
                "{\"$ref\":\"#/definitions/missing\"}",
                "Object has no key 'definitions'",
            ),
            (
                "{\"properties\":{\"a\":{\"pattern\":\"(\"}}}",
                "pattern must be a valid regex",
            ),
            (
                "{\"patternProperties\":{\"(\":{}}}",
                "Invalid regex pattern '('",
            ),
            (
                "{\"items\":[1]}",
                "Invalid type. Expected: valid schema/array of schemas, given: items",
            ),
            ("{\"not\":5}", "not must be of an object"),
            ("[]", "schema is invalid"),
            ("", "EOF"),
            (
                "{\"multipleOf\":0}",
                "multipleOf must be strictly greater than 0",
            ),
            (
                "{\"minItems\":-1}",
                "minItems must be greater than or equal to 0",
            ),
            (
                "{\"definitions\":true}",
                "unable to validate schema: interface conversion: interface {} is bool, not map[string]interface {}",
            ),
            (
                "{\"propertyNames\":5}",
                "Invalid type. Expected: valid schema, given: patternProperties",
            ),
            (
                "{\"dependencies\":{\"a\":5}}",
                "dependency must be of type schema or array of strings",
            ),
            ("{\"if\":1}", "if must be of an object"),
            (
                "{\"title\":1}",
                "Invalid type. Expected: string, given: title",
            ),
            ("{\"$schema\":5}", "$schema must be of type string"),
            (
                "{\"minProperties\":3,\"maxProperties\":1}",
                "minProperties cannot be greater than maxProperties",
            ),
            ("{\"enum\":[1,1.0]}", "enum items must be unique"),
            (
                "{\"type\":\"strin\"}",
                "has a primitive type that is NOT VALID -- given: /strin/ Expected valid values are:[array boolean integer number null object string]",
            ),
            (
                "{\"type\":[\"string\",\"string\"]}",
                "string type is duplicated",
            ),
            (
                "{\"properties\":{\"a\":{\"type\":\"string\",}}}",
                "invalid character '}' looking for beginning of object key string",
            ),
            ("{\"required\":\"a\"}", "required must be of an array"),
            (
                "{\"exclusiveMinimum\":true}",
                "exclusiveMinimum cannot be used without minimum",
            ),
            ("{\"allOf\":{}}", "anyOf must be of an array"),
        ] {
            assert_eq!(
                validate_against_single_schema(&values, schema.as_bytes()),
                Err(err.to_string()),
                "{schema}"
            );
        }
    }
}
