//! The template engine's data model: a Rust stand-in for the Go values that
//! `text/template` sees through `reflect`.
//!
//! Go distinctions that templates can observe are kept: `int` vs `int64` vs
//! `float64` (`kindOf`, `typeOf`, `eq`'s type rules, `%v` printing), the Go
//! type of lists and maps (`[]string` vs `[]interface {}`, `chartutil.Values`
//! vs `map[string]interface {}`), and reference semantics for maps (`set`,
//! `unset` and `merge` mutate in place, and the mutation is visible through
//! every alias, as in Go). Maps are ordered bytewise by key, which is Go's
//! `range` and `%v` order. A render is single-threaded, so `Rc` is enough.

use ref_cast::RefCast;
use std::any::Any;
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// Key type of template maps. Go map keys in chart data are always strings.
///
/// A type of its own for its ordering ([`KeyStr`]): field look-ups
/// (`.Values.a.b`) are a render's most frequent map operation, and with
/// `Rc<str>` keys every comparison of the B-tree search was a call to
/// libc's `memcmp`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key(Rc<str>);

/// A key's text as maps order it: bytewise, as Go's `range` and `%v` do,
/// compared inline. A `&str` is looked up as `KeyStr::ref_cast(s)`.
#[derive(RefCast, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct KeyStr(str);

impl Ord for KeyStr {
    fn cmp(&self, other: &Self) -> Ordering {
        // Keys are short and most pairs differ in their first bytes, where
        // a loop returns before a `memcmp` call would have started.
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    }
}

impl PartialOrd for KeyStr {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        KeyStr::ref_cast(&self.0).cmp(KeyStr::ref_cast(&other.0))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::borrow::Borrow<KeyStr> for Key {
    fn borrow(&self) -> &KeyStr {
        KeyStr::ref_cast(&self.0)
    }
}

/// Look-ups by `&str` order it as [`KeyStr`] does (bytewise), so both agree.
impl std::borrow::Borrow<str> for Key {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key(Rc::from(s))
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key(Rc::from(s))
    }
}

impl From<Rc<str>> for Key {
    fn from(s: Rc<str>) -> Key {
        Key(s)
    }
}

