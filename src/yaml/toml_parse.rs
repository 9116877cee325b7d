//! The TOML decoder behind Helm's `fromToml`: a port of BurntSushi/toml
//! v1.4.0's lexer (lex.go), parser (parse.go) and `ParseError` text
//! (error.go), the version helm v3.17.3 vendors.
//!
//! Helm puts the decoder's `err.Error()` under the `Error` key, so the texts
//! ("toml: line 0 (last key "a"): unexpected EOF; expected value") are part of
//! what a chart sees, and they come from BurntSushi's exact bookkeeping: the
//! lexer's line counter (which a state has often already moved past a
//! newline), the "previous line" rule for errors at EOF, the parser's notion
//! of the current key. A general TOML parser reports other texts and other
//! lines, and also differs in what it accepts (BurntSushi lets dotted keys
//! extend inline tables, turns a static array into a table on `a.b = 1`, …),
//! so this is a statement-by-statement port rather than a re-implementation:
//! the lexer is the same state machine (one enum variant per state function,
//! the same backup buffer, the same item queue the parser drains in order),
//! and the parser fills the same `map[string]interface{}` with Go's sharing
//! (tables are shared, so filling one through its path is seen everywhere).
//!
//! Go panics that are not `ParseError`s (the decoder's "BUG: …" checks, a
//! runtime error) escape Helm's `fromTOML` and become template errors; they
//! come back as [`Failure::Panic`].
//!
//! Not reproduced: the `BURNTSUSHI_TOML_110` environment switch (TOML 1.1
//! syntax); local datetimes take the offset of a UTC machine.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::rc::Rc;

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// A Go `map[string]interface{}` as the decoder shares it.
pub type Table = Rc<RefCell<BTreeMap<String, Val>>>;

/// A decoded value: what BurntSushi stores in its `map[string]interface{}`.
#[derive(Clone, Debug)]
pub enum Val {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Time(GoTime),
    /// `[]interface{}` (a TOML array).
    Array(Vec<Val>),
    /// `map[string]interface{}`.
    Table(Table),
    /// `[]map[string]interface{}` (an array of tables).
    Tables(Vec<Table>),
}

/// A `time.Time` from a TOML datetime, in the zone it was parsed in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoTime {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub min: i64,
    pub sec: i64,
    pub nsec: i64,
    /// Seconds east of UTC (0 for local datetimes, dates and times).
    pub offset: i64,
}

impl GoTime {
    /// `time.Time.MarshalJSON`'s text without the quotes (RFC 3339 with
    /// trailing zeros of the fraction trimmed).
    pub fn rfc3339_nano(&self) -> String {
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        );
        if self.nsec > 0 {
            let frac = format!("{:09}", self.nsec);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        if self.offset == 0 {
            s.push('Z');
        } else {
            let m = self.offset.abs() / 60;
            let sign = if self.offset < 0 { '-' } else { '+' };
            s.push_str(&format!("{sign}{:02}:{:02}", m / 60, m % 60));
        }
        s
    }
}

/// Why decoding failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A `ParseError`'s `Error()` text (Helm returns it in the map).
    Parse(String),
    /// A Go panic other than a `ParseError` (a template error in Helm).
    Panic(String),
}

/// `toml.Unmarshal` into a `map[string]interface{}`: the decoded top-level
/// table.
pub fn decode(input: &[u8]) -> Result<Table, Failure> {
    // The BOMs are skipped before lexing (the lexer would reject them).
    let data = if input.starts_with(b"\xff\xfe") || input.starts_with(b"\xfe\xff") {
        &input[2..]
    } else if input.starts_with(b"\xef\xbb\xbf") {
        &input[3..]
    } else {
        input
    };
    // NUL in the first bytes: likely UTF-16; reported before lexing.
    if data[..data.len().min(6)].contains(&0) {
        return Err(Failure::Parse(
            "toml: line 1: files cannot contain NULL bytes; probably using UTF-16; TOML files must be UTF-8"
                .into(),
        ));
    }
    let mut p = Parser {
        lx: Lexer::new(data),
        context: Vec::new(),
        current_key: String::new(),
        pos_line: 0,
        key_info: HashMap::new(),
        mapping: new_table(),
        implicits: HashSet::new(),
    };
    loop {
        let item = p.next()?;
        if item.typ == It::Eof {
            break;
        }
        p.top_level(item)?;
    }
    Ok(p.mapping)
}

fn new_table() -> Table {
    Rc::new(RefCell::new(BTreeMap::new()))
}

// ---------------------------------------------------------------- lexer

/// `itemType`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum It {
    Error,
    Eof,
    Text,
    String,
    StringEsc,
    RawString,
    MultilineString,
    RawMultilineString,
    Bool,
    Integer,
    Float,
    Datetime,
    Array,
    ArrayEnd,
    TableStart,
    TableEnd,
    ArrayTableStart,
    ArrayTableEnd,
    KeyStart,
    KeyEnd,
    CommentStart,
    InlineTableStart,
    InlineTableEnd,
}

impl It {
    /// `itemType.String`, for the parser's "BUG" texts.
    fn name(self) -> &'static str {
        match self {
            It::Error => "Error",
            It::Eof => "EOF",
            It::Text => "Text",
            It::String
            | It::StringEsc
            | It::RawString
            | It::MultilineString
            | It::RawMultilineString => "String",
            It::Bool => "Bool",
            It::Integer => "Integer",
            It::Float => "Float",
            It::Datetime => "DateTime",
            It::TableStart => "TableStart",
            It::TableEnd => "TableEnd",
            It::KeyStart => "KeyStart",
            It::KeyEnd => "KeyEnd",
            It::Array => "Array",
            It::ArrayEnd => "ArrayEnd",
            It::CommentStart => "CommentStart",
            It::InlineTableStart => "InlineTableStart",
            It::InlineTableEnd => "InlineTableEnd",
            // Go's String() has no case for these two and panics; only
            // reachable from a "BUG" text, where the name hardly matters.
            It::ArrayTableStart => "ArrayTableStart",
            It::ArrayTableEnd => "ArrayTableEnd",
        }
    }
}

/// An item: its type, its text, the error text of an `itemError`, and the
/// line of its position (the only part of `Position` `Error()` prints).
#[derive(Clone, Debug)]
struct Item {
    typ: It,
    val: String,
    err: String,
    line: i64,
}

/// The state functions of lex.go, one variant each.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Top,
    TopEnd,
    TableStart,
    TableEnd,
    ArrayTableEnd,
    TableNameStart,
    TableNameEnd,
    BareName,
    QuotedName,
    KeyStart,
    KeyNameStart,
    KeyEnd,
    Value,
    ArrayValue,
    ArrayValueEnd,
    ArrayEnd,
    InlineTableValue,
    InlineTableValueEnd,
    InlineTableEnd,
    String,
    MultilineString,
    RawString,
    MultilineRawString,
    MultilineStringEscape,
    StringEscape,
    ShortUnicodeEscape,
    LongUnicodeEscape,
    NumberOrDateStart,
    NumberOrDate,
    Datetime,
    HexInteger,
    OctalInteger,
    BinaryInteger,
    DecimalNumber,
    DecimalNumberStart,
    BaseNumberOrDate,
    Float,
    Bool,
    CommentStart,
    Comment,
}

/// Go's `eof` rune.
const EOF: char = '\0';
const RUNE_ERROR: char = '\u{FFFD}';

type Next = Option<State>;

struct Lexer<'a> {
    input: &'a [u8],
    start: usize,
    pos: usize,
    line: i64,
    state: Next,
    /// The item channel; the parser takes items in order, and the lexer
    /// only runs when it is empty.
    items: VecDeque<Item>,
    esc: bool,
    /// Widths of the last runes read, to back up over (up to four).
    prev_widths: [usize; 4],
    nprev: usize,
    at_eof: bool,
    stack: Vec<State>,
    /// A Go panic raised while lexing.
    panic: Option<String>,
}

impl<'a> Lexer<'a> {
    fn new(input: &'a [u8]) -> Self {
        Lexer {
            input,
            start: 0,
            pos: 0,
            line: 1,
            state: Some(State::Top),
            items: VecDeque::with_capacity(10),
            esc: false,
            prev_widths: [0; 4],
            nprev: 0,
            at_eof: false,
            stack: Vec::with_capacity(10),
            panic: None,
        }
    }

