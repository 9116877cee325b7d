//! Printing a [`DiffResult`]: a unified diff per changed object under a
//! one-line header (`~ apps/v1 Deployment web/echo (module echo-server)`),
//! whole objects for added (`+`) and removed (`-`) ones, and a summary
//! line; optionally in ANSI colours, or as Markdown (a table of objects and
//! fenced `diff` blocks) for a pull request.

use similar::{ChangeTag, TextDiff};

use super::{Change, DiffResult, Entry};

/// Output flavour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Markdown,
}

/// How to print.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// Unchanged lines around each change (`--context`, as `diff -U`).
    pub context: usize,
    /// ANSI colours (text format only).
    pub color: bool,
    pub format: Format,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            context: 3,
            color: false,
            format: Format::Text,
        }
    }
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The whole report.
pub fn render(result: &DiffResult, opts: &RenderOptions) -> String {
    match opts.format {
        Format::Text => text(result, opts),
        Format::Markdown => markdown(result, opts),
    }
}

/// `apps/v1 Deployment web/echo (module echo-server)`.
fn title(e: &Entry) -> String {
    if e.origin.is_empty() {
        e.key.to_string()
    } else {
        format!("{} ({})", e.key, e.origin)
    }
}

/// Unified-diff body lines of one entry: hunks for a change, every line
/// prefixed for an added or removed object. Each item is (tag, line with
/// its prefix, without the newline).
fn body(e: &Entry, context: usize) -> Vec<(Line, String)> {
    let mut out = Vec::new();
    match (&e.old, &e.new) {
        (Some(old), Some(new)) => {
            let diff = TextDiff::from_lines(old.as_str(), new.as_str());
            let mut unified = diff.unified_diff();
            unified.context_radius(context);
            for hunk in unified.iter_hunks() {
                out.push((Line::Hunk, hunk.header().to_string()));
                for c in hunk.iter_changes() {
                    let (tag, sign) = match c.tag() {
                        ChangeTag::Delete => (Line::Del, '-'),
                        ChangeTag::Insert => (Line::Add, '+'),
                        ChangeTag::Equal => (Line::Same, ' '),
                    };
                    let v = c.value();
                    out.push((tag, format!("{sign}{}", v.strip_suffix('\n').unwrap_or(v))));
                }
            }
        }
        (None, Some(text)) => out.extend(text.lines().map(|l| (Line::Add, format!("+{l}")))),
        (Some(text), None) => out.extend(text.lines().map(|l| (Line::Del, format!("-{l}")))),
        (None, None) => {}
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Hunk,
    Add,
    Del,
    Same,
}

fn text(result: &DiffResult, opts: &RenderOptions) -> String {
    let paint = |s: &str, colour: &str| {
        if opts.color {
            format!("{colour}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    for e in &result.entries {
        let sign_colour = match e.change {
            Change::Added => GREEN,
            Change::Removed => RED,
            Change::Changed => YELLOW,
        };
        let header = format!("{} {}", e.change.sign(), title(e));
        out.push_str(&paint(&header, &format!("{BOLD}{sign_colour}")));
        out.push('\n');
        for (tag, line) in body(e, opts.context) {
            let colour = match tag {
                Line::Hunk => CYAN,
                Line::Add => GREEN,
                Line::Del => RED,
                Line::Same => "",
            };
            if colour.is_empty() {
                out.push_str(&line);
            } else {
                out.push_str(&paint(&line, colour));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&result.summary());
    out.push('\n');
    out
}

/// A table cell: pipes escaped, newlines flattened.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A code span that survives backticks inside.
fn code(s: &str) -> String {
    let ticks = "`".repeat(longest_run(s, '`') + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for ch in s.chars() {
        if ch == c {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn markdown(result: &DiffResult, opts: &RenderOptions) -> String {
    let mut out = String::from("### antiopa diff\n\n");
    if !result.has_differences() {
        out.push_str(&format!("No differences. {}\n", result.summary()));
        return out;
    }
    out.push_str(&format!("{}\n\n", result.summary()));
    // The source column only when there is something to put in it.
    let sources = result.entries.iter().any(|e| !e.origin.is_empty());
    out.push_str(if sources {
        "| | object | source |\n|---|---|---|\n"
    } else {
        "| | object |\n|---|---|\n"
    });
    for e in &result.entries {
        let what = match e.change {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
        };
        out.push_str(&format!(
            "| {} {what} | {} |",
            e.change.sign(),
            cell(&code(&e.key.to_string())),
        ));
        if sources {
            out.push_str(&format!(" {} |", cell(&e.origin)));
        }
        out.push('\n');
    }
    for e in &result.entries {
        let lines = body(e, opts.context);
        // A fence longer than any backtick run in the body.
        let longest = lines
            .iter()
            .map(|(_, l)| longest_run(l, '`'))
            .max()
            .unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        let origin = if e.origin.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.origin)
        };
        out.push_str(&format!(
            "\n#### {} {}{origin}\n\n{fence}diff\n",
            e.change.sign(),
            code(&e.key.to_string()),
        ));
        for (_, l) in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out.push_str(&fence);
        out.push('\n');
    }
    out
}
