//! Checks the module dependency map of README.md ("Who may use whom") against the
//! `crate::` paths each module's source files mention, so layering can't erode silently.

use std::collections::BTreeMap;
use std::path::Path;

/// module → modules it may use.
const ALLOWED: &[(&str, &[&str])] = &[
    // A leaf (src/scan.rs): byte searches.
    ("scan", &[]),
    ("engine", &["scan"]),
    ("yaml", &["scan"]),
    ("chart", &["engine", "yaml", "scan"]),
    ("values", &["yaml"]),
    (
        "cli",
        &[
            "engine", "yaml", "chart", "values", "hooks", "module", "cluster", "apply", "release",
            "diff",
        ],
    ),
    ("hooks", &["values", "yaml"]),
    ("module", &["chart", "values", "hooks", "yaml"]),
    ("diff", &["yaml"]),
    ("cluster", &[]),
    // apply parses rendered text with chart::manifest's splitting, kind
    // order and source blocks.
    ("apply", &["cluster", "yaml", "chart"]),
    // release records what apply did, so it drives apply.
    ("release", &["cluster", "apply"]),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_only_use_what_the_architecture_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for (module, may_use) in &allowed {
        let mut files = Vec::new();
        let dir = src.join(module);
        if !dir.exists() {
            continue;
        }
        rust_files(&dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read source");
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(i) = rest.find("crate::") {
                    rest = &rest[i + "crate::".len()..];
                    let used: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if used != *module
                        && allowed.contains_key(used.as_str())
                        && !may_use.contains(&used.as_str())
                    {
                        violations.push(format!(
                            "{}:{}: {module} uses {used}",
                            file.display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_module_under_src_is_in_the_map() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let known: Vec<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    for entry in std::fs::read_dir(&src).expect("read src").flatten() {
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                known.contains(&name.as_str()),
                "src/{name} is missing from the architecture map"
            );
        }
    }
}