    /// `nextItem`: run states until an item is queued.
    fn next_item(&mut self) -> Result<Item, String> {
        loop {
            if let Some(it) = self.items.pop_front() {
                return Ok(it);
            }
            let Some(s) = self.state else {
                return Err(
                    "runtime error: invalid memory address or nil pointer dereference".into(),
                );
            };
            self.state = self.step(s);
            if let Some(p) = self.panic.take() {
                return Err(p);
            }
        }
    }

    fn go_panic(&mut self, msg: &str) {
        if self.panic.is_none() {
            self.panic = Some(msg.to_string());
        }
    }

    fn push(&mut self, s: State) {
        self.stack.push(s);
    }

    fn pop(&mut self) -> Next {
        match self.stack.pop() {
            Some(s) => Some(s),
            None => self.errorf("BUG in lexer: no states to pop".into()),
        }
    }

    fn current(&self) -> String {
        String::from_utf8_lossy(self.input.get(self.start..self.pos).unwrap_or_default())
            .into_owned()
    }

    fn emit(&mut self, typ: It) {
        // Multi-line strings ending in an incomplete UTF-8 sequence.
        if self.start > self.pos {
            let b = self.byte_at(self.pos);
            self.error(format!("invalid UTF-8 byte: 0x{b:02x}"));
            return;
        }
        let val = self.current();
        self.items.push_back(Item {
            typ,
            val,
            err: String::new(),
            line: self.line,
        });
        self.start = self.pos;
    }

    fn emit_trim(&mut self, typ: It) {
        let val = self.current().trim().to_string();
        self.items.push_back(Item {
            typ,
            val,
            err: String::new(),
            line: self.line,
        });
        self.start = self.pos;
    }

    fn byte_at(&mut self, i: usize) -> u8 {
        match self.input.get(i) {
            Some(b) => *b,
            None => {
                self.go_panic("runtime error: index out of range");
                0
            }
        }
    }

    fn next(&mut self) -> char {
        if self.at_eof {
            self.go_panic("BUG in lexer: next called after EOF");
            return EOF;
        }
        if self.pos >= self.input.len() {
            self.at_eof = true;
            return EOF;
        }
        if self.input[self.pos] == b'\n' {
            self.line += 1;
        }
        self.prev_widths[3] = self.prev_widths[2];
        self.prev_widths[2] = self.prev_widths[1];
        self.prev_widths[1] = self.prev_widths[0];
        if self.nprev < 4 {
            self.nprev += 1;
        }
        let (r, w) = decode_rune(&self.input[self.pos..]);
        if r == RUNE_ERROR && w == 1 {
            let b = self.input[self.pos];
            self.error(format!("invalid UTF-8 byte: 0x{b:02x}"));
            return RUNE_ERROR;
        }
        // A lone CR is a control character; CR LF is a newline.
        if is_control(r)
            || (r == '\r'
                && (self.input.len() - 1 == self.pos || self.input[self.pos + 1] != b'\n'))
        {
            self.error_control_char(r);
            return RUNE_ERROR;
        }
        self.prev_widths[0] = w;
        self.pos += w;
        r
    }

    fn ignore(&mut self) {
        self.start = self.pos;
    }

    fn backup(&mut self) {
        if self.at_eof {
            self.at_eof = false;
            return;
        }
        if self.nprev < 1 {
            self.go_panic("BUG in lexer: backed up too far");
            return;
        }
        let w = self.prev_widths[0];
        self.prev_widths[0] = self.prev_widths[1];
        self.prev_widths[1] = self.prev_widths[2];
        self.prev_widths[2] = self.prev_widths[3];
        self.nprev -= 1;
        // After an error from next() the widths are stale (Go moves to a
        // negative position and panics when it reads there).
        let Some(p) = self.pos.checked_sub(w) else {
            self.go_panic("runtime error: index out of range");
            return;
        };
        self.pos = p;
        if self.pos < self.input.len() && self.input[self.pos] == b'\n' {
            self.line -= 1;
        }
    }

    fn accept(&mut self, valid: char) -> bool {
        if self.next() == valid {
            return true;
        }
        self.backup();
        false
    }

    fn peek(&mut self) -> char {
        let r = self.next();
        self.backup();
        r
    }

    fn skip_whitespace(&mut self) {
        loop {
            let r = self.next();
            if is_whitespace(r) {
                continue;
            }
            self.backup();
            self.ignore();
            return;
        }
    }

    /// `error` and `errorf`: an error item; at EOF it is placed on the
    /// previous line (so EOF errors don't point at a new blank line — which
    /// makes an error on the first line "line 0").
    fn error(&mut self, msg: String) -> Next {
        if self.at_eof {
            return self.error_prev_line(msg);
        }
        self.push_error(self.line, msg);
        None
    }

    fn errorf(&mut self, msg: String) -> Next {
        self.error(msg)
    }

    fn error_prev_line(&mut self, msg: String) -> Next {
        self.push_error(self.line - 1, msg);
        None
    }

    fn push_error(&mut self, line: i64, err: String) {
        self.items.push_back(Item {
            typ: It::Error,
            val: String::new(),
            err,
            line,
        });
    }

    fn error_control_char(&mut self, cc: char) -> Next {
        self.push_error(
            self.line,
            format!(
                "TOML files cannot contain control characters: '0x{:02x}'",
                cc as u32
            ),
        );
        None
    }

