//! gojsonschema's schema loading (`SchemaLoader.Compile`,
//! `schemaPool.parseReferences`, `Schema.parseSchema`, `parseReference`):
//! the schema document turned into a tree of subschemas, with the texts of
//! the schema errors gojsonschema reports (Helm prints them as the chart's
//! validation failure).
//!
//! As Helm calls it (`gojsonschema.Validate` with a bytes loader): no
//! meta-schema validation, the draft taken from a known `$schema` URL or
//! else "hybrid" (draft 4, 6 and 7 keywords all accepted), `$ref`s rewritten
//! to absolute references against the enclosing `$id` before parsing, and
//! each distinct reference parsed once (so recursive schemas terminate).
//! Where Go ranges over a map (properties, definitions, dependencies,
//! patternProperties) the order is random in Go; here it is by key.

use std::collections::HashMap;

use regex::Regex;

use super::json::{J, marshal_without_number};
use super::num::Dec;
use super::refs::Ref;

/// gojsonschema's `Draft`; `Hybrid` compares above every draft.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Draft {
    D4,
    D6,
    D7,
    Hybrid,
}

/// `additionalProperties` / `additionalItems`: absent, a boolean or a
/// schema (Go's `interface{}` field).
#[derive(Clone, Copy, Debug, Default)]
pub enum Extra {
    #[default]
    Absent,
    Bool(bool),
    Schema(usize),
}

#[derive(Debug)]
pub enum Dep {
    Names(Vec<String>),
    Schema(usize),
}

/// gojsonschema's `subSchema` (the validation fields).
#[derive(Debug, Default)]
pub struct Sub {
    pub pass: Option<bool>,
    pub types: Vec<&'static str>,
    pub ref_schema: Option<usize>,
    /// `propertiesChildren`, by name.
    pub props: Vec<(String, usize)>,
    pub items: Vec<usize>,
    pub items_single: bool,
    pub multiple_of: Option<Dec>,
    pub maximum: Option<Dec>,
    pub exclusive_maximum: Option<Dec>,
    pub minimum: Option<Dec>,
    pub exclusive_minimum: Option<Dec>,
    pub min_length: Option<i64>,
    pub max_length: Option<i64>,
    pub pattern: Option<(String, Regex)>,
    pub format: String,
    pub min_properties: Option<i64>,
    pub max_properties: Option<i64>,
    pub required: Vec<String>,
    pub dependencies: Vec<(String, Dep)>,
    pub additional_properties: Extra,
    pub pattern_properties: Vec<(Regex, usize)>,
    pub property_names: Option<usize>,
    pub min_items: Option<i64>,
    pub max_items: Option<i64>,
    pub unique_items: bool,
    pub contains: Option<usize>,
    pub additional_items: Extra,
    pub constant: Option<String>,
    pub enumeration: Vec<String>,
    pub one_of: Vec<usize>,
    pub any_of: Vec<usize>,
    pub all_of: Vec<usize>,
    pub not: Option<usize>,
    pub if_: Option<usize>,
    pub then: Option<usize>,
    pub else_: Option<usize>,
}

/// A compiled schema: subschemas in an arena, index 0 the root.
#[derive(Debug)]
pub struct Schema {
    pub subs: Vec<Sub>,
}

const JSON_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "number", "null", "object", "string",
];

fn invalid_type(expected: &str, given: &str) -> String {
    format!("Invalid type. Expected: {expected}, given: {given}")
}

const NOT_A_SCHEMA: &str = "Expected: valid schema, given: Invalid JSON";

/// `parseSchemaURL`: the draft a document's `$schema` names.
fn parse_schema_url(doc: &J) -> Result<Option<Draft>, String> {
    let m = match doc {
        J::Bool(_) => return Ok(None),
        J::Obj(m) => m,
        _ => return Err("schema is invalid".into()),
    };
    match m.get("$schema") {
        None => Ok(None),
        Some(J::Str(s)) => Ok(match Ref::parse(s)?.string().as_str() {
            "http://json-schema.org/draft-04/schema" => Some(Draft::D4),
            "http://json-schema.org/draft-06/schema" => Some(Draft::D6),
            "http://json-schema.org/draft-07/schema" => Some(Draft::D7),
            _ => None,
        }),
        Some(_) => Err("$schema must be of type string".into()),
    }
}