impl From<Key> for Rc<str> {
    fn from(k: Key) -> Rc<str> {
        k.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// The entries of a map, ordered bytewise by key as Go's `range` and `%v` are.
pub type Entries = BTreeMap<Key, Value>;

/// A Go value as a template sees it.
#[derive(Clone, Default)]
pub enum Value {
    /// Go's untyped nil: a missing map key (Helm renders with
    /// `missingkey=zero`), an explicit YAML `null`, or a nil interface.
    /// At the end of a pipeline it prints `<no value>`; inside `print` or a
    /// composite it prints `<nil>`.
    #[default]
    Nil,
    Bool(bool),
    /// Go `int` (template literals, `len`, `atoi`, `until`, …).
    Int(i64),
    /// Go `int64` (`--set` values, Sprig's `add`/`int64`/`toDecimal`, …).
    I64(i64),
    /// Go `uint64`; rare (large YAML integers on the way to float64).
    U64(u64),
    /// Go `float64`: every number that comes from a YAML or JSON file.
    Float(f64),
    Str(Rc<str>),
    /// A Go `string` whose bytes are not valid UTF-8 (Go strings are byte
    /// strings): what `trunc`/`substr` give when they cut a character in
    /// half, or `b64dec` of binary data. It is a `string` everywhere
    /// (`typeOf`, `eq`, `len` in bytes, printing the raw bytes); functions
    /// that decode runes see each invalid byte as U+FFFD, as Go's do. Never
    /// holds valid UTF-8: build it with [`Value::from_go_bytes`], which
    /// gives a `Str` when the bytes are valid.
    BStr(Rc<[u8]>),
    /// Go `[]byte` (`.Files.GetBytes`, some crypto results).
    Bytes(Rc<[u8]>),
    List(Rc<List>),
    Map(Rc<Map>),
    /// A Go struct or named type with fields and methods (`.Chart`,
    /// `.Capabilities`, `.Files`, semver versions, `time.Time`, …).
    Object(Rc<dyn Object>),
}

/// The Go element type of a slice; only `typeOf`/`kindOf` and a few Sprig
/// functions (`compact`, `uniq` …) can tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `[]interface {}`
    Any,
    /// `[]string` (`splitList`, `keys`, `regexFindAll` …)
    Str,
    /// `[]int` (`until`, `untilStep`)
    Int,
    /// `[][]interface {}` (`chunk`)
    Lists,
    /// `[]string(nil)`, a nil slice: what `regexFindAll` and `regexSplit`
    /// return for no match or a count of 0. Nil slices are empty
    /// everywhere, except that encoding/json writes them as `null` (so
    /// `toYaml` too) and `%#v` as `[]string(nil)`.
    NilStr,
    /// `[]interface {}(nil)`: `rest`, `initial` of an empty list, `concat`
    /// of nothing.
    NilAny,
}

impl ListKind {
    /// A nil slice ([`ListKind::NilStr`], [`ListKind::NilAny`]).
    pub fn is_nil(self) -> bool {
        matches!(self, ListKind::NilStr | ListKind::NilAny)
    }
    /// `[]interface {}`, nil or not.
    pub fn is_any(self) -> bool {
        matches!(self, ListKind::Any | ListKind::NilAny)
    }
}

/// An immutable Go slice. Sprig's list functions all return new slices.
pub struct List {
    pub kind: ListKind,
    pub items: Vec<Value>,
}

/// Templates nest lists and maps as deep as they like (`$d = list $d` in a
/// loop); dropping one recurses once per level. Each level that holds a
/// nested collection drops it on a grown stack if the stack runs low, so a
/// deep value cannot overflow the thread's stack (a check of the stack
/// pointer per nested collection, none for flat ones).
impl Drop for List {
    fn drop(&mut self) {
        if self.items.iter().any(Value::is_collection) {
            let items = std::mem::take(&mut self.items);
            stacker::maybe_grow(DROP_RED_ZONE, DROP_SEGMENT, move || drop(items));
        }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        if Rc::strong_count(&self.entries) == 1
            && let Ok(mut entries) = self.entries.try_borrow_mut()
            && entries.values().any(Value::is_collection)
        {
            let entries = std::mem::take(&mut *entries);
            stacker::maybe_grow(DROP_RED_ZONE, DROP_SEGMENT, move || drop(entries));
        }
    }
}

const DROP_RED_ZONE: usize = 32 * 1024;
const DROP_SEGMENT: usize = 1024 * 1024;

/// The Go type of a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// `map[string]interface {}`
    Any,
    /// `chartutil.Values`: the type of `.Values` and of the top-level
    /// context; `dig` refuses it, as it does in Helm v3.
    Values,
    /// `map[string]string` (`.Chart.Annotations`, …)
    Str,
}

/// A Go map with reference semantics. The Go type belongs to the
/// reference, not to the storage: the same map is a `chartutil.Values`
/// through `.Values` and a `map[string]interface {}` once passed to a
/// function's map parameter (`merge`, `set` return it with that type), so
/// several `Map`s of different kinds may share one set of entries (see
/// [`Map::view`]).
pub struct Map {
    pub kind: MapKind,
    /// When the map was made, in maps made on this thread before it (see
    /// [`map_changes`]).
    born: u64,
    entries: Rc<RefCell<Entries>>,
}

impl Map {
    pub fn new(kind: MapKind, entries: Entries) -> Self {
        Map {
            kind,
            born: MAPS.with(|m| m.made.replace(m.made.get() + 1)),
            entries: Rc::new(RefCell::new(entries)),
        }
    }
    /// The same map (shared entries: mutations show through both) seen as
    /// Go type `kind`, as a Go conversion between map types gives.
    pub fn view(&self, kind: MapKind) -> Map {
        Map {
            kind,
            born: self.born,
            entries: self.entries.clone(),
        }
    }
    /// The identity of the entries, equal for every view of one map (Go
    /// compares map pointers, e.g. to find cycles).
    pub fn id(&self) -> *const () {
        Rc::as_ptr(&self.entries).cast()
    }
    pub fn borrow(&self) -> Ref<'_, Entries> {
        self.entries.borrow()
    }
    /// The entries, to change them (counted by [`map_changes`]).
    pub fn borrow_mut(&self) -> RefMut<'_, Entries> {
        MAPS.with(|m| {
            if self.born < m.new_from.get() {
                m.changes.set(m.changes.get() + 1);
            }
        });
        self.entries.borrow_mut()
    }
    pub fn get(&self, key: &str) -> Option<Value> {
        self.entries.borrow().get(KeyStr::ref_cast(key)).cloned()
    }
    pub fn insert(&self, key: impl Into<Key>, value: Value) {
        self.borrow_mut().insert(key.into(), value);
    }
    pub fn remove(&self, key: &str) -> Option<Value> {
        self.borrow_mut().remove(KeyStr::ref_cast(key))
    }
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.borrow().contains_key(KeyStr::ref_cast(key))
    }
}

