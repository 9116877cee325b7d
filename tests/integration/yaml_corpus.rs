//! Every values file of the shared chart corpus (when present on this
//! machine) must load as Helm loads it, and must survive `toYaml` →
//! `fromYaml` unchanged (Helm charts call `toYaml | fromYaml` constantly).

use antiopa::yaml::{Yaml, check_input, from_yaml, from_yaml_map, to_yaml};
use std::path::{Path, PathBuf};

const CORPUS: &str = "/work/shared/corpus";

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    collect(dir, out, &|n| {
        n.starts_with("values") && n.ends_with(".yaml")
    });
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>, want: &dyn Fn(&str) -> bool) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "templates") {
                collect(&p, out, want);
            }
        } else if p.file_name().and_then(|n| n.to_str()).is_some_and(want) {
            out.push(p);
        }
    }
}

#[test]
fn corpus_values_load_and_round_trip() {
    let mut files = Vec::new();
    yaml_files(Path::new(CORPUS), &mut files);
    let mut failures = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        match from_yaml_map(&text, "map[string]interface {}") {
            Err(e) => failures.push(format!("{}: {e}", f.display())),
            Ok(m) => {
                let v = Yaml::Map(m);
                let back = from_yaml_map(&to_yaml(&v), "map[string]interface {}").map(Yaml::Map);
                if back.as_ref() != Ok(&v) {
                    failures.push(format!("{}: toYaml|fromYaml differs", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every other YAML file of the corpus outside `templates/` (Chart.yaml,
/// CRDs, bundled files, expected manifests; up to 300 KB to keep debug test
/// runs short) reads without error.
#[test]
fn corpus_yaml_files_load() {
    let mut files = Vec::new();
    collect(Path::new(CORPUS), &mut files, &|n| {
        n.ends_with(".yaml") || n.ends_with(".yml")
    });
    let mut failures = Vec::new();
    for f in &files {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        if bytes.len() > 300_000 {
            continue;
        }
        if let Err(e) = check_input(&bytes).and_then(from_yaml) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