/// A step of a path from the document root.
enum Step {
    Key(String),
    Index(usize),
}

/// `parseReferencesRecursive`: register `$id`s (by their resolved
/// reference, with the path to their node) and rewrite every `$ref` into
/// an absolute reference. `const` and `enum` are literal; the children of
/// `properties`, `dependencies` and `patternProperties` are schemas, the
/// maps themselves are not.
fn rewrite(
    node: &mut J,
    base: &Ref,
    path: &mut Vec<Step>,
    ids: &mut Vec<(String, Vec<(bool, String)>)>,
) {
    match node {
        J::Arr(a) => {
            for (i, v) in a.iter_mut().enumerate() {
                path.push(Step::Index(i));
                rewrite(v, base, path, ids);
                path.pop();
            }
        }
        J::Obj(m) => {
            let mut local = base.clone();
            let key_id = if m.contains_key("id") { "id" } else { "$id" };
            if let Some(J::Str(id)) = m.get(key_id)
                && let Ok(r) = Ref::parse(id)
                && let Ok(l) = base.inherits(&r)
            {
                let key = l.string();
                if ids.iter().any(|(k, _)| *k == key) {
                    // "Reference already exists": Go abandons this subtree.
                    return;
                }
                let steps = path
                    .iter()
                    .map(|s| match s {
                        Step::Key(k) => (true, k.clone()),
                        Step::Index(i) => (false, i.to_string()),
                    })
                    .collect();
                ids.push((key, steps));
                local = l;
            }
            if let Some(J::Str(r)) = m.get("$ref")
                && let Ok(r) = Ref::parse(r)
                && let Ok(abs) = local.inherits(&r)
            {
                m.insert("$ref".into(), J::Str(abs.string()));
            }
            for (k, v) in m.iter_mut() {
                match k.as_str() {
                    "const" | "enum" => {}
                    "properties" | "dependencies" | "patternProperties" => {
                        if let J::Obj(children) = v {
                            path.push(Step::Key(k.clone()));
                            for (ck, cv) in children.iter_mut() {
                                path.push(Step::Key(ck.clone()));
                                rewrite(cv, &local, path, ids);
                                path.pop();
                            }
                            path.pop();
                        }
                    }
                    _ => {
                        path.push(Step::Key(k.clone()));
                        rewrite(v, &local, path, ids);
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

/// `JsonPointer.Get` with gojsonpointer's error texts.
fn pointer_get<'a>(doc: &'a J, tokens: &[String]) -> Result<&'a J, String> {
    let mut node = doc;
    for t in tokens {
        node = match node {
            J::Obj(m) => m.get(t).ok_or_else(|| format!("Object has no key '{t}'"))?,
            J::Arr(a) => {
                let i: i64 = t
                    .parse()
                    .map_err(|_| format!("Invalid array index '{t}'"))?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| a.get(i))
                    .ok_or_else(|| format!("Out of bound array[0,{}] index '{i}'", a.len()))?
            }
            _ => return Err(format!("Invalid token reference '{t}'")),
        };
    }
    Ok(node)
}

struct Compiler<'a> {
    subs: Vec<Sub>,
    /// `schemaReferencePool`: reference → subschema.
    ref_pool: HashMap<String, usize>,
    /// `schemaPool`: reference → document and its draft.
    docs: HashMap<String, (&'a J, Option<Draft>)>,
}

/// `gojsonschema.NewSchema(NewBytesLoader(..))` on a decoded document.
pub fn compile(mut doc: J) -> Result<Schema, String> {
    // parseReferences(doc, "#", pooled)
    let detected = parse_schema_url(&doc)?;
    let root_ref = Ref::parse("#")?;
    let mut ids = Vec::new();
    rewrite(&mut doc, &root_ref, &mut Vec::new(), &mut ids);
    let doc = &doc;
    let mut docs = HashMap::new();
    for (key, steps) in ids {
        let mut node = Some(doc);
        for (is_key, s) in &steps {
            node = node.and_then(|n| match n {
                J::Obj(m) if *is_key => m.get(s),
                J::Arr(a) if !*is_key => s.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            });
        }
        if let Some(n) = node {
            docs.insert(key, (n, detected));
        }
    }
    docs.insert(root_ref.string(), (doc, detected));
    let mut c = Compiler {
        subs: Vec::new(),
        ref_pool: HashMap::new(),
        docs,
    };
    let root = c.new_sub();
    c.parse_into(root, doc, detected.unwrap_or(Draft::Hybrid))?;
    Ok(Schema { subs: c.subs })
}

fn must_be_number(v: &J) -> Option<Dec> {
    match v {
        J::Num(lit) => Dec::parse(lit),
        _ => None,
    }
}

/// `mustBeInteger`: a whole number whose literal `json.Number.Int64`
/// accepts (so `2.0` and `2e0` are not).
fn must_be_integer(v: &J) -> Option<i64> {
    match v {
        J::Num(lit) => lit.parse::<i64>().ok(),
        _ => None,
    }
}

fn is_schema_node(v: &J) -> bool {
    matches!(v, J::Obj(_) | J::Bool(_))
}

impl<'a> Compiler<'a> {
    fn new_sub(&mut self) -> usize {
        self.subs.push(Sub::default());
        self.subs.len() - 1
    }

    /// A new subschema parsed from `node`.
    fn child(&mut self, node: &'a J, draft: Draft) -> Result<usize, String> {
        let i = self.new_sub();
        self.parse_into(i, node, draft)?;
        Ok(i)
    }

    fn parse_into(&mut self, idx: usize, node: &'a J, draft: Draft) -> Result<(), String> {
        let mut s = Sub::default();
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.parse_schema(&mut s, node, draft)
        });
        self.subs[idx] = s;
        r
    }

    /// `getDocument`: a reference's document from the pool, or its base
    /// document and the fragment as a JSON pointer.
    fn get_document(&mut self, r: &Ref) -> Result<(&'a J, Option<Draft>), String> {
        let key = r.string();
        if let Some(&d) = self.docs.get(&key) {
            return Ok(d);
        }
        if let Some(&(base, draft)) = self.docs.get(&r.without_fragment().string()) {
            let node = pointer_get(base, &r.pointer())?;
            self.docs.insert(key, (node, draft));
            return Ok((node, draft));
        }
        if !r.is_canonical() {
            return Err(format!("Reference {key} must be canonical"));
        }
        // gojsonschema would read the file or fetch the URL here.
        Err(format!(
            "cannot load the referenced schema {key}: antiopa does not read files or the network for $ref"
        ))
    }

    /// `Schema.parseSchema`.
    fn parse_schema(&mut self, s: &mut Sub, node: &'a J, draft: Draft) -> Result<(), String> {
        if draft >= Draft::D6
            && let J::Bool(b) = node
        {
            s.pass = Some(*b);
            return Ok(());
        }
        let J::Obj(m) = node else {
            return Err(NOT_A_SCHEMA.into());
        };

        let key_id = match draft {
            Draft::D4 => "id",
            Draft::Hybrid if m.contains_key("id") => "id",
            _ => "$id",
        };
        match m.get(key_id) {
            None => {}
            Some(J::Str(id)) => {
                Ref::parse(id)?;
            }
            Some(_) => return Err(invalid_type("string", key_id)),
        }

        match m.get("definitions") {
            None => {}
            Some(J::Obj(defs)) => {
                for dv in defs.values() {
                    if !is_schema_node(dv) {
                        return Err(invalid_type("array of schemas", "definitions"));
                    }
                    self.child(dv, draft)?;
                }
            }
            // Go asserts the map type after accepting a boolean: the panic
            // ValidateAgainstSingleSchema recovers from.
            Some(J::Bool(_)) => {
                return Err("unable to validate schema: interface conversion: interface {} is bool, not map[string]interface {}".into());
            }
            Some(_) => return Err(invalid_type("array of schemas", "definitions")),
        }

        for key in ["title", "description"] {
            if let Some(v) = m.get(key)
                && !matches!(v, J::Str(_))
            {
                return Err(invalid_type("string", key));
            }
        }

        match m.get("$ref") {
            None => {}
            Some(J::Str(k)) => {
                let r = Ref::parse(k)?;
                let key = r.string();
                if let Some(&t) = self.ref_pool.get(&key) {
                    s.ref_schema = Some(t);
                } else {
                    // parseReference
                    let new = self.new_sub();
                    self.ref_pool.entry(key).or_insert(new);
                    let (doc, doc_draft) = self.get_document(&r)?;
                    if !is_schema_node(doc) {
                        return Err("valid schema must be of type object".into());
                    }
                    self.parse_into(new, doc, doc_draft.unwrap_or(draft))?;
                    s.ref_schema = Some(new);
                    return Ok(());
                }
            }
            Some(_) => return Err(invalid_type("string", "$ref")),
        }

        if let Some(t) = m.get("type") {
            let mut add = |k: &str| -> Result<(), String> {
                let Some(name) = JSON_TYPES.iter().find(|t| **t == k) else {
                    return Err(format!(
                        "has a primitive type that is NOT VALID -- given: /{k}/ Expected valid values are:[{}]",
                        JSON_TYPES.join(" ")
                    ));
                };
                if s.types.contains(name) {
                    return Err(format!("{k} type is duplicated"));
                }
                s.types.push(name);
                Ok(())
            };
            match t {
                J::Str(k) => add(k)?,
                J::Arr(a) => {
                    for x in a {
                        match x {
                            J::Str(k) => add(k)?,
                            _ => return Err(invalid_type("string/array of strings", "type")),
                        }
                    }
                }
                _ => return Err(invalid_type("string/array of strings", "type")),
            }
        }

        if let Some(p) = m.get("properties") {
            let J::Obj(pm) = p else {
                return Err("properties must be of type object".into());
            };
            for (k, v) in pm {
                let i = self.child(v, draft)?;
                s.props.push((k.clone(), i));
            }
        }

        match m.get("additionalProperties") {
            None => {}
            Some(J::Bool(b)) => s.additional_properties = Extra::Bool(*b),
            Some(v @ J::Obj(_)) => s.additional_properties = Extra::Schema(self.child(v, draft)?),
            Some(_) => return Err(invalid_type("boolean/valid schema", "additionalProperties")),
        }

        match m.get("patternProperties") {
            None => {}
            Some(J::Obj(pm)) => {
                for (k, v) in pm {
                    let re = crate::engine::funcs::sprig::regex::compile(k)
                        .map_err(|_| format!("Invalid regex pattern '{k}'"))?;
                    let i = self.child(v, draft)?;
                    s.pattern_properties.push((re, i));
                }
            }
            Some(_) => return Err(invalid_type("valid schema", "patternProperties")),
        }

        if draft >= Draft::D6
            && let Some(v) = m.get("propertyNames")
        {
            if !is_schema_node(v) {
                return Err(invalid_type("valid schema", "patternProperties"));
            }
            s.property_names = Some(self.child(v, draft)?);
        }

        if let Some(d) = m.get("dependencies") {
            let J::Obj(dm) = d else {
                return Err("dependencies must be of type object".into());
            };
            const BAD_DEP: &str = "dependency must be of type schema or array of strings";
            for (k, v) in dm {
                match v {
                    J::Arr(names) => {
                        let mut list = Vec::new();
                        for n in names {
                            let J::Str(n) = n else {
                                return Err(BAD_DEP.into());
                            };
                            list.push(n.clone());
                        }
                        if !list.is_empty() {
                            s.dependencies.push((k.clone(), Dep::Names(list)));
                        }
                    }
                    J::Obj(_) | J::Bool(_) => {
                        let i = self.child(v, draft)?;
                        s.dependencies.push((k.clone(), Dep::Schema(i)));
                    }
                    _ => return Err(BAD_DEP.into()),
                }
            }
        }

        match m.get("items") {
            None => {}
            Some(J::Arr(a)) => {
                for x in a {
                    if !is_schema_node(x) {
                        return Err(invalid_type("valid schema/array of schemas", "items"));
                    }
                    let i = self.child(x, draft)?;
                    s.items.push(i);
                }
                s.items_single = false;
            }
            Some(v @ (J::Obj(_) | J::Bool(_))) => {
                let i = self.child(v, draft)?;
                s.items.push(i);
                s.items_single = true;
            }
            Some(_) => return Err(invalid_type("valid schema/array of schemas", "items")),
        }

        match m.get("additionalItems") {
            None => {}
            Some(J::Bool(b)) => s.additional_items = Extra::Bool(*b),
            Some(v @ J::Obj(_)) => s.additional_items = Extra::Schema(self.child(v, draft)?),
            Some(_) => return Err(invalid_type("boolean/valid schema", "additionalItems")),
        }

        if let Some(v) = m.get("multipleOf") {
            let n = must_be_number(v).ok_or_else(|| invalid_type("number", "multipleOf"))?;
            if n.is_zero() || n.is_neg() {
                return Err("multipleOf must be strictly greater than 0".into());
            }
            s.multiple_of = Some(n);
        }

        if let Some(v) = m.get("minimum") {
            s.minimum = Some(must_be_number(v).ok_or("minimum must be of a number")?);
        }
        if let Some(v) = m.get("exclusiveMinimum") {
            exclusive(
                v,
                draft,
                &mut s.minimum,
                &mut s.exclusive_minimum,
                "Minimum",
            )?;
        }
        if let Some(v) = m.get("maximum") {
            s.maximum = Some(must_be_number(v).ok_or("maximum must be of a number")?);
        }
        if let Some(v) = m.get("exclusiveMaximum") {
            exclusive(
                v,
                draft,
                &mut s.maximum,
                &mut s.exclusive_maximum,
                "Maximum",
            )?;
        }

        s.min_length = non_negative(m, "minLength")?;
        s.max_length = non_negative(m, "maxLength")?;
        if let (Some(a), Some(b)) = (s.min_length, s.max_length)
            && a > b
        {
            return Err("minLength cannot be greater than maxLength".into());
        }

        match m.get("pattern") {
            None => {}
            Some(J::Str(p)) => {
                let re = crate::engine::funcs::sprig::regex::compile(p)
                    .map_err(|_| "pattern must be a valid regex".to_string())?;
                s.pattern = Some((p.clone(), re));
            }
            Some(_) => return Err("pattern must be of a string".into()),
        }

        match m.get("format") {
            None => {}
            Some(J::Str(f)) => s.format = f.clone(),
            Some(_) => return Err("format must be of type string".into()),
        }

        s.min_properties = non_negative(m, "minProperties")?;
        s.max_properties = non_negative(m, "maxProperties")?;
        if let (Some(a), Some(b)) = (s.min_properties, s.max_properties)
            && a > b
        {
            return Err("minProperties cannot be greater than maxProperties".into());
        }

        match m.get("required") {
            None => {}
            Some(J::Arr(a)) => {
                for x in a {
                    let J::Str(k) = x else {
                        return Err("required items must be string".into());
                    };
                    if s.required.contains(k) {
                        return Err("required items must be unique".into());
                    }
                    s.required.push(k.clone());
                }
            }
            Some(_) => return Err("required must be of an array".into()),
        }

        s.min_items = non_negative(m, "minItems")?;
        s.max_items = non_negative(m, "maxItems")?;

        match m.get("uniqueItems") {
            None => {}
            Some(J::Bool(b)) => s.unique_items = *b,
            Some(_) => return Err("uniqueItems must be of a boolean".into()),
        }

        if draft >= Draft::D6
            && let Some(v) = m.get("contains")
        {
            s.contains = Some(self.child(v, draft)?);
        }

        if draft >= Draft::D6
            && let Some(v) = m.get("const")
        {
            s.constant = Some(marshal_without_number(v)?);
        }

        match m.get("enum") {
            None => {}
            Some(J::Arr(a)) => {
                for x in a {
                    let e = marshal_without_number(x)?;
                    if s.enumeration.contains(&e) {
                        return Err("enum items must be unique".into());
                    }
                    s.enumeration.push(e);
                }
            }
            Some(_) => return Err("enum must be of an array".into()),
        }

        // allOf's error names anyOf, as in gojsonschema.
        for (key, err_key) in [("oneOf", "oneOf"), ("anyOf", "anyOf"), ("allOf", "anyOf")] {
            match m.get(key) {
                None => {}
                Some(J::Arr(a)) => {
                    for x in a {
                        let i = self.child(x, draft)?;
                        match key {
                            "oneOf" => s.one_of.push(i),
                            "anyOf" => s.any_of.push(i),
                            _ => s.all_of.push(i),
                        }
                    }
                }
                Some(_) => return Err(format!("{err_key} must be of an array")),
            }
        }

        if let Some(v) = m.get("not") {
            if !is_schema_node(v) {
                return Err("not must be of an object".into());
            }
            s.not = Some(self.child(v, draft)?);
        }

        if draft >= Draft::D7 {
            for key in ["if", "then", "else"] {
                if let Some(v) = m.get(key) {
                    if !is_schema_node(v) {
                        return Err(format!("{key} must be of an object"));
                    }
                    let i = Some(self.child(v, draft)?);
                    match key {
                        "if" => s.if_ = i,
                        "then" => s.then = i,
                        _ => s.else_ = i,
                    }
                }
            }
        }
        Ok(())
    }
}

/// `minLength`-style keywords: a non-negative integer.
fn non_negative(
    m: &std::collections::BTreeMap<String, J>,
    key: &str,
) -> Result<Option<i64>, String> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => {
            let n = must_be_integer(v).ok_or_else(|| format!("{key} must be of an integer"))?;
            if n < 0 {
                return Err(format!("{key} must be greater than or equal to 0"));
            }
            Ok(Some(n))
        }
    }
}

