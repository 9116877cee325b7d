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

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use typed_arena::Arena;

use crate::engine::funcs::sprig::regex::Regex;

use super::json::{J, Keys, Obj, marshal_without_number};
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

/// gojsonschema's `subSchema` (the validation fields). The keywords
/// nearly every subschema has are inline; the others sit behind one box,
/// made only for a subschema that uses any of them, and are read and set
/// through `Deref` as if inline. All inline, a subschema took ~800 bytes:
/// vault's 48 KB schema compiled to a 388 KB vector, mapped and faulted in
/// afresh on each render (bitnami-redis' 150 KB schema: over 1 MB).
#[derive(Debug, Default)]
pub struct Sub {
    pub pass: Option<bool>,
    pub types: Vec<&'static str>,
    pub ref_schema: Option<usize>,
    /// `propertiesChildren`, by name.
    pub props: Vec<(String, usize)>,
    pub items: Vec<usize>,
    pub items_single: bool,
    more: Option<Box<Keywords>>,
}

/// The less common keywords of a [`Sub`].
#[derive(Debug, Default)]
pub struct Keywords {
    pub multiple_of: Option<Dec>,
    pub maximum: Option<Dec>,
    pub exclusive_maximum: Option<Dec>,
    pub minimum: Option<Dec>,
    pub exclusive_minimum: Option<Dec>,
    pub min_length: Option<i64>,
    pub max_length: Option<i64>,
    pub pattern: Option<(String, Rc<Regex>)>,
    pub format: String,
    pub min_properties: Option<i64>,
    pub max_properties: Option<i64>,
    pub required: Vec<String>,
    pub dependencies: Vec<(String, Dep)>,
    pub additional_properties: Extra,
    pub pattern_properties: Vec<(Rc<Regex>, usize)>,
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

impl std::ops::Deref for Sub {
    type Target = Keywords;
    fn deref(&self) -> &Keywords {
        match &self.more {
            Some(k) => k,
            None => no_keywords(),
        }
    }
}

impl std::ops::DerefMut for Sub {
    /// Setting any of the keywords gives the subschema its box.
    fn deref_mut(&mut self) -> &mut Keywords {
        self.more.get_or_insert_with(Box::default)
    }
}

/// The keywords of a subschema that has none of them. Per thread, as
/// compiled patterns are `Rc`; one small box each, never freed.
fn no_keywords() -> &'static Keywords {
    thread_local! {
        static NONE: &'static Keywords = Box::leak(Box::default());
    }
    NONE.with(|k| *k)
}

/// A compiled schema: subschemas in an arena, index 0 the root.
#[derive(Debug)]
pub struct Schema {
    pub subs: Vec<Sub>,
    /// Nesting of the validation under way, and whether it went past
    /// [`MAX_DEPTH`](super::validate::MAX_DEPTH).
    pub depth: std::cell::Cell<usize>,
    pub overflow: std::cell::Cell<bool>,
}

const JSON_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "number", "null", "object", "string",
];

fn invalid_type(expected: &str, given: &str) -> String {
    format!("Invalid type. Expected: {expected}, given: {given}")
}

const NOT_A_SCHEMA: &str = "Expected: valid schema, given: Invalid JSON";