/// What [`map_changes`] counts, per thread (maps are `Rc`s: each lives on
/// the thread that made it).
struct Maps {
    /// Maps made so far.
    made: Cell<u64>,
    /// Maps made from this one on are new (see [`new_maps_from_here`]).
    new_from: Cell<u64>,
    /// Changes to maps older than that.
    changes: Cell<u64>,
}

thread_local! {
    static MAPS: Maps = const {
        Maps {
            made: Cell::new(0),
            new_from: Cell::new(0),
            changes: Cell::new(0),
        }
    };
}

/// How many times a map made before the last [`new_maps_from_here`] was
/// changed in place on this thread. Maps are the only mutable values
/// (lists, strings and objects never change) and every change goes through
/// [`Map::borrow_mut`]: while this number stays the same, everything
/// reachable from a value that existed at that mark is as it was.
/// Changes to newer maps are not counted: such a map (a `dict` filled by
/// `merge`, say) can only have become reachable from older data by a
/// change to an older map, which is.
pub fn map_changes() -> u64 {
    MAPS.with(|m| m.changes.get())
}

/// Mark the maps made from now on as new for [`map_changes`]. The mark
/// only moves forward.
pub fn new_maps_from_here() {
    MAPS.with(|m| m.new_from.set(m.made.get()));
}

/// Result of looking up a field or method on an [`Object`].
pub enum Member {
    /// A field's value.
    Field(Value),
    /// A method; the evaluator calls it with the arguments of the command.
    Method(Method),
}

/// A bound method of an object, called with already-evaluated arguments.
pub type Method = Rc<dyn Fn(&[Value]) -> Result<Value, String>>;

/// A Go struct or named non-map type exposed to templates.
pub trait Object {
    /// The Go type name, as `typeOf` prints it (e.g. `*chart.Metadata`).
    fn type_name(&self) -> &str;
    /// The Go kind, as `kindOf` prints it (`struct`, `ptr`, `map` …).
    fn kind_name(&self) -> &str {
        "ptr"
    }
    /// Look up an exported field or method by name; `None` if there is none
    /// (the evaluator then reports Go's "can't evaluate field" error).
    fn member(&self, name: &str) -> Option<Member>;
    /// Go `%v` formatting of the value, as the template prints it (`{{ x }}`:
    /// text/template takes the address of an addressable value, so methods
    /// with pointer receivers such as `String` apply).
    fn fmt_v(&self, out: &mut String);
    /// Go `%v` formatting when the value is passed to a `fmt` function
    /// (`printf`, `print`, `toString`, …) as an `interface {}`: a copy, whose
    /// method set lacks pointer-receiver methods. The same as `fmt_v` unless
    /// the type has such a `String` method (`chartutil.KubeVersion`).
    fn fmt_arg(&self, out: &mut String) {
        self.fmt_v(out)
    }
    /// Go truthiness (a non-nil pointer is true; empty struct values too).
    fn truthy(&self) -> bool {
        true
    }
    /// For Go named slice and map types that have methods (Helm's
    /// `chartutil.VersionSet`, `engine.files`): the underlying list or map,
    /// which `range`, `index`, `len` and list/map parameters see. `None` for
    /// structs and pointers.
    fn underlying(&self) -> Option<Value> {
        None
    }
    /// [`Object::underlying`] for a `range` whose body never looks at the
    /// elements: the same keys or length, the elements possibly nil. Lets
    /// a collection whose elements are costly to make (`.Files`, whose
    /// files are read on first use) skip making them.
    fn underlying_keys(&self) -> Option<Value> {
        self.underlying()
    }
    /// Lets functions downcast to the concrete type (e.g. `semverCompare` on a
    /// `*semver.Version`, or the chart's `Files`).
    fn as_any(&self) -> &dyn Any;
    /// What Go's `encoding/json` sees for this value (`toJson`, and `toYaml`,
    /// which marshals through JSON): a struct's exported fields under their
    /// `json` tag names as a map, or a `MarshalJSON` result as a string.
    /// `None` (the default) with no [`Object::json_fields`] or
    /// [`Object::underlying`] either: a type encoding/json refuses
    /// (`json: unsupported type: complex128`).
    fn json_value(&self) -> Option<Value> {
        None
    }
    /// encoding/json of a struct without `MarshalJSON`: its exported
    /// fields in declaration order (which a map, sorted, would lose) under
    /// their JSON names (`json` tags; fields that `omitempty` drops left
    /// out). Consulted after [`Object::json_value`].
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        None
    }
}

