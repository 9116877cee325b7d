//! The template parser: a port of Go's `text/template/parse/parse.go`
//! (Go 1.23: `break`/`continue`, `else if`, `else with`, `=` assignment).
//!
//! The structure, the three-token look-ahead and every error text follow
//! Go, because parse errors are user-visible (`template: NAME:LINE: MSG`)
//! and Helm rewrites them by splitting on `": "`.

use foldhash::{HashSet, HashSetExt};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use super::ast::{
    self, Arg, Branch, Callee, Command, Node, Number, Pipe, Source, Tree, is_empty_tree,
};
use super::error::Error;
use super::funcs::FuncMap;
use super::lexer::{Item, ItemType, Lexer};

/// Parse `text` as template `name`. Returns the trees defined by the text,
/// the top-level one included, in definition order (Go's `treeSet`, with
/// its "multiple definition" rule applied).
pub fn parse(name: &str, text: &str, funcs: &FuncMap) -> Result<Vec<Tree>, Error> {
    parse_kept(name, text, Arc::from(text.as_bytes()), funcs)
}

/// [`parse`], the trees keeping `bytes` (which hold `text`) as their
/// source text.
pub fn parse_kept(
    name: &str,
    text: &str,
    bytes: Arc<[u8]>,
    funcs: &FuncMap,
) -> Result<Vec<Tree>, Error> {
    let src = Arc::new(Source {
        name: Arc::from(name),
        text: bytes,
    });
    let break_ok = !has_function(funcs, "break");
    let continue_ok = !has_function(funcs, "continue");
    let dummy = Item {
        typ: ItemType::Eof,
        pos: 0,
        val: "",
    };
    let mut p = Parser {
        lexer: Lexer::new(text, break_ok, continue_ok),
        token: [dummy; 3],
        peek_count: 0,
        last_pos: 0,
        vars: vec![Arc::from("$")],
        range_depth: 0,
        action_pos: None,
        funcs,
        src: src.clone(),
        trees: Vec::new(),
        stacks: STACKS.with(|s| s.take()),
    };
    let parsed = p.parse_top().and_then(|root| p.add(Arc::from(name), root));
    // The stacks go back, emptied, for the next file parsed on this thread.
    let mut stacks = p.stacks;
    stacks.clear();
    STACKS.with(|s| s.replace(stacks));
    parsed.map(|()| p.trees)
}

/// Work stacks the lists under construction share: a list's elements are
/// pushed above the mark taken when it started (inner lists finish first),
/// then moved into a boxed slice of exactly their number. One allocation
/// per list, and no growth or spare capacity in the tree.
#[derive(Default)]
struct Stacks {
    nodes: Vec<Node>,
    cmds: Vec<Command>,
    args: Vec<Arg>,
    names: Vec<Arc<str>>,
}

impl Stacks {
    /// Empty (what a parse that stopped at an error left), keeping the
    /// capacity.
    fn clear(&mut self) {
        self.nodes.clear();
        self.cmds.clear();
        self.args.clear();
        self.names.clear();
    }
}

/// Names the shared table of a thread holds at most.
const MAX_SHARED_NAMES: usize = 1 << 16;

thread_local! {
    /// The stacks of the last parse on this thread, kept with their
    /// capacity: a chart's files are parsed one after another.
    static STACKS: RefCell<Stacks> = RefCell::default();
    /// One shared string per distinct field, variable or constant name
    /// parsed on this thread: `Values`, `Release`, helper names and the
    /// like recur all through a chart's files.
    static NAMES: RefCell<HashSet<Arc<str>>> = RefCell::new(HashSet::with_capacity(512));
}

/// Go's `hasFunction`, with the names that are always defined here.
fn has_function(funcs: &FuncMap, name: &str) -> bool {
    resolve(funcs, name).is_some()
}

/// Resolve a function name the way Go's `findFunction` does: the user's
/// map first, then the builtins. `include` and `tpl` are Helm's and live in
/// the evaluator.
pub fn resolve(funcs: &FuncMap, name: &str) -> Option<Callee> {
    match name {
        "include" => return Some(Callee::Include),
        "tpl" => return Some(Callee::Tpl),
        _ => {}
    }
    // `and`/`or` are Go's short-circuiting builtins; nothing else in the
    // function table redefines them.
    match name {
        "and" => return Some(Callee::And),
        "or" => return Some(Callee::Or),
        _ => {}
    }
    if let Some(d) = funcs.get(name) {
        return Some(Callee::Func(d));
    }
    super::funcs::builtins::get(name).map(Callee::Func)
}

type PResult<T> = Result<T, Error>;