/// `parseSchemaURL`: the draft a document's `$schema` names.
fn parse_schema_url(doc: &J<'_>) -> Result<Option<Draft>, String> {
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

/// The scope `$id` of an object node in `parseReferencesRecursive`: the
/// id resolved against `base`, or `Err(())` when that reference was
/// registered before (Go then abandons the subtree: "Reference already
/// exists"), or `None` without a usable id.
fn scope_id(
    m: &Obj<'_>,
    base: &Ref,
    seen: &mut HashSet<String>,
) -> Result<Option<(String, Ref)>, ()> {
    let key_id = if m.contains_key("id") { "id" } else { "$id" };
    if let Some(J::Str(id)) = m.get(key_id)
        && let Ok(r) = Ref::parse(id)
        && let Ok(l) = base.inherits(&r)
    {
        let key = l.string();
        if !seen.insert(key.clone()) {
            return Err(());
        }
        return Ok(Some((key, l)));
    }
    Ok(None)
}

/// Whether `parseReferencesRecursive` walks into the value of `key`:
/// `const` and `enum` are literal; the maps of `properties`,
/// `dependencies` and `patternProperties` are not schemas, their values are.
fn walk_kind(key: &str) -> Option<bool> {
    match key {
        "const" | "enum" => None,
        "properties" | "dependencies" | "patternProperties" => Some(true),
        _ => Some(false),
    }
}

/// `parseReferencesRecursive`, first half: every `$ref` rewritten into an
/// absolute reference against the enclosing `$id`.
fn rewrite(node: &mut J<'_>, base: &Ref, seen: &mut HashSet<String>) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || rewrite_inner(node, base, seen));
}

fn rewrite_inner(node: &mut J<'_>, base: &Ref, seen: &mut HashSet<String>) {
    match node {
        J::Arr(a) => {
            for v in a {
                rewrite(v, base, seen);
            }
        }
        J::Obj(m) => {
            let Ok(id) = scope_id(m, base, seen) else {
                return;
            };
            let local = id.as_ref().map_or(base, |(_, l)| l);
            if let Some(J::Str(r)) = m.get("$ref")
                && let Ok(r) = Ref::parse(r)
                && let Ok(abs) = local.inherits(&r)
            {
                m.insert("$ref".into(), J::Str(abs.string().into()));
            }
            for (k, v) in m.iter_mut() {
                match walk_kind(k) {
                    None => {}
                    Some(true) => {
                        if let J::Obj(children) = v {
                            for cv in children.values_mut() {
                                rewrite(cv, local, seen);
                            }
                        }
                    }
                    Some(false) => rewrite(v, local, seen),
                }
            }
        }
        _ => {}
    }
}

/// `parseReferencesRecursive`, second half (same walk): the nodes with an
/// `$id`, by their resolved reference.
fn collect_ids<'a>(
    node: &'a J<'a>,
    base: &Ref,
    seen: &mut HashSet<String>,
    ids: &mut Vec<(String, &'a J<'a>)>,
) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        collect_ids_inner(node, base, seen, ids)
    });
}

fn collect_ids_inner<'a>(
    node: &'a J<'a>,
    base: &Ref,
    seen: &mut HashSet<String>,
    ids: &mut Vec<(String, &'a J<'a>)>,
) {
    match node {
        J::Arr(a) => {
            for v in a {
                collect_ids(v, base, seen, ids);
            }
        }
        J::Obj(m) => {
            let Ok(id) = scope_id(m, base, seen) else {
                return;
            };
            let local = match &id {
                Some((key, l)) => {
                    ids.push((key.clone(), node));
                    l
                }
                None => base,
            };
            for (k, v) in m {
                match walk_kind(k) {
                    None => {}
                    Some(true) => {
                        if let J::Obj(children) = v {
                            for cv in children.values() {
                                collect_ids(cv, local, seen, ids);
                            }
                        }
                    }
                    Some(false) => collect_ids(v, local, seen, ids),
                }
            }
        }
        _ => {}
    }
}

