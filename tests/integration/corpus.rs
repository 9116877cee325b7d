//! The real-world corpus (`../shared/corpus`, or `$ANTIOPA_CORPUS`): every row of `cases.tsv` is
//! rendered with `antiopa template <release> <chart_dir> --namespace <ns> [--values <file>]` from
//! the corpus directory, exactly as helm was, and compared with `expected/`:
//! - `ok` rows: stdout byte for byte;
//! - `error` rows: a failing exit and helm's stderr text;
//! - `nondeterministic=yes` rows: byte for byte except the values listed in `nondet/<case>.tsv`
//!   (document index + JSON pointer), whose shape is checked instead: same YAML type, and the same
//!   kind of content as helm's (base64 PEM blocks with the same labels, base64 of the same length,
//!   sha256 hex, a 5-field cron schedule).
//!
//! Every case must pass: a gate that a few failures could slip under would go soft. Without a
//! corpus the test is skipped with a message, except under `CI=true`, where that is a failure.
//! `CORPUS_FILTER=substr` selects cases; `CORPUS_TIMEOUT_SECS` is the per-case limit (default 180);
//! `ANTIOPA_BIN` runs another binary (with helm itself, every case must pass: a harness check).

use crate::common;

use crate::common::{
    CorpusCase, corpus_dir, first_difference, in_ci, isolate_env, read_corpus_cases,
    run_with_timeout, say,
};
use base64::Engine as _;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Splits `helm template` output into documents the way nondet-scan.py counts them: on lines
/// that are `---` (optionally followed by blanks), dropping chunks that are only whitespace.
fn split_docs(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if bare.starts_with("---") && bare[3..].trim_matches([' ', '\t']).is_empty() {
            docs.push(std::mem::take(&mut cur));
        } else {
            cur.push_str(line);
        }
    }
    docs.push(cur);
    docs.into_iter().filter(|d| !d.trim().is_empty()).collect()
}

/// `nondet/<case>.tsv`: doc index → JSON pointers whose values vary between helm runs.
fn read_masks(path: &Path) -> Result<BTreeMap<usize, Vec<String>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut masks: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let (Some(idx), Some(ptr)) = (f.first(), f.get(3)) else {
            return Err(format!("{}: bad line {line:?}", path.display()));
        };
        let idx: usize = idx
            .parse()
            .map_err(|e| format!("{}: bad doc index in {line:?}: {e}", path.display()))?;
        masks.entry(idx).or_default().push(ptr.to_string());
    }
    Ok(masks)
}

fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "sequence",
        Json::Object(_) => "mapping",
    }
}

/// The `-----BEGIN X-----` labels of a PEM text, in order.
fn pem_labels(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("-----BEGIN "))
        .map(|l| l.trim_end_matches('-').to_string())
        .collect()
}

