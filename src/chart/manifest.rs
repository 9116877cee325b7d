//! From rendered template files to what `helm template` prints: Helm v3.17's
//! `releaseutil.SplitManifests`, `SortManifests` (hooks, `InstallOrder`),
//! the `# Source:` printing of `action.renderResources` and the
//! `--show-only` filter of `helm template`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError};

use regex::Regex;

use crate::scan::after_last_slash;
use crate::yaml::{Keep, Mapping, Yaml};

/// Helm's `releaseutil.InstallOrder`; kinds not listed sort last,
/// alphabetically among themselves.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// The annotation that makes a document a hook.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// A hook's weight: lighter hooks of an event run first.
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// When a hook's object is deleted.
pub const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// Helm's hook events (`release.HookEvent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    PreInstall,
    PostInstall,
    PreDelete,
    PostDelete,
    PreUpgrade,
    PostUpgrade,
    PreRollback,
    PostRollback,
    Test,
}

impl HookEvent {
    /// The event named by one entry of the annotation (already trimmed and
    /// lower-cased); `test-success` is Helm 2's name for `test`.
    fn parse(s: &str) -> Option<HookEvent> {
        Some(match s {
            "pre-install" => HookEvent::PreInstall,
            "post-install" => HookEvent::PostInstall,
            "pre-delete" => HookEvent::PreDelete,
            "post-delete" => HookEvent::PostDelete,
            "pre-upgrade" => HookEvent::PreUpgrade,
            "post-upgrade" => HookEvent::PostUpgrade,
            "pre-rollback" => HookEvent::PreRollback,
            "post-rollback" => HookEvent::PostRollback,
            "test" | "test-success" => HookEvent::Test,
            _ => return None,
        })
    }
}

/// `releaseutil.SimpleHead`: what Helm reads of each document, and the
/// namespace (which Helm's struct lacks, so it is read leniently: a value
/// that is no string is left out, never an error).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimpleHead {
    pub api_version: String,
    pub kind: String,
    pub metadata: Option<HeadMetadata>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeadMetadata {
    pub name: String,
    /// `metadata.namespace` as written (empty when absent).
    pub namespace: String,
    pub annotations: Option<BTreeMap<String, String>>,
}

impl SimpleHead {
    /// `metadata.name` (empty when absent).
    pub fn name(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| m.name.as_str())
    }

    /// `metadata.namespace` as the document gives it (empty when absent;
    /// the release namespace applies then).
    pub fn namespace(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| m.namespace.as_str())
    }

    /// One annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(key))
            .map(String::as_str)
    }
}

/// A non-hook document of a rendered file.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The template path (`mychart/templates/cm.yaml`).
    pub name: String,
    pub content: String,
    pub head: SimpleHead,
}