    /// Runs one state function; returns the next state (`None`: Go's nil).
    fn step(&mut self, s: State) -> Next {
        use State as S;
        match s {
            S::Top => {
                let r = self.next();
                if is_whitespace(r) || is_nl(r) {
                    self.ignore();
                    return Some(S::Top);
                }
                match r {
                    '#' => {
                        self.push(S::Top);
                        return Some(S::CommentStart);
                    }
                    '[' => return Some(S::TableStart),
                    EOF => {
                        if self.pos > self.start {
                            return self.errorf("unexpected EOF".into());
                        }
                        self.emit(It::Eof);
                        return None;
                    }
                    _ => {}
                }
                self.backup();
                self.push(S::TopEnd);
                Some(S::KeyStart)
            }
            S::TopEnd => {
                let r = self.next();
                if r == '#' {
                    self.push(S::Top);
                    return Some(S::CommentStart);
                }
                if is_whitespace(r) {
                    return Some(S::TopEnd);
                }
                if is_nl(r) {
                    self.ignore();
                    return Some(S::Top);
                }
                if r == EOF {
                    self.emit(It::Eof);
                    return None;
                }
                self.errorf(format!(
                    "expected a top-level item to end with a newline, comment, or EOF, but got {} instead",
                    quote_rune(r)
                ))
            }
            S::TableStart => {
                if self.peek() == '[' {
                    self.next();
                    self.emit(It::ArrayTableStart);
                    self.push(S::ArrayTableEnd);
                } else {
                    self.emit(It::TableStart);
                    self.push(S::TableEnd);
                }
                Some(S::TableNameStart)
            }
            S::TableEnd => {
                self.emit(It::TableEnd);
                Some(S::TopEnd)
            }
            S::ArrayTableEnd => {
                let r = self.next();
                if r != ']' {
                    return self.errorf(format!(
                        "expected end of table array name delimiter ']', but got {} instead",
                        quote_rune(r)
                    ));
                }
                self.emit(It::ArrayTableEnd);
                Some(S::TopEnd)
            }
            S::TableNameStart => {
                self.skip_whitespace();
                let r = self.peek();
                if r == ']' || r == EOF {
                    return self.errorf(
                        "unexpected end of table name (table names cannot be empty)".into(),
                    );
                }
                if r == '.' {
                    return self
                        .errorf("unexpected table separator (table names cannot be empty)".into());
                }
                if r == '"' || r == '\'' {
                    self.ignore();
                    self.push(S::TableNameEnd);
                    return Some(S::QuotedName);
                }
                self.push(S::TableNameEnd);
                Some(S::BareName)
            }
            S::TableNameEnd => {
                self.skip_whitespace();
                let r = self.next();
                if is_whitespace(r) {
                    return Some(S::TableNameEnd);
                }
                match r {
                    '.' => {
                        self.ignore();
                        Some(S::TableNameStart)
                    }
                    ']' => self.pop(),
                    _ => self.errorf(format!(
                        "expected '.' or ']' to end table name, but got {} instead",
                        quote_rune(r)
                    )),
                }
            }
            S::BareName => {
                let r = self.next();
                if is_bare_key_char(r) {
                    return Some(S::BareName);
                }
                self.backup();
                self.emit(It::Text);
                self.pop()
            }
            S::QuotedName => {
                let r = self.next();
                if is_whitespace(r) {
                    self.ignore();
                    return Some(S::Value);
                }
                match r {
                    '"' => {
                        self.ignore();
                        Some(S::String)
                    }
                    '\'' => {
                        self.ignore();
                        Some(S::RawString)
                    }
                    EOF => self.errorf("unexpected EOF; expected value".into()),
                    _ => self.errorf(format!(
                        "expected value but found {} instead",
                        quote_rune(r)
                    )),
                }
            }
            S::KeyStart => {
                self.skip_whitespace();
                let r = self.peek();
                if r == '=' || r == EOF {
                    return self.errorf("unexpected '=': key name appears blank".into());
                }
                if r == '.' {
                    return self.errorf("unexpected '.': keys cannot start with a '.'".into());
                }
                if r == '"' || r == '\'' {
                    self.ignore();
                }
                self.emit(It::KeyStart);
                Some(S::KeyNameStart)
            }
            S::KeyNameStart => {
                self.skip_whitespace();
                let r = self.peek();
                if r == '=' || r == EOF {
                    return self.errorf("unexpected '='".into());
                }
                if r == '.' {
                    return self.errorf("unexpected '.'".into());
                }
                if r == '"' || r == '\'' {
                    self.ignore();
                    self.push(S::KeyEnd);
                    return Some(S::QuotedName);
                }
                self.push(S::KeyEnd);
                Some(S::BareName)
            }
            S::KeyEnd => {
                self.skip_whitespace();
                let r = self.next();
                if is_whitespace(r) {
                    self.ignore();
                    return Some(S::KeyEnd);
                }
                match r {
                    EOF => self.errorf("unexpected EOF; expected key separator '='".into()),
                    '.' => {
                        self.ignore();
                        Some(S::KeyNameStart)
                    }
                    '=' => {
                        self.emit(It::KeyEnd);
                        self.ignore();
                        Some(S::Value)
                    }
                    _ => self.errorf(format!(
                        "expected '.' or '=', but got {} instead",
                        quote_rune(r)
                    )),
                }
            }
            S::Value => self.lex_value(),
            S::ArrayValue => {
                let r = self.next();
                if is_whitespace(r) || is_nl(r) {
                    self.ignore();
                    return Some(S::ArrayValue);
                }
                match r {
                    '#' => {
                        self.push(S::ArrayValue);
                        return Some(S::CommentStart);
                    }
                    ',' => return self.errorf("unexpected comma".into()),
                    ']' => return Some(S::ArrayEnd),
                    _ => {}
                }
                self.backup();
                self.push(S::ArrayValueEnd);
                Some(S::Value)
            }
            S::ArrayValueEnd => {
                let r = self.next();
                if is_whitespace(r) || is_nl(r) {
                    self.ignore();
                    return Some(S::ArrayValueEnd);
                }
                match r {
                    '#' => {
                        self.push(S::ArrayValueEnd);
                        Some(S::CommentStart)
                    }
                    ',' => {
                        self.ignore();
                        Some(S::ArrayValue)
                    }
                    ']' => Some(S::ArrayEnd),
                    _ => self.errorf(format!(
                        "expected a comma (',') or array terminator (']'), but got {}",
                        rune_or_eof(r)
                    )),
                }
            }
            S::ArrayEnd => {
                self.ignore();
                self.emit(It::ArrayEnd);
                self.pop()
            }
            S::InlineTableValue => {
                let r = self.next();
                if is_whitespace(r) {
                    self.ignore();
                    return Some(S::InlineTableValue);
                }
                if is_nl(r) {
                    return self
                        .error_prev_line("newlines not allowed within inline tables".into());
                }
                match r {
                    '#' => {
                        self.push(S::InlineTableValue);
                        return Some(S::CommentStart);
                    }
                    ',' => return self.errorf("unexpected comma".into()),
                    '}' => return Some(S::InlineTableEnd),
                    _ => {}
                }
                self.backup();
                self.push(S::InlineTableValueEnd);
                Some(S::KeyStart)
            }
            S::InlineTableValueEnd => {
                let r = self.next();
                if is_whitespace(r) {
                    self.ignore();
                    return Some(S::InlineTableValueEnd);
                }
                if is_nl(r) {
                    return self
                        .error_prev_line("newlines not allowed within inline tables".into());
                }
                match r {
                    '#' => {
                        self.push(S::InlineTableValueEnd);
                        Some(S::CommentStart)
                    }
                    ',' => {
                        self.ignore();
                        self.skip_whitespace();
                        if self.peek() == '}' {
                            return self
                                .errorf("trailing comma not allowed in inline tables".into());
                        }
                        Some(S::InlineTableValue)
                    }
                    '}' => Some(S::InlineTableEnd),
                    _ => self.errorf(format!(
                        "expected a comma or an inline table terminator '}}', but got {} instead",
                        rune_or_eof(r)
                    )),
                }
            }
            S::InlineTableEnd => {
                self.ignore();
                self.emit(It::InlineTableEnd);
                self.pop()
            }
            S::String => {
                let r = self.next();
                if r == EOF {
                    return self.errorf("unexpected EOF; expected '\"'".into());
                }
                if is_nl(r) {
                    return self.error_prev_line("strings cannot contain newlines".into());
                }
                match r {
                    '\\' => {
                        self.push(S::String);
                        Some(S::StringEscape)
                    }
                    '"' => {
                        self.backup();
                        if self.esc {
                            self.esc = false;
                            self.emit(It::StringEsc);
                        } else {
                            self.emit(It::String);
                        }
                        self.next();
                        self.ignore();
                        self.pop()
                    }
                    _ => Some(S::String),
                }
            }
            S::MultilineString => self.lex_multiline(false),
            S::MultilineRawString => self.lex_multiline(true),
            S::RawString => {
                let r = self.next();
                if r == EOF {
                    return self.errorf("unexpected EOF; expected \"'\"".into());
                }
                if is_nl(r) {
                    return self.error_prev_line("strings cannot contain newlines".into());
                }
                if r == '\'' {
                    self.backup();
                    self.emit(It::RawString);
                    self.next();
                    self.ignore();
                    return self.pop();
                }
                Some(S::RawString)
            }
            S::MultilineStringEscape => {
                // A backslash at the end of a line.
                if is_nl(self.next()) {
                    return Some(S::MultilineString);
                }
                self.backup();
                self.push(S::MultilineString);
                // Go calls the state function directly, in this same step.
                self.step(S::StringEscape)
            }
            S::StringEscape => {
                self.esc = true;
                let r = self.next();
                match r {
                    'b' | 't' | 'n' | 'f' | 'r' | '"' | ' ' | '\t' | '\\' => self.pop(),
                    'u' => Some(S::ShortUnicodeEscape),
                    'U' => Some(S::LongUnicodeEscape),
                    // 'e' and 'x' only with TOML 1.1.
                    _ => self.error(format!("invalid escape in string '\\{}'", r)),
                }
            }
            S::ShortUnicodeEscape => self.lex_unicode_escape(4, "four", 'u'),
            S::LongUnicodeEscape => self.lex_unicode_escape(8, "eight", 'U'),
            S::NumberOrDateStart => {
                let r = self.next();
                if r == '0' {
                    return Some(S::BaseNumberOrDate);
                }
                if !r.is_ascii_digit() {
                    return self.errorf(format!("expected a digit but got {}", quote_rune(r)));
                }
                Some(S::NumberOrDate)
            }
            S::NumberOrDate => {
                let r = self.next();
                if r.is_ascii_digit() {
                    return Some(S::NumberOrDate);
                }
                match r {
                    '-' | ':' => return Some(S::Datetime),
                    '_' => return Some(S::DecimalNumber),
                    '.' | 'e' | 'E' => return Some(S::Float),
                    _ => {}
                }
                self.backup();
                self.emit(It::Integer);
                self.pop()
            }
            S::Datetime => {
                let r = self.next();
                if r.is_ascii_digit()
                    || matches!(r, '-' | ':' | 'T' | 't' | ' ' | '.' | 'Z' | 'z' | '+')
                {
                    return Some(S::Datetime);
                }
                self.backup();
                self.emit_trim(It::Datetime);
                self.pop()
            }
            S::HexInteger => self.lex_based_integer(is_hex, S::HexInteger),
            S::OctalInteger => self.lex_based_integer(is_octal, S::OctalInteger),
            S::BinaryInteger => self.lex_based_integer(is_binary, S::BinaryInteger),
            S::DecimalNumber => {
                let r = self.next();
                if r.is_ascii_digit() {
                    return Some(S::DecimalNumber);
                }
                match r {
                    '.' | 'e' | 'E' => return Some(S::Float),
                    '_' => return Some(S::DecimalNumber),
                    _ => {}
                }
                self.backup();
                self.emit(It::Integer);
                self.pop()
            }
            S::DecimalNumberStart => {
                let r = self.next();
                match r {
                    'i' => {
                        if !self.accept('n') || !self.accept('f') {
                            let c = self.current();
                            return self.errorf(format!("invalid float: '{c}'"));
                        }
                        self.emit(It::Float);
                        return self.pop();
                    }
                    'n' => {
                        if !self.accept('a') || !self.accept('n') {
                            let c = self.current();
                            return self.errorf(format!("invalid float: '{c}'"));
                        }
                        self.emit(It::Float);
                        return self.pop();
                    }
                    '0' => {
                        let p = self.peek();
                        if matches!(p, 'b' | 'o' | 'x') {
                            let c = self.current();
                            return self.errorf(format!(
                                "cannot use sign with non-decimal numbers: '{c}{p}'"
                            ));
                        }
                    }
                    '.' => return self.errorf("floats must start with a digit, not '.'".into()),
                    _ => {}
                }
                if r.is_ascii_digit() {
                    return Some(S::DecimalNumber);
                }
                self.errorf(format!("expected a digit but got {}", quote_rune(r)))
            }
            S::BaseNumberOrDate => {
                let r = self.next();
                // All datetimes start with at least two digits.
                if r.is_ascii_digit() {
                    return Some(S::NumberOrDate);
                }
                // A base prefix without a digit is an error, but Go goes on
                // lexing after queueing it (the parser stops at it).
                match r {
                    '_' => return Some(S::DecimalNumber),
                    '.' | 'e' | 'E' => return Some(S::Float),
                    'b' => {
                        let p = self.peek();
                        if !is_binary(p) {
                            let c = self.current();
                            self.errorf(format!("not a binary number: '{c}{}'", p));
                        }
                        return Some(S::BinaryInteger);
                    }
                    'o' => {
                        let p = self.peek();
                        if !is_octal(p) {
                            let c = self.current();
                            self.errorf(format!("not an octal number: '{c}{}'", p));
                        }
                        return Some(S::OctalInteger);
                    }
                    'x' => {
                        let p = self.peek();
                        if !is_hex(p) {
                            let c = self.current();
                            // Go's spelling.
                            self.errorf(format!("not a hexidecimal number: '{c}{}'", p));
                        }
                        return Some(S::HexInteger);
                    }
                    _ => {}
                }
                self.backup();
                self.emit(It::Integer);
                self.pop()
            }
            S::Float => {
                let r = self.next();
                if r.is_ascii_digit() || matches!(r, '_' | '.' | '-' | '+' | 'e' | 'E') {
                    return Some(S::Float);
                }
                self.backup();
                self.emit(It::Float);
                self.pop()
            }
            S::Bool => {
                let mut rs = String::new();
                loop {
                    let r = self.next();
                    if !is_letter(r) {
                        self.backup();
                        break;
                    }
                    rs.push(r);
                }
                if rs == "true" || rs == "false" {
                    self.emit(It::Bool);
                    return self.pop();
                }
                self.errorf(format!(
                    "expected value but found {} instead",
                    quote_str(&rs)
                ))
            }
            S::CommentStart => {
                self.ignore();
                self.emit(It::CommentStart);
                Some(S::Comment)
            }
            S::Comment => {
                let r = self.next();
                if is_nl(r) || r == EOF {
                    self.backup();
                    self.emit(It::Text);
                    return self.pop();
                }
                Some(S::Comment)
            }
        }
    }