/// `JsonPointer.Get` with gojsonpointer's error texts.
fn pointer_get<'a>(doc: &'a J<'a>, tokens: &[String]) -> Result<&'a J<'a>, String> {
    let mut node = doc;
    for t in tokens {
        node = match node {
            J::Obj(m) => m
                .get(t.as_str())
                .ok_or_else(|| format!("Object has no key '{t}'"))?,
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

/// The keywords of one schema object, found in a single pass over it
/// (instead of a map lookup per keyword).
#[derive(Default)]
struct Kw<'a> {
    id_new: Option<&'a J<'a>>,
    id_old: Option<&'a J<'a>>,
    definitions: Option<&'a J<'a>>,
    title: Option<&'a J<'a>>,
    description: Option<&'a J<'a>>,
    ref_: Option<&'a J<'a>>,
    type_: Option<&'a J<'a>>,
    properties: Option<&'a J<'a>>,
    additional_properties: Option<&'a J<'a>>,
    pattern_properties: Option<&'a J<'a>>,
    property_names: Option<&'a J<'a>>,
    dependencies: Option<&'a J<'a>>,
    items: Option<&'a J<'a>>,
    additional_items: Option<&'a J<'a>>,
    multiple_of: Option<&'a J<'a>>,
    minimum: Option<&'a J<'a>>,
    exclusive_minimum: Option<&'a J<'a>>,
    maximum: Option<&'a J<'a>>,
    exclusive_maximum: Option<&'a J<'a>>,
    min_length: Option<&'a J<'a>>,
    max_length: Option<&'a J<'a>>,
    pattern: Option<&'a J<'a>>,
    format: Option<&'a J<'a>>,
    min_properties: Option<&'a J<'a>>,
    max_properties: Option<&'a J<'a>>,
    required: Option<&'a J<'a>>,
    min_items: Option<&'a J<'a>>,
    max_items: Option<&'a J<'a>>,
    unique_items: Option<&'a J<'a>>,
    contains: Option<&'a J<'a>>,
    const_: Option<&'a J<'a>>,
    enum_: Option<&'a J<'a>>,
    one_of: Option<&'a J<'a>>,
    any_of: Option<&'a J<'a>>,
    all_of: Option<&'a J<'a>>,
    not: Option<&'a J<'a>>,
    if_: Option<&'a J<'a>>,
    then: Option<&'a J<'a>>,
    else_: Option<&'a J<'a>>,
}

impl<'a> Kw<'a> {
    fn of(m: &'a Obj<'a>) -> Kw<'a> {
        let mut kw = Kw::default();
        for (k, v) in m {
            let slot = match &**k {
                "$id" => &mut kw.id_new,
                "id" => &mut kw.id_old,
                "definitions" => &mut kw.definitions,
                "title" => &mut kw.title,
                "description" => &mut kw.description,
                "$ref" => &mut kw.ref_,
                "type" => &mut kw.type_,
                "properties" => &mut kw.properties,
                "additionalProperties" => &mut kw.additional_properties,
                "patternProperties" => &mut kw.pattern_properties,
                "propertyNames" => &mut kw.property_names,
                "dependencies" => &mut kw.dependencies,
                "items" => &mut kw.items,
                "additionalItems" => &mut kw.additional_items,
                "multipleOf" => &mut kw.multiple_of,
                "minimum" => &mut kw.minimum,
                "exclusiveMinimum" => &mut kw.exclusive_minimum,
                "maximum" => &mut kw.maximum,
                "exclusiveMaximum" => &mut kw.exclusive_maximum,
                "minLength" => &mut kw.min_length,
                "maxLength" => &mut kw.max_length,
                "pattern" => &mut kw.pattern,
                "format" => &mut kw.format,
                "minProperties" => &mut kw.min_properties,
                "maxProperties" => &mut kw.max_properties,
                "required" => &mut kw.required,
                "minItems" => &mut kw.min_items,
                "maxItems" => &mut kw.max_items,
                "uniqueItems" => &mut kw.unique_items,
                "contains" => &mut kw.contains,
                "const" => &mut kw.const_,
                "enum" => &mut kw.enum_,
                "oneOf" => &mut kw.one_of,
                "anyOf" => &mut kw.any_of,
                "allOf" => &mut kw.all_of,
                "not" => &mut kw.not,
                "if" => &mut kw.if_,
                "then" => &mut kw.then,
                "else" => &mut kw.else_,
                _ => continue,
            };
            *slot = Some(v);
        }
        kw
    }
}

struct Compiler<'a> {
    subs: Vec<Sub>,
    /// `schemaReferencePool`: reference → subschema.
    ref_pool: HashMap<String, usize>,
    /// `schemaPool`: reference → document and its draft.
    docs: HashMap<String, (&'a J<'a>, Option<Draft>)>,
    /// The documents `file:` references loaded, and the bytes they borrow
    /// from: they join the root document in `docs`, so they live as long
    /// as the compilation (the compiled [`Schema`] borrows none of them).
    files: &'a Arena<Vec<u8>>,
    loaded: &'a Arena<J<'a>>,
}

/// The most a file a `$ref` names may hold. gojsonschema reads any size;
/// this bounds what a chart can make a render read (a schema file of the
/// chart itself is bounded by Helm's 5 MiB per chart file).
const MAX_REF_FILE_SIZE: u64 = 16 * 1024 * 1024;

