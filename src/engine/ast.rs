//! The parse tree, after Go's `text/template/parse/node.go`.
//!
//! Nodes carry their byte offset in the source text; line and column are
//! computed only when an error is reported (Go's `ErrorContext`). Each
//! node's `Display` is Go's `Node.String()`, which execution errors quote
//! as `<…>`. Functions are resolved at parse time into [`Callee`]s so the
//! evaluator does no map look-ups.

use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

use super::funcs::FuncDef;

/// A byte offset in a tree's source. Four bytes, not a `usize`: a parse
/// tree holds one per node and argument, and its size is page faults.
pub type Pos = u32;

/// `pos` as a [`Pos`]; an offset past 4 GiB (no template is that big)
/// saturates, and only error locations would be off.
pub fn pos(pos: usize) -> Pos {
    Pos::try_from(pos).unwrap_or(Pos::MAX)
}

/// The text a tree was parsed from, and the name errors report for it
/// (Go's `Tree.ParseName`: the top-level template of the `Parse` call).
pub struct Source {
    pub name: Arc<str>,
    /// The UTF-8 text, as bytes so that it can be the very buffer a chart
    /// file was read into (no copy of every template).
    pub text: Arc<[u8]>,
}

impl Source {
    /// Go's `ErrorContext` location: 1-based line, 0-based byte column.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let text = &self.text[..pos.min(self.text.len())];
        let line = 1 + text.iter().filter(|b| **b == b'\n').count();
        let col = match text.iter().rposition(|b| *b == b'\n') {
            Some(i) => pos - (i + 1),
            None => pos,
        };
        (line, col)
    }
}

/// A named template: one `define`, `block` or parsed file.
pub struct Tree {
    pub name: Arc<str>,
    pub src: Arc<Source>,
    pub root: Box<[Node]>,
}

impl Tree {
    /// Go's `IsEmptyTree` of the root.
    pub fn is_empty(&self) -> bool {
        is_empty_tree(&self.root, &self.src.text)
    }
}

/// What an identifier in command position calls.
#[derive(Clone, Copy)]
pub enum Callee {
    /// An ordinary function from the [`FuncMap`](super::FuncMap).
    Func(&'static FuncDef),
    /// `and` / `or`: evaluated lazily by the evaluator (Go 1.18+).
    And,
    Or,
    /// Helm's `include` and `tpl`, which need the template namespace.
    Include,
    Tpl,
}

impl Callee {
    /// The identifier that names it.
    pub fn name(&self) -> &'static str {
        match self {
            Callee::Func(d) => d.name,
            Callee::And => "and",
            Callee::Or => "or",
            Callee::Include => "include",
            Callee::Tpl => "tpl",
        }
    }
}

/// Lists of nodes, commands, arguments and names are boxed slices of
/// exactly their length, and the rarer large variants are boxed: parse
/// trees are most of the memory a render allocates (ingress-nginx: ~1.2 MB
/// for 120 KB of templates with growable `Vec`s and inline branches), and
/// every page of it is a page fault.
pub enum Node {
    /// `src.text[start..end]` of the tree's source: text is not copied.
    Text {
        start: Pos,
        end: Pos,
    },
    Action(Pipe),
    If(Box<Branch>),
    Range(Box<Branch>),
    With(Box<Branch>),
    Template {
        pos: Pos,
        name: Arc<str>,
        pipe: Option<Box<Pipe>>,
    },
    Break(Pos),
    Continue(Pos),
}

// What boxing, four-byte positions and thin pointers keep a node and an
// argument down to: every byte of them counts in a render's page faults.
const _: () = assert!(std::mem::size_of::<Node>() <= 48 && std::mem::size_of::<Arg>() <= 32);

pub struct Branch {
    pub pos: Pos,
    pub pipe: Pipe,
    pub list: Box<[Node]>,
    pub else_list: Option<Box<[Node]>>,
}

pub struct Pipe {
    pub pos: Pos,
    pub is_assign: bool,
    pub decl: Decl,
    /// Most pipelines are one command, kept inline: one allocation less
    /// per action.
    pub cmds: SmallVec<[Command; 1]>,
}

/// The variables a pipeline declares or assigns. Most declare none, so
/// this is a thin pointer, null then: 8 bytes in every pipeline, not 16.
#[derive(Default)]
pub struct Decl(Option<Box<Box<[Arc<str>]>>>);

impl From<Box<[Arc<str>]>> for Decl {
    fn from(names: Box<[Arc<str>]>) -> Decl {
        Decl((!names.is_empty()).then(|| Box::new(names)))
    }
}

impl std::ops::Deref for Decl {
    type Target = [Arc<str>];
    fn deref(&self) -> &[Arc<str>] {
        self.0.as_deref().map_or(&[], |names| &names[..])
    }
}

pub struct Command {
    pub pos: Pos,
    pub args: Box<[Arg]>,
}

/// Go's number node: the constant under every type that can hold it.
#[derive(Clone, Debug)]
pub struct Number {
    pub text: Box<str>,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int: i64,
    pub uint: u64,
    pub float: f64,
    /// The real and imaginary parts of a complex constant.
    pub complex: (f64, f64),
}

pub enum Arg {
    Field {
        pos: Pos,
        idents: Box<[Arc<str>]>,
    },
    Chain {
        pos: Pos,
        node: Box<Arg>,
        fields: Box<[Arc<str>]>,
    },
    /// A function name; its spelling is the callee's.
    Ident {
        pos: Pos,
        callee: Callee,
    },
    Pipe(Box<Pipe>),
    /// `$x.a.b`: `idents[0]` is the variable name.
    Var {
        pos: Pos,
        idents: Box<[Arc<str>]>,
    },
    Dot(Pos),
    Nil(Pos),
    Bool(Pos, bool),
    Number(Pos, Box<Number>),
    /// `quoted` is the source spelling, which `String()` prints; `None`
    /// when that is `text` between double quotes (no escapes), as most
    /// constants are spelled, which saves a copy of each.
    Str {
        pos: Pos,
        quoted: Option<Box<Spelling>>,
        text: Arc<str>,
    },
}