    /// `lexValue`: whitespace (not newlines) and then any value.
    fn lex_value(&mut self) -> Next {
        use State as S;
        let r = self.next();
        if is_whitespace(r) {
            self.ignore();
            return Some(S::Value);
        }
        if r.is_ascii_digit() {
            self.backup();
            return Some(S::NumberOrDateStart);
        }
        match r {
            '[' => {
                self.ignore();
                self.emit(It::Array);
                return Some(S::ArrayValue);
            }
            '{' => {
                self.ignore();
                self.emit(It::InlineTableStart);
                return Some(S::InlineTableValue);
            }
            '"' => {
                if self.accept('"') {
                    if self.accept('"') {
                        self.ignore();
                        return Some(S::MultilineString);
                    }
                    self.backup();
                }
                self.ignore();
                return Some(S::String);
            }
            '\'' => {
                if self.accept('\'') {
                    if self.accept('\'') {
                        self.ignore();
                        return Some(S::MultilineRawString);
                    }
                    self.backup();
                }
                self.ignore();
                return Some(S::RawString);
            }
            '.' => return self.errorf("floats must start with a digit, not '.'".into()),
            // "inf" or "nan" — or, as Go's short-circuit allows, "ian" and
            // "nnf", which then fail as floats.
            'i' | 'n'
                if (self.accept('n') && self.accept('f'))
                    || (self.accept('a') && self.accept('n')) =>
            {
                self.emit(It::Float);
                return self.pop();
            }
            '-' | '+' => return Some(S::DecimalNumberStart),
            _ => {}
        }
        if is_letter(r) {
            // Word-like values get lexBool's error.
            self.backup();
            return Some(S::Bool);
        }
        if r == EOF {
            return self.errorf("unexpected EOF; expected value".into());
        }
        self.errorf(format!(
            "expected value but found {} instead",
            quote_rune(r)
        ))
    }

    /// `lexMultilineString` / `lexMultilineRawString`: up to the closing
    /// triple quote, which may be preceded by one or two more quotes.
    fn lex_multiline(&mut self, raw: bool) -> Next {
        let (q, me, typ) = if raw {
            ('\'', State::MultilineRawString, It::RawMultilineString)
        } else {
            ('"', State::MultilineString, It::MultilineString)
        };
        let r = self.next();
        if r == EOF {
            return self.errorf(if raw {
                "unexpected EOF; expected \"'''\"".into()
            } else {
                "unexpected EOF; expected '\"\"\"'".into()
            });
        }
        if r == '\\' && !raw {
            return Some(State::MultilineStringEscape);
        }
        if r != q {
            return Some(me);
        }
        if self.accept(q) {
            if self.accept(q) {
                // Six or more quotes at the end is an error.
                if self.peek() == q {
                    let cur = self.current();
                    let too_many = if raw {
                        cur.ends_with("'''''")
                    } else {
                        cur.ends_with("\"\"\"\"\"") && !cur.ends_with("\\\"\"\"\"\"")
                    };
                    if too_many {
                        return self.errorf(if raw {
                            "unexpected \"''''''\"".into()
                        } else {
                            "unexpected '\"\"\"\"\"\"'".into()
                        });
                    }
                    self.backup();
                    self.backup();
                    return Some(me);
                }
                self.backup();
                self.backup();
                self.backup();
                if !raw {
                    self.esc = false;
                }
                self.emit(typ);
                self.next();
                self.next();
                self.next();
                self.ignore();
                return self.pop();
            }
            self.backup();
        }
        Some(me)
    }

    fn lex_unicode_escape(&mut self, n: usize, word: &str, u: char) -> Next {
        for _ in 0..n {
            let r = self.next();
            if !is_hex(r) {
                let c = self.current();
                return self.errorf(format!(
                    "expected {word} hexadecimal digits after '\\{u}', but got {} instead",
                    quote_str(&c)
                ));
            }
        }
        self.pop()
    }

    fn lex_based_integer(&mut self, digit: fn(char) -> bool, me: State) -> Next {
        let r = self.next();
        if digit(r) || r == '_' {
            return Some(me);
        }
        self.backup();
        self.emit(It::Integer);
        self.pop()
    }
}

/// `utf8.DecodeRune`: an invalid or truncated sequence is (U+FFFD, 1).
fn decode_rune(b: &[u8]) -> (char, usize) {
    let head = &b[..b.len().min(4)];
    if let Some(chunk) = head.utf8_chunks().next()
        && let Some(c) = chunk.valid().chars().next()
    {
        return (c, c.len_utf8());
    }
    (RUNE_ERROR, 1)
}

fn is_whitespace(r: char) -> bool {
    r == '\t' || r == ' '
}

fn is_nl(r: char) -> bool {
    r == '\n' || r == '\r'
}

/// Control characters except tab, CR and LF.
fn is_control(r: char) -> bool {
    match r {
        '\t' | '\r' | '\n' => false,
        _ => (r as u32) <= 0x1f || r as u32 == 0x7f,
    }
}

fn is_hex(r: char) -> bool {
    r.is_ascii_hexdigit()
}

