//! The evaluator: a port of Go's `text/template/exec.go` (Go 1.23) with
//! Helm v3.17's `include` and `tpl` (pkg/engine/engine.go) built in.
//!
//! Go distinguishes an *invalid* `reflect.Value` (untyped nil: the data of
//! `include "x" nil`, a flattened pipeline result) from a nil *interface*
//! read out of a `map[string]interface{}` or `[]interface{}` (a missing key
//! under `missingkey=zero`, a YAML `null`). The difference is visible:
//! `.a.b` on the latter fails with "nil pointer evaluating interface {}.b",
//! on the former it yields nothing. [`V`] carries that bit next to the value.

use foldhash::{HashMap, HashMapExt};
use smallvec::{SmallVec, smallvec};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use super::ast::{self, Arg, Branch, Callee, Command, Node, Pipe, Source, Tree};
use super::error::{Error, ErrorData, ErrorKind};
use super::funcs::{Env, FuncMap, Param};
use super::gofmt;
use super::limits::LimitHit;
use super::parse;
use super::value::{Key, MapKind, Member, Value, map_changes, new_maps_from_here};

/// Helm's `recursionMaxNums`.
const INCLUDE_MAX: usize = 1000;
/// Stack left before [`stacker`] switches to a new segment, and the size
/// of each new segment.
pub(crate) const STACK_RED_ZONE: usize = 256 * 1024;
pub(crate) const STACK_SEGMENT: usize = 4 * 1024 * 1024;
/// Go's `maxExecDepth`.
const MAX_EXEC_DEPTH: usize = 100_000;
/// The name of Helm's root template, which `tpl` parses its text under and
/// which "no template associated with" errors name.
const ROOT_NAME: &str = "gotpl";

type TreeMap = HashMap<Arc<str>, Rc<Tree>>;
/// The trees a `tpl` text parses into, or its parse error.
type TplParse = Result<Vec<Rc<Tree>>, Error>;

/// The templates defined by one file (the file's own and each
/// `define`/`block` in it, in definition order), parsed but not yet in a
/// namespace. `Send`, unlike [`Templates`].
pub struct ParsedFile {
    trees: Vec<Tree>,
}

impl ParsedFile {
    /// Whether the file defines templates besides its own (`define` or
    /// `block`).
    pub fn defines(&self) -> bool {
        self.trees.len() > 1
    }

    /// The names of the templates the file defines, its own first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.trees.iter().map(|t| &*t.name)
    }
}

/// Where a namespace gets the templates of files not yet added when an
/// execution asks for a name it lacks (see [`Templates::set_late`]).
pub type LateFiles = Box<dyn FnOnce() -> Vec<ParsedFile>>;

// Parsing happens on worker threads in `chart`; keep the AST free of `Rc`.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ParsedFile>();
    send_sync::<Error>();
};

/// One template namespace (Go's `*template.Template` common set).
pub struct Templates {
    /// Shared with the threads that parse a chart's files meanwhile.
    funcs: Arc<FuncMap>,
    trees: TreeMap,
    /// `tpl` texts already parsed: text → trees (or the parse error).
    tpl_cache: RefCell<HashMap<Rc<str>, Rc<TplParse>>>,
    /// The name `$`, shared by every execution's variable stack.
    dollar: Arc<str>,
    /// Results of `include`, by template name (see [`Included`]).
    includes: RefCell<HashMap<Rc<str>, Vec<Included>>>,
    /// `include` calls running (any names), and the most that ran at once
    /// since the outermost running one started.
    include_depth: Cell<usize>,
    include_peak: Cell<usize>,
    /// Files handed over only when a lookup misses ([`Templates::set_late`]),
    /// and the templates they brought.
    late: RefCell<Option<LateFiles>>,
    late_trees: RefCell<TreeMap>,
}

/// A finished `include` whose result may be handed out again: charts
/// include the same helper (`fullname`, `labels`, `image`) with the same
/// argument many times per file, and its output is the same as long as
/// the call is. It is the same when the argument is the same (scalars by
/// value; lists, maps and objects by identity, a map built for the call
/// by its entries), no map made before the call changed since
/// ([`map_changes`]), the first execution made no random draw, clock
/// reading or lookup ([`Env::impure_calls`]), and the namespace is the
/// base one (not a `tpl` overlay). Go executes the template again each
/// time; the bytes come out the same.
struct Included {
    arg: Value,
    map_changes: u64,
    /// Nested `include`s the execution went through, for Helm's recursion
    /// limit: an execution nested deeper would have failed.
    nesting: usize,
    out: Value,
}

impl Templates {
    pub fn new(funcs: Arc<FuncMap>) -> Self {
        Templates {
            funcs,
            trees: HashMap::new(),
            tpl_cache: RefCell::new(HashMap::new()),
            dollar: Arc::from("$"),
            includes: RefCell::new(HashMap::new()),
            include_depth: Cell::new(0),
            include_peak: Cell::new(0),
            late: RefCell::new(None),
            late_trees: RefCell::new(HashMap::new()),
        }
    }

