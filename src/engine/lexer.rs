//! The template lexer: a port of Go's `text/template/parse/lex.go` (Go 1.23).
//!
//! Go's lexer is a state machine the parser pulls items from one at a time
//! (`nextItem`); so is this port ([`Lexer::next_item`]). Lexing a whole file
//! into a list first would hold some 32 bytes per item for the biggest file
//! at once: hundreds of kilobytes of fresh memory (page faults) that are
//! written once and read once.
//! Trim markers (`{{- ` / ` -}}`, the space is required), comments, raw and
//! quoted strings, char constants and Go's permissive number scanner are
//! reproduced exactly, including the error texts.

/// Item types, as Go's `itemType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl ItemType {
    fn is_keyword(self) -> bool {
        matches!(
            self,
            ItemType::Block
                | ItemType::Break
                | ItemType::Continue
                | ItemType::Dot
                | ItemType::Define
                | ItemType::Else
                | ItemType::End
                | ItemType::If
                | ItemType::Nil
                | ItemType::Range
                | ItemType::Template
                | ItemType::With
        )
    }
}

/// One token: a slice of the input (plain data, copied freely by the
/// parser's look-ahead). The message of the `Error` item, always the last,
/// is [`Lexer::error`].
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    pub typ: ItemType,
    pub pos: usize,
    pub val: &'a str,
}

impl Item<'_> {
    /// Go's `item.String()`, used in "unexpected X in Y" messages;
    /// `error` is the lexer's message for an `Error` item.
    pub fn describe(&self, error: &str) -> String {
        match self.typ {
            ItemType::Eof => "EOF".to_string(),
            ItemType::Error => error.to_string(),
            t if t.is_keyword() => format!("<{}>", self.val),
            _ => {
                if self.val.chars().count() > 10 {
                    let head: String = self.val.chars().take(10).collect();
                    format!("{}...", super::gofmt::quote(&head))
                } else {
                    super::gofmt::quote(self.val)
                }
            }
        }
    }
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";
const SPACE_CHARS: &[char] = &[' ', '\t', '\r', '\n'];
const TRIM_MARKER_LEN: usize = 2;

fn is_space(r: Option<char>) -> bool {
    matches!(r, Some(' ' | '\t' | '\r' | '\n'))
}
#[inline]
fn is_alnum(r: Option<char>) -> bool {
    match r {
        Some(c) if c.is_ascii() => c == '_' || c.is_ascii_alphanumeric(),
        Some(c) => c.is_alphabetic() || is_nd(c),
        None => false,
    }
}

/// Offset of the first `{{` in `s`: `memchr` for the brace, then a check of
/// the next byte (much cheaper than `str::find`'s two-way searcher set up
/// for every run of text).
fn find_left_delim(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = crate::scan::memchr(b'{', &b[from..]) {
        let at = from + i;
        if b.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}
/// Go's `unicode.IsDigit` (category Nd) beyond ASCII; Rust's `is_numeric`
/// is wider.
fn is_nd(c: char) -> bool {
    // Non-ASCII decimal digits (category Nd) are vanishingly rare in
    // templates; the common scripts' digit blocks are listed here.
    matches!(c as u32,
        0x0660..=0x0669 | 0x06F0..=0x06F9 | 0x07C0..=0x07C9 | 0x0966..=0x096F | 0x09E6..=0x09EF
        | 0x0A66..=0x0A6F | 0x0AE6..=0x0AEF | 0x0B66..=0x0B6F | 0x0BE6..=0x0BEF | 0x0C66..=0x0C6F
        | 0x0CE6..=0x0CEF | 0x0D66..=0x0D6F | 0x0E50..=0x0E59 | 0x0ED0..=0x0ED9 | 0x0F20..=0x0F29
        | 0x1040..=0x1049 | 0xFF10..=0xFF19)
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(Some(b[1] as char))
}

pub struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    paren_depth: i32,
    break_ok: bool,
    continue_ok: bool,
    /// Items emitted by the last state function (at most a few), of which
    /// `items[head..]` are not yet taken. Once the text is done they are
    /// kept: the last one (`Eof` or `Error`) is handed out again.
    items: Vec<Item<'a>>,
    head: usize,
    state: State,
    error: String,
}

#[derive(Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Done,
}

