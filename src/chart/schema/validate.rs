//! gojsonschema's validation phase (`validation.go`): `validateRecursive`
//! and its `validateSchema` / `validateCommon` / `validateArray` /
//! `validateObject` / `validateString` / `validateNumber`, in its order,
//! with its error texts (`locales.go`), its field names (`(root)`, `a.b.0`)
//! and its scores (which pick the anyOf/oneOf/contains branch whose errors
//! are shown).
//!
//! Go ranges over the value's map keys (additionalProperties,
//! patternProperties, propertyNames, dependencies) and over the schema's
//! `properties` in random order, so when several of those fail Helm's lines
//! come out in a different order from run to run; here they come by key.

use std::collections::HashMap;

use super::compile::{Dep, Extra, Schema, Sub};
use super::formats;
use super::json::{J, Obj, marshal_without_number};
use super::num::Dec;

/// How deep validation may nest. Values are far shallower; only a schema
/// that loops through `$ref` without reaching into the values (say
/// `{"allOf": [{"$ref": "#"}]}`) gets here, where gojsonschema recurses
/// until Go's stack limit kills helm.
pub const MAX_DEPTH: usize = 30_000;

/// One error: the field (`context` without `(root).`) and the description.
#[derive(Debug, Clone)]
pub struct Error {
    pub field: String,
    pub description: String,
}

/// gojsonschema's `Result`.
#[derive(Debug, Default)]
pub struct Res {
    pub errors: Vec<Error>,
    score: i64,
}

impl Res {
    fn valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `addInternalError`: the description may use the field name.
    fn add(&mut self, ctx: &Ctx<'_>, desc: impl FnOnce(&str) -> String) {
        let field = ctx.field();
        let description = desc(&field);
        self.errors.push(Error { field, description });
        self.score -= 2;
    }

    /// `mergeErrors`.
    fn merge(&mut self, other: Res) {
        self.errors.extend(other.errors);
        self.score += other.score;
    }
}

/// gojsonschema's `JsonContext`: a path from `(root)`, innermost first.
pub struct Ctx<'a> {
    head: &'a str,
    tail: Option<&'a Ctx<'a>>,
}

impl<'a> Ctx<'a> {
    pub fn root() -> Ctx<'static> {
        Ctx {
            head: "(root)",
            tail: None,
        }
    }

    fn child(&'a self, head: &'a str) -> Ctx<'a> {
        Ctx {
            head,
            tail: Some(self),
        }
    }

    /// `ResultErrorFields.Field`: the context string without `(root).`.
    fn field(&self) -> String {
        let mut parts = vec![self.head];
        let mut c = self.tail;
        while let Some(x) = c {
            parts.push(x.head);
            c = x.tail;
        }
        parts.reverse();
        let s = parts.join(".");
        match s.strip_prefix("(root).") {
            Some(f) => f.to_string(),
            None => s,
        }
    }
}

/// `checkJSONInteger`.
fn is_int(node: &J<'_>) -> bool {
    match node {
        J::Num(lit) => Dec::parse(lit).is_some_and(|d| d.is_int()),
        J::Float(f) => f.fract() == 0.0,
        _ => true,
    }
}

/// A number's exact value (a float64 by its shortest digits, which is what
/// Helm's JSON carries).
fn dec(node: &J<'_>) -> Option<Dec> {
    match node {
        J::Num(lit) => Dec::parse(lit),
        J::Float(f) => Dec::parse(&format!("{f:e}")),
        J::Int(i) => Dec::parse(&i.to_string()),
        _ => None,
    }
}

/// gojsonschema's search of `anyOf` and `contains`: stop at the first
/// result that validates (`None`); otherwise the failure with the best
/// score, the first of equals (`Some`, empty only without candidates).
fn best_failure(results: impl Iterator<Item = Res>) -> Option<Option<Res>> {
    let mut best: Option<Res> = None;
    for r in results {
        if r.valid() {
            return None;
        }
        if best.as_ref().is_none_or(|b| r.score > b.score) {
            best = Some(r);
        }
    }
    Some(best)
}

fn type_error(res: &mut Res, ctx: &Ctx<'_>, sub: &Sub, given: &str) {
    let expected = if sub.types.len() > 1 {
        format!("[{}]", sub.types.join(","))
    } else {
        sub.types
            .first()
            .map_or_else(String::new, ToString::to_string)
    };
    res.add(ctx, |_| {
        format!("Invalid type. Expected: {expected}, given: {given}")
    });
}