fn b64(s: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks that a masked value produced by antiopa has the same shape as helm's.
fn same_shape(ptr: &str, want: &Json, got: &Json) -> Result<(), String> {
    if json_type(want) != json_type(got) {
        return Err(format!(
            "{ptr}: helm has a {}, antiopa a {}",
            json_type(want),
            json_type(got)
        ));
    }
    let (Json::String(w), Json::String(g)) = (want, got) else {
        return Ok(());
    };
    let w = w.trim_end();
    let g = g.trim_end();
    let wpem = pem_labels(w);
    if !wpem.is_empty() {
        return if pem_labels(g) == wpem {
            Ok(())
        } else {
            Err(format!(
                "{ptr}: helm has PEM {wpem:?}, antiopa {:?}",
                pem_labels(g)
            ))
        };
    }
    if is_sha256_hex(w) {
        return if is_sha256_hex(g) {
            Ok(())
        } else {
            Err(format!(
                "{ptr}: helm has a sha256 hex digest, antiopa {g:?}"
            ))
        };
    }
    if ptr.ends_with("/schedule") || w.split_whitespace().count() == 5 {
        let n = g.split_whitespace().count();
        return if n == w.split_whitespace().count() {
            Ok(())
        } else {
            Err(format!(
                "{ptr}: helm has a cron schedule {w:?}, antiopa {g:?}"
            ))
        };
    }
    if let Some(wd) = b64(w) {
        let Some(gd) = b64(g) else {
            return Err(format!(
                "{ptr}: helm has base64, antiopa's value is not base64"
            ));
        };
        let wl = pem_labels(&String::from_utf8_lossy(&wd));
        if !wl.is_empty() {
            let gl = pem_labels(&String::from_utf8_lossy(&gd));
            return if gl == wl {
                Ok(())
            } else {
                Err(format!(
                    "{ptr}: helm has base64 of PEM {wl:?}, antiopa of {gl:?}"
                ))
            };
        }
        if is_sha256_hex(&String::from_utf8_lossy(&wd)) {
            return Ok(());
        }
        return if wd.len() == gd.len() {
            Ok(())
        } else {
            Err(format!(
                "{ptr}: helm has base64 of {} bytes, antiopa of {}",
                wd.len(),
                gd.len()
            ))
        };
    }
    if w.chars().count() == g.chars().count() {
        Ok(())
    } else {
        Err(format!(
            "{ptr}: helm's value has {} characters, antiopa's {}",
            w.chars().count(),
            g.chars().count()
        ))
    }
}

fn parse_doc(text: &str) -> Result<Json, String> {
    serde_yaml_ng::from_str::<Json>(text).map_err(|e| e.to_string())
}

/// Replaces the value at an RFC 6901 pointer with null.
fn blank(doc: &mut Json, ptr: &str) {
    if let Some(v) = doc.pointer_mut(ptr) {
        *v = Json::Null;
    }
}

/// Compares a nondeterministic case: equal outside the masks, same shape inside them.
fn compare_masked(
    want: &str,
    got: &str,
    masks: &BTreeMap<usize, Vec<String>>,
) -> Result<(), String> {
    let wd = split_docs(want);
    let gd = split_docs(got);
    if wd.len() != gd.len() {
        return Err(format!(
            "helm printed {} documents, antiopa {}",
            wd.len(),
            gd.len()
        ));
    }
    for (i, (w, g)) in wd.iter().zip(&gd).enumerate() {
        if w == g {
            continue;
        }
        let Some(ptrs) = masks.get(&i) else {
            let (n, e, a) = first_difference(w, g).unwrap_or((0, String::new(), String::new()));
            return Err(format!(
                "document {i} (not masked) differs at its line {n}:\n    helm:    {e}\n    antiopa: {a}"
            ));
        };
        // Only lines holding masked values may differ, and the document must keep its layout.
        let wl: Vec<&str> = w.lines().collect();
        let gl: Vec<&str> = g.lines().collect();
        let differing = wl.iter().zip(&gl).filter(|(a, b)| a != b).count();
        if wl.len() != gl.len() || differing > ptrs.len() {
            let (n, e, a) = first_difference(w, g).unwrap_or((0, String::new(), String::new()));
            return Err(format!(
                "document {i} differs beyond its {} masked value(s), first at its line {n}:\n    helm:    {e}\n    antiopa: {a}",
                ptrs.len()
            ));
        }
        let mut wj = parse_doc(w).map_err(|e| format!("document {i}: helm's output: {e}"))?;
        let mut gj =
            parse_doc(g).map_err(|e| format!("document {i}: antiopa's output is not YAML: {e}"))?;
        for p in ptrs {
            match (wj.pointer(p), gj.pointer(p)) {
                (Some(a), Some(b)) => {
                    same_shape(p, a, b).map_err(|e| format!("document {i}: {e}"))?
                }
                (Some(_), None) => {
                    return Err(format!("document {i}: {p} is missing in antiopa's output"));
                }
                (None, _) => {} // the mask is a union over runs; helm need not have every value
            }
            blank(&mut wj, p);
            blank(&mut gj, p);
        }
        if wj != gj {
            return Err(format!("document {i} differs outside its masked values"));
        }
    }
    Ok(())
}

fn run_case(
    bin: &Path,
    corpus: &Path,
    case: &CorpusCase,
    home: &Path,
    limit: Duration,
) -> Result<(), String> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(corpus).args(case.template_args());
    isolate_env(&mut cmd, home);
    let got = run_with_timeout(&mut cmd, limit)
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&got.stdout);
    let stderr = String::from_utf8_lossy(&got.stderr);
    if case.expect_error {
        let path = corpus.join("expected").join(format!("{}.err", case.name));
        let want =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if got.code == Some(0) || got.code.is_none() {
            return Err(format!(
                "helm fails, antiopa: {}; helm's error: {}",
                got.describe_exit(),
                common::clip(want.trim(), 300)
            ));
        }
        if got.stderr != want.as_bytes() {
            let (n, e, a) =
                first_difference(&want, &stderr).unwrap_or((0, String::new(), String::new()));
            return Err(format!(
                "stderr differs at line {n}:\n    helm:    {e}\n    antiopa: {a}"
            ));
        }
        return Ok(());
    }
    if got.code != Some(0) {
        return Err(format!(
            "antiopa: {}: {}",
            got.describe_exit(),
            common::clip(stderr.trim(), 400)
        ));
    }
    let path = corpus.join("expected").join(format!("{}.yaml", case.name));
    let want = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if got.stdout == want.as_bytes() {
        return Ok(());
    }
    if case.nondeterministic {
        let masks = read_masks(&corpus.join("nondet").join(format!("{}.tsv", case.name)))?;
        return compare_masked(&want, &stdout, &masks);
    }
    let (n, e, a) = first_difference(&want, &stdout).unwrap_or((0, String::new(), String::new()));
    Err(format!(
        "stdout differs at line {n}:\n    helm:    {e}\n    antiopa: {a}"
    ))
}

