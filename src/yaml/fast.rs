//! A fast event source for the plain block YAML that values files and
//! rendered manifests are written in, beside saphyr's full parser.
//!
//! saphyr decodes its input a character at a time through a lookahead
//! buffer: 60–100 instructions a byte, a fifth of rendering a chart whose
//! `values.yaml` is mostly comments and whose manifests helm reads back
//! whole. This scanner works on bytes and lines and hands out the same
//! events saphyr would for a subset of YAML: block mappings and
//! sequences (indentless ones too), plain scalars (continued on deeper
//! lines too), one-line quoted scalars, literal block scalars, `[]`, `{}`
//! and one-line flow sequences of scalars, comments, and a leading `---`.
//! It never reports an error: on anything else (anchors, aliases, tags,
//! folded block scalars, tabs, complex keys, and every malformed input)
//! it gives up with [`Bail`], and the loader parses the document again
//! with saphyr, whose results and error texts stay the reference. A test
//! runs both on every YAML text of the test data and the corpus, and on
//! damaged copies of them.

use crate::scan::{memchr, memchr2, memchr3, memrchr};
use saphyr_parser::{Event, ScalarStyle, Span};
use std::borrow::Cow;

/// The input left the subset: parse it with saphyr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bail;

type Res<T> = Result<T, Bail>;

/// An open collection.
#[derive(Clone, Copy, Debug)]
enum Ctx {
    /// A block mapping whose keys start at column `indent`; `value` once
    /// the key is out and its value is next.
    Map { indent: usize, value: bool },
    /// A block sequence whose `-` indicators are at column `indent`.
    Seq { indent: usize },
    /// A one-line flow sequence; `first` until an item is out.
    Flow { first: bool },
    /// `{}`: its end is next.
    EmptyMap,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    StreamStart,
    DocumentStart,
    Root,
    Body,
    /// After the root node (only comments or a document marker follow).
    DocumentEnd,
    /// The end; asked again, the end again.
    StreamEnd,
}

/// Whether UTF-8 `text` holds a byte order mark or one of YAML 1.1's
/// line breaks beyond `\n` (NEL, LS, PS). A search for their lead bytes,
/// not a walk over decoded characters: a values file with a few accented
/// letters in its comments (vault's) is otherwise decoded whole.
fn has_bom_or_other_break(text: &[u8]) -> bool {
    // In UTF-8 these bytes only ever lead a character, so a hit is the
    // start of one.
    let mut p = 0;
    while let Some(i) = memchr3(0xc2, 0xe2, 0xef, &text[p..]) {
        let rest = &text[p + i..];
        if ["\u{85}", "\u{2028}", "\u{2029}", "\u{feff}"]
            .iter()
            .any(|c| rest.starts_with(c.as_bytes()))
        {
            return true;
        }
        p += i + 1;
    }
    false
}

/// The longest simple key libyaml accepts (a longer one is an error).
const MAX_KEY: usize = 1024;

pub(crate) struct Fast<'a> {
    src: &'a str,
    pos: usize,
    stack: Vec<Ctx>,
    phase: Phase,
}

impl<'a> Fast<'a> {
    /// A scanner for `src`, or `Bail` at once for texts it would give up
    /// on somewhere anyway: tabs, carriage returns, a byte order mark, and
    /// the line breaks YAML 1.1 knows beyond `\n` (NEL, LS, PS).
    pub(crate) fn new(src: &'a str) -> Res<Self> {
        let b = src.as_bytes();
        if memchr2(b'\t', b'\r', b).is_some() || (!src.is_ascii() && has_bom_or_other_break(b)) {
            return Err(Bail);
        }
        Ok(Fast {
            src,
            pos: 0,
            stack: Vec::new(),
            phase: Phase::StreamStart,
        })
    }