struct Parser<'a, 'f> {
    lexer: Lexer<'a>,
    token: [Item<'a>; 3],
    peek_count: usize,
    /// Position of the item most recently taken from the lexer, whose line
    /// (Go's `t.token[0].line`) an error reports. Items carry no line: Go's
    /// item line is always that of the item's start, so it is counted
    /// from the text only when an error needs it.
    last_pos: usize,
    vars: Vec<Arc<str>>,
    range_depth: usize,
    /// Where the action being parsed opened (Go's `actionLine`, as a position).
    action_pos: Option<usize>,
    funcs: &'f FuncMap,
    src: Arc<Source>,
    trees: Vec<Tree>,
    stacks: Stacks,
}

/// Move `stack[mark..]` into a boxed slice of exactly that length.
fn take<T>(stack: &mut Vec<T>, mark: usize) -> Box<[T]> {
    // `split_off` allocates exactly the tail's length and moves it with one
    // copy; collecting a `drain` moves the elements one by one.
    stack.split_off(mark).into_boxed_slice()
}

/// What `itemList` stopped at.
enum End {
    End,
    Else,
}

impl<'a> Parser<'a, '_> {
    fn intern(&mut self, name: &str) -> Arc<str> {
        NAMES.with(|names| {
            let mut names = names.borrow_mut();
            if let Some(n) = names.get(name) {
                return n.clone();
            }
            let n: Arc<str> = Arc::from(name);
            // A long-running operator parses new texts now and then: the
            // table stays a cache, not a record of every name ever seen.
            if names.len() >= MAX_SHARED_NAMES {
                names.clear();
            }
            names.insert(n.clone());
            n
        })
    }
    #[inline]
    fn lex_next(&mut self) -> Item<'a> {
        let it = self.lexer.next_item();
        self.last_pos = it.pos;
        it
    }
    #[inline]
    fn next(&mut self) -> Item<'a> {
        if self.peek_count > 0 {
            self.peek_count -= 1;
        } else {
            self.token[0] = self.lex_next();
        }
        self.token[self.peek_count]
    }
    #[inline]
    fn backup(&mut self) {
        self.peek_count += 1;
    }
    fn backup2(&mut self, t1: Item<'a>) {
        self.token[1] = t1;
        self.peek_count = 2;
    }
    fn backup3(&mut self, t2: Item<'a>, t1: Item<'a>) {
        self.token[1] = t1;
        self.token[2] = t2;
        self.peek_count = 3;
    }
    #[inline]
    fn peek(&mut self) -> Item<'a> {
        if self.peek_count > 0 {
            return self.token[self.peek_count - 1];
        }
        self.peek_count = 1;
        self.token[0] = self.lex_next();
        self.token[0]
    }
    #[inline]
    fn next_non_space(&mut self) -> Item<'a> {
        loop {
            let t = self.next();
            if t.typ != ItemType::Space {
                return t;
            }
        }
    }
    #[inline]
    fn peek_non_space(&mut self) -> Item<'a> {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn errorf(&self, msg: String) -> Error {
        Error::parse(&self.src.name, self.line_of(self.last_pos), msg)
    }
    fn line_of(&self, pos: usize) -> usize {
        self.src.line_col(pos).0
    }
    fn expect(&mut self, expected: ItemType, context: &str) -> PResult<Item<'a>> {
        let t = self.next_non_space();
        if t.typ != expected {
            return Err(self.unexpected(&t, context));
        }
        Ok(t)
    }
    fn unexpected(&self, token: &Item<'_>, context: &str) -> Error {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            let action_line = self.action_pos.map(|p| self.line_of(p));
            if let Some(action_line) = action_line.filter(|l| *l != self.line_of(token.pos)) {
                extra = format!(" in action started at {}:{}", self.src.name, action_line);
                let msg = self.lexer.error();
                if msg.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format!("{}{}", token.describe(self.lexer.error()), extra));
        }
        self.errorf(format!(
            "unexpected {} in {}",
            token.describe(self.lexer.error()),
            context
        ))
    }

    /// Go's `Tree.add` on the shared treeSet of this `Parse` call.
    fn add(&mut self, name: Arc<str>, root: Box<[Node]>) -> PResult<()> {
        if let Some(i) = self.trees.iter().position(|t| t.name == name) {
            if self.trees[i].is_empty() {
                self.trees[i].root = root;
                return Ok(());
            }
            if !is_empty_tree(&root, &self.src.text) {
                return Err(self.errorf(format!(
                    "template: multiple definition of template {}",
                    quote(&name)
                )));
            }
            return Ok(());
        }
        self.trees.push(Tree {
            name,
            src: self.src.clone(),
            root,
        });
        Ok(())
    }

    /// Go's `parse`: the top level, where `{{define}}` is allowed.
    fn parse_top(&mut self) -> PResult<Box<[Node]>> {
        let mark = self.stacks.nodes.len();
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim = self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.nested(|p| p.parse_definition())?;
                    continue;
                }
                self.backup2(delim);
            }
            match self.text_or_action()? {
                Parsed::Node(n) => self.stacks.nodes.push(n),
                Parsed::End => return Err(self.errorf("unexpected {{end}}".into())),
                Parsed::Else => return Err(self.errorf("unexpected {{else}}".into())),
            }
        }
        Ok(take(&mut self.stacks.nodes, mark))
    }

    /// Run `f` as a nested tree (define/block): fresh variables and state.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        let vars = std::mem::replace(&mut self.vars, vec![Arc::from("$")]);
        let rd = std::mem::replace(&mut self.range_depth, 0);
        let al = self.action_pos.take();
        let r = f(self);
        self.vars = vars;
        self.range_depth = rd;
        self.action_pos = al;
        r
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let name = self.next_non_space();
        if name.typ != ItemType::String && name.typ != ItemType::RawString {
            return Err(self.unexpected(&name, context));
        }
        let name = unquote(name.val).map_err(|e| self.errorf(e))?;
        self.expect(ItemType::RightDelim, context)?;
        let (list, end) = self.item_list()?;
        if let End::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        self.add(Arc::from(&*name), list)
    }

    fn item_list(&mut self) -> PResult<(Box<[Node]>, End)> {
        // Nesting depth is bounded only by the text; grow the stack as Go's
        // does rather than overflow.
        stacker::maybe_grow(
            super::exec::STACK_RED_ZONE,
            super::exec::STACK_SEGMENT,
            || self.item_list_inner(),
        )
    }

    fn item_list_inner(&mut self) -> PResult<(Box<[Node]>, End)> {
        let mark = self.stacks.nodes.len();
        while self.peek_non_space().typ != ItemType::Eof {
            let end = match self.text_or_action()? {
                Parsed::Node(n) => {
                    self.stacks.nodes.push(n);
                    continue;
                }
                Parsed::End => End::End,
                Parsed::Else => End::Else,
            };
            return Ok((take(&mut self.stacks.nodes, mark), end));
        }
        Err(self.errorf("unexpected EOF".into()))
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text {
                start: ast::pos(token.pos),
                end: ast::pos(token.pos + token.val.len()),
            })),
            ItemType::LeftDelim => {
                self.action_pos = Some(token.pos);
                let r = self.action();
                self.action_pos = None;
                r
            }
            _ => Err(self.unexpected(&token, "input")),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Block => return self.block_control().map(Parsed::Node),
            ItemType::Break => return self.break_control(token.pos, "{{break}}").map(Parsed::Node),
            ItemType::Continue => {
                return self
                    .break_control(token.pos, "{{continue}}")
                    .map(Parsed::Node);
            }
            ItemType::Else => return self.else_control(),
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            ItemType::If => return self.control("if").map(Parsed::Node),
            ItemType::Range => return self.control("range").map(Parsed::Node),
            ItemType::Template => return self.template_control().map(Parsed::Node),
            ItemType::With => return self.control("with").map(Parsed::Node),
            _ => {}
        }
        self.backup();
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Parsed::Node(Node::Action(pipe)))
    }

    fn break_control(&mut self, pos: usize, what: &str) -> PResult<Node> {
        let token = self.next_non_space();
        if token.typ != ItemType::RightDelim {
            return Err(self.unexpected(&token, what));
        }
        if self.range_depth == 0 {
            return Err(self.errorf(format!("{what} outside {{{{range}}}}")));
        }
        Ok(if what == "{{break}}" {
            Node::Break(ast::pos(pos))
        } else {
            Node::Continue(ast::pos(pos))
        })
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<Pipe> {
        let (names, cmds) = (self.stacks.names.len(), self.stacks.cmds.len());
        let r = self.pipeline_inner(context, end, names, cmds);
        // On error the marks were not consumed.
        self.stacks.names.truncate(names);
        self.stacks.cmds.truncate(cmds);
        r
    }

    fn pipeline_inner(
        &mut self,
        context: &str,
        end: ItemType,
        names: usize,
        cmds: usize,
    ) -> PResult<Pipe> {
        let pos = self.peek_non_space().pos;
        let mut is_assign = false;
        // Are there declarations or assignments?
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ != ItemType::Variable {
                break;
            }
            self.next();
            // 3-token look-ahead: in "$x foo" we must read "foo" to know
            // that $x is an argument rather than a declaration.
            let token_after = self.peek();
            let next = self.peek_non_space();
            if next.typ == ItemType::Assign || next.typ == ItemType::Declare {
                is_assign = next.typ == ItemType::Assign;
                self.next_non_space();
                let name = self.intern(v.val);
                self.stacks.names.push(name.clone());
                self.vars.push(name);
            } else if next.typ == ItemType::Char && next.val == "," {
                self.next_non_space();
                let name = self.intern(v.val);
                self.stacks.names.push(name.clone());
                self.vars.push(name);
                if context == "range" && self.stacks.names.len() - names < 2 {
                    match self.peek_non_space().typ {
                        ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                            continue 'decls;
                        }
                        _ => return Err(self.errorf("range can only initialize variables".into())),
                    }
                }
                return Err(self.errorf(format!("too many declarations in {context}")));
            } else if token_after.typ == ItemType::Space {
                self.backup3(v, token_after);
            } else {
                self.backup2(v);
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            if token.typ == end {
                self.check_pipeline(&self.stacks.cmds[cmds..], context)?;
                return Ok(Pipe {
                    pos: ast::pos(pos),
                    is_assign,
                    decl: take(&mut self.stacks.names, names).into(),
                    cmds: self.stacks.cmds.drain(cmds..).collect(),
                });
            }
            match token.typ {
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    self.stacks.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&token, context)),
            }
        }
    }

    fn check_pipeline(&self, cmds: &[Command], context: &str) -> PResult<()> {
        if cmds.is_empty() {
            return Err(self.errorf(format!("missing value for {context}")));
        }
        for (i, c) in cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool(..) | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(..) | Arg::Str { .. }
            ) {
                return Err(self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    /// Go's `parseControl` plus `newIf`/`newRange`/`newWith`.
    fn control(&mut self, context: &str) -> PResult<Node> {
        let mark = self.vars.len();
        let r = self.control_inner(context);
        self.vars.truncate(mark);
        let b = Box::new(r?);
        Ok(match context {
            "if" => Node::If(b),
            "range" => Node::Range(b),
            _ => Node::With(b),
        })
    }

    fn control_inner(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        if let End::Else = next {
            // "else if" / "else with": parse the nested control and stop
            // at its {{end}}; the enclosing {{end}} is implied.
            if context == "if" && self.peek().typ == ItemType::If {
                self.next();
                else_list = Some(Box::new([self.control("if")?]) as Box<[Node]>);
            } else if context == "with" && self.peek().typ == ItemType::With {
                self.next();
                else_list = Some(Box::new([self.control("with")?]) as Box<[Node]>);
            } else {
                let (l, next) = self.item_list()?;
                if let End::Else = next {
                    return Err(self.errorf("expected end; found {{else}}".into()));
                }
                else_list = Some(l);
            }
        }
        Ok(Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn else_control(&mut self) -> PResult<Parsed> {
        let peek = self.peek_non_space();
        // "{{else if" and "{{else with" are "{{else}}{{if" / "{{else}}{{with".
        if peek.typ == ItemType::If || peek.typ == ItemType::With {
            return Ok(Parsed::Else);
        }
        self.expect(ItemType::RightDelim, "else")?;
        Ok(Parsed::Else)
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        let (list, end) = self.nested(|p| p.item_list())?;
        if let End::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        let name: Arc<str> = Arc::from(name.as_str());
        self.add(name.clone(), list)?;
        Ok(Node::Template {
            pos: ast::pos(token.pos),
            name,
            pipe: Some(Box::new(pipe)),
        })
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(Box::new(self.pipeline(context, ItemType::RightDelim)?));
        }
        Ok(Node::Template {
            pos: ast::pos(token.pos),
            name: Arc::from(name.as_str()),
            pipe,
        })
    }

    fn parse_template_name(&mut self, token: &Item<'_>, context: &str) -> PResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => unquote(token.val)
                .map(Cow::into_owned)
                .map_err(|e| self.errorf(e)),
            _ => Err(self.unexpected(token, context)),
        }
    }

    fn command(&mut self) -> PResult<Command> {
        let mark = self.stacks.args.len();
        let r = self.command_inner(mark);
        self.stacks.args.truncate(mark);
        r
    }

    fn command_inner(&mut self, mark: usize) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                self.stacks.args.push(op);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return Err(self.unexpected(&token, "operand")),
            }
            break;
        }
        if self.stacks.args.len() == mark {
            return Err(self.errorf("empty command".into()));
        }
        Ok(Command {
            pos: ast::pos(pos),
            args: take(&mut self.stacks.args, mark),
        })
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ == ItemType::Field {
            // Fields after a literal are a parse error; after anything
            // else (a field or variable took its own) they make a chain.
            if let Arg::Bool(..) | Arg::Str { .. } | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) =
                node
            {
                return Err(self.errorf(format!(
                    "unexpected . after term {}",
                    quote(&node.to_string())
                )));
            }
            let pos = self.peek().pos;
            let mark = self.stacks.names.len();
            while self.peek().typ == ItemType::Field {
                let f = self.next();
                let name = self.intern(&f.val[1..]);
                self.stacks.names.push(name);
            }
            return Ok(Some(Arg::Chain {
                pos: ast::pos(pos),
                node: Box::new(node),
                fields: take(&mut self.stacks.names, mark),
            }));
        }
        Ok(Some(node))
    }

    /// A field or variable with the fields that follow it: Go's `term`
    /// returns the first and `operand` extends it with the rest, the node
    /// then taking the position of the first added field.
    fn field_run(&mut self, mut pos: usize, first: &'a str, field: bool) -> Arg {
        let mark = self.stacks.names.len();
        let first = self.intern(first);
        self.stacks.names.push(first);
        if self.peek().typ == ItemType::Field {
            pos = self.peek().pos;
        }
        while self.peek().typ == ItemType::Field {
            let f = self.next();
            let name = self.intern(&f.val[1..]);
            self.stacks.names.push(name);
        }
        let idents = take(&mut self.stacks.names, mark);
        if field {
            Arg::Field {
                pos: ast::pos(pos),
                idents,
            }
        } else {
            Arg::Var {
                pos: ast::pos(pos),
                idents,
            }
        }
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let token = self.next_non_space();
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                let Some(callee) = resolve(self.funcs, token.val) else {
                    return Err(self.errorf(format!("function {} not defined", quote(token.val))));
                };
                Arg::Ident {
                    pos: ast::pos(token.pos),
                    callee,
                }
            }
            ItemType::Dot => Arg::Dot(ast::pos(token.pos)),
            ItemType::Nil => Arg::Nil(ast::pos(token.pos)),
            ItemType::Variable => {
                if !self.vars.iter().any(|v| &**v == token.val) {
                    return Err(self.errorf(format!("undefined variable {}", quote(token.val))));
                }
                self.field_run(token.pos, token.val, false)
            }
            ItemType::Field => self.field_run(token.pos, &token.val[1..], true),
            ItemType::Bool => Arg::Bool(ast::pos(token.pos), token.val == "true"),
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                let n = new_number(token.val, token.typ).map_err(|e| self.errorf(e))?;
                Arg::Number(ast::pos(token.pos), Box::new(n))
            }
            ItemType::LeftParen => {
                // Parentheses nest as deep as the text says; grow the stack.
                let p = stacker::maybe_grow(
                    super::exec::STACK_RED_ZONE,
                    super::exec::STACK_SEGMENT,
                    || self.pipeline("parenthesized pipeline", ItemType::RightParen),
                )?;
                Arg::Pipe(Box::new(p))
            }
            ItemType::String | ItemType::RawString => {
                let s = unquote(token.val).map_err(|e| self.errorf(e))?;
                let plain = token.val.starts_with('"')
                    && token.val.get(1..token.val.len() - 1) == Some(&*s);
                Arg::Str {
                    pos: ast::pos(token.pos),
                    quoted: (!plain).then(|| Box::new(ast::Spelling(token.val.into()))),
                    // Constants repeat (helper names passed to `include`):
                    // one shared copy of each, as for identifiers.
                    text: match s {
                        Cow::Borrowed(b) => self.intern(b),
                        Cow::Owned(o) => Arc::from(o),
                    },
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

enum Parsed {
    Node(Node),
    End,
    Else,
}

fn quote(s: &str) -> String {
    super::gofmt::quote(s)
}

/// Go's `strconv.Unquote` for `"…"` and `` `…` `` (the lexer guarantees
/// the shape). Errors are Go's `invalid syntax`.
pub fn unquote(s: &str) -> Result<Cow<'_, str>, String> {
    let bad = || "invalid syntax".to_string();
    let b = s.as_bytes();
    if b.len() < 2 {
        return Err(bad());
    }
    let q = b[0];
    if q != b[b.len() - 1] {
        return Err(bad());
    }
    let body = &s[1..s.len() - 1];
    if q == b'`' {
        if body.contains('`') {
            return Err(bad());
        }
        // Raw strings drop carriage returns.
        if body.contains('\r') {
            return Ok(Cow::Owned(body.replace('\r', "")));
        }
        return Ok(Cow::Borrowed(body));
    }
    if q != b'"' {
        return Err(bad());
    }
    if crate::scan::memchr2(b'\\', b'"', body.as_bytes()).is_none() {
        return Ok(Cow::Borrowed(body));
    }
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while !rest.is_empty() {
        if rest.starts_with('"') {
            return Err(bad());
        }
        let (c, tail) = unquote_char(rest, b'"').ok_or_else(bad)?;
        match c {
            Unq::Char(c) => out.push(c),
            Unq::Byte(byte) => {
                // A \x or octal byte escape: Go builds a byte string; keep
                // valid UTF-8 by mapping lone high bytes to U+FFFD.
                if byte < 0x80 {
                    out.push(byte as char);
                } else {
                    out.push('\u{FFFD}');
                }
            }
        }
        rest = tail;
    }
    Ok(Cow::Owned(out))
}

enum Unq {
    Char(char),
    Byte(u8),
}

/// Go's `strconv.UnquoteChar`.
fn unquote_char(s: &str, quote: u8) -> Option<(Unq, &str)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c as u32 == quote as u32 && (quote == b'\'' || quote == b'"') {
        return None;
    }
    if c != '\\' {
        return Some((Unq::Char(c), chars.as_str()));
    }
    let s = chars.as_str();
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let e = b[0];
    // Every escape is ASCII; a backslash before any other character is a
    // syntax error (and slicing after its first byte would cut it).
    if !e.is_ascii() {
        return None;
    }
    let tail = &s[1..];
    let simple = |ch: char| Some((Unq::Char(ch), tail));
    match e {
        b'a' => simple('\u{7}'),
        b'b' => simple('\u{8}'),
        b'f' => simple('\u{c}'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\u{b}'),
        b'x' | b'u' | b'U' => {
            let n = match e {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            if tail.len() < n {
                return None;
            }
            let v = u32::from_str_radix(tail.get(..n)?, 16).ok()?;
            if !tail[..n].bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            if e == b'x' {
                return Some((Unq::Byte(v as u8), &tail[n..]));
            }
            let ch = char::from_u32(v)?;
            Some((Unq::Char(ch), &tail[n..]))
        }
        b'0'..=b'7' => {
            let d = s.get(..3)?;
            if !d.bytes().all(|c| (b'0'..=b'7').contains(&c)) {
                return None;
            }
            let v = u32::from_str_radix(d, 8).ok()?;
            if v > 255 {
                return None;
            }
            Some((Unq::Byte(v as u8), &s[3..]))
        }
        b'\\' => simple('\\'),
        b'\'' | b'"' => {
            if e != quote {
                return None;
            }
            simple(e as char)
        }
        _ => None,
    }
}

/// Go's `newNumber`.
fn new_number(text: &str, typ: ItemType) -> Result<Number, String> {
    let mut n = Number {
        text: text.into(),
        is_int: false,
        is_uint: false,
        is_float: false,
        is_complex: false,
        int: 0,
        uint: 0,
        float: 0.0,
        complex: (0.0, 0.0),
    };
    if typ == ItemType::CharConstant {
        let inner = &text[1..];
        let (c, tail) = unquote_char(inner, b'\'').ok_or_else(|| "invalid syntax".to_string())?;
        if tail != "'" {
            return Err(format!("malformed character constant: {text}"));
        }
        let r = match c {
            Unq::Char(c) => c as i64,
            Unq::Byte(b) => b as i64,
        };
        n.int = r;
        n.is_int = true;
        n.uint = r as u64;
        n.is_uint = true;
        n.float = r as f64;
        n.is_float = true;
        return Ok(n);
    }
    if typ == ItemType::Complex {
        // `1+2i`: fmt.Sscan reads the pair.
        let pair = split_complex(text)
            .and_then(|(re, im)| Some((parse_float(re)?, parse_float(im)?)))
            .ok_or_else(|| {
                format!(
                    "strconv.ParseFloat: parsing {}: invalid syntax",
                    quote(text)
                )
            })?;
        n.simplify_complex(pair);
        return Ok(n);
    }
    // An imaginary constant: complex unless it does not parse as a float.
    if let Some(f) = text.strip_suffix('i').and_then(parse_float) {
        n.simplify_complex((0.0, f));
        return Ok(n);
    }
    let u = parse_uint0(text);
    if let Ok(u) = u {
        n.is_uint = true;
        n.uint = u;
    }
    if let Ok(i) = parse_int0(text) {
        n.is_int = true;
        n.int = i;
        if i == 0 {
            n.is_uint = true;
            n.uint = u.unwrap_or(0);
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = n.uint as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", quote(text)));
        }
        n.is_float = true;
        n.float = f;
        if !n.is_int && (f as i64) as f64 == f {
            n.is_int = true;
            n.int = f as i64;
        }
        if !n.is_uint && (f as u64) as f64 == f {
            n.is_uint = true;
            n.uint = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!("illegal number syntax: {}", quote(text)));
    }
    Ok(n)
}

/// `1+2i` → (`1`, `2`): the sign that starts the imaginary part is the
/// last `+` or `-` not at the start and not an exponent's.
fn split_complex(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_suffix('i')?;
    let b = body.as_bytes();
    let hex = body.contains("0x") || body.contains("0X");
    let at = (1..b.len()).rev().find(|&i| {
        matches!(b[i], b'+' | b'-') && {
            let prev = b[i - 1] | 0x20;
            !(if hex { prev == b'p' } else { prev == b'e' })
        }
    })?;
    Some((&body[..at], &body[at..]))
}

impl Number {
    /// Go's `simplifyComplex`: a complex constant whose imaginary part is
    /// zero is also a float (and an int when integral); it stays complex.
    fn simplify_complex(&mut self, (re, im): (f64, f64)) {
        self.is_complex = true;
        self.complex = (re, im);
        self.is_float = im == 0.0;
        if self.is_float {
            self.float = re;
            self.is_int = (re as i64) as f64 == re;
            if self.is_int {
                self.int = re as i64;
            }
            self.is_uint = (re as u64) as f64 == re;
            if self.is_uint {
                self.uint = re as u64;
            }
        }
    }
}

/// Go's `underscoreOK`: underscores only between digits (or after a base
/// prefix), and only with base-0 parsing.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2 && b[i] == b'0' && matches!(b[i + 1] | 0x20, b'b' | b'o' | b'x') {
        hex = (b[i + 1] | 0x20) == b'x';
        i += 2;
        saw = b'0';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Magnitude digits and base of a base-0 integer literal.
fn split_base(s: &str) -> Option<(&str, u32)> {
    if s.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    if b[0] == b'0' && b.len() > 1 {
        match b[1] | 0x20 {
            b'x' => return Some((&s[2..], 16)),
            b'o' => return Some((&s[2..], 8)),
            b'b' => return Some((&s[2..], 2)),
            _ => return Some((&s[1..], 8)),
        }
    }
    Some((s, 10))
}

enum IntErr {
    Syntax,
    Range,
}

fn parse_uint0_mag(s: &str) -> Result<u64, IntErr> {
    if s.contains('_') && !underscore_ok(s) {
        return Err(IntErr::Syntax);
    }
    let (digits, base) = split_base(s).ok_or(IntErr::Syntax)?;
    // Underscores are skipped in place (no filtered copy: every number
    // literal of every template comes through here).
    let mut digits = digits.chars().filter(|c| *c != '_').peekable();
    if digits.peek().is_none() {
        return Err(IntErr::Syntax);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for c in digits {
        let d = c.to_digit(base).ok_or(IntErr::Syntax)? as u64;
        match v.checked_mul(base as u64).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow { Err(IntErr::Range) } else { Ok(v) }
}

fn parse_uint0(s: &str) -> Result<u64, IntErr> {
    if s.starts_with(['+', '-']) {
        return Err(IntErr::Syntax);
    }
    parse_uint0_mag(s)
}

fn parse_int0(s: &str) -> Result<i64, IntErr> {
    let (neg, mag) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint0_mag(mag)?;
    if neg {
        if u > i64::MAX as u64 + 1 {
            return Err(IntErr::Range);
        }
        Ok((u as i64).wrapping_neg())
    } else {
        i64::try_from(u).map_err(|_| IntErr::Range)
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the literal forms the lexer lets
/// through (decimal with `_` separators, hex floats with `p` exponents).
fn parse_float(s: &str) -> Option<f64> {
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let lower = body.to_ascii_lowercase();
    let v = if let Some(hex) = lower.strip_prefix("0x") {
        let (mant, exp) = hex.split_once('p')?;
        let exp: i32 = exp.parse().ok()?;
        let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = 0f64;
        for c in ip.chars() {
            v = v * 16.0 + c.to_digit(16)? as f64;
        }
        let mut scale = 1.0 / 16.0;
        for c in fp.chars() {
            v += c.to_digit(16)? as f64 * scale;
            scale /= 16.0;
        }
        v * 2f64.powi(exp)
    } else {
        if !body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    if v.is_infinite() {
        return None;
    }
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        match parse("t", text, &FuncMap::default()) {
            Ok(_) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parse_errors_match_go() {
        assert_eq!(
            err("{{ foo }}"),
            "template: t:1: function \"foo\" not defined"
        );
        assert_eq!(err("{{ $x }}"), "template: t:1: undefined variable \"$x\"");
        assert_eq!(err("a\n{{ if 1 }}"), "template: t:2: unexpected EOF");
        assert_eq!(err("{{ end }}"), "template: t:1: unexpected {{end}}");
        assert_eq!(
            err("{{ break }}"),
            "template: t:1: {{break}} outside {{range}}"
        );
        assert_eq!(
            err("{{ 99999999999999999999 }}"),
            "template: t:1: integer overflow: \"99999999999999999999\""
        );
        assert_eq!(
            err("{{ 3 | 4 }}"),
            "template: t:1: non executable command in pipeline stage 2"
        );
        assert_eq!(
            err("{{ \"x\".y }}"),
            "template: t:1: unexpected . after term \"\\\"x\\\"\""
        );
        assert_eq!(err("{{ ( 1 }}"), "template: t:1: unclosed left paren");
        assert_eq!(err("{{ 1 ) }}"), "template: t:1: unexpected right paren");
        assert_eq!(
            err("{{define \"a\"}}x{{end}}{{define \"a\"}}y{{end}}"),
            "template: t:1: template: multiple definition of template \"a\""
        );
        assert_eq!(
            err("{{ range $i, $e := . }}{{ $e }}{{ $i }}{{ end }}"),
            "ok"
        );
        assert_eq!(
            err("{{ with $x := 1 }}{{ end }}{{ $x }}"),
            "template: t:1: undefined variable \"$x\""
        );
    }

    #[test]
    fn numbers() {
        let n = new_number("0x1F", ItemType::Number)
            .ok()
            .unwrap_or_else(|| panic!());
        assert_eq!(n.int, 31);
        assert_eq!(
            new_number("0o17", ItemType::Number).map(|n| n.int).ok(),
            Some(15)
        );
        assert_eq!(
            new_number("017", ItemType::Number).map(|n| n.int).ok(),
            Some(15)
        );
        assert_eq!(
            new_number("0b11", ItemType::Number).map(|n| n.int).ok(),
            Some(3)
        );
        assert_eq!(
            new_number("1_000", ItemType::Number).map(|n| n.int).ok(),
            Some(1000)
        );
        assert_eq!(
            new_number("'a'", ItemType::CharConstant)
                .map(|n| n.int)
                .ok(),
            Some(97)
        );
        assert_eq!(
            new_number("1e3", ItemType::Number)
                .map(|n| (n.is_int, n.float))
                .ok(),
            Some((true, 1000.0))
        );
    }

    #[test]
    fn node_strings() {
        let trees = parse("t", "{{ (.a).b | printf \"%s\" $x.y }}", &{
            let mut m = FuncMap::default();
            super::super::funcs::builtins::register(&mut m);
            m
        });
        assert!(trees.is_err()); // $x undefined
        let trees = parse(
            "t",
            "{{ $x := 1 }}{{ (.a).b | printf \"%s\" $x.y }}",
            &FuncMap::default(),
        )
        .ok()
        .unwrap_or_default();
        let s: String = trees[0]
            .root
            .iter()
            .map(|n| n.display(&trees[0].src.text).to_string())
            .collect();
        assert_eq!(s, "{{$x := 1}}{{(.a).b | printf \"%s\" $x.y}}");
    }

    fn tree_string(text: &str) -> String {
        let mut m = FuncMap::default();
        super::super::funcs::builtins::register(&mut m);
        match parse("t", text, &m) {
            Ok(trees) => trees
                .iter()
                .map(|t| {
                    format!(
                        "{}=[{}]",
                        t.name,
                        t.root
                            .iter()
                            .map(|n| n.display(&t.src.text).to_string())
                            .collect::<String>()
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn which_range_bodies_look_at_their_elements() {
        let mut m = FuncMap::default();
        super::super::funcs::builtins::register(&mut m);
        let observes = |text: &str| {
            let trees = parse("t", text, &m).unwrap();
            let Some(crate::engine::ast::Node::Range(b)) = trees[0].root.first() else {
                panic!("not a range: {text}");
            };
            crate::engine::ast::may_observe(&b.list, b.pipe.decl.last().map(|v| &**v))
        };
        for text in [
            "{{range .}}{{.}}{{end}}",
            "{{range .}}{{.a.b}}{{end}}",
            "{{range $k, $v := .}}{{$v}}{{end}}",
            "{{range $v := .}}{{$v.x}}{{end}}",
            "{{range $k, $v := .}}{{if $k}}{{else}}{{print (len $v)}}{{end}}{{end}}",
            "{{range $k, $v := .}}{{with $k}}{{.}}{{end}}{{end}}",
            "{{range $k, $v := .}}{{template \"x\" .}}{{end}}",
            "{{range $k, $_ := .}}{{(.).x}}{{end}}",
        ] {
            assert!(observes(text), "{text}");
        }
        for text in [
            "{{range $k, $_ := .}}{{$k}}{{end}}",
            "{{range $k, $v := .}}{{$.Files.Get $k}}{{$v2 := 1}}{{$v2}}{{end}}",
            "{{range $k, $_ := .}}{{template \"x\"}}{{break}}{{end}}",
            "{{range $k, $_ := .}}{{else}}{{.}}{{end}}",
        ] {
            assert!(!observes(text), "{text}");
        }
    }

    #[test]
    fn control_structures_and_definitions() {
        assert_eq!(
            tree_string("{{if .a}}A{{else if .b}}B{{else}}C{{end}}"),
            "t=[{{if .a}}A{{else}}{{if .b}}B{{else}}C{{end}}{{end}}]"
        );
        assert_eq!(
            tree_string("{{with $x := .a}}A{{else with .b}}B{{end}}"),
            "t=[{{with $x := .a}}A{{else}}{{with .b}}B{{end}}{{end}}]"
        );
        assert_eq!(
            tree_string("{{range $i, $e := .l}}{{if $e}}{{break}}{{end}}{{continue}}{{end}}"),
            "t=[{{range $i, $e := .l}}{{if $e}}{{break}}{{end}}{{continue}}{{end}}]"
        );
        assert_eq!(
            tree_string("{{define \"d\"}}D{{end}}x{{block \"b\" .}}B{{end}}"),
            "d=[D] b=[B] t=[x{{template \"b\" .}}]"
        );
        assert_eq!(
            tree_string("{{ $x := 1 }}{{ $x = 2 }}"),
            "t=[{{$x := 1}}{{$x := 2}}]"
        );
        assert_eq!(
            tree_string("{{`a\r\nb`}}{{'\\n'}}{{'x'}}"),
            "t=[{{`a\r\nb`}}{{'\\n'}}{{'x'}}]"
        );
    }

    #[test]
    fn trim_and_comment_edge_cases() {
        assert_eq!(tree_string("a \n{{- .x -}}\n b"), "t=[a{{.x}}b]");
        assert_eq!(tree_string("a {{-3}} b"), "t=[a {{-3}} b]");
        assert_eq!(tree_string("a {{- /* c */ -}} b"), "t=[ab]");
        assert_eq!(
            tree_string("{{/* c */ }}"),
            "template: t:1: comment ends before closing delimiter"
        );
        assert_eq!(
            tree_string("{{ \"a\" | printf }}"),
            "t=[{{\"a\" | printf}}]"
        );
        assert_eq!(tree_string("{{ (1) | printf }}"), "t=[{{(1) | printf}}]");
        // Constants print as spelled: escapes and raw quotes are kept.
        assert_eq!(
            tree_string("{{ `r\\n` | printf \"a\\tb\" \"\\x41\" }}"),
            "t=[{{`r\\n` | printf \"a\\tb\" \"\\x41\"}}]"
        );
    }

    #[test]
    fn unquote_matches_go() {
        assert_eq!(
            unquote("\"a\\tb\\u00e9\\x41\\101\"").as_deref(),
            Ok("a\tbéAA")
        );
        assert_eq!(unquote("`raw\r\n`").as_deref(), Ok("raw\n"));
        assert_eq!(unquote("`raw`").as_deref(), Ok("raw"));
        assert_eq!(unquote("\"plain\"").as_deref(), Ok("plain"));
        assert_eq!(unquote("\"bad\\q\""), Err("invalid syntax".to_string()));
        // Found by the template fuzz target: a backslash before a
        // multi-byte character panicked (a slice inside the character).
        assert_eq!(unquote("\"bad\\é\""), Err("invalid syntax".to_string()));
        assert_eq!(unquote("\"\\\u{FFFD}\""), Err("invalid syntax".to_string()));
    }
}