/// A Go `complex128` (`{{ 1i }}`, `{{ 1+2i }}`): Go's templates accept
/// complex constants, print them and compare them with `eq`; nothing Helm
/// users call computes with them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Complex(pub f64, pub f64);

impl Object for Complex {
    fn type_name(&self) -> &str {
        "complex128"
    }
    fn kind_name(&self) -> &str {
        "complex128"
    }
    fn member(&self, _: &str) -> Option<Member> {
        None
    }
    /// `(1+2i)`: both parts as `%g` (shortest), the imaginary one signed.
    fn fmt_v(&self, out: &mut String) {
        out.push('(');
        super::gofmt::format_float(self.0, 'g', -1, out);
        if !self.1.is_sign_negative() || self.1.is_nan() {
            out.push('+');
        }
        super::gofmt::format_float(self.1, 'g', -1, out);
        out.push_str("i)");
    }
    fn truthy(&self) -> bool {
        self.0 != 0.0 || self.1 != 0.0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Value {
    /// A list or a map (what nests).
    fn is_collection(&self) -> bool {
        matches!(self, Value::List(_) | Value::Map(_))
    }

    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }
    pub fn string(s: String) -> Value {
        Value::Str(Rc::from(s))
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(List {
            kind: ListKind::Any,
            items,
        }))
    }
    pub fn str_list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(List {
            kind: ListKind::Str,
            items,
        }))
    }
    /// A nil `[]string` ([`ListKind::NilStr`]).
    pub fn nil_str_list() -> Value {
        Value::List(Rc::new(List {
            kind: ListKind::NilStr,
            items: Vec::new(),
        }))
    }
    /// `items` as `[]interface {}`, the nil slice when there are none
    /// (Sprig functions that `append` to a `var res []interface{}`).
    pub fn list_or_nil(items: Vec<Value>) -> Value {
        let kind = if items.is_empty() {
            ListKind::NilAny
        } else {
            ListKind::Any
        };
        Value::List(Rc::new(List { kind, items }))
    }
    pub fn map(entries: Entries) -> Value {
        Value::Map(Rc::new(Map::new(MapKind::Any, entries)))
    }
    pub fn empty_map() -> Value {
        Value::map(Entries::new())
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Go template truthiness (`if`, `with`, `and`, `or`, `not`): false, 0,
    /// "", nil and empty collections are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::I64(i) => *i != 0,
            Value::U64(u) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::BStr(_) => true,
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.items.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => o.truthy(),
        }
    }

    /// Go's `reflect.Kind` name, as Sprig's `kindOf` prints it.
    pub fn kind_name(&self) -> &str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::I64(_) => "int64",
            Value::U64(_) => "uint64",
            Value::Float(_) => "float64",
            Value::Str(_) | Value::BStr(_) => "string",
            Value::Bytes(_) | Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind_name(),
        }
    }

    /// Go's type name, as Sprig's `typeOf` (`%T`) prints it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::I64(_) => "int64",
            Value::U64(_) => "uint64",
            Value::Float(_) => "float64",
            Value::Str(_) | Value::BStr(_) => "string",
            Value::Bytes(_) => "[]uint8",
            Value::List(l) => match l.kind {
                ListKind::Any | ListKind::NilAny => "[]interface {}",
                ListKind::Str | ListKind::NilStr => "[]string",
                ListKind::Int => "[]int",
                ListKind::Lists => "[][]interface {}",
            },
            Value::Map(m) => match m.kind {
                MapKind::Any => "map[string]interface {}",
                MapKind::Values => "chartutil.Values",
                MapKind::Str => "map[string]string",
            },
            Value::Object(o) => o.type_name(),
        }
    }

    /// The value Go's reflection would see for `range`, `len` and `index`:
    /// a named map or slice type's underlying collection, else the value.
    pub fn underlying(&self) -> Value {
        match self {
            Value::Object(o) => o.underlying().unwrap_or_else(|| self.clone()),
            other => other.clone(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A Go `string` made of `bytes`: `Str` when they are UTF-8, else
    /// `BStr` (Go's `string(b)`).
    pub fn from_go_bytes(bytes: Vec<u8>) -> Value {
        match String::from_utf8(bytes) {
            Ok(s) => Value::string(s),
            Err(e) => Value::BStr(Rc::from(e.into_bytes())),
        }
    }

    /// The bytes of a Go string (`Str` or `BStr`); `None` for other values.
    pub fn go_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s.as_bytes()),
            Value::BStr(b) => Some(b),
            _ => None,
        }
    }

    /// Whether this is a Go `string` (`Str` or `BStr`).
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Str(_) | Value::BStr(_))
    }
}