/// `exclusiveMinimum`/`exclusiveMaximum`: draft 4's boolean modifier of
/// `minimum`/`maximum`, draft 6+'s own limit, either in hybrid mode.
fn exclusive(
    v: &J,
    draft: Draft,
    limit: &mut Option<Dec>,
    excl: &mut Option<Dec>,
    which: &str,
) -> Result<(), String> {
    let key = format!("exclusive{which}");
    let plain = which.to_ascii_lowercase();
    let bool_form = |b: bool, limit: &mut Option<Dec>, excl: &mut Option<Dec>| {
        if limit.is_none() {
            return Err(format!("{key} cannot be used without {plain}"));
        }
        if b {
            *excl = limit.take();
        }
        Ok(())
    };
    match (draft, v) {
        (Draft::D4, J::Bool(b)) | (Draft::Hybrid, J::Bool(b)) => bool_form(*b, limit, excl),
        (Draft::D4, _) => Err(invalid_type("boolean", &key)),
        (Draft::Hybrid, J::Num(_)) | (Draft::D6 | Draft::D7, J::Num(_)) => {
            *excl = must_be_number(v);
            Ok(())
        }
        (Draft::Hybrid, _) => Err(invalid_type("boolean/number", &key)),
        _ => Err(invalid_type("number", &key)),
    }
}