fn is_octal(r: char) -> bool {
    ('0'..='7').contains(&r)
}

fn is_binary(r: char) -> bool {
    r == '0' || r == '1'
}

fn is_bare_key_char(r: char) -> bool {
    r.is_ascii_alphanumeric() || r == '_' || r == '-'
}

/// `unicode.IsLetter` (category L).
fn is_letter(r: char) -> bool {
    if r.is_ascii() {
        return r.is_ascii_alphabetic();
    }
    matches!(
        get_general_category(r),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
    )
}

fn rune_or_eof(r: char) -> String {
    if r == EOF {
        "end of file".into()
    } else {
        format!("'{r}'")
    }
}

use crate::gocompat::strconv::{quote as quote_str, quote_rune};

// ---------------------------------------------------------------- parser

/// `tomlType`, as far as the parser looks at it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TomlType {
    Integer,
    Float,
    Datetime,
    String,
    Bool,
    Array,
    Hash,
    ArrayHash,
}

struct Parser<'a> {
    lx: Lexer<'a>,
    /// Full key of the table in scope.
    context: Vec<String>,
    /// Last part of the key being set.
    current_key: String,
    /// Line of `p.pos`, the position `panicf` errors report.
    pos_line: i64,
    key_info: HashMap<String, TomlType>,
    mapping: Table,
    implicits: HashSet<String>,
}

type PResult<T> = Result<T, Failure>;

fn bug(msg: String) -> Failure {
    Failure::Panic(format!("BUG: {msg}\n\n"))
}