    /// Parse `text` as template `name`; each `{{define}}`/`{{block}}` inside
    /// becomes a template too. A definition whose body is empty or
    /// whitespace-only does not replace an existing one (Go's
    /// `AddParseTree`/`IsEmptyTree` rule); otherwise the later parse wins.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), Error> {
        let parsed = Templates::parse_file(name, text, &self.funcs)?;
        self.add(parsed);
        Ok(())
    }

    /// Parse one file on its own, without a namespace: the first half of
    /// [`Templates::parse`]. The result holds no `Rc`, so files can be
    /// parsed on several threads; adding the results with
    /// [`Templates::add`] in the order `parse` would have been called gives
    /// the same namespace (the override rules apply when adding).
    pub fn parse_file(name: &str, text: &str, funcs: &FuncMap) -> Result<ParsedFile, Error> {
        parse::parse(name, text, funcs).map(|trees| ParsedFile { trees })
    }

    /// [`Templates::parse_file`] of a file's bytes, decoded as Helm's
    /// loader does (invalid UTF-8 becomes U+FFFD); valid UTF-8 is parsed
    /// in place and kept by the trees, not copied.
    pub fn parse_file_bytes(
        name: &str,
        bytes: &Arc<[u8]>,
        funcs: &FuncMap,
    ) -> Result<ParsedFile, Error> {
        let trees = match std::str::from_utf8(bytes) {
            Ok(text) => parse::parse_kept(name, text, bytes.clone(), funcs),
            Err(_) => parse::parse(name, &String::from_utf8_lossy(bytes), funcs),
        };
        trees.map(|trees| ParsedFile { trees })
    }

    /// Add a file parsed by [`Templates::parse_file`] (with this set's
    /// function table) to the namespace: the second half of
    /// [`Templates::parse`].
    pub fn add(&mut self, parsed: ParsedFile) {
        self.includes.get_mut().clear();
        for t in parsed.trees {
            associate(&mut self.trees, Rc::new(t));
        }
    }

    /// [`Templates::add`] for a file whose templates have names the
    /// namespace does not have yet (a file without `define`s, say): the
    /// results of earlier `include`s stay valid, as no name they resolved
    /// changes. A file that does reuse a name is added as by `add`.
    pub fn add_new(&mut self, parsed: ParsedFile) {
        if parsed
            .trees
            .iter()
            .any(|t| self.trees.contains_key(&t.name))
        {
            return self.add(parsed);
        }
        for t in parsed.trees {
            self.trees.insert(t.name.clone(), Rc::new(t));
        }
    }

    /// Files that belong to this namespace but are not added yet, handed
    /// over by `files` when an execution first looks up a name the
    /// namespace lacks. This is for a caller that executes files while
    /// others are still being parsed: it adds every file that `define`s
    /// templates first (in parse order), then each remaining file before
    /// executing it, and `files` yields those not added yet. Their names
    /// must be new (no `define` in them, no name already taken), so the
    /// namespace ends as if every file had been added before executing.
    pub fn set_late(&mut self, files: LateFiles) {
        *self.late.get_mut() = Some(files);
    }

    /// The function table templates are parsed against.
    pub fn funcs(&self) -> &FuncMap {
        &self.funcs
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tree(name).is_some()
    }

    /// The template `name` of the namespace, asking for the late files
    /// ([`Templates::set_late`]) once if it is not there.
    fn tree(&self, name: &str) -> Option<Rc<Tree>> {
        if let Some(t) = self.trees.get(name) {
            return Some(t.clone());
        }
        let files = self.late.borrow_mut().take();
        if let Some(files) = files {
            let mut late = self.late_trees.borrow_mut();
            for file in files() {
                for t in file.trees {
                    associate(&mut late, Rc::new(t));
                }
            }
        }
        self.late_trees.borrow().get(name).cloned()
    }

    /// Execute template `name` with `data` as dot and `$`. Go templates
    /// write bytes: a byte string that is not UTF-8 ([`Value::BStr`]) puts
    /// its invalid bytes into the output, and here each becomes U+FFFD
    /// (see [`Templates::execute_bytes`] for the exact bytes).
    pub fn execute(&self, name: &str, data: &Value, env: &Env) -> Result<String, Error> {
        let out = self.execute_bytes(name, data, env)?;
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => super::value::go_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// [`Templates::execute`], returning the output bytes exactly as Go
    /// writes them (not UTF-8 when a byte string was printed).
    pub fn execute_bytes(&self, name: &str, data: &Value, env: &Env) -> Result<Vec<u8>, Error> {
        let ns = Ns {
            local: None,
            parent: None,
            base: self,
        };
        let included = RefCell::new(HashMap::new());
        let mut out = Vec::new();
        exec_named(&ns, env, &included, name, data.clone(), 0, &mut out)?;
        Ok(out)
    }

    /// The output of an earlier `include` of `name` with the same argument
    /// (see [`Included`]), for a call `depth` includes deep. The nesting
    /// its execution would have gone through counts as gone through.
    fn included_before(&self, name: &str, arg: &Value, depth: usize) -> Option<Value> {
        let mut includes = self.includes.borrow_mut();
        let calls = includes.get_mut(name)?;
        let changes = map_changes();
        // Results from before a map changed can never be handed out again.
        calls.retain(|c| c.map_changes == changes);
        let c = calls
            .iter()
            .find(|c| depth + c.nesting < INCLUDE_MAX && same_arg(&c.arg, arg))?;
        self.include_peak
            .set(self.include_peak.get().max(depth + c.nesting));
        Some(c.out.clone())
    }

    fn tpl_trees(&self, text: &str) -> Rc<TplParse> {
        if let Some(t) = self.tpl_cache.borrow().get(text) {
            return t.clone();
        }
        let r = parse::parse(ROOT_NAME, text, &self.funcs)
            .map(|ts| ts.into_iter().map(Rc::new).collect());
        let r = Rc::new(r);
        self.tpl_cache
            .borrow_mut()
            .insert(Rc::from(text), r.clone());
        r
    }
}

/// Go's `associate`: an empty (whitespace-only) definition never replaces
/// an existing one; anything else replaces it.
fn associate(map: &mut TreeMap, t: Rc<Tree>) {
    if t.is_empty() && map.contains_key(&t.name) {
        return;
    }
    map.insert(t.name.clone(), t);
}

/// Whether an `include` argument is the same as an earlier one while no
/// map changed: lists, maps and objects are the same object, scalars equal;
/// a map made for the call (`dict "context" $ …`) has the same entries.
fn same_arg(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.kind == y.kind
                && (x.id() == y.id() || {
                    let (x, y) = (x.borrow(), y.borrow());
                    x.len() == y.len()
                        && x.iter()
                            .zip(y.iter())
                            .all(|((kx, vx), (ky, vy))| kx == ky && same_value(vx, vy))
                })
        }
        _ => same_value(a, b),
    }
}

/// [`same_arg`] one level down: containers by identity.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::I64(x), Value::I64(y)) => x == y,
        (Value::U64(x), Value::U64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::BStr(x), Value::BStr(y)) | (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
        (Value::Map(x), Value::Map(y)) => x.kind == y.kind && x.id() == y.id(),
        (Value::Object(x), Value::Object(y)) => std::ptr::addr_eq(Rc::as_ptr(x), Rc::as_ptr(y)),
        _ => false,
    }
}

/// The namespace seen by an execution: the base set, possibly overlaid by
/// the definitions of enclosing `tpl` calls (Helm clones the set instead).
struct Ns<'a> {
    local: Option<&'a TreeMap>,
    parent: Option<&'a Ns<'a>>,
    base: &'a Templates,
}

impl Ns<'_> {
    fn lookup(&self, name: &str) -> Option<Rc<Tree>> {
        if let Some(t) = self.local.and_then(|l| l.get(name)) {
            return Some(t.clone());
        }
        match self.parent {
            Some(p) => p.lookup(name),
            None => self.base.tree(name),
        }
    }
}