/// The bytes of a file a `$ref` names, read as Go's `os.Open` and
/// `io.ReadAll` would, with Go's error texts (`open ./s.json: no such
/// file or directory`, `read ./dir: is a directory`). Only regular files
/// and directories (whose read fails as in Go) are opened: a FIFO or device
/// would block or never end, so it is an error naming it.
fn read_ref_file(name: &str) -> Result<Vec<u8>, String> {
    use crate::gocompat::os::path_error;
    use std::io::Read;
    let path = std::path::Path::new(name);
    let meta = std::fs::metadata(path).map_err(|e| path_error("open", path, &e))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(format!(
            "cannot read {name} for a $ref: not a regular file (antiopa opens no FIFOs or devices)"
        ));
    }
    let f = std::fs::File::open(path).map_err(|e| path_error("open", path, &e))?;
    let mut buf = Vec::new();
    f.take(MAX_REF_FILE_SIZE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| path_error("read", path, &e))?;
    if buf.len() as u64 > MAX_REF_FILE_SIZE {
        return Err(format!(
            "cannot read {name} for a $ref: larger than antiopa's limit of {MAX_REF_FILE_SIZE} bytes"
        ));
    }
    Ok(buf)
}

/// `gojsonschema.NewSchema(NewBytesLoader(..))` on a decoded document.
pub fn compile(mut doc: J<'_>, keys: Keys) -> Result<Schema, String> {
    // parseReferences(doc, "#", pooled)
    let detected = parse_schema_url(&doc)?;
    let root_ref = Ref::parse("#")?;
    if keys.has_ref {
        rewrite(&mut doc, &root_ref, &mut HashSet::new());
    }
    let doc = &doc;
    let mut ids = Vec::new();
    if keys.has_id {
        collect_ids(doc, &root_ref, &mut HashSet::new(), &mut ids);
    }
    let mut docs: HashMap<String, (&J<'_>, Option<Draft>)> =
        ids.into_iter().map(|(k, n)| (k, (n, detected))).collect();
    docs.insert(root_ref.string(), (doc, detected));
    let files = Arena::new();
    let loaded = Arena::new();
    let mut c = Compiler {
        subs: Vec::new(),
        ref_pool: HashMap::new(),
        docs,
        files: &files,
        loaded: &loaded,
    };
    let root = c.new_sub();
    c.parse_into(root, doc, detected.unwrap_or(Draft::Hybrid))?;
    // A `$ref` chain that comes back to itself (`{"$ref": "#"}`) makes
    // gojsonschema's validateRecursive recurse until Go's stack limit
    // ("fatal error: stack overflow"); refuse it here instead.
    for start in 0..c.subs.len() {
        let mut at = start;
        for _ in 0..c.subs.len() {
            match c.subs[at].ref_schema {
                Some(next) if next == start => {
                    return Err("the schema's $ref chain refers back to itself without a keyword in between (helm overflows its stack on it)".into());
                }
                Some(next) => at = next,
                None => break,
            }
        }
    }
    Ok(Schema {
        subs: c.subs,
        depth: Default::default(),
        overflow: Default::default(),
    })
}

fn must_be_number(v: &J<'_>) -> Option<Dec> {
    match v {
        J::Num(lit) => Dec::parse(lit),
        _ => None,
    }
}

/// `mustBeInteger`: a whole number whose literal `json.Number.Int64`
/// accepts (so `2.0` and `2e0` are not).
fn must_be_integer(v: &J<'_>) -> Option<i64> {
    match v {
        J::Num(lit) => lit.parse::<i64>().ok(),
        _ => None,
    }
}

fn is_schema_node(v: &J<'_>) -> bool {
    matches!(v, J::Obj(_) | J::Bool(_))
}

impl<'a> Compiler<'a> {
    fn new_sub(&mut self) -> usize {
        self.subs.push(Sub::default());
        self.subs.len() - 1
    }

    /// A new subschema parsed from `node`.
    fn child(&mut self, node: &'a J<'a>, draft: Draft) -> Result<usize, String> {
        let i = self.new_sub();
        self.parse_into(i, node, draft)?;
        Ok(i)
    }

    fn parse_into(&mut self, idx: usize, node: &'a J<'a>, draft: Draft) -> Result<(), String> {
        let mut s = Sub::default();
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.parse_schema(&mut s, node, draft)
        });
        self.subs[idx] = s;
        r
    }

    /// `getDocument`: a reference's document from the pool, or its base
    /// document and the fragment as a JSON pointer.
    fn get_document(&mut self, r: &Ref) -> Result<(&'a J<'a>, Option<Draft>), String> {
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
        let Some(name) = r.file_name() else {
            // gojsonschema would fetch the URL here.
            return Err(format!(
                "cannot load the referenced schema {key}: antiopa does not fetch $refs from the network"
            ));
        };
        self.load_file(r, &name?)
    }

    /// The rest of `GetDocument` for a file: the document read and decoded,
    /// added to the pool (`parseReferences(doc, ref without fragment,
    /// pooled)`: its `$ref`s made absolute against the file's URL, its
    /// `$id`s registered), then the fragment's node. As in Go, a document
    /// whose `$schema` is not a string, or that is not an object, is not
    /// pooled (Go drops that error) and is read again by the next reference.
    fn load_file(&mut self, r: &Ref, name: &str) -> Result<(&'a J<'a>, Option<Draft>), String> {
        let bytes: &'a [u8] = self.files.alloc(read_ref_file(name)?);
        let (mut doc, keys) = super::json::decode(bytes)?;
        let base = r.without_fragment();
        let draft = parse_schema_url(&doc);
        if let Ok(draft) = draft {
            // Go checks each `$id` against everything the pool holds.
            let pooled: HashSet<String> = self.docs.keys().cloned().collect();
            if keys.has_ref {
                rewrite(&mut doc, &base, &mut pooled.clone());
            }
            let doc: &'a J<'a> = self.loaded.alloc(doc);
            if keys.has_id {
                let mut ids = Vec::new();
                collect_ids(doc, &base, &mut pooled.clone(), &mut ids);
                for (k, n) in ids {
                    self.docs.insert(k, (n, draft));
                }
            }
            self.docs.insert(base.string(), (doc, draft));
            return Ok((pointer_get(doc, &r.pointer())?, draft));
        }
        let doc: &'a J<'a> = self.loaded.alloc(doc);
        Ok((pointer_get(doc, &r.pointer())?, None))
    }

    /// `Schema.parseSchema`.
    fn parse_schema(&mut self, s: &mut Sub, node: &'a J<'a>, draft: Draft) -> Result<(), String> {
        if draft >= Draft::D6
            && let J::Bool(b) = node
        {
            s.pass = Some(*b);
            return Ok(());
        }
        let J::Obj(m) = node else {
            return Err(NOT_A_SCHEMA.into());
        };
        let kw = Kw::of(m);

        let (key_id, id) = match draft {
            Draft::D4 => ("id", kw.id_old),
            Draft::Hybrid if kw.id_old.is_some() => ("id", kw.id_old),
            _ => ("$id", kw.id_new),
        };
        match id {
            None => {}
            Some(J::Str(id)) => {
                Ref::parse(id)?;
            }
            Some(_) => return Err(invalid_type("string", key_id)),
        }

        match kw.definitions {
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

        for (key, v) in [("title", kw.title), ("description", kw.description)] {
            if let Some(v) = v
                && !matches!(v, J::Str(_))
            {
                return Err(invalid_type("string", key));
            }
        }

        match kw.ref_ {
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

        if let Some(t) = kw.type_ {
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

        if let Some(p) = kw.properties {
            let J::Obj(pm) = p else {
                return Err("properties must be of type object".into());
            };
            for (k, v) in pm {
                let i = self.child(v, draft)?;
                s.props.push((k.to_string(), i));
            }
        }

        match kw.additional_properties {
            None => {}
            Some(J::Bool(b)) => s.additional_properties = Extra::Bool(*b),
            Some(v @ J::Obj(_)) => s.additional_properties = Extra::Schema(self.child(v, draft)?),
            Some(_) => return Err(invalid_type("boolean/valid schema", "additionalProperties")),
        }

        match kw.pattern_properties {
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
            && let Some(v) = kw.property_names
        {
            if !is_schema_node(v) {
                return Err(invalid_type("valid schema", "patternProperties"));
            }
            s.property_names = Some(self.child(v, draft)?);
        }

        if let Some(d) = kw.dependencies {
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
                            list.push(n.to_string());
                        }
                        if !list.is_empty() {
                            s.dependencies.push((k.to_string(), Dep::Names(list)));
                        }
                    }
                    J::Obj(_) | J::Bool(_) => {
                        let i = self.child(v, draft)?;
                        s.dependencies.push((k.to_string(), Dep::Schema(i)));
                    }
                    _ => return Err(BAD_DEP.into()),
                }
            }
        }

        match kw.items {
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

        match kw.additional_items {
            None => {}
            Some(J::Bool(b)) => s.additional_items = Extra::Bool(*b),
            Some(v @ J::Obj(_)) => s.additional_items = Extra::Schema(self.child(v, draft)?),
            Some(_) => return Err(invalid_type("boolean/valid schema", "additionalItems")),
        }

        if let Some(v) = kw.multiple_of {
            let n = must_be_number(v).ok_or_else(|| invalid_type("number", "multipleOf"))?;
            if n.is_zero() || n.is_neg() {
                return Err("multipleOf must be strictly greater than 0".into());
            }
            s.multiple_of = Some(n);
        }

        if let Some(v) = kw.minimum {
            s.minimum = Some(must_be_number(v).ok_or("minimum must be of a number")?);
        }
        if let Some(v) = kw.exclusive_minimum {
            let k: &mut Keywords = s;
            exclusive(
                v,
                draft,
                &mut k.minimum,
                &mut k.exclusive_minimum,
                "Minimum",
            )?;
        }
        if let Some(v) = kw.maximum {
            s.maximum = Some(must_be_number(v).ok_or("maximum must be of a number")?);
        }
        if let Some(v) = kw.exclusive_maximum {
            let k: &mut Keywords = s;
            exclusive(
                v,
                draft,
                &mut k.maximum,
                &mut k.exclusive_maximum,
                "Maximum",
            )?;
        }

        if kw.min_length.is_some() {
            s.min_length = non_negative(kw.min_length, "minLength")?;
        }
        if kw.max_length.is_some() {
            s.max_length = non_negative(kw.max_length, "maxLength")?;
        }
        if let (Some(a), Some(b)) = (s.min_length, s.max_length)
            && a > b
        {
            return Err("minLength cannot be greater than maxLength".into());
        }

        match kw.pattern {
            None => {}
            Some(J::Str(p)) => {
                let re = crate::engine::funcs::sprig::regex::compile(p)
                    .map_err(|_| "pattern must be a valid regex".to_string())?;
                s.pattern = Some((p.to_string(), re));
            }
            Some(_) => return Err("pattern must be of a string".into()),
        }

        match kw.format {
            None => {}
            Some(J::Str(f)) => s.format = f.to_string(),
            Some(_) => return Err("format must be of type string".into()),
        }

        if kw.min_properties.is_some() {
            s.min_properties = non_negative(kw.min_properties, "minProperties")?;
        }
        if kw.max_properties.is_some() {
            s.max_properties = non_negative(kw.max_properties, "maxProperties")?;
        }
        if let (Some(a), Some(b)) = (s.min_properties, s.max_properties)
            && a > b
        {
            return Err("minProperties cannot be greater than maxProperties".into());
        }

        match kw.required {
            None => {}
            Some(J::Arr(a)) => {
                for x in a {
                    let J::Str(k) = x else {
                        return Err("required items must be string".into());
                    };
                    if s.required.iter().any(|r| r == k) {
                        return Err("required items must be unique".into());
                    }
                    s.required.push(k.to_string());
                }
            }
            Some(_) => return Err("required must be of an array".into()),
        }

        if kw.min_items.is_some() {
            s.min_items = non_negative(kw.min_items, "minItems")?;
        }
        if kw.max_items.is_some() {
            s.max_items = non_negative(kw.max_items, "maxItems")?;
        }

        match kw.unique_items {
            None => {}
            Some(J::Bool(b)) => s.unique_items = *b,
            Some(_) => return Err("uniqueItems must be of a boolean".into()),
        }

        if draft >= Draft::D6
            && let Some(v) = kw.contains
        {
            s.contains = Some(self.child(v, draft)?);
        }

        if draft >= Draft::D6
            && let Some(v) = kw.const_
        {
            s.constant = Some(marshal_without_number(v)?);
        }

        match kw.enum_ {
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
        for (key, err_key, v) in [
            ("oneOf", "oneOf", kw.one_of),
            ("anyOf", "anyOf", kw.any_of),
            ("allOf", "anyOf", kw.all_of),
        ] {
            match v {
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

        if let Some(v) = kw.not {
            if !is_schema_node(v) {
                return Err("not must be of an object".into());
            }
            s.not = Some(self.child(v, draft)?);
        }

        if draft >= Draft::D7 {
            for (key, v) in [("if", kw.if_), ("then", kw.then), ("else", kw.else_)] {
                if let Some(v) = v {
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
fn non_negative(v: Option<&J<'_>>, key: &str) -> Result<Option<i64>, String> {
    match v {
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
    v: &J<'_>,
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