impl Parser<'_> {
    /// `ParseError.Error()` at `line`, with the current key.
    fn err_at(&self, line: i64, msg: String) -> Failure {
        let last = self.current();
        Failure::Parse(if last.is_empty() {
            format!("toml: line {line}: {msg}")
        } else {
            format!("toml: line {line} (last key {}): {msg}", quote_str(&last))
        })
    }

    /// `panicf`: at the position of the last `nextPos` item.
    fn panicf(&self, msg: String) -> Failure {
        self.err_at(self.pos_line, msg)
    }

    fn next(&mut self) -> PResult<Item> {
        let it = self.lx.next_item().map_err(Failure::Panic)?;
        if it.typ == It::Error {
            return Err(self.err_at(it.line, it.err));
        }
        Ok(it)
    }

    fn next_pos(&mut self) -> PResult<Item> {
        let it = self.next()?;
        self.pos_line = it.line;
        Ok(it)
    }

    fn expect(&mut self, typ: It) -> PResult<Item> {
        let it = self.next()?;
        assert_equal(typ, it.typ)?;
        Ok(it)
    }

    /// Reads the parts of a key or table name up to `end`.
    fn key_parts(&mut self, first: Item, end: It) -> PResult<Vec<String>> {
        let mut key = Vec::new();
        let mut name = first;
        while name.typ != end && name.typ != It::Eof {
            key.push(self.key_string(name)?);
            name = self.next()?;
        }
        assert_equal(end, name.typ)?;
        Ok(key)
    }

    fn top_level(&mut self, item: Item) -> PResult<()> {
        match item.typ {
            It::CommentStart => {
                self.expect(It::Text)?;
            }
            It::TableStart | It::ArrayTableStart => {
                let array = item.typ == It::ArrayTableStart;
                let end = if array {
                    It::ArrayTableEnd
                } else {
                    It::TableEnd
                };
                let first = self.next_pos()?;
                let key = self.key_parts(first, end)?;
                self.add_context(&key, array)?;
                let t = if array {
                    TomlType::ArrayHash
                } else {
                    TomlType::Hash
                };
                self.set_type("", t);
            }
            It::KeyStart => {
                let outer = self.context.clone();
                let first = self.next_pos()?;
                let key = self.key_parts(first, It::KeyEnd)?;
                self.set_dotted_key(&key)?;
                let v_item = self.next()?;
                let (val, typ) = self.value(v_item, false)?;
                let ck = self.current_key.clone();
                self.set_value(&ck, val)?;
                self.set_type(&ck, typ);
                // Drop the context the dotted key added ([tbl] lines stay).
                self.context = outer;
                self.current_key.clear();
            }
            t => return Err(bug(format!("Unexpected type at top level: {}", t.name()))),
        }
        Ok(())
    }

    /// The last part of a key becomes the current key; the others are
    /// implicit tables, entered one by one.
    fn set_dotted_key(&mut self, key: &[String]) -> PResult<()> {
        let Some((last, parent)) = key.split_last() else {
            return Err(Failure::Panic(
                "runtime error: index out of range [-1]".into(),
            ));
        };
        self.current_key = last.clone();
        for part in parent {
            let mut k = self.context.clone();
            k.push(part.clone());
            self.add_implicit_context(&k)?;
        }
        Ok(())
    }

    fn key_string(&mut self, it: Item) -> PResult<String> {
        match it.typ {
            It::Text => Ok(it.val),
            It::String
            | It::StringEsc
            | It::MultilineString
            | It::RawString
            | It::RawMultilineString => match self.value(it, false)?.0 {
                Val::Str(s) => Ok(s),
                _ => Err(bug("Unexpected key type: String".into())),
            },
            t => Err(bug(format!("Unexpected key type: {}", t.name()))),
        }
    }

    fn value(&mut self, it: Item, parent_is_array: bool) -> PResult<(Val, TomlType)> {
        Ok(match it.typ {
            It::String | It::RawString => (Val::Str(it.val), TomlType::String),
            It::StringEsc => (
                Val::Str(self.replace_escapes(&it, &it.val)?),
                TomlType::String,
            ),
            It::MultilineString => {
                let s = strip_escaped_newlines(strip_first_newline(&it.val));
                (Val::Str(self.replace_escapes(&it, &s)?), TomlType::String)
            }
            It::RawMultilineString => (
                Val::Str(strip_first_newline(&it.val).to_string()),
                TomlType::String,
            ),
            It::Integer => (Val::Int(self.value_integer(&it)?), TomlType::Integer),
            It::Float => (Val::Float(self.value_float(&it)?), TomlType::Float),
            It::Bool => match it.val.as_str() {
                "true" => (Val::Bool(true), TomlType::Bool),
                "false" => (Val::Bool(false), TomlType::Bool),
                v => return Err(bug(format!("Expected boolean value, but got '{v}'."))),
            },
            It::Datetime => (Val::Time(self.value_datetime(&it)?), TomlType::Datetime),
            It::Array => self.value_array()?,
            It::InlineTableStart => self.value_inline_table(parent_is_array)?,
            t => return Err(bug(format!("Unexpected value type: {}", t.name()))),
        })
    }

    fn value_integer(&self, it: &Item) -> PResult<i64> {
        let v = &it.val;
        if !num_underscores_ok(v) {
            return Err(self.err_at(
                it.line,
                format!(
                    "Invalid integer {}: underscores must be surrounded by digits",
                    quote_str(v)
                ),
            ));
        }
        if num_has_leading_zero(v) {
            return Err(self.err_at(
                it.line,
                format!(
                    "Invalid integer {}: cannot have leading zeroes",
                    quote_str(v)
                ),
            ));
        }
        match parse_int(v) {
            Ok(n) => Ok(n),
            Err(IntErr::Range) => {
                Err(self.err_at(it.line, format!("{v} is out of range for int64")))
            }
            Err(IntErr::Syntax) => Err(bug(format!("Expected integer value, but got '{v}'."))),
        }
    }

    fn value_float(&self, it: &Item) -> PResult<f64> {
        let v = &it.val;
        let parts: Vec<&str> = v.split(['.', 'e', 'E']).filter(|p| !p.is_empty()).collect();
        for part in &parts {
            if !num_underscores_ok(part) {
                return Err(self.err_at(
                    it.line,
                    format!(
                        "Invalid float {}: underscores must be surrounded by digits",
                        quote_str(v)
                    ),
                ));
            }
        }
        if parts.first().is_some_and(|p| num_has_leading_zero(p)) {
            return Err(self.err_at(
                it.line,
                format!("Invalid float {}: cannot have leading zeroes", quote_str(v)),
            ));
        }
        if !num_periods_ok(v) {
            // "123." and "1.e2" are floats to Go, not to TOML.
            return Err(self.err_at(
                it.line,
                format!(
                    "Invalid float {}: '.' must be followed by one or more digits",
                    quote_str(v)
                ),
            ));
        }
        let mut val = v.replace('_', "");
        let mut signbit = false;
        if val == "+nan" || val == "-nan" {
            signbit = val == "-nan";
            val = "nan".into();
        }
        match parse_float(&val) {
            Some(f) if f.is_infinite() && !val.contains("inf") => {
                Err(self.err_at(it.line, format!("{v} is out of range for float64")))
            }
            Some(f) => Ok(if signbit { -f.abs() } else { f }),
            None => Err(self.err_at(it.line, format!("Invalid float value: {}", quote_str(v)))),
        }
    }

    fn value_datetime(&self, it: &Item) -> PResult<GoTime> {
        let v: String = it
            .val
            .chars()
            .map(|c| match c {
                'z' => 'Z',
                't' | ' ' => 'T',
                c => c,
            })
            .collect();
        for layout in &LAYOUTS {
            if let Some(t) = parse_time(layout, &v) {
                if missing_leading_zero(&v, layout.text) {
                    break;
                }
                return Ok(t);
            }
        }
        Err(self.err_at(it.line, format!("invalid datetime: {}", quote_str(&v))))
    }

    fn value_array(&mut self) -> PResult<(Val, TomlType)> {
        let ck = self.current_key.clone();
        self.set_type(&ck, TomlType::Array);
        let mut array = Vec::with_capacity(2);
        loop {
            let it = self.next()?;
            if it.typ == It::ArrayEnd {
                break;
            }
            if it.typ == It::CommentStart {
                self.expect(It::Text)?;
                continue;
            }
            array.push(self.value(it, true)?.0);
        }
        Ok((Val::Array(array), TomlType::Array))
    }

    fn value_inline_table(&mut self, parent_is_array: bool) -> PResult<(Val, TomlType)> {
        let top_hash = new_table();
        let outer_context = self.context.clone();
        let outer_key = std::mem::take(&mut self.current_key);
        self.context.push(outer_key.clone());
        let prev_context = self.context.clone();

        self.add_implicit(&prev_context);
        self.add_context(&prev_context, parent_is_array)?;

        loop {
            let it = self.next()?;
            if it.typ == It::InlineTableEnd {
                break;
            }
            if it.typ == It::CommentStart {
                self.expect(It::Text)?;
                continue;
            }
            let first = self.next_pos()?;
            let key = self.key_parts(first, It::KeyEnd)?;
            self.set_dotted_key(&key)?;
            let v_item = self.next()?;
            let (val, typ) = self.value(v_item, false)?;
            let ck = self.current_key.clone();
            self.set_value(&ck, val.clone())?;
            self.set_type(&ck, typ);

            // The table handed back (what an array of inline tables keeps).
            let mut hash = top_hash.clone();
            for c in &key[..key.len() - 1] {
                let h = hash
                    .borrow_mut()
                    .entry(c.clone())
                    .or_insert_with(|| Val::Table(new_table()))
                    .clone();
                match h {
                    Val::Table(t) => hash = t,
                    _ => {
                        return Err(self.panicf(format!(
                            "{} is not a table",
                            quote_str(&key_string(&self.context))
                        )));
                    }
                }
            }
            hash.borrow_mut().insert(ck, val);

            self.context = prev_context.clone();
        }
        self.context = outer_context;
        self.current_key = outer_key;
        Ok((Val::Table(top_hash), TomlType::Hash))
    }

    /// `addContext`: enter a table (`[a.b]`, an inline table, a part of a
    /// dotted key) or a new element of an array of tables, creating
    /// implicit parents and refusing keys already used otherwise.
    fn add_context(&mut self, key: &[String], array: bool) -> PResult<()> {
        let Some((last, parent)) = key.split_last() else {
            return Err(Failure::Panic(
                "runtime error: makeslice: cap out of range".into(),
            ));
        };
        let mut hash_context = self.mapping.clone();
        let mut key_context: Vec<String> = Vec::with_capacity(parent.len());
        for k in parent {
            key_context.push(k.clone());
            let exists = hash_context.borrow().contains_key(k);
            if !exists {
                self.add_implicit(&key_context);
                hash_context
                    .borrow_mut()
                    .insert(k.clone(), Val::Table(new_table()));
            }
            let next = match hash_context.borrow().get(k) {
                Some(Val::Tables(t)) => t.last().cloned(),
                Some(Val::Table(t)) => Some(t.clone()),
                _ => None,
            };
            match next {
                Some(t) => hash_context = t,
                None => {
                    return Err(self.panicf(format!(
                        "Key '{}' was already created as a hash.",
                        key_string(&key_context)
                    )));
                }
            }
        }

        self.context = key_context;
        if array {
            let mut h = hash_context.borrow_mut();
            let slot = h
                .entry(last.clone())
                .or_insert_with(|| Val::Tables(Vec::with_capacity(4)));
            if let Val::Tables(t) = slot {
                t.push(new_table());
            } else {
                drop(h);
                return Err(self.panicf(format!(
                    "Key '{}' was already created and cannot be used as an array.",
                    key_string(key)
                )));
            }
        } else {
            self.set_value(last, Val::Table(new_table()))?;
        }
        self.context.push(last.clone());
        Ok(())
    }

    /// `setValue`: `key` = `value` in the current context, unless the key
    /// exists — allowed only over an implicit table (kept as it is) or a
    /// static array (replaced).
    fn set_value(&mut self, key: &str, value: Val) -> PResult<()> {
        let mut hash = self.mapping.clone();
        let mut key_context: Vec<String> = Vec::with_capacity(self.context.len() + 1);
        for k in &self.context {
            key_context.push(k.clone());
            let next = match hash.borrow().get(k) {
                None => {
                    return Err(bug(format!(
                        "Context for key '{}' has not been established.",
                        key_string(&key_context)
                    )));
                }
                Some(Val::Tables(t)) => t.last().cloned(),
                Some(Val::Table(t)) => Some(t.clone()),
                Some(_) => None,
            };
            match next {
                Some(t) => hash = t,
                None => {
                    return Err(self.panicf(format!(
                        "Key '{}' has already been defined.",
                        key_string(&key_context)
                    )));
                }
            }
        }
        key_context.push(key.to_string());

        let exists = hash.borrow().contains_key(key);
        if exists {
            if self.is_array(&key_context) {
                self.remove_implicit(&key_context);
                hash.borrow_mut().insert(key.to_string(), value);
                return Ok(());
            }
            if self.is_implicit(&key_context) {
                self.remove_implicit(&key_context);
                return Ok(());
            }
            return Err(self.panicf(format!(
                "Key '{}' has already been defined.",
                key_string(&key_context)
            )));
        }
        hash.borrow_mut().insert(key.to_string(), value);
        Ok(())
    }

    /// `setType`; an empty `key` types the current context (and an empty
    /// context is `""`, as Go's special case has it).
    fn set_type(&mut self, key: &str, typ: TomlType) {
        let mut kc = self.context.clone();
        if !key.is_empty() {
            kc.push(key.to_string());
        }
        if kc.is_empty() {
            kc.push(String::new());
        }
        self.key_info.insert(key_string(&kc), typ);
    }

    fn add_implicit(&mut self, key: &[String]) {
        self.implicits.insert(key_string(key));
    }

    fn remove_implicit(&mut self, key: &[String]) {
        self.implicits.remove(&key_string(key));
    }

    fn is_implicit(&self, key: &[String]) -> bool {
        self.implicits.contains(&key_string(key))
    }

    fn is_array(&self, key: &[String]) -> bool {
        self.key_info.get(&key_string(key)) == Some(&TomlType::Array)
    }

    fn add_implicit_context(&mut self, key: &[String]) -> PResult<()> {
        self.add_implicit(key);
        self.add_context(key, false)
    }

    /// The full name of the current key, for "(last key …)".
    fn current(&self) -> String {
        if self.current_key.is_empty() {
            return key_string(&self.context);
        }
        if self.context.is_empty() {
            return self.current_key.clone();
        }
        format!("{}.{}", key_string(&self.context), self.current_key)
    }

    fn replace_escapes(&self, it: &Item, s: &str) -> PResult<String> {
        let mut b = String::with_capacity(s.len());
        let bytes = s.as_bytes();
        let mut skip = 0;
        for (i, c) in s.char_indices() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if c != '\\' {
                b.push(c);
                continue;
            }
            let Some(&e) = bytes.get(i + 1) else {
                return Err(Failure::Panic("runtime error: index out of range".into()));
            };
            match e {
                b' ' | b'\t' => {
                    return Err(self.err_at(it.line, format!("invalid escape: '\\{}'", e as char)));
                }
                b'b' => b.push('\u{8}'),
                b't' => b.push('\t'),
                b'n' => b.push('\n'),
                b'f' => b.push('\u{c}'),
                b'r' => b.push('\r'),
                b'"' => b.push('"'),
                b'\\' => b.push('\\'),
                b'u' | b'U' => {
                    let n = if e == b'u' { 4 } else { 8 };
                    let hex = s.get(i + 2..i + 2 + n).unwrap_or_default();
                    b.push(self.ascii_escape_to_unicode(it, hex)?);
                    skip = n + 1;
                }
                // 'e' and 'x' are TOML 1.1; the lexer has refused them.
                _ => {
                    return Err(bug(format!(
                        "Expected valid escape code after \\, but got {}.",
                        quote_rune(e as char)
                    )));
                }
            }
            if e != b'u' && e != b'U' {
                skip = 1;
            }
        }
        Ok(b)
    }

    fn ascii_escape_to_unicode(&self, it: &Item, s: &str) -> PResult<char> {
        let Ok(hex) = u32::from_str_radix(s, 16) else {
            return Err(bug(format!(
                "Could not parse '{s}' as a hexadecimal number, but the lexer claims it's OK"
            )));
        };
        char::from_u32(hex).ok_or_else(|| {
            self.err_at(
                it.line,
                format!("Escaped character '\\u{s}' is not valid UTF-8."),
            )
        })
    }
}