impl<'a> Lexer<'a> {
    pub fn new(input: &'a str, break_ok: bool, continue_ok: bool) -> Lexer<'a> {
        Lexer {
            input,
            pos: 0,
            start: 0,
            paren_depth: 0,
            break_ok,
            continue_ok,
            items: Vec::with_capacity(4),
            head: 0,
            state: State::Text,
            error: String::new(),
        }
    }

    /// The next item, lexing as far as needed. After the `Eof` or `Error`
    /// item, that item again.
    #[inline]
    pub fn next_item(&mut self) -> Item<'a> {
        loop {
            if let Some(&it) = self.items.get(self.head) {
                self.head += 1;
                return it;
            }
            let step: fn(&mut Self) -> State = match self.state {
                State::Text => Self::lex_text,
                State::LeftDelim => Self::lex_left_delim,
                State::Comment => Self::lex_comment,
                State::RightDelim => Self::lex_right_delim,
                State::InsideAction => Self::lex_inside_action,
                // Every way to `Done` emits `Eof` or `Error` last.
                State::Done => {
                    return self.items.last().copied().unwrap_or(Item {
                        typ: ItemType::Eof,
                        pos: self.pos,
                        val: "",
                    });
                }
            };
            self.items.clear();
            self.head = 0;
            self.state = step(self);
        }
    }