fn exec_named(
    ns: &Ns<'_>,
    env: &Env,
    included: &RefCell<HashMap<Rc<str>, usize>>,
    name: &str,
    data: Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let Some(tree) = ns.lookup(name) else {
        return Err(Error::other(format!(
            "template: no template {} associated with template {}",
            gofmt::quote(name),
            gofmt::quote(ROOT_NAME)
        )));
    };
    exec_tree(ns, env, included, &tree, data, depth, out)
}

fn exec_tree(
    ns: &Ns<'_>,
    env: &Env,
    included: &RefCell<HashMap<Rc<str>, usize>>,
    tree: &Tree,
    data: Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut s = State {
        ns,
        env,
        included,
        tree,
        name: tree.name.clone(),
        src: tree.src.clone(),
        vars: smallvec![(ns.base.dollar.clone(), V::val(data.clone()))],
        depth,
        cur: Cur::None,
    };
    match s.walk_list(&V::val(data), &tree.root, out) {
        Ok(()) => Ok(()),
        Err(Flow::Err(e)) => Err(e),
        // break/continue outside range are parse errors; unreachable here.
        Err(_) => Ok(()),
    }
}

/// A value with Go's "came out of an interface-typed slot" bit.
#[derive(Clone)]
struct V {
    v: Value,
    iface: bool,
}

impl V {
    fn val(v: Value) -> V {
        V { v, iface: false }
    }
    /// Go's static type name (for "can't evaluate field" messages).
    fn type_name(&self) -> &str {
        if self.iface {
            "interface {}"
        } else {
            self.v.type_name()
        }
    }
}

enum Flow {
    Break,
    Continue,
    Err(Error),
}

type R<T> = Result<T, Flow>;