    /// The next event, as saphyr's `Parser::next_event` gives it (spans
    /// are left empty: they only serve error messages).
    pub(crate) fn next_event(&mut self) -> Res<(Event<'a>, Span)> {
        let ev = match self.phase {
            Phase::StreamStart => {
                self.phase = Phase::DocumentStart;
                Event::StreamStart
            }
            Phase::DocumentStart => self.document_start()?,
            Phase::Root => self.root()?,
            Phase::Body => self.body()?,
            Phase::DocumentEnd => {
                self.phase = Phase::StreamEnd;
                Event::DocumentEnd
            }
            Phase::StreamEnd => Event::StreamEnd,
        };
        Ok((ev, Span::default()))
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    fn at(&self, p: usize) -> u8 {
        self.bytes().get(p).copied().unwrap_or(b'\n')
    }

    /// Whether the byte at `p` ends a token: space, line break or the end.
    fn blank(&self, p: usize) -> bool {
        matches!(self.at(p), b' ' | b'\n')
    }

    fn column(&self, p: usize) -> usize {
        p - memrchr(b'\n', &self.bytes()[..p]).map_or(0, |i| i + 1)
    }

    /// Moves to the next content, past spaces, line ends, blank lines and
    /// comments; its column, or `None` at the end of the text or at a
    /// document marker (`---`, `...` at the start of a line).
    fn peek(&mut self) -> Option<usize> {
        let b = self.bytes();
        let mut p = self.pos;
        loop {
            while p < b.len() && b[p] == b' ' {
                p += 1;
            }
            if p >= b.len() {
                self.pos = p;
                return None;
            }
            match b[p] {
                b'\n' => p += 1,
                // A comment needs white space before it (or a line start).
                b'#' if p == 0 || matches!(b[p - 1], b' ' | b'\n') => {
                    p = memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i + 1);
                }
                _ => {
                    self.pos = p;
                    let col = self.column(p);
                    if col == 0 && self.marker(p) {
                        return None;
                    }
                    return Some(col);
                }
            }
        }
    }

    /// A document marker at line start `p`.
    fn marker(&self, p: usize) -> bool {
        let b = self.bytes();
        (b[p..].starts_with(b"---") || b[p..].starts_with(b"...")) && self.blank(p + 3)
    }

