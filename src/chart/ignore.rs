//! `.helmignore` rules: a port of Helm's `pkg/ignore` (v3.17).
//!
//! Hand-written because Helm's rules are not gitignore's: patterns are Go
//! `filepath.Match` globs, `**` is rejected, a pattern without `/` matches
//! the base name only, a leading `/` anchors to the chart root, a trailing
//! `/` matches directories only, and `!` negation has Helm's own (inverted)
//! meaning. The rules apply only while walking a chart *directory*; Helm
//! does not apply them to archives.

/// One parsed rule (Helm's `pattern`).
#[derive(Clone, Debug)]
struct Pattern {
    rule: String,
    negate: bool,
    must_dir: bool,
    kind: MatchKind,
    /// How `rule` is matched, decided once: every rule is tried against
    /// every file of the chart, and most rules are literals or `*.ext`.
    glob: Glob,
}

/// A rule's glob (after `!`, `/` are stripped), in the simplest form that
/// matches exactly what Go's `filepath.Match` does.
#[derive(Clone, Debug)]
enum Glob {
    /// A bad pattern: Go's `filepath.Match` reports it whatever the name,
    /// and Helm treats that as no match.
    Invalid,
    /// No metacharacters: the name must equal it.
    Literal,
    /// `*` then a literal: a name ending in it, with no `/` before.
    Suffix(String),
    /// A literal then `*`: a name starting with it, with no `/` after.
    Prefix(String),
    /// Anything else, matched by `match_glob` trusting the syntax (it was
    /// checked once), so a mismatch stops at once.
    General,
}

impl Glob {
    fn of(rule: &str) -> Glob {
        let literal = |s: &str| !s.contains(['*', '?', '[', '\\']);
        if go_match(rule, "").is_err() {
            Glob::Invalid
        } else if literal(rule) {
            Glob::Literal
        } else if let Some(lit) = rule.strip_prefix('*').filter(|l| literal(l)) {
            Glob::Suffix(lit.to_string())
        } else if let Some(lit) = rule.strip_suffix('*').filter(|l| literal(l)) {
            Glob::Prefix(lit.to_string())
        } else {
            Glob::General
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum MatchKind {
    /// Leading `/`: match the whole relative path against the rule without it.
    Anchored,
    /// The rule contains `/`: match the whole relative path.
    Path,
    /// No `/`: match the base name.
    Base,
}

/// A `.helmignore` rule set (Helm's `ignore.Rules`).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Rules with no patterns (`ignore.Empty`).
    pub fn empty() -> Self {
        Rules::default()
    }

    /// Parse a `.helmignore` file (`ignore.Parse`): one rule per line, a UTF-8
    /// BOM on the first line dropped, blank lines and `#` comments skipped.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut r = Rules::empty();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // bufio.Scanner's ScanLines: split on \n, drop a trailing \r.
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            r.parse_rule(line)?;
        }
        Ok(r)
    }

    /// Helm's built-in rule: dot-files directly under `templates/`.
    pub fn add_defaults(&mut self) {
        // The default rule is valid; parse_rule cannot fail on it.
        let _ = self.parse_rule("templates/.?*");
    }

    fn parse_rule(&mut self, rule: &str) -> Result<(), String> {
        // strings.TrimSpace
        let rule = rule.trim_matches(|c: char| c.is_whitespace());
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err("double-star (**) syntax is not supported".to_string());
        }
        // filepath.Match(rule, "abc") validates the pattern.
        go_match(rule, "abc")?;
        let mut rule = rule;
        let negate = if let Some(r) = rule.strip_prefix('!') {
            rule = r;
            true
        } else {
            false
        };
        let must_dir = if let Some(r) = rule.strip_suffix('/') {
            rule = r;
            true
        } else {
            false
        };
        let (kind, rule) = if let Some(r) = rule.strip_prefix('/') {
            (MatchKind::Anchored, r)
        } else if rule.contains('/') {
            (MatchKind::Path, rule)
        } else {
            (MatchKind::Base, rule)
        };
        self.patterns.push(Pattern {
            glob: Glob::of(rule),
            rule: rule.to_string(),
            negate,
            must_dir,
            kind,
        });
        Ok(())
    }

    /// Whether `path` (relative to the chart root, `/`-separated) is ignored
    /// (`Rules.Ignore`). Like Helm, a negated rule that does *not* match
    /// ignores the path, and the first deciding rule wins.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        let base = base_name(path);
        for p in &self.patterns {
            if p.negate {
                if p.must_dir && !is_dir {
                    return true;
                }
                if !p.matches(path, base) {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if p.matches(path, base) {
                return true;
            }
        }
        false
    }
}

