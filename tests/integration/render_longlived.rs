//! The render core as a long-running operator uses it: the same chart
//! rendered 1,000 times in one process, with a render pool the caller owns,
//! leaves memory flat and, once the pool is dropped, no thread behind.
//!
//! Measured in a child process of its own (this test binary run again for
//! just this test), so that other tests' threads and allocations do not
//! count.

use std::path::Path;
use std::process::Command;

use antiopa::chart::workers::Pool;
use antiopa::chart::{LoadedChart, RenderOptions, render_chart, template};

const CHILD: &str = "ANTIOPA_LONGLIVED_CHILD";

/// A chart big enough that renders use helper threads (templates over the
/// parallel-parse threshold, a schema worth a helper).
fn write_chart(dir: &Path) {
    let t = dir.join("templates");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: big\nversion: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("values.yaml"),
        "replicas: 2\nimage: nginx\nitems: [a, b, c]\n",
    )
    .unwrap();
    let mut props = String::new();
    for i in 0..400 {
        props.push_str(&format!(
            "\"p{i}\": {{\"type\": \"string\", \"description\": \"{}\"}},",
            "x".repeat(20)
        ));
    }
    std::fs::write(
        dir.join("values.schema.json"),
        format!("{{\"type\": \"object\", \"properties\": {{{props} \"replicas\": {{\"type\": \"integer\"}}}}}}"),
    )
    .unwrap();
    std::fs::write(
        t.join("_helpers.tpl"),
        "{{- define \"big.labels\" -}}\napp: {{ .Chart.Name }}\nrelease: {{ .Release.Name }}\n{{- end }}\n",
    )
    .unwrap();
    for i in 0..20 {
        let mut body = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  labels:\n    {{{{- include \"big.labels\" . | nindent 4 }}}}\ndata:\n"
        );
        for j in 0..12 {
            body.push_str(&format!(
                "  k{j}: {{{{ printf \"%s-%d\" .Values.image {j} | quote }}}}\n  {{{{- range $i, $x := .Values.items }}}}\n  r{j}-{{{{ $i }}}}: {{{{ $x | upper | quote }}}}\n  {{{{- end }}}}\n"
            ));
        }
        std::fs::write(t.join(format!("cm{i}.yaml")), body).unwrap();
    }
}

/// One render as the operator does it: load, render to data, print.
fn render_once(chart: &Path) -> Vec<u8> {
    let loaded = LoadedChart::load(chart, &mut |w| panic!("unexpected warning: {w}")).unwrap();
    let opts = RenderOptions {
        release_name: "rel".into(),
        namespace: "ns".into(),
        ..Default::default()
    };
    let rendered = render_chart(loaded, &opts).unwrap();
    assert!(rendered.warnings.is_empty(), "{:?}", rendered.warnings);
    template::print_rendered(&rendered, false, false).into_bytes()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Resident memory in KiB.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

#[test]
fn thousand_renders_in_one_process_keep_memory_flat_and_leave_no_thread() {
    if std::env::var_os(CHILD).is_none() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "render_longlived::thousand_renders_in_one_process_keep_memory_flat_and_leave_no_thread",
                "--test-threads",
                "1",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        eprintln!(
            "{}",
            text.lines()
                .filter(|l| l.starts_with("long-lived"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let before_threads = threads();
    let pool = Pool::new(4);
    let render = || render_once(dir.path());
    let first = pool.enter(render);
    assert!(first.len() > 10_000, "{}", first.len());
    for _ in 0..199 {
        assert_eq!(pool.enter(render), first);
    }
    let warm = rss_kib();
    let helpers = threads() - before_threads;
    for _ in 0..800 {
        assert_eq!(pool.enter(render), first);
    }
    let end = rss_kib();
    eprintln!(
        "long-lived: RSS after 200 renders {warm} KiB, after 1,000 {end} KiB; {helpers} helper thread(s) while the pool lived"
    );
    // (How many at most is the pool's unit tests' business: a scoped thread
    // just joined may still be listed here for a moment.)
    assert!(helpers >= 1, "the renders used no helper thread");
    // Flat: 800 more renders add less than 8 MiB.
    assert!(end < warm + 8 * 1024, "RSS grew from {warm} to {end} KiB");
    drop(pool);
    // A thread that was joined can stay listed for a moment after it ended.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while threads() != before_threads && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(threads(), before_threads, "threads left behind");
}