fn assert_equal(expected: It, got: It) -> PResult<()> {
    if expected != got {
        return Err(bug(format!(
            "Expected '{}' but got '{}'.",
            expected.name(),
            got.name()
        )));
    }
    Ok(())
}

/// `Key.String`: parts joined by dots, each bare or quoted.
fn key_string(key: &[String]) -> String {
    let mut out = String::new();
    for (i, k) in key.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        if k.is_empty() {
            out.push_str("\"\"");
        } else if k.chars().all(is_bare_key_char) {
            out.push_str(k);
        } else {
            out.push_str(&super::toml::quote(k));
        }
    }
    out
}

fn strip_first_newline(s: &str) -> &str {
    s.strip_prefix('\n')
        .or_else(|| s.strip_prefix("\r\n"))
        .unwrap_or(s)
}

/// Drops a line-ending backslash and the whitespace after it.
fn strip_escaped_newlines(s: &str) -> String {
    let mut b = String::with_capacity(s.len());
    let mut s = s;
    let mut i = 0;
    loop {
        let Some(ix) = s[i..].find('\\') else {
            b.push_str(s);
            return b;
        };
        i += ix;
        let by = s.as_bytes();
        if by.len() > i + 1 && by[i + 1] == b'\\' {
            i += 2;
            continue;
        }
        let mut j = i + 1;
        while j < by.len() && matches!(by[j], b' ' | b'\t' | b'\r' | b'\n') {
            j += 1;
        }
        if j == i + 1 || !s[i..j].contains('\n') {
            // Not a line-ending backslash (replace_escapes judges it).
            i += 1;
            continue;
        }
        b.push_str(&s[..i]);
        s = &s[j..];
        i = 0;
    }
}

/// Whether each underscore sits between two hex digits (`isHex` is a
/// superset of what may surround one).
fn num_underscores_ok(s: &str) -> bool {
    if matches!(s, "nan" | "+nan" | "-nan" | "inf" | "-inf" | "+inf") {
        return true;
    }
    let mut accept = false;
    for r in s.chars() {
        if r == '_' && !accept {
            return false;
        }
        accept = is_hex(r);
    }
    accept
}

fn num_has_leading_zero(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() > 1 && b[0] == b'0' && !matches!(b[1], b'b' | b'o' | b'x') {
        return true;
    }
    b.len() > 2 && (b[0] == b'-' || b[0] == b'+') && b[1] == b'0'
}

fn num_periods_ok(s: &str) -> bool {
    let mut period = false;
    for r in s.chars() {
        if period && !r.is_ascii_digit() {
            return false;
        }
        period = r == '.';
    }
    !period
}

enum IntErr {
    Syntax,
    Range,
}

/// `strconv.ParseInt(s, 0, 64)`: sign, base prefix (`0b`, `0o`, `0x`, a
/// bare leading `0` is octal), underscores between digits.
fn parse_int(s0: &str) -> Result<i64, IntErr> {
    let (neg, s) = match s0.as_bytes().first() {
        Some(b'+') => (false, &s0[1..]),
        Some(b'-') => (true, &s0[1..]),
        _ => (false, s0),
    };
    if s.is_empty() {
        return Err(IntErr::Syntax);
    }
    let b = s.as_bytes();
    let (base, digits) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &b[2..]),
            Some(b'o') if b.len() >= 3 => (8, &b[2..]),
            Some(b'x') if b.len() >= 3 => (16, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    for &c in digits {
        if c == b'_' {
            underscores = true;
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'z' => c - b'a' + 10,
            b'A'..=b'Z' => c - b'A' + 10,
            _ => return Err(IntErr::Syntax),
        };
        if u64::from(d) >= base {
            return Err(IntErr::Syntax);
        }
        n = n
            .checked_mul(base)
            .and_then(|n| n.checked_add(u64::from(d)))
            .ok_or(IntErr::Range)?;
    }
    if underscores && !underscore_ok(s0) {
        return Err(IntErr::Syntax);
    }
    let cutoff = 1u64 << 63;
    if (!neg && n >= cutoff) || (neg && n > cutoff) {
        return Err(IntErr::Range);
    }
    Ok(if neg {
        (n as i64).wrapping_neg()
    } else {
        n as i64
    })
}