/// The node errors are reported at (Go's `state.node`).
#[derive(Clone, Copy)]
enum Cur<'t> {
    None,
    Node(&'t Node),
    Pipe(&'t Pipe),
    Cmd(&'t Command),
    Arg(&'t Arg),
}

impl Cur<'_> {
    fn pos(&self) -> usize {
        let pos = match self {
            Cur::None => 0,
            Cur::Node(n) => match n {
                Node::Action(p) => p.pos,
                Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
                Node::Template { pos, .. } | Node::Break(pos) | Node::Continue(pos) => *pos,
                Node::Text { .. } => 0,
            },
            Cur::Pipe(p) => p.pos,
            Cur::Cmd(c) => c.pos,
            Cur::Arg(a) => a.pos(),
        };
        pos as usize
    }
    /// Go's `String()` of the node; `text` is the source of its tree.
    fn string(&self, text: &[u8]) -> String {
        match self {
            Cur::None => String::new(),
            Cur::Node(n) => n.display(text).to_string(),
            Cur::Pipe(p) => p.to_string(),
            Cur::Cmd(c) => c.to_string(),
            Cur::Arg(a) => a.to_string(),
        }
    }
}

struct State<'a, 't> {
    ns: &'a Ns<'a>,
    env: &'a Env,
    included: &'a RefCell<HashMap<Rc<str>, usize>>,
    #[allow(dead_code)]
    tree: &'t Tree,
    name: Arc<str>,
    src: Arc<Source>,
    /// The variables in scope, innermost last; inline for the usual few
    /// (`$` and a range's), as a template call makes a new stack.
    vars: SmallVec<[(Arc<str>, V); 4]>,
    depth: usize,
    cur: Cur<'t>,
}

/// Where `evalCall` got its function from.
enum Fun<'t> {
    Callee(Callee),
    Method(super::value::Method, &'t str),
}

impl<'a, 't> State<'a, 't> {
    fn at(&mut self, c: Cur<'t>) {
        self.cur = c;
    }

    /// Go's `state.errorf`.
    fn err(&self, msg: String) -> Flow {
        Flow::Err(self.make_err(msg, None))
    }

    /// A render limit's error, at the current node.
    fn limit(&self, hit: LimitHit) -> Flow {
        self.err(hit.to_string())
    }

    /// One evaluation step against the render's deadline.
    #[inline]
    fn step(&self) -> R<()> {
        self.env.budget().step().map_err(|h| self.limit(h))
    }

    fn make_err(&self, msg: String, inner: Option<(&str, &str)>) -> Error {
        let (line, col) = self.src.line_col(self.cur.pos());
        let node = self.cur.string(&self.src.text);
        let message = if matches!(self.cur, Cur::None) {
            format!("template: {}: {}", self.name, msg)
        } else {
            format!(
                "template: {}:{}:{}: executing {} at <{}>: {}",
                self.src.name,
                line,
                col,
                gofmt::quote(&self.name),
                node,
                msg
            )
        };
        Error::new(ErrorData {
            kind: ErrorKind::Exec,
            message,
            file: Some(self.src.name.to_string()),
            line: Some(line),
            col: Some(col),
            template: Some(self.name.to_string()),
            node: Some(node),
            msg,
            func_name: inner.map(|i| i.0.to_string()),
            func_msg: inner.map(|i| i.1.to_string()),
        })
    }

    fn var_value(&self, name: &str) -> R<V> {
        for (n, v) in self.vars.iter().rev() {
            if &**n == name {
                return Ok(v.clone());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    fn set_var(&mut self, name: &str, value: V) -> R<()> {
        for (n, v) in self.vars.iter_mut().rev() {
            if &**n == name {
                *v = value;
                return Ok(());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    fn walk_list(&mut self, dot: &V, list: &'t [Node], out: &mut Vec<u8>) -> R<()> {
        // Go's goroutine stacks grow on demand, so deep template recursion
        // (up to Helm's include limit or Go's maxExecDepth) works there;
        // grow ours the same way instead of overflowing.
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            for n in list {
                self.walk(dot, n, out)?;
            }
            Ok(())
        })
    }

    fn walk(&mut self, dot: &V, node: &'t Node, out: &mut Vec<u8>) -> R<()> {
        self.at(Cur::Node(node));
        self.step()?;
        match node {
            Node::Text { start, end } => {
                let range = *start as usize..*end as usize;
                let text = self.src.text.get(range).unwrap_or_default();
                self.env
                    .budget()
                    .write(text.len())
                    .map_err(|h| self.limit(h))?;
                out.extend_from_slice(text)
            }
            Node::Action(pipe) => {
                // Variables declared here persist until the enclosing end.
                let val = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at(Cur::Node(node));
                    self.env.check_printed(&val).map_err(|h| self.limit(h))?;
                    let before = out.len();
                    print_value(&val, out);
                    self.env
                        .budget()
                        .write(out.len() - before)
                        .map_err(|h| self.limit(h))?;
                }
            }
            Node::If(b) => self.walk_if_with(dot, node, b, false, out)?,
            Node::With(b) => self.walk_if_with(dot, node, b, true, out)?,
            Node::Range(b) => self.walk_range(dot, node, b, out)?,
            Node::Template { name, pipe, .. } => {
                let Some(tree) = self.ns.lookup(name) else {
                    return Err(self.err(format!("template {} not defined", gofmt::quote(name))));
                };
                if self.depth >= MAX_EXEC_DEPTH {
                    return Err(self.err(format!(
                        "exceeded maximum template depth ({MAX_EXEC_DEPTH})"
                    )));
                }
                let newdot = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => Value::Nil,
                };
                let mut s = State {
                    ns: self.ns,
                    env: self.env,
                    included: self.included,
                    tree: &tree,
                    name: tree.name.clone(),
                    src: tree.src.clone(),
                    vars: smallvec![(self.ns.base.dollar.clone(), V::val(newdot.clone()))],
                    depth: self.depth + 1,
                    cur: Cur::None,
                };
                s.walk_list(&V::val(newdot), &tree.root, out)?;
            }
            Node::Break(_) => return Err(Flow::Break),
            Node::Continue(_) => return Err(Flow::Continue),
        }
        Ok(())
    }

    fn walk_if_with(
        &mut self,
        dot: &V,
        node: &'t Node,
        b: &'t Branch,
        with: bool,
        out: &mut Vec<u8>,
    ) -> R<()> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            let _ = node;
            if truth(&val) {
                if with {
                    self.walk_list(&V::val(val), &b.list, out)
                } else {
                    self.walk_list(dot, &b.list, out)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e, out)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &V, node: &'t Node, r: &'t Branch, out: &mut Vec<u8>) -> R<()> {
        self.at(Cur::Node(node));
        let outer = self.vars.len();
        let res = self.walk_range_inner(dot, node, r, out);
        self.vars.truncate(outer);
        match res {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(
        &mut self,
        dot: &V,
        _node: &'t Node,
        r: &'t Branch,
        out: &mut Vec<u8>,
    ) -> R<()> {
        // Named map and slice types (Helm's `Files`, `VersionSet`) range
        // like their underlying map or slice, as Go's reflection sees them.
        let val = match self.eval_pipeline(dot, &r.pipe)? {
            // Listing names (`range $path, $_ := .Files.Glob "…"`) reads no file.
            Value::Object(o) if !ast::may_observe(&r.list, r.pipe.decl.last().map(|v| &**v)) => {
                o.underlying_keys().unwrap_or(Value::Object(o))
            }
            v => v.underlying(),
        };
        let mark = self.vars.len();
        let ndecl = r.pipe.decl.len();
        let iteration = |s: &mut Self, index: Value, elem: V, out: &mut Vec<u8>| -> R<()> {
            s.step()?;
            if r.pipe.is_assign {
                // `range $i = …` / `range $i, $v = …` (Go 1.22+) assigns
                // existing variables: index first with two, the element
                // with one.
                match &r.pipe.decl[..] {
                    [one] => s.set_var(one, elem.clone())?,
                    [first, second, ..] => {
                        s.set_var(first, V::val(index))?;
                        s.set_var(second, elem.clone())?;
                    }
                    [] => {}
                }
            } else {
                if ndecl > 0 && mark > 0 {
                    s.vars[mark - 1].1 = elem.clone();
                }
                if ndecl > 1 && mark > 1 {
                    s.vars[mark - 2].1 = V::val(index);
                }
            }
            let res = s.walk_list(&elem, &r.list, out);
            s.vars.truncate(mark);
            match res {
                Err(Flow::Continue) => Ok(()),
                other => other,
            }
        };
        match &val {
            Value::List(l) if !l.items.is_empty() => {
                let iface = l.kind.is_any();
                for (i, item) in l.items.iter().enumerate() {
                    iteration(
                        self,
                        Value::Int(i as i64),
                        V {
                            v: item.clone(),
                            iface,
                        },
                        out,
                    )?;
                }
                return Ok(());
            }
            Value::Bytes(b) if !b.is_empty() => {
                for (i, item) in b.iter().enumerate() {
                    iteration(
                        self,
                        Value::Int(i as i64),
                        V::val(Value::U64(*item as u64)),
                        out,
                    )?;
                }
                return Ok(());
            }
            Value::Map(m) if !m.is_empty() => {
                // Go sorts the keys (fmtsort) and reads the values up front,
                // so mutations by the body do not affect the iteration.
                let iface = m.kind != MapKind::Str;
                let entries: Vec<(Key, Value)> = m
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (k, v) in entries {
                    iteration(self, Value::Str(k.into()), V { v, iface }, out)?;
                }
                return Ok(());
            }
            Value::List(_) | Value::Bytes(_) | Value::Map(_) | Value::Nil => {}
            // Helm v3.17 is built with Go 1.23, whose templates cannot range
            // over integers (that came with Go 1.24); the error names the
            // node evaluated last, as Go's does.
            other => {
                return Err(self.err(format!(
                    "range can't iterate over {}",
                    gofmt::to_string_v(other)
                )));
            }
        }
        if let Some(e) = &r.else_list {
            self.walk_list(dot, e, out)?;
        }
        Ok(())
    }

    /// Go's `evalPipeline`: the result is flattened (an interface holding
    /// nil becomes the untyped nil), and declarations are pushed/assigned.
    fn eval_pipeline(&mut self, dot: &V, pipe: &'t Pipe) -> R<Value> {
        // Parenthesised pipelines nest arbitrarily deep.
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.eval_pipeline_inner(dot, pipe)
        })
    }

    fn eval_pipeline_inner(&mut self, dot: &V, pipe: &'t Pipe) -> R<Value> {
        self.at(Cur::Pipe(pipe));
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            value = Some(v.v);
        }
        let value = value.unwrap_or_default();
        for name in pipe.decl.iter() {
            if pipe.is_assign {
                self.set_var(name, V::val(value.clone()))?;
            } else {
                self.vars.push((name.clone(), V::val(value.clone())));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], has_final: bool) -> R<()> {
        if args.len() > 1 || has_final {
            return Err(self.err(format!("can't give argument to non-function {}", args[0])));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &V, cmd: &'t Command, fin: Option<Value>) -> R<V> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { idents, .. } => {
                self.at(Cur::Arg(first));
                return self.eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, fin);
            }
            Arg::Chain { .. } => return self.eval_chain(dot, first, &cmd.args, fin),
            Arg::Ident { callee, .. } => {
                self.at(Cur::Arg(first));
                return self
                    .eval_call(dot, Fun::Callee(*callee), Cur::Cmd(cmd), &cmd.args, fin)
                    .map(V::val);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, fin.is_some())?;
                return self.eval_pipeline(dot, p).map(V::val);
            }
            Arg::Var { .. } => return self.eval_variable(dot, first, &cmd.args, fin),
            _ => {}
        }
        self.at(Cur::Arg(first));
        self.not_a_function(&cmd.args, fin.is_some())?;
        match first {
            Arg::Bool(_, b) => Ok(V::val(Value::Bool(*b))),
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => Err(self.err("nil is not a command".into())),
            Arg::Number(_, n) => self.ideal_constant(n).map(V::val),
            Arg::Str { text, quoted, .. } => Ok(V::val(string_constant(text, quoted.as_deref()))),
            _ => Err(self.err(format!(
                "can't evaluate command {}",
                gofmt::quote(&first.to_string())
            ))),
        }
    }

    /// Go's `idealConstant`: a number whose type is not known from context.
    fn ideal_constant(&mut self, n: &super::ast::Number) -> R<Value> {
        if n.is_complex {
            let (re, im) = n.complex;
            return Ok(Value::Object(Rc::new(super::value::Complex(re, im))));
        }
        let t = &n.text;
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && t[1..].starts_with(['x', 'X'])
            && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float));
        }
        if n.is_int {
            return Ok(Value::Int(n.int));
        }
        if n.is_uint {
            return Err(self.err(format!("{t} overflows int")));
        }
        Ok(Value::Nil)
    }

    fn eval_chain(&mut self, dot: &V, chain: &'t Arg, args: &'t [Arg], fin: Option<Value>) -> R<V> {
        self.at(Cur::Arg(chain));
        let Arg::Chain { node, fields, .. } = chain else {
            return Err(self.err("internal error: no fields in evalChainNode".into()));
        };
        if let Arg::Nil(_) = **node {
            return Err(self.err(format!("indirection through explicit nil in {chain}")));
        }
        let recv = self.eval_arg(dot, Param::Any, node)?;
        self.eval_field_chain(dot, V::val(recv), chain, fields, args, fin)
    }

    fn eval_variable(
        &mut self,
        dot: &V,
        var: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<V> {
        self.at(Cur::Arg(var));
        let Arg::Var { idents, .. } = var else {
            return Err(self.err("internal error: not a variable".into()));
        };
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            self.not_a_function(args, fin.is_some())?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, var, &idents[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &V,
        mut receiver: V,
        node: &'t Arg,
        idents: &'t [Arc<str>],
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<V> {
        let n = idents.len();
        for id in &idents[..n - 1] {
            receiver = self.eval_field(dot, id, node, &[], None, receiver)?;
        }
        self.eval_field(dot, &idents[n - 1], node, args, fin, receiver)
    }

    /// Go's `evalField` with Helm's `missingkey=zero`.
    fn eval_field(
        &mut self,
        dot: &V,
        name: &Arc<str>,
        node: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
        receiver: V,
    ) -> R<V> {
        let has_args = args.len() > 1 || fin.is_some();
        match &receiver.v {
            Value::Nil => {
                if receiver.iface {
                    return Err(self.err(format!("nil pointer evaluating interface {{}}.{name}")));
                }
                Ok(V::val(Value::Nil))
            }
            Value::Map(m) => {
                if has_args {
                    return Err(self.err(format!("{name} is not a method but has arguments")));
                }
                match m.get(name) {
                    Some(v) => Ok(V {
                        v,
                        iface: m.kind != MapKind::Str,
                    }),
                    None if m.kind == MapKind::Str => Ok(V::val(Value::str(""))),
                    None => Ok(V {
                        v: Value::Nil,
                        iface: true,
                    }),
                }
            }
            Value::Object(o) => match o.member(name) {
                Some(Member::Method(m)) => self
                    .eval_call(dot, Fun::Method(m, name), Cur::Arg(node), args, fin)
                    .map(V::val),
                Some(Member::Field(v)) => {
                    if has_args {
                        return Err(self.err(format!(
                            "{name} has arguments but cannot be invoked as function"
                        )));
                    }
                    Ok(V::val(v))
                }
                None => Err(self.err(format!(
                    "can't evaluate field {name} in type {}",
                    receiver.type_name()
                ))),
            },
            _ => Err(self.err(format!(
                "can't evaluate field {name} in type {}",
                receiver.type_name()
            ))),
        }
    }

    /// Go's `evalCall` (`args[0]` is the function's own node).
    fn eval_call(
        &mut self,
        dot: &V,
        fun: Fun,
        node: Cur<'t>,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let args = if args.is_empty() { args } else { &args[1..] };
        let num_in = args.len() + usize::from(fin.is_some());
        // The signature: Helm's include/tpl are `(string, interface{})`; a
        // method's parameters are unknown here, so its arguments go in as
        // `interface {}` values.
        let (fname, params, variadic): (&str, &[Param], Option<Param>) = match &fun {
            Fun::Callee(c @ Callee::Func(d)) => (c.name(), d.params, d.variadic),
            Fun::Callee(c @ (Callee::And | Callee::Or)) => {
                (c.name(), &[Param::Any], Some(Param::Any))
            }
            Fun::Callee(c @ (Callee::Include | Callee::Tpl)) => {
                (c.name(), &[Param::Str, Param::Any], None)
            }
            Fun::Method(_, n) => (n, &[], Some(Param::Any)),
        };
        let num_fixed = if variadic.is_some() {
            params.len()
        } else {
            args.len()
        };
        if variadic.is_some() {
            if num_in < params.len() {
                return Err(self.err(format!(
                    "wrong number of args for {fname}: want at least {} got {}",
                    params.len(),
                    args.len()
                )));
            }
        } else if num_in != params.len() {
            return Err(self.err(format!(
                "wrong number of args for {fname}: want {} got {num_in}",
                params.len()
            )));
        }

        // and/or short-circuit (Go 1.18+): return the deciding operand.
        if let Fun::Callee(c @ (Callee::And | Callee::Or)) = fun {
            let is_or = matches!(c, Callee::Or);
            let mut v = Value::Nil;
            for a in args {
                v = self.eval_arg(dot, Param::Any, a)?;
                if truth(&v) == is_or {
                    return Ok(v);
                }
            }
            if let Some(f) = fin {
                v = f;
            }
            return Ok(v);
        }

        // Inline for the usual few arguments: one call is one allocation less.
        let mut argv: SmallVec<[Value; 4]> = SmallVec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            let p = params.get(i).copied().unwrap_or(Param::Any);
            argv.push(self.eval_arg(dot, p, &args[i])?);
            i += 1;
        }
        if let Some(vp) = variadic {
            while i < args.len() {
                argv.push(self.eval_arg(dot, vp, &args[i])?);
                i += 1;
            }
        }
        if let Some(f) = fin {
            let t = if num_in - 1 < params.len() {
                params[num_in - 1]
            } else {
                variadic.unwrap_or(Param::Any)
            };
            argv.push(self.validate_type(V::val(f), t)?);
        }

        self.step()?;
        if let Fun::Callee(Callee::Func(d)) = fun
            && self.env.alloc_cap() != u64::MAX
            && super::limits::writes_whole_values(d.name)
            && let Some(h) = argv.iter().find_map(|a| self.env.check_printed(a).err())
        {
            self.at(node);
            return Err(self.err(format!("error calling {fname}: {h}")));
        }
        let is_call = matches!(fun, Fun::Callee(Callee::Func(d)) if d.name == "call");
        let is_method = matches!(fun, Fun::Method(..));
        let result = match fun {
            Fun::Callee(Callee::Func(d)) => (d.imp)(self.env, &argv).map_err(|m| (m, None)),
            Fun::Method(m, _) => m(&argv).map_err(|m| (m, None)),
            Fun::Callee(Callee::Include) => self.include(&argv),
            Fun::Callee(Callee::Tpl) => self.tpl(&argv),
            Fun::Callee(Callee::And | Callee::Or) => Ok(Value::Nil),
        };
        match result {
            // No function result may exceed the output limit: a string
            // doubled in a loop stops here, at the call that made it.
            Ok(v) => match self.env.fits(value_bytes(&v)) {
                Ok(()) => Ok(v),
                Err(h) => {
                    self.at(node);
                    Err(self.limit(h))
                }
            },
            // A method given the wrong number of arguments: Go's evaluator
            // checks that before the call, so there is no "error calling".
            Err((msg, _)) if is_method && msg.starts_with("wrong number of args for ") => {
                self.at(node);
                Err(self.err(msg))
            }
            Err((msg, inner)) => {
                self.at(node);
                // Go hands `call` its first argument's text, which the
                // error names: `non-function .Values.x of type float64`.
                let msg = match args.first() {
                    Some(callee) if is_call => match msg.strip_prefix("non-function ") {
                        Some(rest) => format!("non-function {callee} {rest}"),
                        None => msg,
                    },
                    _ => msg,
                };
                let inner_fn = inner.clone();
                let e = self.make_err(
                    format!("error calling {fname}: {msg}"),
                    Some(match &inner_fn {
                        Some((f, m)) => (f.as_str(), m.as_str()),
                        None => (fname, msg.as_str()),
                    }),
                );
                Err(Flow::Err(e))
            }
        }
    }

    /// Helm's `include`: render a named template to a string (or hand
    /// out the result of the same call again, see [`Included`]).
    fn include(&mut self, argv: &[Value]) -> Result<Value, (String, Option<(String, String)>)> {
        let key: Rc<str> = match &argv[0] {
            Value::Str(s) => s.clone(),
            _ => Rc::from(""),
        };
        let name: &str = &key;
        let base = self.ns.base;
        let reusable = self.ns.local.is_none() && self.ns.parent.is_none();
        let depth = base.include_depth.get();
        if reusable && let Some(out) = base.included_before(&key, &argv[1], depth) {
            return Ok(out);
        }
        {
            let mut inc = self.included.borrow_mut();
            let c = inc.entry(key.clone()).or_insert(0);
            if *c > INCLUDE_MAX {
                return Err((
                    format!(
                        "rendering template has a nested reference name: {name}: unable to execute template"
                    ),
                    None,
                ));
            }
            *c += 1;
        }
        if let Err(h) = self.env.budget().enter() {
            if let Some(c) = self.included.borrow_mut().get_mut(&key) {
                *c = c.saturating_sub(1);
            }
            return Err((h.to_string(), None));
        }
        // Results are kept for the calls of a file's own text (the calls
        // nested in them are seen again only through them): maps made
        // during such a call are its own, which it may change freely.
        let keep = reusable && depth == 0;
        if keep {
            new_maps_from_here();
        }
        let (changes, impure) = (map_changes(), self.env.impure_calls());
        let outer_peak = base.include_peak.replace(depth + 1);
        base.include_depth.set(depth + 1);
        let mut buf = Vec::new();
        let r = exec_named(
            self.ns,
            self.env,
            self.included,
            name,
            argv[1].clone(),
            0, // a new execution (Go's ExecuteTemplate) starts at depth 0
            &mut buf,
        );
        self.env.budget().leave();
        base.include_depth.set(depth);
        let nesting = base.include_peak.get() - depth;
        base.include_peak.set(outer_peak.max(depth + nesting));
        if let Some(c) = self.included.borrow_mut().get_mut(&key) {
            *c = c.saturating_sub(1);
        }
        match r {
            Ok(()) => {
                let out = Value::from_go_bytes(buf);
                if keep && map_changes() == changes && self.env.impure_calls() == impure {
                    base.includes
                        .borrow_mut()
                        .entry(key)
                        .or_default()
                        .push(Included {
                            arg: argv[1].clone(),
                            map_changes: changes,
                            nesting,
                            out: out.clone(),
                        });
                }
                Ok(out)
            }
            Err(e) => Err(wrap_inner(e, "")),
        }
    }

    /// Helm's `tpl`: parse the text in an overlay of the namespace (Helm
    /// clones it) under the name "gotpl" and execute it.
    fn tpl(&mut self, argv: &[Value]) -> Result<Value, (String, Option<(String, String)>)> {
        let text = argv[0].as_str().unwrap_or("");
        let parsed = self.ns.base.tpl_trees(text);
        let trees = match &*parsed {
            Ok(t) => t,
            Err(e) => {
                return Err((
                    format!(
                        "cannot parse template {}: {}",
                        gofmt::quote(text),
                        e.message
                    ),
                    None,
                ));
            }
        };
        let mut local: TreeMap = HashMap::new();
        let mut main = None;
        for t in trees {
            if &*t.name == ROOT_NAME {
                main = Some(t.clone());
            }
            match self.ns.lookup(&t.name) {
                Some(_) if t.is_empty() => {}
                _ => {
                    local.insert(t.name.clone(), t.clone());
                }
            }
        }
        let Some(main) = main else {
            return Ok(Value::str(""));
        };
        let ns = Ns {
            local: Some(&local),
            parent: Some(self.ns),
            base: self.ns.base,
        };
        self.env
            .budget()
            .enter()
            .map_err(|h| (h.to_string(), None))?;
        let mut buf = Vec::new();
        let r = exec_tree(
            &ns,
            self.env,
            self.included,
            &main,
            argv[1].clone(),
            0, // a new execution (Go's ExecuteTemplate) starts at depth 0
            &mut buf,
        );
        self.env.budget().leave();
        match r {
            Ok(()) => Ok(Value::from_go_bytes(strip_no_value(buf))),
            Err(e) => {
                let prefix = format!(
                    "error during tpl function execution for {}: ",
                    gofmt::quote(text)
                );
                Err(wrap_inner(e, &prefix))
            }
        }
    }

    /// Go's `evalArg`: evaluate an argument for a parameter of type `p`.
    fn eval_arg(&mut self, dot: &V, p: Param, n: &'t Arg) -> R<Value> {
        self.at(Cur::Arg(n));
        match n {
            Arg::Dot(_) => return self.validate_type(dot.clone(), p),
            Arg::Nil(_) => {
                if can_be_nil(p) {
                    return Ok(Value::Nil);
                }
                return Err(self.err(format!("cannot assign nil to {}", p.go_name())));
            }
            Arg::Field { idents, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    n,
                    idents,
                    std::slice::from_ref(n),
                    None,
                )?;
                return self.validate_type(v, p);
            }
            Arg::Var { .. } => {
                let v = self.eval_variable(dot, n, &[], None)?;
                return self.validate_type(v, p);
            }
            Arg::Pipe(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                return self.validate_type(V::val(v), p);
            }
            Arg::Ident { callee, .. } => {
                let v = self.eval_call(
                    dot,
                    Fun::Callee(*callee),
                    Cur::Arg(n),
                    std::slice::from_ref(n),
                    None,
                )?;
                return self.validate_type(V::val(v), p);
            }
            Arg::Chain { .. } => {
                let v = self.eval_chain(dot, n, &[], None)?;
                return self.validate_type(v, p);
            }
            _ => {}
        }
        match p {
            Param::Bool => match n {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                _ => Err(self.err(format!("expected bool; found {n}"))),
            },
            Param::Float => match n {
                Arg::Number(_, num) if num.is_float => Ok(Value::Float(num.float)),
                _ => Err(self.err(format!("expected float; found {n}"))),
            },
            Param::Int | Param::Int64 => match n {
                Arg::Number(_, num) if num.is_int => Ok(if p == Param::Int {
                    Value::Int(num.int)
                } else {
                    Value::I64(num.int)
                }),
                _ => Err(self.err(format!("expected integer; found {n}"))),
            },
            Param::Str => match n {
                Arg::Str { text, .. } => Ok(Value::str(text)),
                _ => Err(self.err(format!("expected string; found {n}"))),
            },
            Param::RawStr => match n {
                Arg::Str { text, quoted, .. } => Ok(string_constant(text, quoted.as_deref())),
                _ => Err(self.err(format!("expected string; found {n}"))),
            },
            Param::Any => match n {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                Arg::Number(_, num) => self.ideal_constant(num),
                Arg::Str { text, quoted, .. } => Ok(string_constant(text, quoted.as_deref())),
                _ => Err(self.err(format!(
                    "can't handle assignment of {n} to empty interface argument"
                ))),
            },
            Param::Map | Param::List => {
                Err(self.err(format!("can't handle {n} for arg of type {}", p.go_name())))
            }
        }
    }

    /// Go's `validateType` for the parameter types functions declare.
    fn validate_type(&self, value: V, p: Param) -> R<Value> {
        if let Value::Nil = value.v {
            if !value.iface {
                if can_be_nil(p) {
                    return Ok(Value::Nil);
                }
                return Err(self.err(format!("invalid value; expected {}", p.go_name())));
            }
            if p == Param::Any {
                return Ok(Value::Nil);
            }
            return Err(self.err(format!(
                "wrong type for value; expected {}; got interface {{}}",
                p.go_name()
            )));
        }
        let ok = match p {
            Param::Any => true,
            Param::Str => match &value.v {
                Value::Str(_) => true,
                Value::BStr(b) => {
                    return Ok(Value::string(super::value::go_lossy(b).into_owned()));
                }
                _ => false,
            },
            Param::RawStr => value.v.is_string(),
            Param::Int => matches!(value.v, Value::Int(_)),
            Param::Int64 => matches!(value.v, Value::I64(_)),
            Param::Float => matches!(value.v, Value::Float(_)),
            Param::Bool => matches!(value.v, Value::Bool(_)),
            // Go converts the argument to the parameter's type: a
            // `chartutil.Values` becomes a `map[string]interface {}` (same
            // map), which is what `merge`/`set` then return.
            Param::Map => match &value.v {
                Value::Map(m) if m.kind == MapKind::Values => {
                    return Ok(Value::Map(Rc::new(m.view(MapKind::Any))));
                }
                Value::Map(m) => m.kind != MapKind::Str,
                _ => false,
            },
            Param::List => matches!(&value.v, Value::List(l) if l.kind.is_any()),
        };
        if ok {
            return Ok(value.v);
        }
        // A non-nil interface is unwrapped first, so the concrete type is
        // reported (only a nil interface reports `interface {}`, above).
        Err(self.err(format!(
            "wrong type for value; expected {}; got {}",
            p.go_name(),
            value.v.type_name()
        )))
    }
}