    /// Past white space to the end of the line (and a comment there);
    /// anything else is outside the subset.
    fn end_line(&mut self) -> Res<()> {
        let b = self.bytes();
        let mut p = self.pos;
        while p < b.len() && b[p] == b' ' {
            p += 1;
        }
        if p >= b.len() {
            self.pos = p;
            return Ok(());
        }
        match b[p] {
            b'\n' => self.pos = p + 1,
            b'#' if p > self.pos || b[p - 1] == b' ' => {
                self.pos = memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i + 1)
            }
            _ => return Err(Bail),
        }
        Ok(())
    }

    /// Whether only white space or a comment is left on the line.
    fn rest_blank(&self) -> bool {
        let b = self.bytes();
        let mut p = self.pos;
        while p < b.len() && b[p] == b' ' {
            p += 1;
        }
        p >= b.len() || b[p] == b'\n' || (b[p] == b'#' && (p > self.pos || b[p - 1] == b' '))
    }

    fn document_start(&mut self) -> Res<Event<'a>> {
        self.phase = Phase::Root;
        let explicit = self.peek().is_none() && self.pos < self.src.len();
        if explicit {
            if !self.bytes()[self.pos..].starts_with(b"---") {
                return Err(Bail);
            }
            self.pos += 3;
            self.end_line()?;
        }
        Ok(Event::DocumentStart(explicit))
    }

    fn root(&mut self) -> Res<Event<'a>> {
        self.phase = Phase::Body;
        match self.peek() {
            // An empty document: saphyr's empty scalar (or no document at
            // all), null either way.
            None => {
                self.phase = Phase::DocumentEnd;
                Ok(empty())
            }
            Some(col) => {
                let ev = self.node(None, col)?;
                if self.stack.is_empty() {
                    // A root scalar must be alone in its document.
                    if self.peek().is_some() {
                        return Err(Bail);
                    }
                    self.phase = Phase::DocumentEnd;
                }
                Ok(ev)
            }
        }
    }

    fn body(&mut self) -> Res<Event<'a>> {
        let Some(top) = self.stack.last_mut() else {
            return Err(Bail);
        };
        match *top {
            Ctx::Map {
                indent,
                value: false,
            } => match self.peek() {
                Some(col) if col == indent => {
                    if let Some(Ctx::Map { value, .. }) = self.stack.last_mut() {
                        *value = true;
                    }
                    self.key()
                }
                Some(col) if col > indent => Err(Bail),
                next => self.close(next, Event::MappingEnd),
            },
            Ctx::Map {
                indent,
                value: true,
            } => {
                *top = Ctx::Map {
                    indent,
                    value: false,
                };
                if !self.rest_blank() {
                    // `key: value` on one line.
                    while self.at(self.pos) == b' ' {
                        self.pos += 1;
                    }
                    return self.scalar(Some(indent), true);
                }
                match self.peek() {
                    Some(col) if col > indent => self.node(Some(indent), col),
                    // An indentless sequence: `key:` over `- item` lines.
                    Some(col) if col == indent && self.at_dash(self.pos) => {
                        self.stack.push(Ctx::Seq { indent });
                        Ok(Event::SequenceStart(0, None))
                    }
                    _ => Ok(empty()),
                }
            }
            Ctx::Seq { indent } => match self.peek() {
                Some(col) if col == indent && self.at_dash(self.pos) => {
                    self.pos += 1;
                    if self.rest_blank() {
                        return match self.peek() {
                            Some(col) if col > indent => self.node(Some(indent), col),
                            _ => Ok(empty()),
                        };
                    }
                    while self.at(self.pos) == b' ' {
                        self.pos += 1;
                    }
                    let col = self.column(self.pos);
                    self.node(Some(indent), col)
                }
                Some(col) if col > indent => Err(Bail),
                next => self.close(next, Event::SequenceEnd),
            },
            Ctx::Flow { first } => self.flow_item(first),
            Ctx::EmptyMap => {
                self.stack.pop();
                self.end_line()?;
                self.after_close()?;
                Ok(Event::MappingEnd)
            }
        }
    }

    /// Ends the innermost block collection, the next content being at
    /// `next` (a lesser column, or `None` for the end). The root may only
    /// end at the end of its document.
    fn close(&mut self, next: Option<usize>, ev: Event<'a>) -> Res<Event<'a>> {
        self.stack.pop();
        if self.stack.is_empty() {
            if next.is_some() {
                return Err(Bail);
            }
            self.phase = Phase::DocumentEnd;
        }
        Ok(ev)
    }

    /// After a flow collection: if it was the document's root, nothing
    /// else may follow.
    fn after_close(&mut self) -> Res<()> {
        if self.stack.is_empty() {
            if self.peek().is_some() {
                return Err(Bail);
            }
            self.phase = Phase::DocumentEnd;
        }
        Ok(())
    }

    fn at_dash(&self, p: usize) -> bool {
        self.at(p) == b'-' && self.blank(p + 1)
    }

    /// A node starting at `self.pos` (column `col`) on its own line or
    /// after `- `; `parent` is the indentation of the enclosing block
    /// collection.
    fn node(&mut self, parent: Option<usize>, col: usize) -> Res<Event<'a>> {
        if self.at_dash(self.pos) {
            self.stack.push(Ctx::Seq { indent: col });
            return Ok(Event::SequenceStart(0, None));
        }
        if self.key_line()? {
            self.stack.push(Ctx::Map {
                indent: col,
                value: false,
            });
            return Ok(Event::MappingStart(0, None));
        }
        match parent {
            Some(_) => self.scalar(parent, self.inline()),
            None => self.scalar(None, false),
        }
    }

    /// Whether the node at `self.pos` follows an indicator on its line
    /// (`- ` or `key: `) rather than starting the line.
    fn inline(&self) -> bool {
        let b = self.bytes();
        let start = memrchr(b'\n', &b[..self.pos]).map_or(0, |i| i + 1);
        b[start..self.pos].iter().any(|&c| c != b' ')
    }

    /// Whether the line from `self.pos` is `key:` followed by a value or
    /// nothing: a plain or quoted key ending in `:` and a blank.
    fn key_line(&self) -> Res<bool> {
        let b = self.bytes();
        let p = self.pos;
        let end = match b[p] {
            b'\'' | b'"' => match self.quoted_end(p) {
                Some(e) => e,
                None => return Ok(false),
            },
            _ => {
                if !plain_start(b, p) {
                    return Ok(false);
                }
                match self.plain_key_end(p) {
                    Some(e) => return Ok(e > p),
                    None => return Ok(false),
                }
            }
        };
        let mut q = end;
        while self.at(q) == b' ' {
            q += 1;
        }
        Ok(self.at(q) == b':' && self.blank(q + 1))
    }

    /// For a plain scalar at `p`: the offset of a `:` + blank ending it as
    /// a key on this line, if one comes before a comment or the line end.
    fn plain_key_end(&self, p: usize) -> Option<usize> {
        let b = self.bytes();
        let line_end = memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i);
        let mut q = p;
        while let Some(i) = memchr2(b':', b'#', &b[q..line_end]) {
            let at = q + i;
            if b[at] == b':' {
                if self.blank(at + 1) {
                    return Some(at);
                }
            } else if at > p && b[at - 1] == b' ' {
                return None;
            }
            q = at + 1;
        }
        None
    }

    /// The offset just past the quoted scalar opening at `p`, if it closes
    /// on its line.
    fn quoted_end(&self, p: usize) -> Option<usize> {
        let b = self.bytes();
        let q = b[p];
        let mut i = p + 1;
        while i < b.len() {
            match b[i] {
                b'\n' => return None,
                b'\\' if q == b'"' => {
                    if self.at(i + 1) == b'\n' {
                        return None;
                    }
                    i += 2
                }
                c if c == q => {
                    if q == b'\'' && self.at(i + 1) == b'\'' {
                        i += 2;
                    } else {
                        return Some(i + 1);
                    }
                }
                _ => i += 1,
            }
        }
        None
    }

    /// The key at `self.pos`; leaves the position after its `:`.
    fn key(&mut self) -> Res<Event<'a>> {
        let b = self.bytes();
        let p = self.pos;
        let (text, style, end) = match b[p] {
            b'\'' | b'"' => {
                let end = self.quoted_end(p).ok_or(Bail)?;
                let (text, style) = self.quoted(p, end)?;
                (text, style, end)
            }
            _ => {
                if !plain_start(b, p) {
                    return Err(Bail);
                }
                let colon = self.plain_key_end(p).ok_or(Bail)?;
                let text = self.src[p..colon].trim_end_matches(' ');
                // `<<` merges (and aliases come with them): saphyr's path.
                if text.is_empty() || text == "<<" {
                    return Err(Bail);
                }
                (Cow::Borrowed(text), ScalarStyle::Plain, colon)
            }
        };
        if end - p > MAX_KEY {
            return Err(Bail);
        }
        let mut q = end;
        while self.at(q) == b' ' {
            q += 1;
        }
        if self.at(q) != b':' || !self.blank(q + 1) {
            return Err(Bail);
        }
        self.pos = q + 1;
        Ok(Event::Scalar(text, style, 0, None))
    }

    /// A scalar (or flow collection) at `self.pos`; `parent` is the
    /// indentation of the enclosing block collection (`None` at the root),
    /// which the lines of a literal block or of a multi-line plain scalar
    /// must exceed; `inline` whether it follows `key:` or `- ` on its line
    /// (where literal blocks may start).
    fn scalar(&mut self, parent: Option<usize>, inline: bool) -> Res<Event<'a>> {
        let b = self.bytes();
        let p = self.pos;
        match b[p] {
            b'|' if inline => self.literal(parent.ok_or(Bail)?),
            b'\'' | b'"' => {
                let end = self.quoted_end(p).ok_or(Bail)?;
                let (text, style) = self.quoted(p, end)?;
                self.pos = end;
                self.end_line()?;
                Ok(Event::Scalar(text, style, 0, None))
            }
            b'[' | b'{' => {
                let mut q = p + 1;
                while self.at(q) == b' ' {
                    q += 1;
                }
                let empty_map = b[p] == b'{';
                if empty_map && self.at(q) != b'}' {
                    return Err(Bail);
                }
                // `[ ]`: the flow items see the `]`; `{}` is over.
                self.pos = match self.at(q) {
                    b']' if !empty_map => q,
                    b'}' if empty_map => q + 1,
                    _ => p + 1,
                };
                Ok(if empty_map {
                    self.stack.push(Ctx::EmptyMap);
                    Event::MappingStart(0, None)
                } else {
                    self.stack.push(Ctx::Flow { first: true });
                    Event::SequenceStart(0, None)
                })
            }
            _ if plain_start(b, p) => {
                let (end, line_end) = self.plain_line(p)?;
                let first = self.src[p..end].trim_end_matches(' ');
                self.pos = end;
                if end == line_end
                    && let Some(parent) = parent
                    && let Some(text) = self.plain_continued(first, parent)?
                {
                    return Ok(Event::Scalar(Cow::Owned(text), ScalarStyle::Plain, 0, None));
                }
                self.end_line()?;
                Ok(Event::Scalar(
                    Cow::Borrowed(first),
                    ScalarStyle::Plain,
                    0,
                    None,
                ))
            }
            _ => Err(Bail),
        }
    }

    /// The end of a plain scalar's line part from `p` (at a comment or the
    /// line end), and the line end.
    fn plain_line(&self, p: usize) -> Res<(usize, usize)> {
        let b = self.bytes();
        let line_end = memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i);
        let mut q = p;
        while let Some(i) = memchr2(b':', b'#', &b[q..line_end]) {
            let at = q + i;
            if b[at] == b':' {
                // `a: b: c` and `key: value:` are errors.
                if self.blank(at + 1) {
                    return Err(Bail);
                }
            } else if at > p && b[at - 1] == b' ' {
                return Ok((at, line_end));
            }
            q = at + 1;
        }
        Ok((line_end, line_end))
    }

    /// The lines continuing a plain scalar whose first line `first` ended
    /// at `self.pos` (a line end): lines indented deeper than `parent`,
    /// folded as YAML folds them (one line break becomes a space, an
    /// empty line a line break). `None`, leaving the position, when the
    /// next content line is not a continuation.
    fn plain_continued(&mut self, first: &str, parent: usize) -> Res<Option<String>> {
        let b = self.bytes();
        let mut text: Option<String> = None;
        let mut p = self.pos + 1;
        let mut empties = 0;
        let mut end = self.pos;
        while p < b.len() {
            let mut s = p;
            while s < b.len() && b[s] == b' ' {
                s += 1;
            }
            if s >= b.len() || b[s] == b'\n' {
                empties += 1;
                p = s + 1;
                continue;
            }
            // A comment ends the scalar (deeper content after it is an
            // error the enclosing collection finds).
            if s - p <= parent || b[s] == b'#' {
                break;
            }
            // Continuation lines that start like an indicator or hold a
            // comment or a `: ` are saphyr's to judge.
            if !plain_start(b, s) || b[s] == b'-' || b[s] == b'?' || b[s] == b':' {
                return Err(Bail);
            }
            let (stop, line_end) = self.plain_line(s)?;
            if stop != line_end {
                return Err(Bail);
            }
            let t = text.get_or_insert_with(|| first.to_string());
            if empties == 0 {
                t.push(' ');
            }
            for _ in 0..empties {
                t.push('\n');
            }
            empties = 0;
            t.push_str(self.src[s..line_end].trim_end_matches(' '));
            end = line_end;
            p = line_end + 1;
        }
        if text.is_some() {
            self.pos = end;
        }
        Ok(text)
    }

    /// The text of the quoted scalar `p..end` (quotes included).
    fn quoted(&self, p: usize, end: usize) -> Res<(Cow<'a, str>, ScalarStyle)> {
        let inner = &self.src[p + 1..end - 1];
        if self.bytes()[p] == b'\'' {
            let text = if inner.contains('\'') {
                Cow::Owned(inner.replace("''", "'"))
            } else {
                Cow::Borrowed(inner)
            };
            return Ok((text, ScalarStyle::SingleQuoted));
        }
        if !inner.contains('\\') {
            return Ok((Cow::Borrowed(inner), ScalarStyle::DoubleQuoted));
        }
        Ok((Cow::Owned(unescape(inner)?), ScalarStyle::DoubleQuoted))
    }

    /// A literal block scalar (`|`, `|-`, `|+`) at `self.pos` whose lines
    /// are indented deeper than `parent`.
    fn literal(&mut self, parent: usize) -> Res<Event<'a>> {
        let b = self.bytes();
        let mut p = self.pos + 1;
        let chomp = match self.at(p) {
            c @ (b'-' | b'+') => {
                p += 1;
                c
            }
            _ => b' ',
        };
        if !self.blank(p) {
            // An indentation indicator or something else.
            return Err(Bail);
        }
        self.pos = p;
        self.end_line()?;
        if self.pos >= b.len() || b[self.pos - 1] != b'\n' {
            return Err(Bail);
        }
        let mut out = String::new();
        let mut indent = 0;
        let mut empties = 0;
        let mut p = self.pos;
        while p < b.len() {
            let mut s = p;
            while s < b.len() && b[s] == b' ' {
                s += 1;
            }
            let spaces = s - p;
            if s >= b.len() || b[s] == b'\n' {
                if indent == 0 && spaces > parent {
                    // Before the first text line, a line of spaces decides
                    // the indentation too (or is an error).
                    return Err(Bail);
                }
                if indent > 0 && spaces > indent {
                    // Spaces past the indentation are text.
                    for _ in 0..empties {
                        out.push('\n');
                    }
                    empties = 0;
                    out.extend(std::iter::repeat_n(' ', spaces - indent));
                    out.push('\n');
                } else {
                    empties += 1;
                }
                p = s + 1;
                continue;
            }
            if indent == 0 {
                if spaces <= parent {
                    break;
                }
                indent = spaces;
            }
            if spaces < indent {
                break;
            }
            for _ in 0..empties {
                out.push('\n');
            }
            empties = 0;
            match memchr(b'\n', &b[s..]) {
                Some(i) => {
                    out.push_str(&self.src[p + indent..s + i]);
                    out.push('\n');
                    p = s + i + 1;
                }
                // The text's end ends the line as a line break would.
                None => {
                    out.push_str(&self.src[p + indent..]);
                    out.push('\n');
                    p = b.len();
                }
            }
        }
        if indent == 0 && empties > 0 {
            // Only empty lines: chomping rules on nothing; saphyr's path.
            return Err(Bail);
        }
        match chomp {
            b'-' if out.ends_with('\n') => {
                out.pop();
            }
            b'+' => {
                for _ in 0..empties {
                    out.push('\n');
                }
            }
            _ => {}
        }
        self.pos = p.min(b.len());
        // Trailing empty lines belong to the scalar: the next content is
        // on the line `p` starts.
        Ok(Event::Scalar(
            Cow::Owned(out),
            ScalarStyle::Literal,
            0,
            None,
        ))
    }

    /// The next item of a one-line flow sequence, or its end.
    fn flow_item(&mut self, first: bool) -> Res<Event<'a>> {
        let b = self.bytes();
        let mut p = self.pos;
        while self.at(p) == b' ' {
            p += 1;
        }
        if self.at(p) == b']' {
            self.stack.pop();
            self.pos = p + 1;
            self.end_line()?;
            self.after_close()?;
            return Ok(Event::SequenceEnd);
        }
        if !first {
            if self.at(p) != b',' {
                return Err(Bail);
            }
            p += 1;
            while self.at(p) == b' ' {
                p += 1;
            }
        }
        if let Some(Ctx::Flow { first }) = self.stack.last_mut() {
            *first = false;
        }
        let (text, style, end) = match self.at(p) {
            b'\'' | b'"' => {
                let end = self.quoted_end(p).ok_or(Bail)?;
                let (text, style) = self.quoted(p, end)?;
                (text, style, end)
            }
            _ => {
                // Plain items of word characters only: flow plain scalars
                // have rules of their own for `:`, `#` and indicators.
                let mut e = p;
                while e < b.len()
                    && (b[e].is_ascii_alphanumeric() || matches!(b[e], b'-' | b'_' | b'.' | b'/'))
                {
                    e += 1;
                }
                if e == p || (b[p] == b'-' && !self.at(p + 1).is_ascii_alphanumeric()) {
                    return Err(Bail);
                }
                let mut t = e;
                while self.at(t) == b' ' {
                    t += 1;
                }
                if !matches!(self.at(t), b',' | b']') {
                    return Err(Bail);
                }
                (Cow::Borrowed(&self.src[p..e]), ScalarStyle::Plain, e)
            }
        };
        let mut t = end;
        while self.at(t) == b' ' {
            t += 1;
        }
        if !matches!(self.at(t), b',' | b']') {
            return Err(Bail);
        }
        self.pos = end;
        Ok(Event::Scalar(text, style, 0, None))
    }
}