/// A hook document (Helm's `release.Hook` before it runs).
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub name: String,
    pub kind: String,
    /// The template path.
    pub path: String,
    pub manifest: String,
    pub events: Vec<HookEvent>,
    /// `helm.sh/hook-weight` (`strconv.Atoi`; 0 when absent or no number).
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` entries, trimmed and lower-cased, as
    /// Helm records them (unchecked).
    pub delete_policies: Vec<String>,
}

impl Hook {
    pub fn is_test(&self) -> bool {
        self.events.contains(&HookEvent::Test)
    }
}

/// A document whose head Helm cannot decode; Display is Helm's text.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("YAML parse error on {path}: {message}")]
pub struct ManifestError {
    pub path: String,
    pub message: String,
}

/// Documents sorted as Helm installs them, plus what Helm logs on the way.
#[derive(Debug, Default)]
pub struct Sorted {
    pub hooks: Vec<Hook>,
    pub manifests: Vec<Manifest>,
    /// Log lines (Helm prints them to stderr): skipped unknown hooks.
    pub warnings: Vec<String>,
}

/// RE2's `\s` (Go's `regexp`): `[\t\n\f\r ]`.
fn is_re2_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

/// The pieces between the matches of Helm's separator regexp
/// `(?:^|\s*\n)---\s*` (`releaseutil.sep`), as `Regexp.Split` yields them.
///
/// Hand-written rather than a compiled regex: it runs once per rendered
/// file, and building the regex costs more than splitting a whole chart.
/// Leftmost-first matching reduces to: a match is `\n---` preceded by the
/// whitespace run before it (not reaching back past the previous match)
/// and followed by all the whitespace after it; `^---` only at offset 0.
fn split_sep(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let ws_end = |mut i: usize| {
        while i < b.len() && is_re2_space(b[i]) {
            i += 1;
        }
        i
    };
    let mut pieces = Vec::new();
    let mut last = 0;
    let mut pos = 0;
    if s.starts_with("---") {
        pieces.push("");
        last = ws_end(3);
        pos = last;
    }
    // memmem rather than `str::find`, which sets up a two-way searcher for
    // each call: a rendered file is split once per document.
    while let Some(off) = crate::scan::find(&b[pos..], b"\n---") {
        let nl = pos + off;
        let mut start = nl;
        while start > pos && is_re2_space(b[start - 1]) {
            start -= 1;
        }
        pieces.push(&s[last..start]);
        last = ws_end(nl + 4);
        pos = last;
    }
    pieces.push(&s[last..]);
    pieces
}

/// `releaseutil.SplitManifests`: split a file on `---` lines into trimmed
/// documents, in order, dropping empty pieces.
pub fn split_manifests(big_file: &str) -> Vec<String> {
    split_sep(go_trim_space(big_file))
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(|d| go_trim_space(d).to_string())
        .collect()
}

/// Go's `strings.TrimSpace` (Unicode White_Space, as Rust's `trim`).
fn go_trim_space(s: &str) -> &str {
    s.trim()
}

/// `releaseutil.SortManifests` with `InstallOrder`: files in path order,
/// partials and blank files skipped, documents classified into hooks and
/// manifests, each list stably sorted by kind.
pub fn sort_manifests(files: &BTreeMap<String, String>) -> Result<Sorted, ManifestError> {
    sort_manifests_with(files, PreParsed::default())
}

/// Whether `sort_manifests` looks at a rendered file: partials and blank
/// files are skipped.
fn is_manifest_file(path: &str, content: &str) -> bool {
    !after_last_slash(path).starts_with('_') && !go_trim_space(content).is_empty()
}

/// [`sort_manifests`], taking the heads of files a [`HeadWorker`] has
/// already parsed from `pre`.
pub fn sort_manifests_with(
    files: &BTreeMap<String, String>,
    mut pre: PreParsed,
) -> Result<Sorted, ManifestError> {
    let mut out = Sorted::default();
    let mut docs: Vec<(&String, String)> = Vec::new();
    let mut heads: Vec<Option<Result<SimpleHead, String>>> = Vec::new();
    for (path, content) in files.iter().filter(|(p, c)| is_manifest_file(p, c)) {
        let split = split_manifests(content);
        // The worker saw this very text (same path, same length) and split
        // it the same way; anything else is parsed here. The split is done
        // again here rather than handed over: documents kept by the worker
        // would sit in its malloc arena, where the main thread cannot reuse
        // the memory it has freed (measured: +0.3 MB peak RSS on mid-sized
        // charts for a split that costs little).
        match pre.0.remove(path) {
            Some((len, parsed)) if len == content.len() && parsed.len() == split.len() => {
                heads.extend(parsed.into_iter().map(Some));
            }
            _ => heads.extend(split.iter().map(|_| None)),
        }
        docs.extend(split.into_iter().map(|d| (path, d)));
    }
    let missing: Vec<&str> = docs
        .iter()
        .zip(&heads)
        .filter(|(_, h)| h.is_none())
        .map(|((_, d), _)| d.as_str())
        .collect();
    let mut parsed = parse_heads(&missing).into_iter();
    for ((path, doc), head) in docs.into_iter().zip(heads) {
        let Some(head) = head.or_else(|| parsed.next()) else {
            continue;
        };
        // Helm stops at the first document (in file order) that fails.
        let head = head.map_err(|message| ManifestError {
            path: path.clone(),
            message,
        })?;
        let hook_types = head
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .filter(|a| !a.is_empty())
            .and_then(|a| a.get(HOOK_ANNOTATION).cloned());
        let Some(hook_types) = hook_types else {
            out.manifests.push(Manifest {
                name: path.clone(),
                content: doc,
                head,
            });
            continue;
        };
        let events: Option<Vec<HookEvent>> = hook_types
            .split(',')
            .map(|t| HookEvent::parse(&go_trim_space(t).to_lowercase()))
            .collect();
        let Some(events) = events else {
            out.warnings.push(format!(
                "info: skipping unknown hook: {}",
                go_quote(&hook_types)
            ));
            continue;
        };
        // calculateHookWeight and operateAnnotationValues.
        let weight = head
            .annotation(HOOK_WEIGHT_ANNOTATION)
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        let delete_policies = head
            .annotation(HOOK_DELETE_ANNOTATION)
            .map(|p| {
                p.split(',')
                    .map(|x| go_trim_space(x).to_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        out.hooks.push(Hook {
            name: head.name().to_string(),
            kind: head.kind.clone(),
            path: path.clone(),
            manifest: doc,
            events,
            weight,
            delete_policies,
        });
    }
    out.manifests
        .sort_by(|a, b| kind_cmp(&a.head.kind, &b.head.kind));
    out.hooks.sort_by(|a, b| kind_cmp(&a.kind, &b.kind));
    Ok(out)
}

/// Heads parsed ahead by a [`HeadWorker`]: per file path, the length of
/// the text parsed and the head of each of its documents.
#[derive(Default)]
pub struct PreParsed(HashMap<String, (usize, Vec<Result<SimpleHead, String>>)>);

/// Parses the heads of rendered files on another core while the templates
/// after them still execute, so that sorting the manifests finds them
/// ready. Helm reads each document whole to get four fields, which costs
/// about as much as executing the templates; template execution itself is
/// single-threaded (values are `Rc`), so this overlaps the two. What it
/// parses is only used once every file has rendered, so errors are still
/// reported in Helm's order.
pub struct HeadWorker {
    queue: Arc<HeadQueue>,
    handle: crate::chart::workers::Pending<PreParsed>,
}

/// Rendered files waiting for their heads to be parsed. The worker, out
/// of files, sleeps until the renderer posts more (or closes the queue).
#[derive(Default)]
struct HeadQueue {
    jobs: Mutex<Jobs>,
    more: Condvar,
}

#[derive(Default)]
struct Jobs {
    /// (path, text) in render order.
    waiting: VecDeque<(String, String)>,
    /// No more files will come.
    closed: bool,
    /// The worker has begun: it may hold files it took.
    started: bool,
    /// The worker waits on [`HeadQueue::more`] and must be woken.
    sleeping: bool,
}

impl HeadQueue {
    fn lock(&self) -> MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next file, waiting for one while more may come; `None` once the
    /// queue is closed and empty.
    fn next(&self) -> Option<(String, String)> {
        let mut jobs = self.lock();
        loop {
            if let Some(job) = jobs.waiting.pop_front() {
                return Some(job);
            }
            if jobs.closed {
                return None;
            }
            jobs.sleeping = true;
            jobs = self.more.wait(jobs).unwrap_or_else(PoisonError::into_inner);
            jobs.sleeping = false;
        }
    }

    /// Queue a file (`Some`) or close the queue (`None`), waking the
    /// worker if it sleeps.
    fn post(&self, job: Option<(String, String)>) -> bool {
        let mut jobs = self.lock();
        match job {
            Some(job) => jobs.waiting.push_back(job),
            None => jobs.closed = true,
        }
        let started = jobs.started;
        if jobs.sleeping {
            drop(jobs);
            self.more.notify_one();
        }
        started
    }

    /// The most recently queued file still waiting, if any.
    fn take_last(&self) -> Option<(String, String)> {
        self.lock().waiting.pop_back()
    }
}

impl PreParsed {
    fn parse(&mut self, path: String, content: &str) {
        let heads = split_manifests(content)
            .iter()
            .map(|d| parse_head(d))
            .collect();
        self.0.insert(path, (content.len(), heads));
    }
}

impl HeadWorker {
    /// A worker on a new thread, or `None` when no thread can be started:
    /// then the heads are parsed when sorting. Worth it only with a spare
    /// core.
    pub fn start() -> Option<HeadWorker> {
        let queue = Arc::new(HeadQueue::default());
        let shared = queue.clone();
        let handle = crate::chart::workers::spawn_detached_next(move || {
            shared.lock().started = true;
            let mut pre = PreParsed::default();
            while let Some((path, content)) = shared.next() {
                pre.parse(path, &content);
            }
            pre
        })
        .ok()?;
        Some(HeadWorker { queue, handle })
    }

    /// Hand over one rendered file (its final text, as it will be sorted).
    pub fn send(&self, path: &str, content: &str) {
        if is_manifest_file(path, content) && !path.ends_with("NOTES.txt") {
            self.queue
                .post(Some((path.to_string(), content.to_string())));
        }
    }

    /// The heads of everything sent. The files still queued when rendering
    /// ends are parsed here too, from the back of the queue while the
    /// worker takes from the front, so the caller waits for half the
    /// backlog rather than all of it (the last files rendered are often
    /// the biggest, and the worker is then still busy with earlier ones).
    ///
    /// A worker that has not begun (its job waits for a helper busy with
    /// other work, maybe another render's) is not waited for: this thread
    /// parses everything, and the worker finds the queue closed and empty.
    pub fn finish(self) -> PreParsed {
        let started = self.queue.post(None);
        let mut here = PreParsed::default();
        while let Some((path, content)) = self.queue.take_last() {
            here.parse(path, &content);
        }
        if !started {
            return here;
        }
        let mut pre = self.handle.wait().unwrap_or_default();
        pre.0.extend(here.0);
        pre
    }
}

/// `parse_head` of every document, in order. Each document is a whole YAML
/// parse (Helm unmarshals it entirely to read four fields), which dominates
/// charts shipping big CRDs, and documents are independent: above a size
/// where threads pay off, contiguous runs of documents of about equal bytes
/// are parsed on the available cores.
fn parse_heads(docs: &[&str]) -> Vec<Result<SimpleHead, String>> {
    const PARALLEL_MIN_BYTES: usize = 256 << 10;
    let total: usize = docs.iter().map(|d| d.len()).sum();
    let threads = crate::chart::workers::cores().min(docs.len());
    if threads < 2 || total < PARALLEL_MIN_BYTES {
        return docs.iter().map(|d| parse_head(d)).collect();
    }
    let share = total.div_ceil(threads);
    let mut chunks: Vec<&[&str]> = Vec::with_capacity(threads);
    let (mut start, mut bytes) = (0, 0);
    for (i, d) in docs.iter().enumerate() {
        bytes += d.len();
        if bytes >= share && chunks.len() + 1 < threads {
            chunks.push(&docs[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    chunks.push(&docs[start..]);
    let parse_all = |chunk: &[&str]| -> Vec<Result<SimpleHead, String>> {
        chunk.iter().map(|d| parse_head(d)).collect()
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks[1..]
            .iter()
            .map(|chunk| crate::chart::workers::spawn_scoped(scope, move || parse_all(chunk)))
            .collect();
        let mut heads = parse_all(chunks[0]);
        for (handle, chunk) in handles.into_iter().zip(&chunks[1..]) {
            match handle.map(|h| h.join()) {
                Ok(Ok(part)) => heads.extend(part),
                // No thread or a panicked one: parse that run here instead
                // (a panic would repeat here and report as usual).
                _ => heads.extend(parse_all(chunk)),
            }
        }
        heads
    })
}

/// Helm's `lessByKind` as an ordering (stable sort keeps equal kinds in
/// input order).
fn kind_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let pos = |k: &str| INSTALL_ORDER.iter().position(|x| *x == k);
    match (pos(a), pos(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

use crate::gocompat::strconv::quote as go_quote;

/// Decode a document into `SimpleHead` as sigs.k8s.io/yaml.Unmarshal does:
/// YAML → JSON (scalars become strings where the target is a string), then
/// encoding/json with case-insensitive field names. Errors carry Helm's text.
pub fn parse_head(doc: &str) -> Result<SimpleHead, String> {
    // Only these fields are read, so only they are built (rendered CRDs run
    // to megabytes); the parse and its errors are still the whole document's.
    let keep = |key: &str, depth: usize| {
        let names: &[&str] = if depth == 0 {
            &["apiVersion", "kind", "metadata"]
        } else {
            &["name", "namespace", "annotations"]
        };
        match field(key, names) {
            Some("metadata") => Keep::Descend,
            Some(_) => Keep::Whole,
            None => Keep::Skip,
        }
    };
    let y = crate::yaml::from_yaml_pruned(doc, &keep).map_err(|e| e.to_string())?;
    let json_err = |what: &str, target: &str| {
        format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {what} into Go {target}"
        )
    };
    let mut head = SimpleHead::default();
    let top = match &y {
        Yaml::Null => return Ok(head),
        Yaml::Map(m) => m,
        other => {
            return Err(json_err(
                json_kind(other),
                "value of type releaseutil.SimpleHead",
            ));
        }
    };
    let mut first_err: Option<String> = None;
    let mut note = |e: String| {
        first_err.get_or_insert(e);
    };
    for (key, value) in top {
        match field(key, &["apiVersion", "kind", "metadata"]) {
            Some("apiVersion") => match string_field(value) {
                Ok(Some(s)) => head.api_version = s,
                Ok(None) => {}
                Err(k) => note(json_err(
                    k,
                    "struct field SimpleHead.apiVersion of type string",
                )),
            },
            Some("kind") => match string_field(value) {
                Ok(Some(s)) => head.kind = s,
                Ok(None) => {}
                Err(k) => note(json_err(k, "struct field SimpleHead.kind of type string")),
            },
            Some(_) => match value {
                Yaml::Null => head.metadata = None,
                Yaml::Map(m) => {
                    let meta = head.metadata.get_or_insert_with(HeadMetadata::default);
                    decode_metadata(m, meta, &mut note, &json_err);
                }
                other => note(json_err(
                    json_kind(other),
                    "struct field SimpleHead.metadata of type struct { Name string \"json:\\\"name\\\"\"; \
                     Annotations map[string]string \"json:\\\"annotations\\\"\" }",
                )),
            },
            None => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(head),
    }
}

fn decode_metadata(
    m: &Mapping,
    meta: &mut HeadMetadata,
    note: &mut dyn FnMut(String),
    json_err: &dyn Fn(&str, &str) -> String,
) {
    for (key, value) in m {
        match field(key, &["name", "annotations"]) {
            Some("name") => match string_field(value) {
                Ok(Some(s)) => meta.name = s,
                Ok(None) => {}
                Err(k) => note(json_err(k, "struct field .metadata.name of type string")),
            },
            None if key == "namespace" => {
                if let Ok(Some(s)) = string_field(value) {
                    meta.namespace = s;
                }
            }
            Some(_) => match value {
                Yaml::Null => meta.annotations = None,
                Yaml::Map(a) => {
                    let ann = meta.annotations.get_or_insert_with(BTreeMap::new);
                    for (k, v) in a {
                        match string_field(v) {
                            Ok(Some(s)) => {
                                ann.insert(k.clone(), s);
                            }
                            // JSON null into a map element stores the zero value.
                            Ok(None) => {
                                ann.insert(k.clone(), String::new());
                            }
                            Err(kind) => note(json_err(
                                kind,
                                "struct field .metadata.annotations of type string",
                            )),
                        }
                    }
                }
                other => note(json_err(
                    json_kind(other),
                    "struct field .metadata.annotations of type map[string]string",
                )),
            },
            None => {}
        }
    }
}

/// encoding/json's field matching: exact name, else ASCII case-insensitive.
fn field<'a>(key: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .find(|n| **n == key)
        .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(key)))
        .copied()
}

/// A scalar into a Go string field: sigs.k8s.io/yaml turns YAML numbers and
/// bools into strings when the target is a string; null leaves it unset.
fn string_field(v: &Yaml) -> Result<Option<String>, &'static str> {
    match v {
        Yaml::Null => Ok(None),
        Yaml::Str(s) => Ok(Some(s.clone())),
        Yaml::Bool(b) => Ok(Some(b.to_string())),
        Yaml::Int(i) => Ok(Some(i.to_string())),
        Yaml::Float(f) => {
            let mut s = String::new();
            crate::engine::gofmt::format_float(*f, 'g', -1, &mut s);
            Ok(Some(s))
        }
        other => Err(json_kind(other)),
    }
}

/// encoding/json's name for the JSON type of a value in its errors.
fn json_kind(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "null",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) | Yaml::Float(_) => "number",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "array",
        Yaml::Map(_) => "object",
    }
}

/// One `---\n# Source: path\ncontent\n` block, as Helm prints every
/// document.
pub fn source_block(path: &str, content: &str) -> String {
    let mut out = String::with_capacity(source_block_len(path, content));
    push_source_block(&mut out, path, content);
    out
}

