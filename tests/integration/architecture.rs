//! Checks the module map of README.md ("Who may use whom") against what each
//! module's sources use, so layering can't erode silently. The map is read
//! from the README itself, so the two cannot drift apart. Sources are parsed
//! with `syn`: grouped imports (`use crate::{a, b}`), `super::super::x`
//! chains that leave a module and paths in expressions all count; the
//! `crate::x` written inside macro and attribute arguments (which `syn`
//! leaves as tokens) are found by a text scan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

/// The README's "Who may use whom" paragraph: module → modules it may use
/// (`everything` → every module; `nothing` or a remark in parentheses → none).
fn readme_map() -> BTreeMap<String, Vec<String>> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md");
    let start = readme
        .find("Who may use whom:")
        .expect("README.md has a 'Who may use whom:' paragraph");
    let para = readme[start + "Who may use whom:".len()..]
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .replace('\n', " ");
    let mut map = BTreeMap::new();
    for rule in para.trim().trim_end_matches('.').split('·') {
        let (from, to) = rule
            .split_once('→')
            .unwrap_or_else(|| panic!("a rule without →: {rule:?}"));
        let targets: Vec<String> = to
            .split(',')
            .map(|t| t.trim())
            .filter(|t| !t.starts_with('('))
            .filter_map(|t| t.split_whitespace().next())
            .filter(|t| *t != "nothing")
            .map(String::from)
            .collect();
        map.insert(from.trim().to_string(), targets);
    }
    let all: Vec<String> = map.keys().cloned().collect();
    for targets in map.values_mut() {
        if targets.iter().any(|t| t == "everything") {
            *targets = all.clone();
        }
    }
    map
}

/// The modules of the crate: directories and files under src/ (but lib.rs
/// and main.rs), each with its files.
fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("read src").flatten() {
        let p = entry.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut files = Vec::new();
            rust_files(&p, &mut files);
            out.insert(name, files);
        } else if p.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            out.insert(name, vec![p]);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: src/apply/run.rs → [apply, run]; a mod.rs
/// is its directory's module.
fn module_path(file: &Path) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rel = file.strip_prefix(&src).expect("under src");
    let mut path: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    path
}

/// Every top-level module a file's paths reach, with the path as written.
struct Uses {
    path: Vec<String>,
    found: Vec<(String, String)>,
}

impl Uses {
    fn resolve(&mut self, segs: &[String]) {
        let top = match segs.first().map(String::as_str) {
            Some("crate") => segs.get(1).cloned(),
            Some("super") => {
                let k = segs.iter().take_while(|s| *s == "super").count();
                match self.path.len().checked_sub(k) {
                    Some(0) | None => segs.get(k).cloned(),
                    Some(_) => self.path.first().cloned(),
                }
            }
            _ => None,
        };
        if let Some(top) = top {
            self.found.push((top, segs.join("::")));
        }
    }

    fn use_tree(&mut self, t: &syn::UseTree, prefix: &mut Vec<String>) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut segs = prefix.clone();
                segs.push(n.ident.to_string());
                self.resolve(&segs);
            }
            syn::UseTree::Rename(r) => {
                let mut segs = prefix.clone();
                segs.push(r.ident.to_string());
                self.resolve(&segs);
            }
            syn::UseTree::Glob(_) => {
                let mut segs = prefix.clone();
                segs.push("*".into());
                self.resolve(&segs);
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(item, prefix);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.path.push(m.ident.to_string());
            visit::visit_item_mod(self, m);
            self.path.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, &mut Vec::new());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segs);
        visit::visit_path(self, p);
    }
}

/// `crate::x` written in macro and attribute arguments.
fn text_uses(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let used: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !used.is_empty() {
            out.push((used.clone(), format!("crate::{used}")));
        }
    }
    out
}

#[test]
fn modules_only_use_what_the_architecture_allows() {
    let map = readme_map();
    let mut violations = Vec::new();
    for (module, files) in modules() {
        let Some(may_use) = map.get(&module) else {
            continue;
        };
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read source");
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{}: not Rust: {e}", file.display()));
            let mut uses = Uses {
                path: module_path(&file),
                found: Vec::new(),
            };
            uses.visit_file(&ast);
            uses.found.extend(text_uses(&text));
            for (used, written) in uses.found {
                if used != module && map.contains_key(&used) && !may_use.contains(&used) {
                    violations.push(format!(
                        "{}: {module} uses {used} ({written})",
                        file.display()
                    ));
                }
            }
        }
    }
    violations.sort();
    violations.dedup();
    assert!(
        violations.is_empty(),
        "layering violations (README.md, 'Who may use whom'):\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_module_under_src_is_in_the_map() {
    let map = readme_map();
    for module in modules().keys() {
        assert!(
            map.contains_key(module),
            "src/{module} is missing from README.md's 'Who may use whom'"
        );
    }
}

#[test]
fn the_check_sees_grouped_imports_and_super_chains() {
    let file = syn::parse_file(
        "use crate::{apply::X, yaml::{Y, self}};\nmod inner { use super::super::cluster::Z; fn f() { super::super::release::g(); } }\n",
    )
    .unwrap();
    // As if it were src/diff/mod.rs: `super::super` from `inner` is the crate.
    let mut uses = Uses {
        path: vec!["diff".into()],
        found: Vec::new(),
    };
    uses.visit_file(&file);
    let mut tops: Vec<String> = uses.found.into_iter().map(|(t, _)| t).collect();
    tops.sort();
    tops.dedup();
    assert_eq!(tops, ["apply", "cluster", "release", "yaml"]);
}