/// `filepath.Base` of a relative path.
fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/"
    } else {
        crate::scan::after_last_slash(trimmed)
    }
}

impl Pattern {
    /// Whether the rule matches `path`, whose base name is `base`.
    fn matches(&self, path: &str, base: &str) -> bool {
        let name = match self.kind {
            MatchKind::Anchored | MatchKind::Path => path,
            MatchKind::Base => base,
        };
        match &self.glob {
            Glob::Invalid => false,
            Glob::Literal => name == self.rule,
            Glob::Suffix(lit) => name
                .strip_suffix(lit.as_str())
                .is_some_and(|head| !head.contains('/')),
            Glob::Prefix(lit) => name
                .strip_prefix(lit.as_str())
                .is_some_and(|tail| !tail.contains('/')),
            Glob::General => match_glob(&self.rule, name, Syntax::Trusted).unwrap_or(false),
        }
    }
}

/// Go's `path/filepath.Match` on Unix (`*`, `?`, `[...]` classes with `^`
/// negation and ranges, `\` escapes; `*` and `?` never match `/`). Errors
/// are Go's `ErrBadPattern` text.
pub fn go_match(pattern: &str, name: &str) -> Result<bool, String> {
    match_glob(pattern, name, Syntax::Check)
}

/// Whether matching must check the whole pattern's syntax (Go's behaviour)
/// or may trust it (checked once already) and stop at the first mismatch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Check,
    Trusted,
}

fn match_glob(pattern: &str, name: &str, syntax: Syntax) -> Result<bool, String> {
    const BAD: &str = "syntax error in pattern";
    let mut pattern: &str = pattern;
    let mut name: &str = name;
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // Trailing * matches the rest unless it contains a separator.
            return Ok(!name.contains('/'));
        }
        // Look for a match at the current position.
        let (t, ok, err) = match_chunk(chunk, name, syntax);
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if let Some(e) = err {
            return Err(e);
        }
        if star {
            // Look for a match skipping i+1 bytes; cannot skip '/'.
            let bytes = name.as_bytes();
            let mut i = 0;
            while i < bytes.len() && bytes[i] != b'/' {
                // advance to the next char boundary
                let mut j = i + 1;
                while j < bytes.len() && !name.is_char_boundary(j) {
                    j += 1;
                }
                let (t, ok, err) = match_chunk(chunk, &name[j..], syntax);
                if ok {
                    // if we're the last chunk, make sure we exhausted the name
                    if pattern.is_empty() && !t.is_empty() {
                        i = j;
                        continue;
                    }
                    name = t;
                    continue 'pattern;
                }
                if let Some(e) = err {
                    return Err(e);
                }
                i = j;
            }
        }
        // Before returning false with no error, check that the remainder of
        // the pattern is syntactically valid.
        while syntax == Syntax::Check && !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            let (_, _, err) = match_chunk(chunk, "", syntax);
            if err.is_some() {
                return Err(BAD.to_string());
            }
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Go's `scanChunk`: leading stars, then the chunk up to the next unescaped
/// `*` outside a class.
fn scan_chunk(pattern: &str) -> (bool, &str, &str) {
    let mut star = false;
    let mut p = pattern;
    while let Some(r) = p.strip_prefix('*') {
        p = r;
        star = true;
    }
    let bytes = p.as_bytes();
    let mut inrange = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // An escape skips the next byte; a trailing `\\` is reported
            // by matchChunk as a bad pattern.
            b'\\' if i + 1 < bytes.len() => i += 1,
            b'[' => inrange = true,
            b']' => inrange = false,
            b'*' if !inrange => break,
            _ => {}
        }
        i += 1;
    }
    (star, &p[..i], &p[i..])
}