/// The parts of [`source_block`]`(path, content)`.
fn source_block_parts<'a>(path: &'a str, content: &'a str) -> [&'a str; 5] {
    ["---\n# Source: ", path, "\n", content, "\n"]
}

/// Append [`source_block`]`(path, content)` to `out`.
pub fn push_source_block(out: &mut String, path: &str, content: &str) {
    for part in source_block_parts(path, content) {
        out.push_str(part);
    }
}

/// The length of [`source_block`]`(path, content)`.
pub fn source_block_len(path: &str, content: &str) -> usize {
    source_block_parts(path, content)
        .iter()
        .map(|p| p.len())
        .sum()
}

/// Go's `path/filepath.Match` (Unix): `*` and `?` stop at `/`, `[…]` with
/// `^`/`!` negation and ranges, `\` escapes. A malformed pattern matches
/// nothing (Helm ignores the error).
pub fn filepath_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fp_match(&p, &n).unwrap_or(false)
}

fn fp_match(p: &[char], n: &[char]) -> Option<bool> {
    let Some((&c, rest)) = p.split_first() else {
        return Some(n.is_empty());
    };
    match c {
        '*' => {
            let mut i = 0;
            loop {
                if fp_match(rest, &n[i..])? {
                    return Some(true);
                }
                if i == n.len() || n[i] == '/' {
                    // Go still validates the rest of the pattern.
                    return Some(false);
                }
                i += 1;
            }
        }
        '?' => Some(n.first().is_some_and(|c| *c != '/') && fp_match(rest, &n[1..])?),
        '[' => {
            let mut i = 0;
            let negated = matches!(rest.first(), Some('^') | Some('!'));
            if negated {
                i += 1;
            }
            let mut matched = false;
            let mut first = true;
            loop {
                let ch = *rest.get(i)?;
                if ch == ']' && !first {
                    i += 1;
                    break;
                }
                first = false;
                let lo = if ch == '\\' {
                    i += 1;
                    *rest.get(i)?
                } else {
                    ch
                };
                i += 1;
                let hi = if rest.get(i) == Some(&'-') && rest.get(i + 1).is_some_and(|c| *c != ']')
                {
                    let h = if rest[i + 1] == '\\' {
                        *rest.get(i + 2)?
                    } else {
                        rest[i + 1]
                    };
                    i += if rest[i + 1] == '\\' { 3 } else { 2 };
                    h
                } else {
                    lo
                };
                if let Some(c) = n.first()
                    && lo <= *c
                    && *c <= hi
                {
                    matched = true;
                }
            }
            let Some(c) = n.first() else {
                return Some(false);
            };
            Some(*c != '/' && matched != negated && fp_match(&rest[i..], &n[1..])?)
        }
        '\\' => {
            let (&lit, rest) = rest.split_first()?;
            Some(n.first() == Some(&lit) && fp_match(rest, &n[1..])?)
        }
        _ => Some(n.first() == Some(&c) && fp_match(rest, &n[1..])?),
    }
}