impl Schema {
    /// `Schema.validateDocument`.
    pub fn validate(&self, doc: &J<'_>) -> Result<Res, String> {
        let mut res = Res::default();
        self.recursive(0, doc, &mut res, &Ctx::root());
        if self.overflow.get() {
            return Err("the schema refers to itself without descending into the values (helm overflows its stack on it)".into());
        }
        Ok(res)
    }

    /// `subValidateWithContext`.
    fn sub_validate(&self, s: usize, node: &J<'_>, ctx: &Ctx<'_>) -> Res {
        let mut r = Res::default();
        self.recursive(s, node, &mut r, ctx);
        r
    }

    fn recursive(&self, s: usize, node: &J<'_>, res: &mut Res, ctx: &Ctx<'_>) {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH || self.overflow.get() {
            self.overflow.set(true);
            return;
        }
        self.depth.set(depth + 1);
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.validate_recursive(s, node, res, ctx)
        });
        self.depth.set(depth);
    }

    /// `validateRecursive`.
    fn validate_recursive(&self, s: usize, node: &J<'_>, res: &mut Res, ctx: &Ctx<'_>) {
        let sub = &self.subs[s];
        if let Some(pass) = sub.pass {
            if !pass {
                res.add(ctx, |_| "False always fails validation".into());
            }
            return;
        }
        if let Some(r) = sub.ref_schema {
            self.recursive(r, node, res, ctx);
            return;
        }
        let typed = !sub.types.is_empty();
        let has = |t: &str| sub.types.contains(&t);
        match node {
            J::Null => {
                if typed && !has("null") {
                    type_error(res, ctx, sub, "null");
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                validate_common(sub, node, res, ctx);
            }
            J::Num(_) | J::Float(_) | J::Int(_) => {
                let int = is_int(node);
                if typed && !(has("number") || (int && has("integer"))) {
                    type_error(res, ctx, sub, if int { "integer" } else { "number" });
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                validate_number(sub, node, res, ctx);
                validate_common(sub, node, res, ctx);
            }
            J::Arr(a) => {
                if typed && !has("array") {
                    type_error(res, ctx, sub, "array");
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                self.validate_array(sub, a, res, ctx);
                validate_common(sub, node, res, ctx);
            }
            J::Obj(m) => {
                if typed && !has("object") {
                    type_error(res, ctx, sub, "object");
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                self.validate_object(sub, m, res, ctx);
                validate_common(sub, node, res, ctx);
                for (name, p) in &sub.props {
                    if let Some(v) = m.get(name.as_str()) {
                        self.recursive(*p, v, res, &ctx.child(name));
                    }
                }
            }
            J::Bool(_) => {
                if typed && !has("boolean") {
                    type_error(res, ctx, sub, "boolean");
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                validate_common(sub, node, res, ctx);
            }
            J::Str(st) => {
                if typed && !has("string") {
                    type_error(res, ctx, sub, "string");
                    return;
                }
                self.validate_schema(sub, node, res, ctx);
                validate_common(sub, node, res, ctx);
                validate_string(sub, st, res, ctx);
            }
        }
        res.score += 1;
    }

    /// `validateSchema`: anyOf, oneOf, allOf, not, dependencies, if.
    fn validate_schema(&self, sub: &Sub, node: &J<'_>, res: &mut Res, ctx: &Ctx<'_>) {
        if !sub.any_of.is_empty()
            && let Some(best) =
                best_failure(sub.any_of.iter().map(|&a| self.sub_validate(a, node, ctx)))
        {
            res.add(ctx, |_| "Must validate at least one schema (anyOf)".into());
            if let Some(b) = best {
                res.merge(b);
            }
        }

        if !sub.one_of.is_empty() {
            let mut n = 0;
            let mut best: Option<Res> = None;
            for &o in &sub.one_of {
                let r = self.sub_validate(o, node, ctx);
                if r.valid() {
                    n += 1;
                } else if n == 0 && best.as_ref().is_none_or(|b| r.score > b.score) {
                    best = Some(r);
                }
            }
            if n != 1 {
                res.add(ctx, |_| {
                    "Must validate one and only one schema (oneOf)".into()
                });
                if n == 0
                    && let Some(b) = best
                {
                    res.merge(b);
                }
            }
        }

        if !sub.all_of.is_empty() {
            let mut n = 0;
            for &a in &sub.all_of {
                let r = self.sub_validate(a, node, ctx);
                if r.valid() {
                    n += 1;
                }
                res.merge(r);
            }
            if n != sub.all_of.len() {
                res.add(ctx, |_| "Must validate all the schemas (allOf)".into());
            }
        }

        if let Some(not) = sub.not
            && self.sub_validate(not, node, ctx).valid()
        {
            res.add(ctx, |_| "Must not validate the schema (not)".into());
        }

        if !sub.dependencies.is_empty()
            && let J::Obj(m) = node
        {
            for key in m.keys() {
                let Some((_, dep)) = sub.dependencies.iter().find(|(k, _)| k.as_str() == &**key)
                else {
                    continue;
                };
                match dep {
                    Dep::Names(names) => {
                        for d in names {
                            if !m.contains_key(d.as_str()) {
                                res.add(ctx, |_| format!("Has a dependency on {d}"));
                            }
                        }
                    }
                    Dep::Schema(d) => self.recursive(*d, node, res, ctx),
                }
            }
        }

        if let Some(i) = sub.if_ {
            let r_if = self.sub_validate(i, node, ctx);
            if let Some(t) = sub.then
                && r_if.valid()
            {
                let r = self.sub_validate(t, node, ctx);
                if !r.valid() {
                    res.add(ctx, |_| "Must validate \"then\" as \"if\" was valid".into());
                    res.merge(r);
                }
            }
            if let Some(e) = sub.else_
                && !r_if.valid()
            {
                let r = self.sub_validate(e, node, ctx);
                if !r.valid() {
                    res.add(ctx, |_| {
                        "Must validate \"else\" as \"if\" was not valid".into()
                    });
                    res.merge(r);
                }
            }
        }

        res.score += 1;
    }

    /// `validateArray`.
    fn validate_array(&self, sub: &Sub, a: &[J], res: &mut Res, ctx: &Ctx<'_>) {
        let n = a.len();
        if sub.items_single {
            // `items_single` is set with exactly one item schema.
            if let Some(&item) = sub.items.first() {
                for (i, v) in a.iter().enumerate() {
                    let head = i.to_string();
                    let r = self.sub_validate(item, v, &ctx.child(&head));
                    res.merge(r);
                }
            }
        } else if !sub.items.is_empty() {
            let k = sub.items.len();
            for (i, v) in a.iter().enumerate().take(k) {
                let head = i.to_string();
                let r = self.sub_validate(sub.items[i], v, &ctx.child(&head));
                res.merge(r);
            }
            if k < n {
                match sub.additional_items {
                    Extra::Bool(false) => {
                        res.add(ctx, |_| "No additional items allowed on array".into());
                    }
                    Extra::Schema(extra) => {
                        for (i, v) in a.iter().enumerate().skip(k) {
                            let head = i.to_string();
                            let r = self.sub_validate(extra, v, &ctx.child(&head));
                            res.merge(r);
                        }
                    }
                    _ => {}
                }
            }
        }

        if let Some(min) = sub.min_items
            && (n as i64) < min
        {
            res.add(ctx, |_| format!("Array must have at least {min} items"));
        }
        if let Some(max) = sub.max_items
            && (n as i64) > max
        {
            res.add(ctx, |_| format!("Array must have at most {max} items"));
        }

        if sub.unique_items {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (j, v) in a.iter().enumerate() {
                let s = marshal_without_number(v).unwrap_or_default();
                if let Some(&i) = seen.get(&s) {
                    res.add(ctx, |_| format!("array items[{i},{j}] must be unique"));
                }
                seen.insert(s, j);
            }
        }

        if let Some(c) = sub.contains
            && let Some(best) = best_failure(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| self.sub_validate(c, v, &ctx.child(&i.to_string()))),
            )
        {
            res.add(ctx, |_| "At least one of the items must match".into());
            if let Some(b) = best {
                res.merge(b);
            }
        }

        res.score += 1;
    }

    /// `validateObject` (with `validatePatternProperty`).
    fn validate_object(&self, sub: &Sub, m: &Obj<'_>, res: &mut Res, ctx: &Ctx<'_>) {
        let n = m.len() as i64;
        if let Some(min) = sub.min_properties
            && n < min
        {
            res.add(ctx, |_| format!("Must have at least {min} properties"));
        }
        if let Some(max) = sub.max_properties
            && n > max
        {
            res.add(ctx, |_| format!("Must have at most {max} properties"));
        }

        for p in &sub.required {
            if m.contains_key(p.as_str()) {
                res.score += 1;
            } else {
                res.add(ctx, |_| format!("{p} is required"));
            }
        }

        for (pk, v) in m {
            let found = sub
                .props
                .binary_search_by(|(k, _)| k.as_str().cmp(&**pk))
                .is_ok();
            let mut matched = false;
            for (re, ps) in &sub.pattern_properties {
                if re.is_match(pk) {
                    matched = true;
                    let r = self.sub_validate(*ps, v, &ctx.child(pk));
                    res.merge(r);
                }
            }
            if matched {
                res.score += 1;
            }
            if !found && !matched {
                match sub.additional_properties {
                    Extra::Bool(false) => {
                        res.add(ctx, |_| format!("Additional property {pk} is not allowed"));
                    }
                    Extra::Schema(ap) => {
                        let r = self.sub_validate(ap, v, &ctx.child(pk));
                        res.merge(r);
                    }
                    _ => {}
                }
            }
        }

        if let Some(pn) = sub.property_names {
            for pk in m.keys() {
                let r = self.sub_validate(pn, &J::Str(pk.clone()), ctx);
                if !r.valid() {
                    res.add(ctx, |_| format!("Property name of \"{pk}\" does not match"));
                    res.merge(r);
                }
            }
        }

        res.score += 1;
    }
}

/// `validateCommon`: const and enum, compared as re-marshalled JSON.
fn validate_common(sub: &Sub, node: &J<'_>, res: &mut Res, ctx: &Ctx<'_>) {
    if sub.constant.is_some() || !sub.enumeration.is_empty() {
        let v = marshal_without_number(node).unwrap_or_default();
        if let Some(c) = &sub.constant
            && v != *c
        {
            res.add(ctx, |field| format!("{field} does not match: {c}"));
        }
        if !sub.enumeration.is_empty() && !sub.enumeration.contains(&v) {
            res.add(ctx, |field| {
                format!(
                    "{field} must be one of the following: {}",
                    sub.enumeration.join(", ")
                )
            });
        }
    }
    res.score += 1;
}

/// `validateString`: lengths in runes, pattern, format.
fn validate_string(sub: &Sub, s: &str, res: &mut Res, ctx: &Ctx<'_>) {
    if sub.min_length.is_some() || sub.max_length.is_some() {
        let runes = s.chars().count() as i64;
        if let Some(min) = sub.min_length
            && runes < min
        {
            res.add(ctx, |_| {
                format!("String length must be greater than or equal to {min}")
            });
        }
        if let Some(max) = sub.max_length
            && runes > max
        {
            res.add(ctx, |_| {
                format!("String length must be less than or equal to {max}")
            });
        }
    }
    if let Some((src, re)) = &sub.pattern
        && !re.is_match(s)
    {
        res.add(ctx, |_| format!("Does not match pattern '{src}'"));
    }
    if !sub.format.is_empty() && formats::check(&sub.format, s) == Some(false) {
        res.add(ctx, |_| format!("Does not match format '{}'", sub.format));
    }
    res.score += 1;
}

/// `validateNumber`: exact comparisons; a known `format` fails for numbers
/// (v1.2.0 hands the checkers a `*big.Rat`, which none accepts).
fn validate_number(sub: &Sub, node: &J<'_>, res: &mut Res, ctx: &Ctx<'_>) {
    let limits = sub.multiple_of.is_some()
        || sub.maximum.is_some()
        || sub.exclusive_maximum.is_some()
        || sub.minimum.is_some()
        || sub.exclusive_minimum.is_some();
    if limits && let Some(v) = dec(node) {
        number_limits(sub, &v, res, ctx);
    }
    if !sub.format.is_empty() && formats::known(&sub.format) {
        res.add(ctx, |_| format!("Does not match format '{}'", sub.format));
    }
    res.score += 1;
}

fn number_limits(sub: &Sub, v: &Dec, res: &mut Res, ctx: &Ctx<'_>) {
    if let Some(m) = &sub.multiple_of
        && !v.is_multiple_of(m)
    {
        res.add(ctx, |_| {
            format!("Must be a multiple of {}", m.go_big_float())
        });
    }
    if let Some(max) = &sub.maximum
        && v.cmp(max).is_gt()
    {
        res.add(ctx, |_| {
            format!("Must be less than or equal to {}", max.go_big_float())
        });
    }
    if let Some(max) = &sub.exclusive_maximum
        && v.cmp(max).is_ge()
    {
        res.add(ctx, |_| format!("Must be less than {}", max.go_big_float()));
    }
    if let Some(min) = &sub.minimum
        && v.cmp(min).is_lt()
    {
        res.add(ctx, |_| {
            format!("Must be greater than or equal to {}", min.go_big_float())
        });
    }
    if let Some(min) = &sub.exclusive_minimum
        && v.cmp(min).is_le()
    {
        res.add(ctx, |_| {
            format!("Must be greater than {}", min.go_big_float())
        });
    }
}