/// strconv's `underscoreOK`: underscores only between digits (or after a
/// base prefix).
fn underscore_ok(s: &str) -> bool {
    let mut s = s.as_bytes();
    if let Some(b'-' | b'+') = s.first() {
        s = &s[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = s[1].eq_ignore_ascii_case(&b'x');
    }
    while i < s.len() {
        let c = s[i];
        i += 1;
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
    }
    saw != b'_'
}

/// `strconv.ParseFloat(s, 64)` on what the lexer lets through (decimal
/// digits, '.', exponents, signs, "inf"/"nan"); `None` on a syntax error.
/// Overflow comes back as an infinity, for the caller's range error.
fn parse_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let rest = &s[i..];
    if rest.eq_ignore_ascii_case("inf")
        || rest.eq_ignore_ascii_case("infinity")
        || rest.eq_ignore_ascii_case("nan")
    {
        return s.parse().ok();
    }
    // Go's grammar: digits with at most one '.', at least one digit, then
    // an optional exponent with at least one digit.
    let mut digits = false;
    let mut dot = false;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => digits = true,
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    if !digits {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse().ok()
}

// ------------------------------------------------------------ datetimes

/// One of the layouts BurntSushi tries, in order (TOML 1.0 only).
struct Layout {
    text: &'static str,
    date: bool,
    time: bool,
    zone: bool,
}

const LAYOUTS: [Layout; 4] = [
    Layout {
        text: "2006-01-02T15:04:05.999999999Z07:00",
        date: true,
        time: true,
        zone: true,
    },
    Layout {
        text: "2006-01-02T15:04:05.999999999",
        date: true,
        time: true,
        zone: false,
    },
    Layout {
        text: "2006-01-02",
        date: true,
        time: false,
        zone: false,
    },
    Layout {
        text: "15:04:05.999999999",
        date: false,
        time: true,
        zone: false,
    },
];

/// Go's `getnum`: one or two digits (`fixed`: exactly two).
fn getnum(v: &[u8], fixed: bool) -> Option<(i64, &[u8])> {
    let d0 = *v.first().filter(|c| c.is_ascii_digit())?;
    match v.get(1).filter(|c| c.is_ascii_digit()) {
        Some(d1) => Some((i64::from(d0 - b'0') * 10 + i64::from(d1 - b'0'), &v[2..])),
        None if fixed => None,
        None => Some((i64::from(d0 - b'0'), &v[1..])),
    }
}

fn lit(v: &[u8], c: u8) -> Option<&[u8]> {
    (v.first() == Some(&c)).then(|| &v[1..])
}

use crate::gocompat::time::days_in;

/// `time.ParseInLocation` with one of [`LAYOUTS`]: Go's general parser
/// (which accepts a one-digit hour, zone offsets up to 24:60) with its
/// range checks.
fn parse_time(l: &Layout, s: &str) -> Option<GoTime> {
    let mut v = s.as_bytes();
    let mut t = GoTime {
        year: 0,
        month: 1,
        day: 1,
        hour: 0,
        min: 0,
        sec: 0,
        nsec: 0,
        offset: 0,
    };
    if l.date {
        let y = v.get(..4)?;
        if !y.iter().all(u8::is_ascii_digit) {
            return None;
        }
        t.year = y.iter().fold(0, |a, d| a * 10 + i64::from(d - b'0'));
        v = lit(&v[4..], b'-')?;
        let (m, r) = getnum(v, true)?;
        if !(1..=12).contains(&m) {
            return None;
        }
        v = lit(r, b'-')?;
        let (d, r) = getnum(v, true)?;
        t.month = m;
        t.day = d;
        v = r;
        if l.time {
            v = lit(v, b'T')?;
        }
    }
    if l.time {
        let (h, r) = getnum(v, false)?;
        let r = lit(r, b':')?;
        let (mi, r) = getnum(r, true)?;
        let r = lit(r, b':')?;
        let (se, r) = getnum(r, true)?;
        if h >= 24 || mi >= 60 || se >= 60 {
            return None;
        }
        (t.hour, t.min, t.sec) = (h, mi, se);
        v = r;
        // Fractional seconds: any number of digits, nanoseconds kept.
        if v.len() >= 2 && (v[0] == b'.' || v[0] == b',') && v[1].is_ascii_digit() {
            let mut n = 1;
            while n < v.len() && v[n].is_ascii_digit() {
                n += 1;
            }
            let digits = &v[1..n.min(10)];
            let mut ns = digits.iter().fold(0, |a, d| a * 10 + i64::from(d - b'0'));
            for _ in digits.len()..9 {
                ns *= 10;
            }
            t.nsec = ns;
            v = &v[n..];
        }
    }
    if l.zone {
        if let Some(r) = lit(v, b'Z') {
            v = r;
        } else {
            if v.len() < 6 || v[3] != b':' {
                return None;
            }
            let (hr, _) = getnum(&v[1..3], true)?;
            let (mm, _) = getnum(&v[4..6], true)?;
            if hr > 24 || mm > 60 {
                return None;
            }
            t.offset = (hr * 60 + mm) * 60;
            match v[0] {
                b'+' => {}
                b'-' => t.offset = -t.offset,
                _ => return None,
            }
            v = &v[6..];
        }
    }
    if !v.is_empty() || t.day < 1 || t.day > days_in(t.month, t.year) {
        return None;
    }
    Some(t)
}

/// Go's `time.Parse` takes "7:00" for "15:04"; BurntSushi then rejects
/// a value whose separators are not where the layout has them.
fn missing_leading_zero(d: &str, layout: &str) -> bool {
    let d = d.as_bytes();
    for (i, &c) in layout.as_bytes().iter().enumerate() {
        if c == b'.' || c == b'Z' {
            return false;
        }
        if !c.is_ascii_digit() && d.get(i) != Some(&c) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(input: &str) -> Vec<(It, String, i64)> {
        let mut lx = Lexer::new(input.as_bytes());
        let mut out = Vec::new();
        while let Ok(it) = lx.next_item() {
            let t = it.typ;
            out.push((t, if t == It::Error { it.err } else { it.val }, it.line));
            if t == It::Error || t == It::Eof {
                break;
            }
        }
        out
    }

    fn err(input: &str) -> String {
        match decode(input.as_bytes()) {
            Err(Failure::Parse(e) | Failure::Panic(e)) => e,
            Ok(_) => "ok".into(),
        }
    }

    #[test]
    fn lex_key_value_and_table() {
        use It::*;
        assert_eq!(
            items("a = 1\n[t]\n"),
            vec![
                (KeyStart, "".into(), 1),
                (Text, "a".into(), 1),
                (KeyEnd, "=".into(), 1),
                (Integer, "1".into(), 1),
                (TableStart, "[".into(), 2),
                (Text, "t".into(), 2),
                (TableEnd, "]".into(), 2),
                (Eof, "".into(), 3),
            ]
        );
    }

    #[test]
    fn lex_strings() {
        use It::*;
        let got = items("k = \"a\\tb\"\nr = 'x'\nm = \"\"\"\nl\"\"\"\"\n");
        let vals: Vec<_> = got
            .iter()
            .filter(|i| i.0 != KeyStart && i.0 != KeyEnd)
            .collect();
        assert_eq!(vals[1], &(StringEsc, "a\\tb".into(), 1));
        assert_eq!(vals[3], &(RawString, "x".into(), 2));
        // Two quotes may end a multi-line string right before the closing three.
        assert_eq!(vals[5], &(MultilineString, "\nl\"".into(), 4));
    }

    #[test]
    fn lex_numbers_and_dates() {
        use It::*;
        let kinds = |s: &str| items(s).into_iter().nth(3).map(|i| (i.0, i.1));
        assert_eq!(kinds("a = 0x1F"), Some((Integer, "0x1F".into())));
        assert_eq!(kinds("a = 1_000"), Some((Integer, "1_000".into())));
        assert_eq!(kinds("a = -1.5e3"), Some((Float, "-1.5e3".into())));
        assert_eq!(kinds("a = inf"), Some((Float, "inf".into())));
        assert_eq!(
            kinds("a = 1979-05-27 07:32:00Z"),
            Some((Datetime, "1979-05-27 07:32:00Z".into()))
        );
        assert_eq!(kinds("a = true"), Some((Bool, "true".into())));
    }

    #[test]
    fn lex_errors_and_lines() {
        // At EOF an error is put on the previous line.
        assert_eq!(
            items("a = ").last().cloned(),
            Some((It::Error, "unexpected EOF; expected value".into(), 0))
        );
        // The newline was read: line 2.
        assert_eq!(
            items("[x\na=1").last().cloned(),
            Some((
                It::Error,
                "expected '.' or ']' to end table name, but got '\\n' instead".into(),
                2
            ))
        );
        // A newline in a string: the line before it. CR LF is not counted
        // before the LF is read, so the line before is 0 here.
        assert_eq!(items("a = \"x\ny\"").last().map(|i| i.2), Some(1));
        assert_eq!(items("a = \"x\r\ny\"").last().map(|i| i.2), Some(0));
        // A lone CR is a control character.
        assert_eq!(
            items("a = 1\rb = 2").last().cloned(),
            Some((
                It::Error,
                "TOML files cannot contain control characters: '0x0d'".into(),
                1
            ))
        );
        // The base-prefix error is queued while lexing goes on.
        assert_eq!(
            items("a = 0x").last().cloned(),
            Some((It::Error, "not a hexidecimal number: '0x\0'".into(), 1))
        );
    }

    #[test]
    fn helm_error_texts() {
        // From helm v3.17.3 (`fromToml "…" | toJson`).
        assert_eq!(
            err("a = "),
            "toml: line 0 (last key \"a\"): unexpected EOF; expected value"
        );
        assert_eq!(
            err("a = 1\na = 2"),
            "toml: line 2 (last key \"a\"): Key 'a' has already been defined."
        );
        assert_eq!(
            err("a = \"x"),
            "toml: line 0 (last key \"a\"): unexpected EOF; expected '\"'"
        );
        assert_eq!(
            err("= 1"),
            "toml: line 1: unexpected '=': key name appears blank"
        );
        assert_eq!(
            err("a = 1 b = 2"),
            "toml: line 1: expected a top-level item to end with a newline, comment, or EOF, but got 'b' instead"
        );
        assert_eq!(
            err("[a]\nb=1\n[a]\nc=2"),
            "toml: line 3: Key 'a' has already been defined."
        );
        assert_eq!(
            err("a = 99999999999999999999"),
            "toml: line 1 (last key \"a\"): 99999999999999999999 is out of range for int64"
        );
        assert_eq!(
            err("a = tru"),
            "toml: line 1 (last key \"a\"): expected value but found \"tru\" instead"
        );
    }

    #[test]
    fn datetimes() {
        let t = |s: &str| {
            LAYOUTS
                .iter()
                .find_map(|l| parse_time(l, s))
                .map(|t| t.rfc3339_nano())
        };
        assert_eq!(
            t("1979-05-27T07:32:00.999Z").as_deref(),
            Some("1979-05-27T07:32:00.999Z")
        );
        assert_eq!(
            t("1979-05-27T00:32:00-07:00").as_deref(),
            Some("1979-05-27T00:32:00-07:00")
        );
        assert_eq!(t("07:32:00").as_deref(), Some("0000-01-01T07:32:00Z"));
        assert_eq!(t("2021-02-29"), None);
        assert!(missing_leading_zero("1979-05-27T7:32:00Z", LAYOUTS[0].text));
    }
}