/// Wrap an error from a nested execution for `error calling include/tpl`,
/// keeping the innermost function name and message.
fn wrap_inner(e: Error, prefix: &str) -> (String, Option<(String, String)>) {
    let inner = match (&e.func_name, &e.func_msg) {
        (Some(f), Some(m)) => Some((f.clone(), m.clone())),
        _ => None,
    };
    (format!("{prefix}{}", e.message), inner)
}

fn can_be_nil(p: Param) -> bool {
    matches!(p, Param::Any | Param::Map | Param::List)
}

/// A string constant's value. The parser keeps text valid UTF-8 (a `\x`
/// or octal escape of a byte >= 0x80 becomes U+FFFD); Go's constant holds
/// that byte, so such a constant is decoded again from its quoted form
/// into a byte string.
fn string_constant(text: &str, quoted: Option<&ast::Spelling>) -> Value {
    let quoted = quoted.map(|q| &*q.0);
    let Some(quoted) = quoted.filter(|q| q.starts_with('"') && text.contains('\u{FFFD}')) else {
        return Value::str(text);
    };
    match unquote_bytes(quoted) {
        Some(b) => Value::from_go_bytes(b),
        None => Value::str(text),
    }
}

/// Go's `strconv.Unquote` of a double-quoted literal, as bytes.
fn unquote_bytes(quoted: &str) -> Option<Vec<u8>> {
    let body = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = Vec::with_capacity(body.len());
    let mut chars = body.chars();
    let mut buf = [0u8; 4];
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let e = chars.next()?;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '"' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.extend_from_slice(s.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let rest = chars.as_str();
        match e {
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let v = u32::from_str_radix(rest.get(..n)?, 16).ok()?;
                if e == 'x' {
                    out.push(v as u8);
                } else {
                    out.extend_from_slice(char::from_u32(v)?.encode_utf8(&mut buf).as_bytes());
                }
                chars = rest.get(n..)?.chars();
            }
            '0'..='7' => {
                let digits = format!("{e}{}", rest.get(..2)?);
                out.push(u8::try_from(u32::from_str_radix(&digits, 8).ok()?).ok()?);
                chars = rest.get(2..)?.chars();
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Bytes a function result holds for the output limit: strings by their
/// length, lists by their slots (what `until` and `seq`-like calls grow).
fn value_bytes(v: &Value) -> u64 {
    let n = match v {
        Value::Str(s) => s.len(),
        Value::BStr(b) | Value::Bytes(b) => b.len(),
        Value::List(l) => l.items.len() * std::mem::size_of::<Value>(),
        _ => 0,
    };
    n as u64
}

/// Go's `truth` / `isTrue`.
pub fn truth(v: &Value) -> bool {
    v.truthy()
}

/// Go's `printValue`: the untyped nil prints `<no value>`.
fn print_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Nil => out.extend_from_slice(b"<no value>"),
        Value::Str(s) => out.extend_from_slice(s.as_bytes()),
        // The template prints the value itself (addressable: pointer
        // methods apply), not a copy passed to fmt.
        Value::Object(o) => {
            let mut s = String::new();
            o.fmt_v(&mut s);
            out.extend_from_slice(s.as_bytes());
        }
        other => gofmt::fmt_v(other, out),
    }
}

/// Helm's `strings.ReplaceAll(out, "<no value>", "")` on output bytes.
fn strip_no_value(buf: Vec<u8>) -> Vec<u8> {
    const NV: &[u8] = b"<no value>";
    if !buf.windows(NV.len()).any(|w| w == NV) {
        return buf;
    }
    let mut out = Vec::with_capacity(buf.len());
    let mut i = 0;
    while i < buf.len() {
        if buf[i..].starts_with(NV) {
            i += NV.len();
        } else {
            out.push(buf[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod byte_string_tests {
    //! Go strings are bytes; expected values from helm v3.17.3 (compat case
    //! 187-byte-strings and throw-away charts).
    use super::*;

    fn render(src: &str) -> Vec<u8> {
        let mut t = Templates::new(Arc::new(FuncMap::standard()));
        t.parse("t", src).expect("parses");
        t.execute_bytes("t", &Value::Nil, &Env::new())
            .expect("executes")
    }

    #[test]
    fn cuts_and_decoding_keep_raw_bytes() {
        assert_eq!(render(r#"{{ trunc 2 "héllo" }}"#), b"h\xc3");
        assert_eq!(render(r#"{{ trunc 2 "héllo" | len }}"#), b"2");
        assert_eq!(render(r#"{{ substr 0 3 "héllo" | len }}"#), b"3");
        assert_eq!(render(r#"{{ b64dec "/w==" | len }}"#), b"1");
        assert_eq!(render(r#"{{ b64dec "/w==" }}"#), b"\xff");
        assert_eq!(render(r#"{{ "\xc3" | len }}"#), b"1");
        assert_eq!(render(r#"{{ trunc 2 "héllo" | typeOf }}"#), b"string");
    }

    #[test]
    fn byte_oriented_functions_pass_bytes_on() {
        assert_eq!(render(r#"{{ trunc 2 "héllo" | b64enc }}"#), b"aMM=");
        assert_eq!(
            render(r#"{{ cat (trunc 2 "héllo") "x" | b64enc }}"#),
            b"aMMgeA=="
        );
        assert_eq!(
            render(r#"{{ trunc 2 "héllo" | replace "h" "x" | b64enc }}"#),
            b"eMM="
        );
        assert_eq!(
            render(r#"{{ include "x" . | len }}{{ define "x" }}{{ trunc 2 "héllo" }}{{ end }}"#),
            b"2"
        );
        assert_eq!(
            render(r#"{{ list (trunc 2 "héllo") "é" | join "|" | len }}"#),
            b"5"
        );
        assert_eq!(
            render(r#"{{ trunc 2 "héllo" | sha256sum }}"#),
            b"54b7f95d210c7c7ec7ae11d3e17ca07ea77083a6999e1037c0717d0ec25587f8"
        );
    }

    #[test]
    fn rune_decoding_sees_replacement_characters() {
        // strings.ToUpper decodes runes: the cut byte becomes U+FFFD.
        assert_eq!(
            render(r#"{{ trunc 2 "héllo" | upper | b64enc }}"#),
            b"SO+/vQ=="
        );
        assert_eq!(render(r#"{{ trunc 2 "héllo" | toJson }}"#), br#""h\ufffd""#);
    }

    #[test]
    fn printing_and_comparing_bytes() {
        assert_eq!(
            render(r#"{{ printf "%q" (trunc 2 "héllo") }}"#),
            br#""h\xc3""#
        );
        assert_eq!(render(r#"{{ trunc 2 "héllo" | quote }}"#), br#""h\xc3""#);
        assert_eq!(render(r#"{{ printf "%x" (trunc 2 "héllo") }}"#), b"68c3");
        assert_eq!(
            render(r#"{{ printf "%q" "\ufffd" }}"#),
            "\"\u{FFFD}\"".as_bytes()
        );
        assert_eq!(render(r#"{{ eq (trunc 2 "héllo") "h\xc3" }}"#), b"true");
        assert_eq!(render(r#"{{ lt "h" (trunc 2 "héllo") }}"#), b"true");
        assert_eq!(render(r#"{{ index (trunc 2 "héllo") 1 }}"#), b"195");
    }
}