/// A string constant's spelling in the source, behind one more pointer:
/// a thin one, so that an argument is 32 bytes, not 40, for the few
/// constants that have one.
pub struct Spelling(pub Box<str>);

impl Arg {
    pub fn pos(&self) -> Pos {
        match self {
            Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Ident { pos, .. }
            | Arg::Var { pos, .. }
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Bool(pos, _)
            | Arg::Number(pos, _)
            | Arg::Str { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

fn write_idents(f: &mut fmt::Formatter<'_>, idents: &[Arc<str>]) -> fmt::Result {
    for (i, id) in idents.iter().enumerate() {
        if i > 0 {
            f.write_str(".")?;
        }
        f.write_str(id)?;
    }
    Ok(())
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field { idents, .. } => {
                for id in idents {
                    write!(f, ".{id}")?;
                }
                Ok(())
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(p) = &**node {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for id in fields {
                    write!(f, ".{id}")?;
                }
                Ok(())
            }
            Arg::Ident { callee, .. } => f.write_str(callee.name()),
            Arg::Pipe(p) => write!(f, "{p}"),
            Arg::Var { idents, .. } => write_idents(f, idents),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Bool(_, b) => f.write_str(if *b { "true" } else { "false" }),
            Arg::Number(_, n) => f.write_str(&n.text),
            Arg::Str {
                quoted: Some(q), ..
            } => f.write_str(&q.0),
            Arg::Str { text, .. } => write!(f, "\"{text}\""),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(v)?;
            }
            f.write_str(" := ")?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, list: &[Node], text: &[u8]) -> fmt::Result {
    for n in list {
        write!(f, "{}", n.display(text))?;
    }
    Ok(())
}

/// A node printed as Go's `Node.String()`; `text` is its tree's source.
pub struct NodeDisplay<'a> {
    node: &'a Node,
    text: &'a [u8],
}

impl Node {
    pub fn display<'a>(&'a self, text: &'a [u8]) -> NodeDisplay<'a> {
        NodeDisplay { node: self, text }
    }
}

/// The source bytes of a text node (valid UTF-8: they were parsed as `str`).
pub fn text_of(text: &[u8], start: Pos, end: Pos) -> &str {
    let range = start as usize..end as usize;
    std::str::from_utf8(text.get(range).unwrap_or_default()).unwrap_or_default()
}

impl fmt::Display for NodeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text;
        let branch = |f: &mut fmt::Formatter<'_>, name: &str, b: &Branch| -> fmt::Result {
            write!(f, "{{{{{name} {}}}}}", b.pipe)?;
            write_list(f, &b.list, text)?;
            if let Some(e) = &b.else_list {
                f.write_str("{{else}}")?;
                write_list(f, e, text)?;
            }
            f.write_str("{{end}}")
        };
        match self.node {
            Node::Text { start, end } => f.write_str(text_of(text, *start, *end)),
            Node::Action(p) => write!(f, "{{{{{p}}}}}"),
            Node::If(b) => branch(f, "if", b),
            Node::Range(b) => branch(f, "range", b),
            Node::With(b) => branch(f, "with", b),
            Node::Template { name, pipe, .. } => {
                write!(f, "{{{{template {}", super::gofmt::quote(name))?;
                if let Some(p) = pipe {
                    write!(f, " {p}")?;
                }
                f.write_str("}}")
            }
            Node::Break(_) => f.write_str("{{break}}"),
            Node::Continue(_) => f.write_str("{{continue}}"),
        }
    }
}

/// Go's `IsEmptyTree`: only whitespace text and comments.
pub fn is_empty_tree(list: &[Node], text: &[u8]) -> bool {
    list.iter().all(|n| match n {
        Node::Text { start, end } => text_of(text, *start, *end)
            .trim_matches(|c: char| c.is_whitespace())
            .is_empty(),
        _ => false,
    })
}

/// Whether running `list` may look at its dot or at the variable `var`
/// (the element a `range` binds). Conservative: any `.`, field of the dot
/// or mention of the name counts, wherever it is.
pub fn may_observe(list: &[Node], var: Option<&str>) -> bool {
    fn pipe(p: &Pipe, var: Option<&str>) -> bool {
        p.cmds
            .iter()
            .flat_map(|c| c.args.iter())
            .any(|a| arg(a, var))
    }
    fn arg(a: &Arg, var: Option<&str>) -> bool {
        match a {
            Arg::Field { .. } | Arg::Dot(_) => true,
            Arg::Chain { node, .. } => arg(node, var),
            Arg::Pipe(p) => pipe(p, var),
            Arg::Var { idents, .. } => {
                var.is_some_and(|v| idents.first().is_some_and(|i| **i == *v))
            }
            Arg::Ident { .. } | Arg::Nil(_) | Arg::Bool(..) | Arg::Number(..) | Arg::Str { .. } => {
                false
            }
        }
    }
    list.iter().any(|n| match n {
        Node::Text { .. } | Node::Break(_) | Node::Continue(_) => false,
        Node::Action(p) => pipe(p, var),
        Node::If(b) | Node::Range(b) | Node::With(b) => {
            pipe(&b.pipe, var)
                || may_observe(&b.list, var)
                || b.else_list.as_deref().is_some_and(|e| may_observe(e, var))
        }
        Node::Template { pipe: p, .. } => p.as_deref().is_some_and(|p| pipe(p, var)),
    })
}