/// Go's `matchChunk`: returns the rest of `s` after matching `chunk`, whether
/// it matched, and a syntax error. The chunk is consumed char by char
/// through a `&str` cursor (no allocation: this runs for every rule and
/// every file of a chart).
fn match_chunk<'a>(chunk: &str, s: &'a str, syntax: Syntax) -> (&'a str, bool, Option<String>) {
    const BAD: &str = "syntax error in pattern";
    let mut chunk = chunk;
    let mut s = s;
    // failed records whether the match has failed; after that, only the
    // pattern's syntax is checked (Go 1.16+ behaviour).
    let mut failed = false;
    while let Some(first) = chunk.chars().next() {
        if failed && syntax == Syntax::Trusted {
            return ("", false, None);
        }
        if !failed && s.is_empty() {
            failed = true;
        }
        match first {
            '[' => {
                let mut r = '\0';
                if !failed {
                    r = s.chars().next().unwrap_or('\0');
                    s = &s[r.len_utf8().min(s.len())..];
                }
                chunk = &chunk[1..];
                let mut negated = false;
                if let Some(rest) = chunk.strip_prefix('^') {
                    negated = true;
                    chunk = rest;
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if nrange > 0
                        && let Some(rest) = chunk.strip_prefix(']')
                    {
                        chunk = rest;
                        break;
                    }
                    let lo = match get_esc(&mut chunk) {
                        Ok(c) => c,
                        Err(()) => return ("", false, Some(BAD.to_string())),
                    };
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix('-') {
                        chunk = rest;
                        hi = match get_esc(&mut chunk) {
                            Ok(c) => c,
                            Err(()) => return ("", false, Some(BAD.to_string())),
                        };
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    nrange += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    let c = s.chars().next().unwrap_or('\0');
                    if c == '/' {
                        failed = true;
                    }
                    s = &s[c.len_utf8().min(s.len())..];
                }
                chunk = &chunk[1..];
            }
            '\\' => {
                chunk = &chunk[1..];
                let Some(c) = chunk.chars().next() else {
                    return ("", false, Some(BAD.to_string()));
                };
                if !failed {
                    if let Some(rest) = s.strip_prefix(c) {
                        s = rest;
                    } else {
                        failed = true;
                    }
                }
                chunk = &chunk[c.len_utf8()..];
            }
            c => {
                if !failed {
                    if let Some(rest) = s.strip_prefix(c) {
                        s = rest;
                    } else {
                        failed = true;
                    }
                }
                chunk = &chunk[c.len_utf8()..];
            }
        }
    }
    if failed {
        return ("", false, None);
    }
    (s, true, None)
}

/// Go's `getEsc`: one possibly escaped character of a class.
fn get_esc(chunk: &mut &str) -> Result<char, ()> {
    let mut it = chunk.chars();
    let mut c = match it.next() {
        None | Some('-' | ']') => return Err(()),
        Some(c) => c,
    };
    if c == '\\' {
        c = it.next().ok_or(())?;
    }
    *chunk = it.as_str();
    if chunk.is_empty() {
        return Err(());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_match_basics() {
        assert_eq!(go_match("*.txt", "a.txt"), Ok(true));
        assert_eq!(go_match("*.txt", "d/a.txt"), Ok(false));
        assert_eq!(go_match("a?c", "abc"), Ok(true));
        assert_eq!(go_match("[a-c]x", "bx"), Ok(true));
        assert_eq!(go_match("[^a-c]x", "bx"), Ok(false));
        assert_eq!(go_match("\\*", "*"), Ok(true));
        assert!(go_match("[", "abc").is_err());
        assert!(go_match("a\\", "abc").is_err());
        assert_eq!(go_match("templates/.?*", "templates/.x"), Ok(true));
        assert_eq!(go_match("templates/.?*", "templates/x"), Ok(false));
    }

    /// Matching a checked-once pattern gives what Go's `filepath.Match`
    /// gives, over patterns and names that fail at every position.
    #[test]
    fn trusted_match_agrees_with_go_match() {
        let patterns = [
            "*.txt",
            "a*b*c",
            "*",
            "?",
            "a?c",
            "[a-c]x",
            "[^a-c]*",
            "\\*x",
            "templates/.?*",
            "*~",
            "*/*.yaml",
            "a[",
            "a\\",
            "[]a]",
            "x*[",
            "ab*",
            "*b",
            "[a-]",
            "abc",
            "**",
            "*.txt*",
            "a/b",
            "a/*",
            "*/b",
        ];
        let names = [
            "",
            "a",
            "abc",
            "a.txt",
            "d/a.txt",
            "aXbYc",
            "abd",
            "bx",
            "*x",
            "templates/.x",
            "file~",
            "t/x.yaml",
            "t/u/x.yaml",
            "]",
            "-",
            "ab/c",
            "é.txt",
            "a/b",
            "a/b/c",
            "x/b",
            "abcb",
        ];
        for p in patterns {
            let valid = go_match(p, "").is_ok();
            let rule = Pattern {
                rule: p.to_string(),
                negate: false,
                must_dir: false,
                kind: MatchKind::Path,
                glob: Glob::of(p),
            };
            for n in names {
                let go = go_match(p, n).unwrap_or(false);
                let fast = valid && match_glob(p, n, Syntax::Trusted).unwrap_or(false);
                assert_eq!(go, fast, "pattern {p:?} name {n:?}");
                assert_eq!(
                    go,
                    rule.matches(n, base_name(n)),
                    "pattern {p:?} name {n:?} ({:?})",
                    rule.glob
                );
            }
        }
    }

    /// Helm's pkg/ignore rules_test.go cases (path, is_dir, ignored).
    #[test]
    fn helm_rules() {
        let cases: &[(&str, &str, bool, bool)] = &[
            ("helm.txt", "helm.txt", false, true),
            ("helm.*", "helm.txt", false, true),
            ("helm.*", "rudder.txt", false, false),
            ("*.txt", "tiller.txt", false, true),
            ("*.txt", "cargo/a.txt", false, true),
            ("cargo/*.txt", "cargo/a.txt", false, true),
            ("cargo/*.*", "cargo/a.txt", false, true),
            ("cargo/*.txt", "mast/a.txt", false, false),
            ("ru[c-e]?er.txt", "rudder.txt", false, true),
            ("templates/.?*", "templates/.dotfile", false, true),
            ("/tiller.txt", "tiller.txt", false, true),
            ("/tiller.txt", "cargo/tiller.txt", false, false),
            ("/cargo/*.txt", "cargo/a.txt", false, true),
            ("cargo/", "cargo", true, true),
            ("cargo/", "cargo/", true, true),
            ("cargo/", "mast/", true, false),
            ("helm.txt/", "helm.txt", false, false),
            ("!helm.txt", "helm.txt", false, false),
            ("!helm.txt", "tiller.txt", false, true),
            ("!*.txt", "cargo", true, true),
            ("!cargo/", "mast/", true, true),
            ("!cargo/", "cargo/a.txt", false, true),
        ];
        for (rule, path, is_dir, want) in cases {
            let r = Rules::parse(rule).unwrap();
            assert_eq!(r.ignore(path, *is_dir), *want, "{rule} {path}");
        }
        assert_eq!(
            Rules::parse("a/**/b").unwrap_err(),
            "double-star (**) syntax is not supported"
        );
        assert_eq!(Rules::parse("[").unwrap_err(), "syntax error in pattern");
    }
}
