//! OpenAPI schemas of values: addon-operator's `pkg/values/validation`.
//!
//! A module (or the global section) may have `openapi/config-values.yaml`
//! (checks what users put in the ConfigMap) and `openapi/values.yaml` (checks
//! the effective values after every hook). `PrepareSchemas` (schemas.go)
//! builds three schemas from them:
//! - **config**: config-values.yaml + `AdditionalPropertiesTransformer`;
//! - **values**: values.yaml + `ExtendTransformer` (with `x-extend: {schema:
//!   config-values.yaml}` it takes the config schema's properties, required,
//!   definitions, patternProperties, `x-` extensions, title, description) +
//!   `AdditionalPropertiesTransformer`;
//! - **helm**: a copy of the values schema + `RequiredForHelmTransformer`
//!   (`x-required-for-helm` names join `required`), checked just before Helm.
//!
//! Loading (`LoadSchemaFromBytes`) inlines local `$ref`s (go-openapi's
//! `spec.ExpandSchema`) before the transforms, so referenced definitions get
//! `additionalProperties: false` and their defaults too. Defaults are applied
//! by a port of `ApplyDefaults` (defaulting.go). Validation uses the
//! `jsonschema` crate with Draft 4 (go-openapi's dialect); `nullable: true`
//! is rewritten to a `null` type first because the crate ignores it, and
//! errors are worded as go-openapi/errors words them
//! (`<root>.<path> in body is a forbidden property`, `… is required`,
//! `… must be of type string: "number"`), joined like hashicorp/go-multierror.
//! `x-deckhouse-validations` (CEL rules) are not evaluated.

use super::convert::{Values, go_float, go_value, value_from_yaml};
use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};
use std::fmt;

/// The three schemas of `PrepareSchemas` (`validation.SchemaType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaType {
    /// `openapi/config-values.yaml`: config values.
    Config,
    /// `openapi/values.yaml`: effective values.
    Values,
    /// The values schema with `x-required-for-helm`: values given to Helm.
    Helm,
}

impl SchemaType {
    /// addon-operator's name of the schema type.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::Config => "config",
            SchemaType::Values => "values",
            SchemaType::Helm => "helm",
        }
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A schema file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prepare schemas: load '{kind}' schema: {message}")]
pub struct SchemaError {
    pub kind: SchemaType,
    pub message: String,
}

/// Values that do not satisfy a schema. `root` is the values key the paths
/// start with (`global` or the module's camelCase name); `errors` are
/// go-openapi's messages, one per violation. Displays as
/// hashicorp/go-multierror does ("1 error occurred:\n\t* …\n\n").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    pub root: String,
    pub kind: SchemaType,
    pub errors: Vec<String>,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        multierror(f, &self.errors)
    }
}

/// hashicorp/go-multierror's `ListFormatFunc`.
pub(crate) fn multierror(f: &mut fmt::Formatter<'_>, errors: &[String]) -> fmt::Result {
    if errors.len() == 1 {
        return write!(f, "1 error occurred:\n\t* {}\n\n", errors[0]);
    }
    write!(f, "{} errors occurred:\n\t", errors.len())?;
    let points: Vec<String> = errors.iter().map(|e| format!("* {e}")).collect();
    write!(f, "{}\n\n", points.join("\n\t"))
}

/// One prepared schema: its JSON after the transforms, and the compiled
/// validator.
#[derive(Debug)]
pub struct Schema {
    json: Value,
    validator: jsonschema::Validator,
}

impl Schema {
    /// The schema after addon-operator's transforms (before the `nullable`
    /// rewrite done for the validator).
    pub fn json(&self) -> &Value {
        &self.json
    }

    fn compile(json: Value, kind: SchemaType) -> Result<Schema, SchemaError> {
        let mut for_validator = json.clone();
        rewrite_nullable(&mut for_validator);
        let validator =
            with_go_formats(jsonschema::options().with_draft(jsonschema::Draft::Draft4))
                .build(&for_validator)
                .map_err(|e| SchemaError {
                    kind,
                    message: format!("invalid schema: {e}"),
                })?;
        Ok(Schema { json, validator })
    }
}