fn empty<'a>() -> Event<'a> {
    Event::Scalar(Cow::Borrowed(""), ScalarStyle::Plain, 0, None)
}

/// Whether a plain scalar may start at `p` in block context (libyaml:
/// not an indicator, but `-` followed by a non-blank is fine).
fn plain_start(b: &[u8], p: usize) -> bool {
    match b[p] {
        b'-' | b'?' | b':' => !matches!(b.get(p + 1), None | Some(b' ' | b'\n')),
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' | b' ' | b'\n' => false,
        _ => true,
    }
}

/// The escapes of a one-line double-quoted scalar that libyaml and
/// saphyr read alike; anything else goes to saphyr.
fn unescape(s: &str) -> Res<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next().ok_or(Bail)?;
        let hex = |n: usize, chars: &mut std::str::Chars<'_>| -> Res<char> {
            let digits: String = chars.by_ref().take(n).collect();
            if digits.len() != n || !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
                return Err(Bail);
            }
            u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or(Bail)
        };
        out.push(match e {
            '\\' => '\\',
            '"' => '"',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'x' => hex(2, &mut chars)?,
            'u' => hex(4, &mut chars)?,
            'U' => hex(8, &mut chars)?,
            _ => return Err(Bail),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::load::{Keep, Numbers, load_fast, load_saphyr};
    use super::super::{Mapping, Yaml};
    use std::path::Path;

    /// The fast scanner reads `text`, and exactly as saphyr does.
    #[track_caller]
    fn fast_same(text: &str) -> Yaml {
        let slow = load_saphyr(text, Numbers::Json, None).expect("saphyr reads it");
        let fast = load_fast(text, Numbers::Json, None).expect("the fast scanner reads it");
        assert_eq!(fast, slow, "{text:?}");
        fast
    }

    /// The fast scanner gives up on `text`.
    #[track_caller]
    fn bails(text: &str) {
        assert_eq!(load_fast(text, Numbers::Json, None), None, "{text:?}");
    }

    /// Whatever the fast scanner reads, saphyr reads the same; `false`
    /// when it gave up on a text saphyr reads.
    fn agrees(text: &str, numbers: Numbers) -> Result<bool, String> {
        let Some(fast) = load_fast(text, numbers, None) else {
            return match load_saphyr(text, numbers, None) {
                Ok(_) => Ok(false),
                Err(_) => Ok(true),
            };
        };
        match load_saphyr(text, numbers, None) {
            Ok(slow) if slow == fast => {}
            other => return Err(format!("{text:?}\nfast: {fast:?}\nsaphyr: {other:?}")),
        }
        // Manifest heads: the pruned read must agree too.
        let keep = |k: &str, depth: usize| match (k, depth) {
            ("metadata", 0) => Keep::Descend,
            ("kind" | "apiVersion", 0) | ("name" | "annotations", 1) => Keep::Whole,
            _ => Keep::Skip,
        };
        let fast = load_fast(text, numbers, Some(&keep));
        let slow = load_saphyr(text, numbers, Some(&keep)).ok();
        if fast.is_some() && fast != slow {
            return Err(format!("pruned {text:?}\nfast: {fast:?}\nsaphyr: {slow:?}"));
        }
        Ok(true)
    }

    fn map(entries: &[(&str, Yaml)]) -> Yaml {
        Yaml::Map(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Mapping>(),
        )
    }

    fn s(v: &str) -> Yaml {
        Yaml::Str(v.into())
    }

    #[test]
    fn reads_the_block_subset_as_saphyr_does() {
        let v = fast_same(
            "# comment\nimage:\n  repository: nginx # trailing\n  tag: \"1.25\"\n  pullPolicy: 'If''NotPresent'\nreplicas: 3\nenabled: true\nnothing:\nlist:\n- a\n- b: 1\n  c: [x, \"y\", 2]\n-   - nested\n    - more\nempty: []\nobj: {}\nscript: |\n  #!/bin/sh\n  echo \"a: b\" # kept\n\n  exit 0\nstrip: |-\n  one\n\nkeep: |+\n  two\n\nlast: x#y\n",
        );
        let Yaml::Map(m) = &v else { panic!() };
        assert_eq!(
            m["image"],
            map(&[
                ("pullPolicy", s("If'NotPresent")),
                ("repository", s("nginx")),
                ("tag", s("1.25"))
            ])
        );
        assert_eq!(m["replicas"], Yaml::Float(3.0));
        assert_eq!(m["nothing"], Yaml::Null);
        assert_eq!(
            m["script"],
            s("#!/bin/sh\necho \"a: b\" # kept\n\nexit 0\n")
        );
        assert_eq!(m["strip"], s("one"));
        assert_eq!(m["keep"], s("two\n\n"));
        assert_eq!(m["last"], s("x#y"));
        for text in [
            "",
            "# only a comment\n",
            "---\na: 1\n",
            "--- # c\na: 1\n---\nb: 2\n",
            "a: 1\n...\n",
            "plain scalar\n",
            "- a\n-\n- - b\n  - c\n",
            "  indented: root\n  second: 2\n",
            "a:\n  b:\n    c: d\n  e: f\ng: h\n",
            "k: \"esc \\\\ \\\" \\n \\t \\x41 \\u00e9 \\U0001F600\"\n",
            "dup: 1\ndup: 2\n",
            "\"quoted key\": 1\n'single': 2\n",
            "a: |\nb: 2\n",
            "- |\n  lit\n- x\n",
            "t: ~\ntrue: yes\n1: one\n",
            "url: http://example.com:8080/path\n",
            "a: -1\nb: -x\nc: --\nd: :x\n",
            "a: multi\n  line\n\n   folded\n  # comment\nb: [ ]\nc: { }\n",
            "- x\n  y\n- k: v\n    w\n",
            "a: |\n  x\n     \n  y\nb: |\n  at the end",
            // Non-ASCII text whose lead bytes are those of the breaks the
            // scanner gives up on (U+00A9, U+2014, U+20AC, U+FF21).
            "# caf\u{e9} \u{a9}\na: \u{2014}\nb: \u{20ac}1\nc: \u{ff21}\n",
        ] {
            fast_same(text);
        }
    }

    #[test]
    fn gives_up_outside_the_subset() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "<<: {a: 1}\n",
            "a: >\n  folded\n",
            "a: |2\n   x\n",
            "a: 'multi\n  line'\n",
            "a:\tb\n",
            "a: b\r\n",
            "? complex\n: key\n",
            "a: {b: c}\n",
            "a: [b, [c]]\n",
            "a: [b,\n  c]\n",
            "%YAML 1.1\n---\na: 1\n",
            "a: \"\\/\"\n",
            // A byte order mark and YAML 1.1's other line breaks, also
            // after other non-ASCII text.
            "\u{feff}a: 1\n",
            "a: \u{e9}\u{85}b: 1\n",
            "a: \u{2014} x\u{2028}b: 1\n",
            "a: \u{20ac}\nb: x\u{2029}y\n",
            // Errors: saphyr words them.
            "a: b: c\n",
            "a: 1\n b: 2\n",
            "- a\nb: 1\n",
            "a: 'x'y\n",
            "a: [b\n",
        ] {
            bails(text);
        }
    }

    /// A small deterministic generator for the damaged copies.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 16) as usize
        }
    }

    /// `text` with one random edit of the kind that turns YAML into other
    /// YAML or into an error: a byte removed, an indicator inserted, a
    /// line's indentation changed, a line repeated.
    fn damage(text: &str, rng: &mut Rng) -> String {
        const BITS: &[&str] = &[
            " ", "  ", ":", ": ", "-", "- ", "#", " #", "'", "\"", "\n", "|", "|-", "[", "]", "{",
            "}", ",", "\\", "&a ", "*a", "!", "?", "---\n", "x", "é", "\t", "~", "0",
        ];
        let mut t = text.to_string();
        if t.is_empty() {
            return BITS[rng.next() % BITS.len()].to_string();
        }
        let mut at = rng.next() % t.len();
        while !t.is_char_boundary(at) {
            at -= 1;
        }
        match rng.next() % 4 {
            0 => {
                let end = (at + 1..=t.len())
                    .find(|&i| t.is_char_boundary(i))
                    .unwrap_or(t.len());
                t.replace_range(at..end, "");
            }
            1 => t.insert_str(at, BITS[rng.next() % BITS.len()]),
            2 => {
                let start = t[..at].rfind('\n').map_or(0, |i| i + 1);
                if rng.next().is_multiple_of(2) {
                    t.insert(start, ' ');
                } else if t[start..].starts_with(' ') {
                    t.remove(start);
                }
            }
            _ => {
                let start = t[..at].rfind('\n').map_or(0, |i| i + 1);
                let end = t[at..].find('\n').map_or(t.len(), |i| at + i + 1);
                let line = t[start..end].to_string();
                t.insert_str(start, &line);
            }
        }
        t
    }

    fn yaml_texts(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                yaml_texts(&p, out);
            } else if p
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "out")
                && let Ok(text) = std::fs::read_to_string(&p)
            {
                // Rendered output: one document at a time, as helm reads
                // manifests back.
                for doc in text.split("\n---") {
                    out.push(doc.to_string());
                }
            }
        }
    }

    /// Every YAML text of the test data and of the shared corpus (when it
    /// is there), whole and in damaged copies: whatever the
    /// fast scanner reads, saphyr reads the same. Most of the real texts
    /// must be read fast (that is the point of it).
    /// A `}` right after a sequence's `[` is no empty map's end (found by
    /// the damaged-corpus test below).
    #[test]
    fn a_brace_does_not_close_a_flow_sequence() {
        assert!(agrees("a: [}\"x\"]\n", Numbers::Json).is_ok());
        assert!(agrees("a: [ }]\n", Numbers::Json).is_ok());
    }

    #[test]
    fn agrees_with_saphyr_on_real_and_damaged_yaml() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = Vec::new();
        for dir in ["compat", "fixtures", "modules", "global-hooks"] {
            yaml_texts(&root.join(dir), &mut texts);
        }
        // The shared corpus: `$ANTIOPA_CORPUS`, else `../shared/corpus`.
        let corpus = std::env::var_os("ANTIOPA_CORPUS")
            .map_or_else(|| root.join("../shared/corpus"), Into::into);
        yaml_texts(&corpus, &mut texts);
        assert!(texts.len() > 500, "test data not found: {}", texts.len());
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Texts read fast or refused by both (templates are no YAML).
        let (mut read, mut failures) = (0, Vec::new());
        for text in &texts {
            match agrees(text, Numbers::Json) {
                Ok(true) => read += 1,
                Ok(false) => {}
                Err(e) => failures.push(e),
            }
            if let Err(e) = agrees(text, Numbers::Yaml) {
                failures.push(e);
            }
            for _ in 0..8 {
                let damaged = damage(text, &mut rng);
                if let Err(e) = agrees(&damaged, Numbers::Json) {
                    failures.push(e);
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} disagreements:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n\n")
        );
        // Texts the fast scanner gave up on although they are YAML: the
        // test data's tags, anchors and folded scalars, a few percent.
        assert!(
            read * 100 > texts.len() * 95,
            "fast path read only {read} of {} texts",
            texts.len()
        );
    }
}