static SOURCE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("# Source: [^/]+/(.+)").unwrap_or_else(|_| unreachable!("constant regex"))
});

/// `helm template --show-only`: the documents of the full output whose
/// `# Source:` path (without the top chart's name) matches one of the
/// patterns, pattern by pattern; an unmatched pattern is an error.
pub fn show_only(full_output: &str, patterns: &[String]) -> Result<String, String> {
    let docs = split_manifests(full_output);
    let mut out = String::new();
    for f in patterns {
        let mut missing = true;
        for doc in &docs {
            let Some(caps) = SOURCE_RE.captures(doc) else {
                continue;
            };
            let path = caps.get(1).map(|m| m.as_str()).unwrap_or_default();
            if !filepath_match(f, path) {
                continue;
            }
            out.push_str("---\n");
            out.push_str(doc);
            out.push('\n');
            missing = false;
        }
        if missing {
            return Err(format!("could not find template {f} in chart"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CM: &str = "\n---\n# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\napiVersion: v1\nkind: Foo\nmetadata:\n  name: f\n---\napiVersion: v1\nkind: Bar\nmetadata:\n  name: b\n";

    const HOOKS: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j1\n  annotations:\n    \"helm.sh/hook\": post-install,pre-upgrade\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: t1\n  annotations:\n    \"helm.sh/hook\": test\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: u1\n  annotations:\n    \"helm.sh/hook\": foo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a1\n  annotations:\n    other: x\n";

    /// The namespace is read as written, but leniently: Helm's head has
    /// no such field, so a namespace that is no string fails nothing. A
    /// hook's weight is `strconv.Atoi`'s (0 for anything else), its delete
    /// policies trimmed and lower-cased.
    #[test]
    fn namespace_weight_and_policies() {
        let head = |doc: &str| parse_head(doc).unwrap();
        assert_eq!(
            head("kind: A\nmetadata:\n  name: a\n  namespace: ns\n").namespace(),
            "ns"
        );
        assert_eq!(
            head("kind: A\nmetadata:\n  namespace: 5\n").namespace(),
            "5"
        );
        assert_eq!(
            head("kind: A\nmetadata:\n  namespace: {x: 1}\n").namespace(),
            ""
        );
        assert_eq!(
            head("kind: A\nmetadata:\n  Namespace: ns\n").namespace(),
            ""
        );
        assert_eq!(head("kind: A\n").namespace(), "");
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/h.yaml".to_string(),
            [("a", "\"-5\"", "\" Hook-Succeeded ,before-hook-creation\""), ("b", "\" 3\"", "x"), ("c", "\"+7\"", "\"\"")]
                .iter()
                .map(|(n, w, p)| {
                    format!("kind: Job\nmetadata:\n  name: {n}\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: {w}\n    helm.sh/hook-delete-policy: {p}\n")
                })
                .collect::<Vec<_>>()
                .join("---\n"),
        );
        let sorted = sort_manifests(&files).unwrap();
        let got: Vec<(&str, i64, Vec<String>)> = sorted
            .hooks
            .iter()
            .map(|h| (h.name.as_str(), h.weight, h.delete_policies.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "a",
                    -5,
                    vec!["hook-succeeded".to_string(), "before-hook-creation".into()]
                ),
                ("b", 0, vec!["x".to_string()]),
                ("c", 7, vec![String::new()]),
            ]
        );
    }

    /// Heads parsed ahead by the worker give the same result as parsing
    /// them while sorting, including which bad document is reported; a
    /// file whose text changed after it was sent is parsed again. Files
    /// sent one after the other reach the worker busy or waking, files
    /// sent after a pause reach it asleep.
    #[test]
    fn heads_parsed_ahead_sort_the_same() {
        let files: BTreeMap<String, String> = [
            ("c/templates/a.yaml", CM),
            ("c/templates/hooks.yaml", HOOKS),
            ("c/templates/_helpers.tpl", "not: [yaml"),
            ("c/templates/blank.yaml", "  \n"),
            ("c/templates/z.yaml", "kind: Secret\nmetadata:\n  name: z\n"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let ahead = |files: &BTreeMap<String, String>, changed: Option<&str>, pause: bool| {
            let w = HeadWorker::start().expect("a worker thread");
            for (path, text) in files {
                if pause {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let sent = if changed == Some(path.as_str()) {
                    "kind: Other"
                } else {
                    text
                };
                w.send(path, sent);
            }
            sort_manifests_with(files, w.finish())
        };
        let direct = sort_manifests(&files).unwrap();
        let pool = crate::chart::workers::Pool::new(2);
        for changed in [None, Some("c/templates/z.yaml")] {
            for pause in [false, true] {
                let pre = pool.enter(|| ahead(&files, changed, pause)).unwrap();
                assert_eq!(pre.manifests, direct.manifests);
                assert_eq!(pre.hooks, direct.hooks);
                assert_eq!(pre.warnings, direct.warnings);
            }
        }
        let mut bad = files.clone();
        bad.insert("c/templates/b.yaml".into(), "a: [1\n".into());
        bad.insert("c/templates/y.yaml".into(), "b: {\n".into());
        for pause in [false, true] {
            assert_eq!(
                pool.enter(|| ahead(&bad, None, pause)).unwrap_err(),
                sort_manifests(&bad).unwrap_err()
            );
        }
        assert_eq!(
            pool.enter(|| ahead(&bad, None, false)).unwrap_err().path,
            "c/templates/b.yaml"
        );
    }

    #[test]
    fn split_keeps_a_separator_swallowed_by_the_previous_one() {
        // `---\n\n---` : the first separator eats the blank line, so the next
        // document keeps its leading `---` (as in helm's output).
        assert_eq!(
            split_manifests(CM),
            vec![
                "# only a comment",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: s",
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c",
                "apiVersion: v1\nkind: Foo\nmetadata:\n  name: f",
                "apiVersion: v1\nkind: Bar\nmetadata:\n  name: b",
            ]
        );
        assert_eq!(split_manifests("a: 1\n---x: 2"), vec!["a: 1", "x: 2"]);
        assert!(split_manifests("  \n---\n").is_empty());
    }

    #[test]
    fn hand_written_split_matches_helms_regexp() {
        // releaseutil's `(?:^|\s*\n)---\s*` with RE2's `\s`.
        let re = Regex::new(r"(?:^|[\t\n\x0c\r ]*\n)---[\t\n\x0c\r ]*")
            .unwrap_or_else(|_| unreachable!());
        let inputs = [
            "",
            "---",
            "---\n",
            "a",
            "---a",
            "a\n---",
            "a\n---\n",
            "a \n \n--- \n\nb",
            "a\n---\n---\nb",
            "a\n----\nb",
            "a\n--- x\nb",
            "a---\nb",
            " \n---\n",
            "a\n\n---\n\n---\n\nb",
            "a\r\n---\r\nb",
            "a\t\n---\tb\n---",
            "x\n---y\n---",
            "a\x0b\n---\x0bb",
            "é\n---\né",
        ];
        for s in inputs {
            let want: Vec<&str> = re.split(s).collect();
            assert_eq!(split_sep(s), want, "{s:?}");
        }
    }

    #[test]
    fn sorts_by_install_order_with_unknown_kinds_last_and_classifies_hooks() {
        let mut files = BTreeMap::new();
        files.insert("m/templates/cm.yaml".to_string(), CM.to_string());
        files.insert("m/templates/hooks.yaml".to_string(), HOOKS.to_string());
        files.insert("m/templates/_h.tpl".to_string(), "kind: Secret".to_string());
        files.insert("m/templates/empty.yaml".to_string(), "\n  \n".to_string());
        let sorted = sort_manifests(&files).unwrap_or_default();
        let names: Vec<_> = sorted
            .manifests
            .iter()
            .map(|m| (m.head.kind.as_str(), m.name.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("ConfigMap", "m/templates/cm.yaml"),
                ("ConfigMap", "m/templates/hooks.yaml"),
                ("Service", "m/templates/cm.yaml"),
                ("", "m/templates/cm.yaml"),
                ("Bar", "m/templates/cm.yaml"),
                ("Foo", "m/templates/cm.yaml"),
            ]
        );
        let hooks: Vec<_> = sorted
            .hooks
            .iter()
            .map(|h| (h.name.as_str(), h.is_test()))
            .collect();
        assert_eq!(hooks, vec![("t1", true), ("j1", false)]);
        assert_eq!(
            sorted.warnings,
            vec!["info: skipping unknown hook: \"foo\"".to_string()]
        );
    }

    #[test]
    fn head_decoding_matches_helm() {
        // Texts from helm v3.17.3 (`YAML parse error on …: <this>`).
        assert_eq!(
            parse_head("just a string"),
            Err("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type releaseutil.SimpleHead".into())
        );
        assert_eq!(
            parse_head("metadata: 3"),
            Err("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field SimpleHead.metadata of type struct { Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }".into())
        );
        assert_eq!(
            parse_head("kind: Pod\nmetadata:\n  name: [a]\n"),
            Err("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field .metadata.name of type string".into())
        );
        // Field names match case-insensitively; numbers become strings.
        let h = parse_head(
            "Kind: Pod\nMetadata:\n  Name: x\n  ANNOTATIONS:\n    helm.sh/hook: pre-install\n    w: 5\n",
        );
        let h = h.unwrap_or_default();
        assert_eq!(h.kind, "Pod");
        let meta = h.metadata.unwrap_or_default();
        assert_eq!(meta.name, "x");
        assert_eq!(
            meta.annotations
                .unwrap_or_default()
                .get("w")
                .map(String::as_str),
            Some("5")
        );
    }

    /// A chart big enough for the documents to be parsed on several threads
    /// sorts as one parsed in order would, and reports the first broken file.
    fn big_chart(broken: &[usize]) -> BTreeMap<String, String> {
        let filler: String = (0..400).map(|i| format!("  k{i}: v{i}\n")).collect();
        (0..60)
            .map(|i| {
                let kind = if i % 2 == 0 { "Service" } else { "ConfigMap" };
                let body = if broken.contains(&i) {
                    format!("kind: {kind}\ndata: [unclosed\n")
                } else {
                    format!("kind: {kind}\nmetadata:\n  name: o{i}\ndata:\n{filler}")
                };
                (
                    format!("m/templates/f{i:02}.yaml"),
                    format!("{body}---\n{body}"),
                )
            })
            .collect()
    }

    #[test]
    fn documents_parsed_in_parallel_keep_helms_order() {
        let files = big_chart(&[]);
        assert!(files.values().map(String::len).sum::<usize>() > 256 << 10);
        let sorted = sort_manifests(&files).unwrap_or_default();
        let got: Vec<_> = sorted
            .manifests
            .iter()
            .map(|m| {
                format!(
                    "{} {}",
                    m.head.kind,
                    m.head.metadata.as_ref().map_or("", |x| &x.name)
                )
            })
            .collect();
        let mut want: Vec<String> = Vec::new();
        for kind in ["ConfigMap", "Service"] {
            for i in 0..60 {
                if (kind == "Service") == (i % 2 == 0) {
                    want.push(format!("{kind} o{i}"));
                    want.push(format!("{kind} o{i}"));
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn documents_parsed_in_parallel_report_the_first_broken_file() {
        let err = sort_manifests(&big_chart(&[47, 13, 58]))
            .err()
            .map(|e| e.path);
        assert_eq!(err.as_deref(), Some("m/templates/f13.yaml"));
    }

    #[test]
    fn hook_names_are_trimmed_and_case_folded() {
        let mut files = BTreeMap::new();
        files.insert(
            "h/templates/a.yaml".to_string(),
            "kind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: \" Pre-Install , TEST-success\"\n".to_string(),
        );
        let sorted = sort_manifests(&files).unwrap_or_default();
        assert_eq!(sorted.hooks.len(), 1);
        assert_eq!(
            sorted.hooks[0].events,
            vec![HookEvent::PreInstall, HookEvent::Test]
        );
    }

    #[test]
    fn filepath_match_is_go_path_match() {
        assert!(filepath_match("templates/*", "templates/cm.yaml"));
        assert!(!filepath_match("templates/*", "templates/sub/cm.yaml"));
        assert!(filepath_match("templates/[a-c]m.yaml", "templates/cm.yaml"));
        assert!(filepath_match("templates/[^a]m.yaml", "templates/cm.yaml"));
        assert!(!filepath_match("templates/[", "templates/["));
        assert!(filepath_match(
            "charts/sub/templates/s.yaml",
            "charts/sub/templates/s.yaml"
        ));
    }

    #[test]
    fn show_only_selects_documents_per_pattern() {
        let full = "---\n# Source: m/templates/a.yaml\nkind: A\n---\n# Source: m/templates/b.yaml\nkind: B\n";
        assert_eq!(
            show_only(full, &["templates/b.yaml".into(), "templates/*".into()]),
            Ok("---\n# Source: m/templates/b.yaml\nkind: B\n---\n# Source: m/templates/a.yaml\nkind: A\n---\n# Source: m/templates/b.yaml\nkind: B\n".into())
        );
        assert_eq!(
            show_only(full, &["templates/nope.yaml".into()]),
            Err("could not find template templates/nope.yaml in chart".into())
        );
    }
}