/// go-openapi validates formats with `strfmt.Default`; the jsonschema crate
/// knows Draft 4's own (date-time, email, hostname, ipv4, ipv6, uri), and
/// these strfmt ones are added (unknown formats pass in both).
fn with_go_formats(
    opts: jsonschema::ValidationOptions<'static>,
) -> jsonschema::ValidationOptions<'static> {
    // A pattern that failed to compile would match nothing; these are
    // constants that compile.
    fn re(p: &str) -> impl Fn(&str) -> bool + Send + Sync + 'static {
        let r = regex::Regex::new(p).ok();
        move |s: &str| r.as_ref().is_some_and(|r| r.is_match(s))
    }
    let uuid =
        re(r"(?i)^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$");
    let uuid3 = re(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$");
    let uuid4 = re(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    let uuid5 = re(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    let hexcolor = re(r"^#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
    let rgbcolor = re(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$");
    let date = re(r"^\d{4}-\d{2}-\d{2}$");
    let mac = re(
        r"(?i)^(?:[0-9a-f]{2}(?:[:-][0-9a-f]{2}){5}|[0-9a-f]{2}(?:[:-][0-9a-f]{2}){7}|[0-9a-f]{2}(?:[:-][0-9a-f]{2}){19}|[0-9a-f]{4}(?:\.[0-9a-f]{4}){2}|[0-9a-f]{4}(?:\.[0-9a-f]{4}){3}|[0-9a-f]{4}(?:\.[0-9a-f]{4}){9})$",
    );
    opts.with_format("uuid", uuid)
        .with_format("uuid3", uuid3)
        .with_format("uuid4", uuid4)
        .with_format("uuid5", uuid5)
        .with_format("hexcolor", hexcolor)
        .with_format("rgbcolor", rgbcolor)
        .with_format("mac", mac)
        .with_format("date", move |s: &str| {
            date(s) && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
        })
        .with_format("cidr", is_cidr)
}

/// `net.ParseCIDR`: an IP address, `/`, a prefix length within its size.
fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
        return false;
    };
    if bits.is_empty()
        || !bits.bytes().all(|b| b.is_ascii_digit())
        || (bits.len() > 1 && bits.starts_with('0'))
    {
        return false;
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// A module's (or the global section's) schemas: `validation.SchemaStorage`.
#[derive(Debug, Default)]
pub struct SchemaStorage {
    pub config: Option<Schema>,
    pub values: Option<Schema>,
    pub helm: Option<Schema>,
}

impl SchemaStorage {
    /// `NewSchemaStorage` / `PrepareSchemas` from the texts of
    /// `openapi/config-values.yaml` and `openapi/values.yaml`. An absent or
    /// empty file means no schema (Go checks `len(bytes) > 0`); a file with
    /// only comments is an empty schema, which (with the default
    /// `additionalProperties: false`) allows only an empty map.
    pub fn new(config: Option<&str>, values: Option<&str>) -> Result<SchemaStorage, SchemaError> {
        let mut st = SchemaStorage::default();
        let mut config_json = None;
        if let Some(text) = config.filter(|t| !t.is_empty()) {
            let mut s = load(text, SchemaType::Config)?;
            additional_properties(&mut s);
            config_json = Some(s.clone());
            st.config = Some(Schema::compile(s, SchemaType::Config)?);
        }
        if let Some(text) = values.filter(|t| !t.is_empty()) {
            let mut s = load(text, SchemaType::Values)?;
            if let Some(parent) = &config_json {
                extend(&mut s, parent);
            }
            additional_properties(&mut s);
            let mut helm = s.clone();
            required_for_helm(&mut helm);
            st.values = Some(Schema::compile(s, SchemaType::Values)?);
            st.helm = Some(Schema::compile(helm, SchemaType::Helm)?);
        }
        Ok(st)
    }

    /// The schema of one type, if the module has it.
    pub fn get(&self, kind: SchemaType) -> Option<&Schema> {
        match kind {
            SchemaType::Config => self.config.as_ref(),
            SchemaType::Values => self.values.as_ref(),
            SchemaType::Helm => self.helm.as_ref(),
        }
    }

    /// The values-defaulting transformer (`applyDefaults.Transform`): a copy
    /// of `values` with the defaults of the `kind` schema applied.
    pub fn with_defaults(&self, kind: SchemaType, values: &Values) -> Values {
        let mut v = Value::Object(values.clone());
        if let Some(s) = self.get(kind) {
            apply_defaults(&mut v, &s.json);
        }
        match v {
            Value::Object(m) => m,
            _ => values.clone(),
        }
    }

    /// `SchemaStorage.Validate`: `values` (the section under `root`) against
    /// the `kind` schema; no schema, no check.
    pub fn validate(
        &self,
        kind: SchemaType,
        root: &str,
        values: &Values,
    ) -> Result<(), ValidationError> {
        let Some(schema) = self.get(kind) else {
            return Ok(());
        };
        let instance = Value::Object(values.clone());
        let mut errors: Vec<String> = Vec::new();
        for e in schema.validator.iter_errors(&instance) {
            let path = go_path(root, e.instance_path().segments().map(|s| s.to_string()));
            describe(&mut errors, &path, &e, &schema.json);
        }
        if errors.is_empty() {
            return Ok(());
        }
        errors.dedup();
        Err(ValidationError {
            root: root.to_string(),
            kind,
            errors,
        })
    }
}

/// go-openapi's dotted value path: `root.a.0.b`.
fn go_path(root: &str, segments: impl Iterator<Item = String>) -> String {
    let mut p = root.to_string();
    for s in segments {
        p.push('.');
        p.push_str(&s);
    }
    p
}

/// go-openapi/errors' wording of one violation.
fn describe(
    out: &mut Vec<String>,
    path: &str,
    e: &jsonschema::ValidationError<'_>,
    schema: &Value,
) {
    let node = schema.pointer(parent_pointer(e.schema_path().as_str()));
    let msg = match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for k in unexpected {
                out.push(format!("{path}.{k} in body is a forbidden property"));
            }
            return;
        }
        ValidationErrorKind::Required { property } => {
            let p = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            format!("{path}.{p} in body is required")
        }
        ValidationErrorKind::Type { .. } => {
            let want = node.map(declared_types).unwrap_or_default();
            format!(
                "{path} in body must be of type {want}: \"{}\"",
                json_type(e.instance())
            )
        }
        ValidationErrorKind::Enum { options } => {
            format!("{path} in body should be one of {}", go_value(options))
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("{path} in body should be at most {limit} chars long")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("{path} in body should be at least {limit} chars long")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("{path} in body should match '{pattern}'")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!(
                "{path} in body should be less than or equal to {}",
                num(limit)
            )
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("{path} in body should be less than {}", num(limit))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!(
                "{path} in body should be greater than or equal to {}",
                num(limit)
            )
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("{path} in body should be greater than {}", num(limit))
        }
        ValidationErrorKind::MultipleOf { .. } => {
            let factor = node
                .and_then(|n| n.get("multipleOf"))
                .map(num)
                .unwrap_or_default();
            format!("{path} in body should be a multiple of {factor}")
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("{path} in body should have at most {limit} items")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("{path} in body should have at least {limit} items")
        }
        ValidationErrorKind::UniqueItems => format!("{path} in body shouldn't contain duplicates"),
        ValidationErrorKind::MaxProperties { limit } => {
            format!("{path} in body should have at most {limit} properties")
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("{path} in body should have at least {limit} properties")
        }
        ValidationErrorKind::AdditionalItems { .. } => {
            format!("{path} in body can't have additional items")
        }
        ValidationErrorKind::Format { format } => {
            let data = e
                .instance()
                .as_str()
                .map_or_else(|| e.instance().to_string(), str::to_string);
            format!("{path} in body must be of type {format}: {data:?}")
        }
        ValidationErrorKind::AnyOf { .. } => {
            format!("{path:?} must validate at least one schema (anyOf)")
        }
        ValidationErrorKind::OneOfNotValid { .. } => {
            format!("{path:?} must validate one and only one schema (oneOf). Found none valid")
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            format!(
                "{path:?} must validate one and only one schema (oneOf). Found more than one valid alternative"
            )
        }
        ValidationErrorKind::Not { .. } => format!("{path:?} must not validate the schema (not)"),
        _ => format!("{path} in body: {e}"),
    };
    out.push(msg);
}

/// The schema node a keyword error belongs to: the pointer without its last
/// segment (`/properties/a/type` → `/properties/a`).
fn parent_pointer(p: &str) -> &str {
    p.rfind('/').map_or("", |i| &p[..i])
}

/// `strings.Join(schema.Type, ",")`, without the `null` added for `nullable`.
fn declared_types(node: &Value) -> String {
    let nullable = node
        .get("nullable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match node.get("type") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| !(nullable && *t == "null"))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

/// go-openapi's `schemaInfoForType` of decoded JSON: every number is a
/// float64, i.e. "number".
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn num(v: &Value) -> String {
    v.as_f64().map_or_else(|| v.to_string(), go_float)
}

/// `LoadSchemaFromBytes`: YAML (sigs.k8s.io/yaml) → JSON → spec.Schema, with
/// local `$ref`s expanded.
fn load(text: &str, kind: SchemaType) -> Result<Value, SchemaError> {
    let err = |message: String| SchemaError { kind, message };
    let doc = value_from_yaml(text).map_err(|e| err(format!("yaml unmarshal: {e}")))?;
    let mut doc = match doc {
        Value::Null => Value::Object(Map::new()),
        Value::Object(_) => doc,
        other => {
            return Err(err(format!(
                "json unmarshal: json: cannot unmarshal {} into Go value of type spec.Schema",
                json_type(&other)
            )));
        }
    };
    let root = doc.clone();
    expand(&mut doc, &root, &mut Vec::new()).map_err(|m| err(format!("expand schema: {m}")))?;
    Ok(doc)
}

/// spec.ExpandSchema for local references: a schema `{"$ref": "#/…"}` is
/// replaced by the (expanded) schema it points to. A reference inside its
/// own expansion (a cycle) stays a `$ref`, as go-openapi leaves circular
/// references.
fn expand(node: &mut Value, root: &Value, stack: &mut Vec<String>) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let r = r.clone();
                if let Some(ptr) = r.strip_prefix('#') {
                    if stack.contains(&r) {
                        return Ok(());
                    }
                    let target = root.pointer(ptr).ok_or_else(|| {
                        format!(
                            "object has no key {:?}",
                            ptr.rsplit('/').next().unwrap_or("")
                        )
                    })?;
                    let mut target = target.clone();
                    stack.push(r);
                    expand(&mut target, root, stack)?;
                    stack.pop();
                    *node = target;
                    return Ok(());
                }
            }
            for (_, v) in map.iter_mut() {
                expand(v, root, stack)?;
            }
        }
        Value::Array(items) => {
            for v in items {
                expand(v, root, stack)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `AdditionalPropertiesTransformer.Transform`: `additionalProperties: false`
/// where unset, on the schema itself, on each property that has none (and
/// then recursively inside that property), and through `items`. A property
/// with its own `additionalProperties` is left alone, subtree included.
pub fn additional_properties(s: &mut Value) {
    let Value::Object(map) = s else { return };
    map.entry("additionalProperties")
        .or_insert(Value::Bool(false));
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for prop in props.values_mut() {
            if let Value::Object(pm) = prop
                && !pm.contains_key("additionalProperties")
            {
                pm.insert("additionalProperties".into(), Value::Bool(false));
                additional_properties(prop);
            }
        }
    }
    match map.get_mut("items") {
        Some(items @ Value::Object(_)) => additional_properties(items),
        Some(Value::Array(list)) => list.iter_mut().for_each(additional_properties),
        _ => {}
    }
}

/// `ExtendTransformer.Transform`: when the values schema has
/// `x-extend.schema`, it takes the config schema's definitions, `x-`
/// extensions, required (parent's first), properties and patternProperties
/// (its own win), and title/description where it has none.
pub fn extend(s: &mut Value, parent: &Value) {
    let has_extend = s
        .get("x-extend")
        .and_then(|x| x.get("schema"))
        .is_some_and(|v| !v.is_null());
    let (Value::Object(map), Value::Object(par)) = (s, parent) else {
        return;
    };
    if !has_extend {
        return;
    }
    for key in ["definitions", "properties", "patternProperties"] {
        let mut merged = match par.get(key) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        if let Some(Value::Object(own)) = map.get(key) {
            merged.extend(own.clone());
        }
        map.insert(key.into(), Value::Object(merged));
    }
    for (k, v) in par {
        if k.starts_with("x-") && !map.contains_key(k) {
            map.insert(k.clone(), v.clone());
        }
    }
    let mut required: Vec<Value> = strings(par.get("required"))
        .into_iter()
        .map(Value::String)
        .collect();
    for r in strings(map.get("required")) {
        if !required.iter().any(|x| x.as_str() == Some(r.as_str())) {
            required.push(Value::String(r));
        }
    }
    if required.is_empty() {
        map.remove("required");
    } else {
        map.insert("required".into(), Value::Array(required));
    }
    for key in ["title", "description"] {
        let own_empty = map
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if own_empty && let Some(v) = par.get(key) {
            map.insert(key.into(), v.clone());
        }
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// `RequiredForHelmTransformer.Transform`: `x-required-for-helm` (a string
/// or a list of strings) joins `required`, on the schema and recursively on
/// its `properties` (not through `items`).
pub fn required_for_helm(s: &mut Value) {
    merge_required_fields(s);
    transform_required(s);
}

fn transform_required(s: &mut Value) {
    if let Some(Value::Object(props)) = s.get_mut("properties") {
        for prop in props.values_mut() {
            merge_required_fields(prop);
            transform_required(prop);
        }
    }
}

/// `MergeRequiredFields`.
fn merge_required_fields(s: &mut Value) {
    let Value::Object(map) = s else { return };
    let extra: Vec<String> = match map.get("x-required-for-helm") {
        None => return,
        Some(Value::String(f)) => vec![f.clone()],
        // ext.GetStringSlice: only a list made entirely of strings counts.
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            strings(Some(&Value::Array(items.clone())))
        }
        Some(_) => Vec::new(),
    };
    let mut required = strings(map.get("required"));
    for f in extra {
        if !required.contains(&f) {
            required.push(f);
        }
    }
    if !required.is_empty() {
        map.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
}

/// go-openapi honours `nullable: true` (null passes the type check); the
/// jsonschema crate does not know the keyword, so `type: T` becomes
/// `type: [T, "null"]`.
fn rewrite_nullable(s: &mut Value) {
    match s {
        Value::Object(map) => {
            if map.get("nullable").and_then(Value::as_bool) == Some(true) {
                match map.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        map.insert(
                            "type".into(),
                            Value::Array(vec![Value::String(t), "null".into()]),
                        );
                    }
                    Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                        types.push("null".into())
                    }
                    _ => {}
                }
            }
            for v in map.values_mut() {
                rewrite_nullable(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_nullable),
        _ => {}
    }
}

/// `validation.ApplyDefaults`: for an object, every property of the schema
/// with a non-null `default` that is missing from the object gets a copy of
/// it; then every key that has a property schema is defaulted recursively
/// (including the defaults just added). For an array, every item is
/// defaulted with the single `items` schema (a list of `items` schemas
/// applies nothing). Scalars are left alone. Returns whether anything changed.
pub fn apply_defaults(obj: &mut Value, s: &Value) -> bool {
    let mut changed = false;
    match obj {
        Value::Object(map) => {
            let Some(Value::Object(props)) = s.get("properties") else {
                return false;
            };
            for (k, prop) in props {
                match prop.get("default") {
                    None | Some(Value::Null) => continue,
                    Some(d) => {
                        if !map.contains_key(k) {
                            map.insert(k.clone(), d.clone());
                            changed = true;
                        }
                    }
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = props.get(k) {
                    changed |= apply_defaults(v, prop);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema @ Value::Object(_)) = s.get("items") {
                for v in items {
                    changed |= apply_defaults(v, item_schema);
                }
            }
        }
        _ => {}
    }
    changed
}