#[test]
fn corpus_matches_helm() {
    let corpus = corpus_dir();
    if !corpus.join("cases.tsv").is_file() {
        let msg = format!(
            "corpus: no corpus at {} (set ANTIOPA_CORPUS)",
            corpus.display()
        );
        assert!(!in_ci(), "{msg}; under CI=true the corpus is required");
        say(&format!("{msg}; skipped"));
        return;
    }
    let cases = read_corpus_cases(&corpus).unwrap_or_else(|e| panic!("corpus: {e}"));
    let filter = std::env::var("CORPUS_FILTER").unwrap_or_default();
    let cases: Vec<CorpusCase> = cases
        .into_iter()
        .filter(|c| c.name.contains(&filter))
        .collect();
    let limit = Duration::from_secs(
        std::env::var("CORPUS_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(180),
    );
    let bin = common::antiopa_bin(env!("CARGO_BIN_EXE_antiopa"));
    let home = tempfile::tempdir().expect("temp dir for HELM_*_HOME");

    let (mut passed, mut failed) = (0usize, 0usize);
    let mut report = String::new();
    for case in &cases {
        match run_case(&bin, &corpus, case, home.path(), limit) {
            Ok(()) => passed += 1,
            Err(why) => {
                failed += 1;
                report.push_str(&format!("FAIL {}: {why}\n", case.name));
            }
        }
    }
    say(&report);
    say(&format!("corpus: {passed} passed, {failed} failed"));
    assert!(
        failed == 0,
        "corpus: {passed} of {} cases match helm, all are required; failures are listed above",
        cases.len()
    );
}

#[cfg(test)]
mod mask_logic {
    //! The masked comparison itself, on small hand-made outputs.
    use super::*;

    const HELM: &str = "---\n# Source: c/templates/a.yaml\nkind: ConfigMap\n---\n# Source: c/templates/s.yaml\nkind: Secret\ndata:\n  password: \"YWJjZGVmZ2hpag==\"\n  user: \"YWRtaW4=\"\nmetadata:\n  annotations:\n    checksum/secret: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";

    fn masks() -> BTreeMap<usize, Vec<String>> {
        BTreeMap::from([(
            1,
            vec![
                "/data/password".to_string(),
                "/metadata/annotations/checksum~1secret".to_string(),
            ],
        )])
    }

    #[test]
    fn documents_are_split_like_nondet_scan() {
        let d = split_docs(HELM);
        assert_eq!(d.len(), 2);
        assert!(d[1].starts_with("# Source: c/templates/s.yaml\n"));
    }

    #[test]
    fn masked_values_may_differ_in_content_not_shape() {
        let other = HELM
            .replace("YWJjZGVmZ2hpag==", "MDEyMzQ1Njc4OQ==")
            .replace("0123456789abcdef0123", "fedcba9876543210fedc");
        assert_eq!(compare_masked(HELM, &other, &masks()), Ok(()));
        let shorter = HELM.replace("YWJjZGVmZ2hpag==", "YWJj");
        assert!(compare_masked(HELM, &shorter, &masks()).is_err());
        let not_hex = HELM.replace("0123456789abcdef0123", "zzzz456789abcdef0123");
        assert!(compare_masked(HELM, &not_hex, &masks()).is_err());
    }

    #[test]
    fn unmasked_values_must_match() {
        let other = HELM.replace("YWRtaW4=", "cm9vdA==");
        assert!(compare_masked(HELM, &other, &masks()).is_err());
        let fewer = HELM.replace("---\n# Source: c/templates/a.yaml\nkind: ConfigMap\n", "");
        assert!(compare_masked(HELM, &fewer, &masks()).is_err());
    }

    #[test]
    fn pem_and_cron_shapes() {
        let pem =
            Json::String("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into());
        let key = Json::String(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n".into(),
        );
        assert!(same_shape("/p", &pem, &pem).is_ok());
        assert!(same_shape("/p", &pem, &key).is_err());
        let cron = Json::String("1 2 * * *".into());
        assert!(same_shape("/spec/schedule", &cron, &Json::String("59 23 * * *".into())).is_ok());
        assert!(same_shape("/spec/schedule", &cron, &Json::String("@daily".into())).is_err());
        assert!(same_shape("/x", &cron, &Json::Number(1.into())).is_err());
    }
}
