//! Every values file of the shared chart corpus (when present on this
//! machine) must load as Helm loads it, and must survive `toYaml` →
//! `fromYaml` unchanged (Helm charts call `toYaml | fromYaml` constantly).

use antiopa::yaml::{Yaml, from_yaml_map, to_yaml};
use std::path::{Path, PathBuf};

const CORPUS: &str = "/work/shared/corpus";

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("values") && n.ends_with(".yaml"))
        {
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