/// A Go string's bytes as Rust text, each invalid byte becoming U+FFFD: what
/// Go's rune decoding (`for range s`, `utf8.DecodeRune`, `strings.Map`,
/// `encoding/json`) sees. Unlike `String::from_utf8_lossy`, which replaces a
/// truncated sequence as a whole, Go replaces every byte of it.
pub fn go_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    std::borrow::Cow::Owned(out)
}

impl Value {
    /// Deep copy (Sprig's `deepCopy`, Helm's values coalescing): new maps
    /// that no longer alias the original.
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(l) => Value::List(Rc::new(List {
                kind: l.kind,
                items: l.items.iter().map(Value::deep_copy).collect(),
            })),
            Value::Map(m) => {
                let entries = m
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy()))
                    .collect();
                Value::Map(Rc::new(Map::new(m.kind, entries)))
            }
            other => other.clone(),
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::string(s)
    }
}

impl fmt::Debug for Value {
    /// Debug output is Go's `%v`, which is what tests want to read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::engine::gofmt::fmt_v(self, &mut s);
        write!(f, "{}({s})", self.type_name())
    }
}

#[cfg(test)]
mod go_string_tests {
    use super::*;

    #[test]
    fn go_lossy_replaces_every_invalid_byte() {
        // Go's DecodeRune consumes one byte per error, so a truncated
        // three-byte sequence gives two U+FFFD (Rust's lossy gives one).
        assert_eq!(go_lossy(b"a\xe2\x82b"), "a\u{FFFD}\u{FFFD}b");
        assert_eq!(go_lossy(b"h\xc3"), "h\u{FFFD}");
        assert_eq!(go_lossy("é".as_bytes()), "é");
    }

    #[test]
    fn from_go_bytes_keeps_text_as_str() {
        assert!(matches!(
            Value::from_go_bytes(b"ok".to_vec()),
            Value::Str(_)
        ));
        let b = Value::from_go_bytes(b"\xff".to_vec());
        assert!(matches!(b, Value::BStr(_)));
        assert_eq!(b.type_name(), "string");
        assert_eq!(b.go_bytes(), Some(&b"\xff"[..]));
        assert!(b.truthy());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found replaying the template fuzz target's seeds (compat 302 nests
    /// `list $d` 10,000 deep) on a test thread: dropping a value nested
    /// deeper than the stack allows overflowed it.
    #[test]
    fn deeply_nested_values_drop_on_a_small_stack() {
        let t = std::thread::Builder::new().stack_size(256 * 1024);
        t.spawn(|| {
            let mut v = Value::Nil;
            for i in 0..200_000 {
                v = if i % 2 == 0 {
                    Value::list(vec![v, Value::Int(i)])
                } else {
                    let mut e = Entries::new();
                    e.insert(Key::from("a"), v);
                    Value::Map(Rc::new(Map::new(MapKind::Any, e)))
                };
            }
            drop(v);
        })
        .expect("spawn")
        .join()
        .expect("no overflow");
    }

    /// Keys order bytewise, as Go sorts map keys for `range` and `%v`
    /// (which is `str`'s order too), and a `&str` finds its key.
    #[test]
    fn keys_order_bytewise_and_are_found_by_str() {
        let words = [
            "",
            "a",
            "A",
            "ab",
            "aB",
            "abc",
            "b",
            "é",
            "e",
            "zz",
            "z",
            "_x",
            "10",
            "9",
            "a\u{0}",
            "ü",
            "\u{7f}",
            "controller",
            "controllerX",
            "control",
        ];
        let mut by_key: Vec<Key> = words.iter().map(|w| Key::from(*w)).collect();
        by_key.sort();
        let mut by_str = words.to_vec();
        by_str.sort();
        assert_eq!(by_key.iter().map(|k| &**k).collect::<Vec<_>>(), by_str);
        let m = Map::new(
            MapKind::Any,
            words
                .iter()
                .map(|w| (Key::from(*w), Value::str(w)))
                .collect(),
        );
        for w in words {
            assert!(matches!(m.get(w), Some(Value::Str(s)) if &*s == w), "{w:?}");
            assert!(m.contains_key(w));
        }
        assert!(m.get("abd").is_none() && m.get("controlle").is_none());
        assert!(m.remove("ab").is_some() && !m.contains_key("ab"));
    }
}