    /// The message of the `Error` item, once it has been handed out.
    pub fn error(&self) -> &str {
        &self.error
    }
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }
    fn next(&mut self) -> Option<char> {
        let b = *self.input.as_bytes().get(self.pos)?;
        if b.is_ascii() {
            self.pos += 1;
            return Some(char::from(b));
        }
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn peek(&self) -> Option<char> {
        let b = *self.input.as_bytes().get(self.pos)?;
        if b.is_ascii() {
            return Some(char::from(b));
        }
        self.rest().chars().next()
    }
    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }
    fn push(&mut self, typ: ItemType, start: usize, end: usize) {
        self.items.push(Item {
            typ,
            pos: start,
            val: &self.input[start..end],
        });
    }
    fn emit(&mut self, typ: ItemType) {
        self.push(typ, self.start, self.pos);
        self.start = self.pos;
    }
    fn ignore(&mut self) {
        self.start = self.pos;
    }
    fn errorf(&mut self, msg: String) -> State {
        self.items.push(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: "",
        });
        self.error = msg;
        State::Done
    }
    fn accept(&mut self, valid: &str) -> bool {
        match self.next() {
            Some(c) if valid.contains(c) => true,
            c => {
                self.backup(c);
                false
            }
        }
    }
    fn accept_run(&mut self, valid: &str) {
        loop {
            match self.next() {
                Some(c) if valid.contains(c) => {}
                c => {
                    self.backup(c);
                    return;
                }
            }
        }
    }

    fn lex_text(&mut self) -> State {
        if let Some(x) = find_left_delim(self.rest()) {
            if x > 0 {
                self.pos += x;
                let delim_end = self.pos + LEFT.len();
                let mut trim = 0;
                if has_left_trim_marker(&self.input[delim_end..]) {
                    let s = &self.input[self.start..self.pos];
                    trim = s.len() - s.trim_end_matches(SPACE_CHARS).len();
                }
                let end = self.pos - trim;
                if end > self.start {
                    self.push(ItemType::Text, self.start, end);
                }
                self.ignore();
            }
            return State::LeftDelim;
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof);
        State::Done
    }

    /// Go's `atRightDelim`: (at delimiter, with trim marker).
    #[inline]
    fn at_right_delim(&self) -> (bool, bool) {
        self.right_delim_at(self.pos)
    }

    /// [`Lexer::at_right_delim`] at byte `pos`. Called before every item of
    /// an action: the first byte decides.
    #[inline]
    fn right_delim_at(&self, pos: usize) -> (bool, bool) {
        match &self.input.as_bytes()[pos..] {
            [b'}', b'}', ..] => (true, false),
            [b' ' | b'\t' | b'\r' | b'\n', b'-', b'}', b'}', ..] => (true, true),
            _ => (false, false),
        }
    }

    fn lex_left_delim(&mut self) -> State {
        self.pos += LEFT.len();
        let trim = has_left_trim_marker(self.rest());
        let after = if trim { TRIM_MARKER_LEN } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return State::Comment;
        }
        self.push(ItemType::LeftDelim, self.start, self.pos);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        State::InsideAction
    }

    fn lex_comment(&mut self) -> State {
        self.pos += LEFT_COMMENT.len();
        // Comments are long (license headers): memmem, not `str::find`'s
        // two-way searcher set up for each one.
        let Some(x) = crate::scan::find(self.rest().as_bytes(), RIGHT_COMMENT.as_bytes()) else {
            return self.errorf("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += TRIM_MARKER_LEN;
        }
        self.pos += RIGHT.len();
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches(SPACE_CHARS).len();
        }
        self.ignore();
        State::Text
    }

    fn lex_right_delim(&mut self) -> State {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += TRIM_MARKER_LEN;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(ItemType::RightDelim);
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches(SPACE_CHARS).len();
            self.ignore();
        }
        State::Text
    }

    fn lex_inside_action(&mut self) -> State {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return State::RightDelim;
            }
            return self.errorf("unclosed left paren".into());
        }
        let r = self.next();
        match r {
            None => return self.errorf("unclosed action".into()),
            Some(c) if is_space(Some(c)) => {
                self.backup(r);
                return self.lex_space();
            }
            Some('=') => self.emit(ItemType::Assign),
            Some(':') => {
                if self.next() != Some('=') {
                    return self.errorf("expected :=".into());
                }
                self.emit(ItemType::Declare);
            }
            Some('|') => self.emit(ItemType::Pipe),
            Some('"') => return self.lex_quote(),
            Some('`') => return self.lex_raw_quote(),
            Some('$') => return self.lex_variable(),
            Some('\'') => return self.lex_char(),
            Some('.') => {
                // Special look-ahead for ".field" so we don't break backup().
                if self.pos < self.input.len() {
                    let b = self.input.as_bytes()[self.pos];
                    if !b.is_ascii_digit() {
                        return self.lex_field_or_variable(ItemType::Field);
                    }
                }
                self.backup(r);
                return self.lex_number();
            }
            Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                self.backup(r);
                return self.lex_number();
            }
            Some(c) if is_alnum(Some(c)) => {
                self.backup(r);
                return self.lex_identifier();
            }
            Some('(') => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            Some(')') => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.errorf("unexpected right paren".into());
                }
                self.emit(ItemType::RightParen);
            }
            Some(c) if (c as u32) < 0x80 && !c.is_ascii_control() => self.emit(ItemType::Char),
            Some(c) => {
                return self.errorf(format!(
                    "unrecognized character in action: {}",
                    go_sharp_u(c)
                ));
            }
        }
        State::InsideAction
    }

    fn lex_space(&mut self) -> State {
        let start = self.pos;
        let bytes = self.input.as_bytes();
        while matches!(bytes.get(self.pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
        let num = self.pos - start;
        // A trim-marked closing delimiter has a minus after a space.
        if self.right_delim_at(self.pos - 1) == (true, true) {
            self.pos -= 1;
            if num == 1 {
                return State::RightDelim;
            }
        }
        self.emit(ItemType::Space);
        State::InsideAction
    }

    fn lex_identifier(&mut self) -> State {
        let r = self.skip_alnum();
        let word = &self.input[self.start..self.pos];
        if !self.at_terminator() {
            return self.errorf(format!("bad character {}", go_sharp_u_opt(r)));
        }
        match keyword(word) {
            Some(k) if k != ItemType::Dot => {
                if (k == ItemType::Break && !self.break_ok)
                    || (k == ItemType::Continue && !self.continue_ok)
                {
                    self.emit(ItemType::Identifier);
                } else {
                    self.emit(k);
                }
            }
            _ if word.starts_with('.') => self.emit(ItemType::Field),
            _ if word == "true" || word == "false" => self.emit(ItemType::Bool),
            _ => self.emit(ItemType::Identifier),
        }
        State::InsideAction
    }

    fn lex_variable(&mut self) -> State {
        if self.at_terminator() {
            self.emit(ItemType::Variable);
            return State::InsideAction;
        }
        self.lex_field_or_variable(ItemType::Variable)
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> State {
        if self.at_terminator() {
            self.emit(if typ == ItemType::Variable {
                ItemType::Variable
            } else {
                ItemType::Dot
            });
            return State::InsideAction;
        }
        let r = self.skip_alnum();
        if !self.at_terminator() {
            return self.errorf(format!("bad character {}", go_sharp_u_opt(r)));
        }
        self.emit(typ);
        State::InsideAction
    }

    /// Move past a run of identifier characters; returns the rune after
    /// it (not consumed). ASCII bytes, nearly every identifier, are taken
    /// without decoding.
    fn skip_alnum(&mut self) -> Option<char> {
        let bytes = self.input.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if b == b'_' || b.is_ascii_alphanumeric() {
                self.pos += 1;
            } else {
                break;
            }
        }
        match bytes.get(self.pos) {
            None => return None,
            Some(&b) if b.is_ascii() => return Some(char::from(b)),
            Some(_) => {}
        }
        loop {
            let r = self.next();
            if !is_alnum(r) {
                self.backup(r);
                return r;
            }
        }
    }

    fn at_terminator(&self) -> bool {
        // Every terminator is ASCII: space, punctuation, or the start of
        // the right delimiter.
        matches!(
            self.input.as_bytes().get(self.pos),
            None | Some(
                b' ' | b'\t' | b'\r' | b'\n' | b'.' | b',' | b'|' | b':' | b')' | b'(' | b'}'
            )
        )
    }

    fn lex_char(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated character constant".into());
                }
                None | Some('\n') => return self.errorf("unterminated character constant".into()),
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant);
        State::InsideAction
    }

    fn lex_number(&mut self) -> State {
        if !self.scan_number() {
            let s = &self.input[self.start..self.pos];
            return self.errorf(format!("bad number syntax: {}", super::gofmt::quote(s)));
        }
        if let Some('+' | '-') = self.peek() {
            // Complex: 1+2i. No spaces, must end in 'i'.
            if !self.scan_number() || self.input.as_bytes()[self.pos - 1] != b'i' {
                let s = &self.input[self.start..self.pos];
                return self.errorf(format!("bad number syntax: {}", super::gofmt::quote(s)));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        State::InsideAction
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 10 + 1 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 16 + 6 + 1 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if is_alnum(self.peek()) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated quoted string".into());
                }
                None | Some('\n') => return self.errorf("unterminated quoted string".into()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(ItemType::String);
        State::InsideAction
    }

    fn lex_raw_quote(&mut self) -> State {
        loop {
            match self.next() {
                None => return self.errorf("unterminated raw quoted string".into()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(ItemType::RawString);
        State::InsideAction
    }
}

/// Go's `%#U`: `U+0023 '#'`.
fn go_sharp_u(c: char) -> String {
    let mut s = format!("U+{:04X}", c as u32);
    if !c.is_control() {
        s.push_str(&format!(" '{c}'"));
    }
    s
}
fn go_sharp_u_opt(c: Option<char>) -> String {
    match c {
        Some(c) => go_sharp_u(c),
        None => "U+FFFFFFFFFFFFFFFF".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The items of a text, and the message of its `Error` item if it has one.
    struct Lexed<'a> {
        items: Vec<Item<'a>>,
        error: String,
    }

    /// Lex the whole input, as the parser pulls it. The last item is `Eof`
    /// or `Error`.
    fn lex(input: &str, break_ok: bool, continue_ok: bool) -> Lexed<'_> {
        let mut l = Lexer::new(input, break_ok, continue_ok);
        let mut items = Vec::new();
        loop {
            let it = l.next_item();
            items.push(it);
            if matches!(it.typ, ItemType::Eof | ItemType::Error) {
                break;
            }
        }
        Lexed {
            items,
            error: l.error,
        }
    }

    fn types(s: &str) -> Vec<(ItemType, String)> {
        let lexed = lex(s, true, true);
        lexed
            .items
            .into_iter()
            .map(|i| {
                let text = if i.typ == ItemType::Error {
                    lexed.error.clone()
                } else {
                    i.val.to_string()
                };
                (i.typ, text)
            })
            .collect()
    }

    #[test]
    fn trim_markers_need_space() {
        use ItemType::*;
        assert_eq!(
            types("a  {{- 3 -}}  b"),
            vec![
                (Text, "a".into()),
                (LeftDelim, "{{".into()),
                (Number, "3".into()),
                (RightDelim, "}}".into()),
                (Text, "b".into()),
                (Eof, "".into())
            ]
        );
        assert_eq!(
            types("{{-3}}"),
            vec![
                (LeftDelim, "{{".into()),
                (Number, "-3".into()),
                (RightDelim, "}}".into()),
                (Eof, "".into())
            ]
        );
    }

    /// Past the end the parser may look ahead: it gets the last item again.
    #[test]
    fn the_last_item_repeats() {
        for (text, last) in [("a {{ b }} c", ItemType::Eof), ("a {{ b", ItemType::Error)] {
            let mut l = Lexer::new(text, true, true);
            while !matches!(l.next_item().typ, ItemType::Eof | ItemType::Error) {}
            for _ in 0..3 {
                assert_eq!(l.next_item().typ, last, "{text}");
            }
        }
    }

    #[test]
    fn comments_and_errors() {
        use ItemType::*;
        assert_eq!(
            types("x {{- /* c */ -}} y"),
            vec![(Text, "x".into()), (Text, "y".into()), (Eof, "".into())]
        );
        assert_eq!(types("{{/* c"), vec![(Error, "unclosed comment".into())]);
        assert_eq!(
            types("{{ 3"),
            vec![
                (LeftDelim, "{{".into()),
                (Space, " ".into()),
                (Number, "3".into()),
                (Error, "unclosed action".into())
            ]
        );
    }

    #[test]
    fn numbers_and_fields() {
        use ItemType::*;
        let t = types("{{0x1F 0o17 0b11 1_000 1.5e3 'a' .a.b $x.y $}}");
        let kinds: Vec<ItemType> = t.iter().map(|x| x.0).filter(|k| *k != Space).collect();
        assert_eq!(
            kinds,
            vec![
                LeftDelim,
                Number,
                Number,
                Number,
                Number,
                Number,
                CharConstant,
                Field,
                Field,
                Variable,
                Field,
                Variable,
                RightDelim,
                Eof
            ]
        );
    }
}
