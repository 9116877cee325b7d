//! Helm v3.17's `engine.Render`: every template of a chart and its
//! subcharts parsed into one namespace and executed, each chart with its own
//! top-level data (`.Values` scoped to the subchart, `.Chart`, `.Files`,
//! `.Release`, `.Capabilities`, `.Subcharts`, `.Template`).
//!
//! Reproduced from pkg/engine/engine.go: the parse and render order
//! (`sortTemplates`: deepest path first, then reverse lexicographic, so the
//! shallower file's `define` wins), library charts contributing only `_*`
//! files, `_*` files not rendered, `<no value>` deleted from each output,
//! the values map shared and mutable across files, and Helm's rewriting of
//! parse and execution errors (`cleanupParseError`, `cleanupExecError`).

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex};

use crate::chart::capabilities::Capabilities;
use crate::chart::files::Files;
use crate::chart::helmfuncs::{WARN_END, WARN_START, helm_func_map};
use crate::chart::workers::{self, cores};
use crate::chart::{Chart, Data, Metadata};
use crate::engine::{
    Entries, Env, FuncMap, Key, Map, MapKind, Member, Object, ParsedFile, Templates, Value,
};
use crate::scan::after_last_slash;
use crate::yaml::Mapping;

/// Helm's `chartutil.ReleaseOptions` (revision is always 1 for `template`).
#[derive(Clone, Debug)]
pub struct ReleaseOptions {
    pub name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_upgrade: bool,
    pub is_install: bool,
}

/// A render failure; Display is exactly what Helm reports.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    /// A template that does not parse (`parse error at (F:L): msg`).
    #[error("{0}")]
    Parse(String),
    /// A template that fails while executing (`execution error at …` for
    /// `fail`/`required`, otherwise Go's `template: F:L:C: executing …`).
    #[error("{0}")]
    Exec(String),
    /// A rendered manifest that is not UTF-8 (a Go byte string printed into
    /// it): go-yaml's reader error, as Helm's manifest sorting reports it
    /// (`YAML parse error on F: error converting YAML to JSON: yaml: …`).
    #[error("{0}")]
    NotUtf8(String),
}

/// One file to render: the top-level data of its chart, and the chart's
/// templates directory.
struct Renderable {
    vals: Rc<Map>,
    base_path: String,
}

/// Render all templates of `chart` (subcharts included) over the coalesced
/// `values`. Returns the output of every non-partial file by template path
/// (`mychart/templates/x.yaml`), NOTES.txt included.
pub fn render(
    chart: &Chart,
    values: &Mapping,
    release: &ReleaseOptions,
    caps: &Capabilities,
    env: &Env,
) -> Result<BTreeMap<String, String>, RenderError> {
    let top_values = crate::chart::convert::values_to_value(values);
    render_values(chart, top_values, release, caps, env)
}

/// As [`render`], with `.Values` already a template value (a
/// `chartutil.Values` map).
pub fn render_values(
    chart: &Chart,
    values: Value,
    release: &ReleaseOptions,
    caps: &Capabilities,
    env: &Env,
) -> Result<BTreeMap<String, String>, RenderError> {
    render_keeping(chart, values, release, caps, env).map(|(files, _state)| files)
}

/// The parsed template set and everything it points into, handed back by
/// [`render_keeping`].
pub struct RenderState(#[allow(dead_code)] Box<dyn Any>);

/// As [`render_values`], also handing back the render state (the parsed
/// templates of every file) instead of dropping it: a process that exits
/// right after printing can `std::mem::forget` it and skip freeing tens of
/// thousands of small allocations.
pub fn render_keeping(
    chart: &Chart,
    values: Value,
    release: &ReleaseOptions,
    caps: &Capabilities,
    env: &Env,
) -> Result<(BTreeMap<String, String>, RenderState), RenderError> {
    let ((), parsed) = ParsePool::new().finish(chart, 0, || ());
    render_parsed(chart, parsed?, values, release, caps, env, &mut |_, _| {})
}

/// Every template of a chart, parsed or being parsed, in Helm's parse
/// order, ready for [`render_parsed`].
pub struct ParsedTemplates {
    funcs: Arc<FuncMap>,
    /// (template path, its job in the pool) in `sortTemplates` order.
    files: Vec<(String, usize)>,
    /// The pool parsing them, its workers perhaps still busy.
    pool: ParsePool,
    /// Bytes of template source.
    source_bytes: usize,
}

impl ParsedTemplates {
    /// Whether the chart's templates are big enough that handing render
    /// work to another thread pays for starting it.
    pub fn worth_a_thread(&self) -> bool {
        cores() > 1 && self.source_bytes >= MIN_PARALLEL_BYTES
    }
}

/// Template bytes below which parsing is not worth another thread: a
/// thread costs some 30–60 µs to start and join, about what parsing 1 KB
/// of typical chart templates takes (some 135 instructions a byte).
const MIN_PARALLEL_BYTES: usize = 8 * 1024;
/// Template bytes each extra parsing thread should have at least.
const BYTES_PER_THREAD: usize = 4 * 1024;

/// Template bytes a thread started while the templates are read expects
/// to parse (their total is not known yet), for [`reserve_arena`].
const STREAMED_SHARE: usize = 64 * 1024;
/// Parse-tree bytes per byte of template source, generously, for
/// [`reserve_arena`]: about 4 for ingress-nginx, but with 6 grafana's
/// worker outgrew its reserve and grew its arena a page at a time again
/// (~45 `mprotect` calls a render). Reserving more costs nothing resident:
/// the reserve is address space, its pages untouched until used.
const TREE_BYTES_PER_SOURCE_BYTE: usize = 10;

/// Grow this thread's malloc arena by about `bytes` in a few steps.
///
/// glibc serves every thread but the main one from an arena of its own,
/// which it grows by exactly the pages a request lacks, one `mprotect`
/// call each (the main arena's `brk` growth is padded; thread arenas' is
/// not), and each call interrupts the other cores the process runs on to
/// flush their TLBs: a parsing thread made over a hundred such calls per
/// render. Allocating the expected total in blocks under the mmap
/// threshold and freeing it grows the arena once per block. The pages are
/// not touched, so resident memory does not change, and glibc keeps them
/// open for the arena's later growth. With another allocator this is one
/// short-lived allocation per block and nothing else.
fn reserve_arena(bytes: usize) {
    // Heap shaping pays only in a process that renders once and exits.
    if !workers::one_shot_process() {
        return;
    }
    // Under glibc's smallest mmap threshold (128 KiB), so the blocks come
    // from the arena; at most 8 MB in all.
    const BLOCK: usize = 120 << 10;
    let blocks: Vec<Vec<u8>> = (0..bytes.div_ceil(BLOCK).min(68))
        .map(|_| Vec::with_capacity(BLOCK))
        .collect();
    // A small allocation after the last block keeps the freed blocks (one
    // free chunk) from merging into the arena's top: glibc would give the
    // top back at once (`madvise`, and the other cores of the process
    // interrupted to flush their TLBs), to grow it again for the trees.
    // Its size is one the thread has hardly used yet, so that it comes
    // from the top rather than from a cached chunk; freed last, it goes to
    // the thread's cache of small chunks, which does not merge, and is
    // reused by the next allocation of its size.
    let fence: Vec<u8> = Vec::with_capacity(1000);
    std::hint::black_box((&blocks, &fence));
    drop(blocks);
    drop(fence);
}

/// Template bytes from which a render's buffers are large enough for
/// [`prepare_heap`] to pay: argo-rollouts (1 MB of templates, 1 MB of
/// output) 12 % faster with it, a small chart ~1 % slower (the mapping it
/// makes and frees is a page fault and two system calls).
const LARGE_TEMPLATE_BYTES: usize = 256 * 1024;

/// For a render of `template_bytes` of templates: let glibc keep freed
/// memory for reuse instead of handing it back to the kernel, as it would
/// after a while on its own, when the render is large enough for that to
/// pay ([`LARGE_TEMPLATE_BYTES`]).
///
/// glibc serves requests of 128 KiB or more with fresh `mmap`s and trims a
/// heap whose free top exceeds 128 KiB; both limits rise (to the size of
/// the chunk, and twice that) the first time it frees an mmapped chunk
/// larger than the limit. A render is too short to get there: the main
/// heap was trimmed and grown again, a parse worker's reserve
/// ([`reserve_arena`]) was given back at once (`madvise`, which interrupts
/// the other core to flush its TLB), and large buffers came from fresh
/// mappings, every page of them a page fault (argo-rollouts: 1,905 page
/// faults a render, 1,570 with this). Freeing one 1 MiB block (never
/// touched: address space only) raises both limits for the rest of the
/// process.
fn prepare_heap(template_bytes: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // It raises glibc's thresholds for the rest of the process: only for
    // one that renders once and exits.
    if template_bytes < LARGE_TEMPLATE_BYTES || !workers::one_shot_process() {
        return;
    }
    ONCE.call_once(|| {
        let block: Vec<u8> = Vec::with_capacity(1 << 20);
        drop(std::hint::black_box(block));
    });
}

/// How much of a worker thread's malloc arena is open ([`reserve_arena`])
/// against what the parse trees of the files it has taken are expected to
/// need; reserved ahead in doubling steps, so a worker that takes more than
/// its first share does not go back to growing its arena a page at a time.
struct ArenaBudget {
    reserved: usize,
    needed: usize,
}

impl ArenaBudget {
    /// A worker expecting to parse about `share` bytes of templates.
    fn new(share: usize) -> ArenaBudget {
        let reserved = share.saturating_mul(TREE_BYTES_PER_SOURCE_BYTE);
        reserve_arena(reserved);
        ArenaBudget {
            reserved,
            needed: 0,
        }
    }

    /// The worker takes a file of `source_bytes`.
    fn take(&mut self, source_bytes: usize) {
        self.needed = self
            .needed
            .saturating_add(source_bytes.saturating_mul(TREE_BYTES_PER_SOURCE_BYTE));
        if self.needed > self.reserved {
            let more = self.needed.max(self.reserved);
            reserve_arena(more);
            self.reserved = self.reserved.saturating_add(more);
        }
    }
}

/// The templates of a chart directory are parsed as the loader reads them
/// (the parsing thread starts before the rest of the chart is read).
impl crate::chart::load::LoadObserver for ParsePool {
    fn template_read(&mut self, chart: &str, rel: &str, data: &Data) {
        self.stream(path_join(chart, rel), data.clone());
    }

    fn templates_known(&mut self, chart: &Chart) {
        if self.streamed == 0 {
            self.start_top(chart);
        }
    }
}

/// One file's parse, or the panic of the thread that parsed it.
type ParseResult = std::thread::Result<Result<ParsedFile, crate::engine::Error>>;

/// Template files parsed on worker threads while the caller goes on with
/// other work: files can be handed in as soon as they are known (the top
/// chart's templates right after loading, before the dependency processing
/// decides which subcharts render), and [`ParsePool::finish`] queues the
/// rest and hands over the set in Helm's order, still being parsed, to
/// [`render_parsed`], which executes files as their parses come in
/// (`Pipeline`). Whatever the threads, the result is that of parsing the
/// final chart's files one after the other, then executing them.
pub struct ParsePool {
    shared: Arc<PoolShared>,
    workers: Vec<workers::Pending<()>>,
    /// Bytes of the top chart's templates queued as they were read.
    streamed: usize,
}

struct PoolShared {
    funcs: Arc<FuncMap>,
    state: Mutex<PoolState>,
    ready: Condvar,
    /// A worker finished a parse the main thread waits for.
    finished: Condvar,
}

#[derive(Default)]
struct PoolState {
    /// Every file handed in, by job id: template path and bytes.
    jobs: Vec<(String, Data)>,
    /// Ids not yet taken, in [`queue_key`] order until execution starts,
    /// then as [`PoolShared::last_first`] puts them: workers take from
    /// the front, the main thread from the back.
    queue: VecDeque<usize>,
    /// No more jobs will come: idle workers exit.
    closed: bool,
    /// Workers waiting for a job (a job needs no wake-up call otherwise).
    idle: usize,
    /// Parses done by workers and not yet taken, by job id.
    done: HashMap<usize, ParseResult>,
    /// Parses under way on workers.
    running: usize,
    /// The main thread waits for one of them (a finished parse needs no
    /// wake-up call otherwise).
    waiting: bool,
    /// Jobs below this id have been read, or are being read, by a worker
    /// ([`PoolShared::work`] reads ahead).
    read_ahead: usize,
}

impl PoolShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Take jobs until the queue is closed and empty, leaving each parse
    /// in `done`. A worker thread passes its arena's budget, grown ahead
    /// of the parse trees it builds.
    fn work(&self, mut budget: Option<ArenaBudget>) {
        loop {
            let (id, name, data) = {
                let mut st = self.lock();
                loop {
                    if let Some(id) = st.queue.pop_front() {
                        st.running += 1;
                        let (name, data) = st.jobs[id].clone();
                        break (id, name, data);
                    }
                    if st.closed {
                        return;
                    }
                    st.idle += 1;
                    st = self
                        .ready
                        .wait(st)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    st.idle -= 1;
                }
            };
            if let Some(b) = &mut budget {
                b.take(data.len());
            }
            // A panic is handed to the thread that takes the parse.
            let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Templates::parse_file_bytes(&name, data.shared(), &self.funcs)
            }));
            let mut st = self.lock();
            st.done.insert(id, parsed);
            st.running -= 1;
            // Read the files queued since: every file is read once, by the
            // first thread to need it, and otherwise the main thread reads
            // those no worker has reached when it starts executing (to see
            // which may define templates), on the path the render waits on.
            let ahead = st.jobs[st.read_ahead..]
                .iter()
                .map(|(_, d)| d.clone())
                .collect::<Vec<_>>();
            st.read_ahead = st.jobs.len();
            let wake = st.waiting;
            drop(st);
            if wake {
                self.finished.notify_all();
            }
            for data in ahead {
                data.shared();
            }
        }
    }

    /// The parse of job `id`: done by a worker, or done here if no worker
    /// has taken it yet, or waited for.
    fn take(&self, id: usize) -> Result<ParsedFile, crate::engine::Error> {
        let mut st = self.lock();
        loop {
            if let Some(parsed) = st.done.remove(&id) {
                return parsed.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            }
            if let Some(at) = st.queue.iter().position(|&q| q == id) {
                st.queue.remove(at);
                let (name, data) = st.jobs[id].clone();
                drop(st);
                return Templates::parse_file_bytes(&name, data.shared(), &self.funcs);
            }
            // Being parsed by a worker: parse the file to execute soonest
            // meanwhile (the queue is last to execute first by then).
            if let Some(other) = st.queue.pop_back() {
                st.running += 1;
                let (name, data) = st.jobs[other].clone();
                drop(st);
                let parsed = Templates::parse_file_bytes(&name, data.shared(), &self.funcs);
                st = self.lock();
                st.done.insert(other, Ok(parsed));
                st.running -= 1;
                continue;
            }
            if st.running == 0 {
                // Taken twice: a bug, reported rather than waited on forever.
                let name = st.jobs.get(id).map(|j| j.0.as_str()).unwrap_or("?");
                return Err(crate::engine::Error::other(format!(
                    "template: {name}: was not parsed"
                )));
            }
            st.waiting = true;
            st = self
                .finished
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            st.waiting = false;
        }
    }

    /// Whether job `id`'s file may define templates: from its parse if
    /// done, from its text if not started (read here if it was not yet);
    /// a file being parsed counts as one that does.
    fn may_define(&self, id: usize) -> bool {
        let st = self.lock();
        match st.done.get(&id) {
            Some(Ok(Ok(parsed))) => return parsed.defines(),
            Some(_) => return true,
            None => {}
        }
        if !st.queue.contains(&id) {
            return true;
        }
        let data = st.jobs[id].1.clone();
        drop(st);
        may_define(data.bytes())
    }

    /// Whether job `id` waits in the queue (no thread has taken it).
    fn queued(&self, id: usize) -> bool {
        self.lock().queue.contains(&id)
    }

    /// Queue the waiting jobs: those of files marked `early` (by place in
    /// Helm's order, `position` of a job id) largest first, then the others
    /// last file first.
    fn last_first(&self, position: &HashMap<usize, usize>, early: &[bool]) {
        let mut st = self.lock();
        let PoolState { jobs, queue, .. } = &mut *st;
        queue.make_contiguous().sort_by_key(|id| {
            let i = position.get(id).copied();
            match i {
                Some(i) if early[i] => (false, std::cmp::Reverse(jobs[*id].1.size_hint())),
                _ => (true, std::cmp::Reverse(i.unwrap_or(0))),
            }
        });
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

impl Default for ParsePool {
    fn default() -> Self {
        ParsePool::new()
    }
}

impl ParsePool {
    /// A pool without threads yet.
    pub fn new() -> ParsePool {
        ParsePool {
            shared: Arc::new(PoolShared {
                funcs: Arc::new(helm_func_map()),
                state: Mutex::new(PoolState::default()),
                ready: Condvar::new(),
                finished: Condvar::new(),
            }),
            workers: Vec::new(),
            streamed: 0,
        }
    }

    /// Queue the top chart's own templates (whose paths the dependency
    /// processing does not change) and start parsing them on the spare
    /// cores, when they are worth it.
    fn start_top(&mut self, chart: &Chart) {
        let files: Vec<(String, Data)> = own_templates(chart, chart.name()).collect();
        let bytes: usize = files.iter().map(|(_, d)| d.size_hint()).sum();
        prepare_heap(bytes);
        let threads = if bytes < MIN_PARALLEL_BYTES {
            0
        } else {
            (bytes / BYTES_PER_THREAD).min(cores() - 1)
        };
        if threads == 0 {
            return;
        }
        self.push(files);
        self.spawn_workers(threads, bytes / (threads + 1));
    }

    /// Queue one of the top chart's templates as soon as it is read; a
    /// thread starts taking them once they are worth one.
    fn stream(&mut self, path: String, data: Data) {
        self.streamed += data.size_hint();
        self.push(vec![(path, data)]);
        if self.workers.is_empty() && cores() > 1 && self.streamed >= BYTES_PER_THREAD {
            self.spawn_workers(1, STREAMED_SHARE);
        }
    }

    /// Start `n` more threads taking files from the queue, each expecting
    /// to parse about `share` bytes. A thread that cannot be started
    /// leaves its share to the others.
    fn spawn_workers(&mut self, n: usize, share: usize) {
        for _ in 0..n {
            let shared = self.shared.clone();
            let h = workers::spawn_detached(move || shared.work(Some(ArenaBudget::new(share))));
            if let Ok(h) = h {
                self.workers.push(h);
            }
        }
    }

    /// Queue `files`, each in its place by [`queue_key`]; returns their
    /// job ids, in the order of `files`.
    fn push(&self, files: Vec<(String, Data)>) -> Vec<usize> {
        let n = files.len();
        let mut st = self.shared.lock();
        let base = st.jobs.len();
        st.jobs.extend(files);
        for id in base..base + n {
            let key = queue_key(&st.jobs[id]);
            let at = st.queue.partition_point(|&q| queue_key(&st.jobs[q]) <= key);
            st.queue.insert(at, id);
        }
        let wake = st.idle > 0;
        drop(st);
        if wake {
            self.shared.ready.notify_all();
        }
        (base..base + n).collect()
    }

    /// Queue every template of `chart` (the files handed in before are not
    /// parsed again) and have the workers parse them while this thread
    /// runs `other`. `other_cost` is `other`'s work in template-parsing
    /// bytes (a rough equivalent), used only to decide how many threads
    /// are worth starting. `other` runs here rather than on a worker so
    /// that the memory it frees is reused by what this thread does next
    /// (each thread allocates from its own malloc arena). Returns what
    /// `other` returned and the templates, whose parsing goes on: a file
    /// that does not parse is reported by [`render_parsed`] (the first in
    /// Helm's order, as when Helm stops at the first one).
    pub fn finish<T>(
        mut self,
        chart: &Chart,
        other_cost: usize,
        other: impl FnOnce() -> T,
    ) -> (T, Result<ParsedTemplates, RenderError>) {
        let mut all = BTreeMap::new();
        collect_templates(chart, None, &mut all);
        let mut files: Vec<(String, Data)> = all.into_iter().collect();
        files.sort_by(|a, b| template_order(&a.0, &b.0));

        // Which files are already in the pool (same path, same file). Not
        // read here: the threads parsing them read them.
        let known: HashMap<String, (usize, Data)> = match self.shared.state.lock() {
            Ok(st) => st
                .jobs
                .iter()
                .enumerate()
                .map(|(id, (n, d))| (n.clone(), (id, d.clone())))
                .collect(),
            Err(_) => HashMap::new(),
        };
        let mut ids: Vec<Option<usize>> = Vec::with_capacity(files.len());
        let (mut new_files, mut new_pos) = (Vec::new(), Vec::new());
        for (pos, (name, data)) in files.iter().enumerate() {
            match known.get(name) {
                Some((id, known)) if known.same(data) => ids.push(Some(*id)),
                _ => {
                    new_files.push((name.clone(), data.clone()));
                    new_pos.push(pos);
                    ids.push(None);
                }
            }
        }
        let bytes: usize = files.iter().map(|(_, d)| d.size_hint()).sum();
        prepare_heap(bytes);
        for (pos, id) in new_pos.into_iter().zip(self.push(new_files)) {
            ids[pos] = Some(id);
        }
        self.shared.close();

        // Threads besides this one: one per share of the parse, and one to
        // parse while `other` runs here when that is worth it.
        let cores = cores();
        let mut threads = if bytes < MIN_PARALLEL_BYTES {
            0
        } else {
            (bytes / BYTES_PER_THREAD).min(cores) - 1
        };
        if cores > 1 && other_cost.min(bytes) >= MIN_PARALLEL_BYTES / 2 {
            threads = threads.max(1);
        }
        self.spawn_workers(
            threads.saturating_sub(self.workers.len()),
            bytes / (threads + 1),
        );

        let result = other();
        let funcs = self.shared.funcs.clone();
        let files = files
            .into_iter()
            .zip(ids)
            // Every file was queued (`push` hands out an id for each); an
            // id that is no job is reported by `take` as not parsed.
            .map(|((name, _), id)| (name, id.unwrap_or(usize::MAX)))
            .collect();
        let parsed = ParsedTemplates {
            funcs,
            files,
            pool: self,
            source_bytes: bytes,
        };
        (result, Ok(parsed))
    }
}

impl Drop for ParsePool {
    /// A run that fails before `finish`: stop the workers after the file
    /// each is parsing.
    fn drop(&mut self) {
        if let Ok(mut st) = self.shared.state.lock() {
            st.queue.clear();
        }
        self.shared.close();
        for h in std::mem::take(&mut self.workers) {
            let _ = h.wait();
        }
    }
}

/// Execute the parsed templates of `chart` over `values` (the second half of
/// [`render_keeping`]); `parsed` must come from [`ParsePool::finish`] on the
/// same chart. `rendered_file(path, text)` sees each file's final text as
/// soon as it is rendered (files come in Helm's template order).
pub fn render_parsed(
    chart: &Chart,
    parsed: ParsedTemplates,
    values: Value,
    release: &ReleaseOptions,
    caps: &Capabilities,
    env: &Env,
    rendered_file: &mut dyn FnMut(&str, &str),
) -> Result<(BTreeMap<String, String>, RenderState), RenderError> {
    // The render limits count from here (output, deadline).
    env.begin_render();
    let shared = Shared {
        release: release_value(release),
        capabilities: caps.to_value(),
    };
    let mut templates: BTreeMap<String, Renderable> = BTreeMap::new();
    rec_all_templates(chart, None, &values, &shared, &mut templates);

    let ParsedTemplates {
        funcs, files, pool, ..
    } = parsed;
    let mut set = Templates::new(funcs);
    let run = Rc::new(Pipeline::new(pool.shared.clone(), files));
    run.start(&mut set)?;
    let late = run.clone();
    set.set_late(Box::new(move || late.take_rest()));

    let mut rendered = BTreeMap::new();
    let mut not_utf8: Option<String> = None;
    for (i, (name, _)) in run.files.iter().enumerate() {
        if after_last_slash(name).starts_with('_') {
            continue;
        }
        let Some(r) = templates.get(name) else {
            continue;
        };
        if let Some(file) = run.take_for_exec(i)? {
            set.add_new(file);
        }
        // Helm sets `.Template` in the chart's shared top-level map just
        // before executing each file.
        let mut t = Entries::new();
        t.insert(Key::from("Name"), Value::str(name));
        t.insert(Key::from("BasePath"), Value::str(&r.base_path));
        r.vals.insert(
            "Template",
            Value::Map(Rc::new(Map::new(MapKind::Values, t))),
        );
        let out = match set.execute_bytes(name, &Value::Map(r.vals.clone()), env) {
            Ok(out) => out,
            // A file that does not parse is the error, as Helm parses
            // every file before executing any.
            Err(e) => {
                run.check_parsed()?;
                return Err(RenderError::Exec(cleanup_exec_error(name, &e.to_string())));
            }
        };
        let out = if crate::scan::find(&out, b"<no value>").is_some() {
            crate::scan::replace(&out, b"<no value>", b"")
        } else {
            out
        };
        let text = match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => {
                // Helm keeps the bytes and fails once all files are rendered,
                // when go-yaml reads the manifest (NOTES.txt is not parsed).
                if not_utf8.is_none() && !name.ends_with("NOTES.txt") {
                    not_utf8 = Some(format!(
                        "YAML parse error on {name}: {}",
                        yaml_reader_error(e.as_bytes())
                    ));
                }
                crate::engine::value::go_lossy(e.as_bytes()).into_owned()
            }
        };
        rendered_file(name, &text);
        rendered.insert(name.clone(), text);
    }
    // Files never executed (`_*`, or never reached) must parse too; kept
    // with the others for the render state.
    for file in run.check_parsed()? {
        set.add_new(file);
    }
    drop(pool);
    if let Some(e) = not_utf8 {
        return Err(RenderError::NotUtf8(e));
    }
    let vals: Vec<Rc<Map>> = templates.into_values().map(|r| r.vals).collect();
    Ok((rendered, RenderState(Box::new((set, vals, values)))))
}

/// Executing a chart's files while the rest of them are parsed.
///
/// Helm parses every file into one namespace, then executes them. Here a
/// file executes as soon as its own parse and every `define` it might use
/// are in: [`Pipeline::start`] adds each file that may define templates
/// (`define`/`block`, found in its text or its parse) in Helm's parse
/// order, so the override rules give the same definitions; every other
/// file brings only its own template, under a name no definition has, and
/// is added right before it executes, or with all the rest when an
/// execution first looks up a name the namespace lacks (a file's own
/// template by path, [`Templates::set_late`]). Each execution therefore
/// sees the templates it would in Helm. Meanwhile the workers parse the
/// remaining files from the last to execute backwards, and this thread
/// parses any it reaches first. A file that does not parse is still the
/// error (the first in Helm's order), whatever executed before it.
struct Pipeline {
    shared: Arc<PoolShared>,
    /// (template path, job id) in Helm's parse order.
    files: Vec<(String, usize)>,
    state: RefCell<Vec<FileState>>,
}

enum FileState {
    /// Not taken from the pool yet.
    Pending,
    /// Parsed; in the namespace, or handed over to be.
    Taken,
    Failed(crate::engine::Error),
}

impl Pipeline {
    fn new(shared: Arc<PoolShared>, files: Vec<(String, usize)>) -> Pipeline {
        let state = RefCell::new(files.iter().map(|_| FileState::Pending).collect());
        Pipeline {
            shared,
            files,
            state,
        }
    }

    /// Add every file that may define templates to `set`, in Helm's order,
    /// and have the workers go on with the others from the end.
    fn start(&self, set: &mut Templates) -> Result<(), RenderError> {
        let early: Vec<bool> = self
            .files
            .iter()
            .map(|(_, id)| self.shared.may_define(*id))
            .collect();
        let position: HashMap<usize, usize> = self
            .files
            .iter()
            .enumerate()
            .map(|(i, (_, id))| (*id, i))
            .collect();
        // The workers take the files needed first, then the others from
        // the last to execute (this thread parses from the other end).
        self.shared.last_first(&position, &early);
        let mut parsed: Vec<Option<ParsedFile>> = self.files.iter().map(|_| None).collect();
        // The ones no worker has started first, then those being parsed.
        for started in [false, true] {
            for (i, (_, id)) in self.files.iter().enumerate() {
                if early[i] && parsed[i].is_none() && started != self.shared.queued(*id) {
                    parsed[i] = Some(self.take(i)?);
                }
            }
        }
        // A file named like a definition joins them: which of the two a
        // lookup finds depends on the parse order.
        let names: std::collections::HashSet<&str> = parsed
            .iter()
            .flatten()
            .flat_map(ParsedFile::names)
            .collect();
        let named: Vec<usize> = (0..self.files.len())
            .filter(|&i| !early[i] && names.contains(self.files[i].0.as_str()))
            .collect();
        drop(names);
        for i in named {
            parsed[i] = Some(self.take(i)?);
        }
        for file in parsed.into_iter().flatten() {
            set.add(file);
        }
        Ok(())
    }

    /// File `i`'s parse, to add before executing it; `None` if it was
    /// added already.
    fn take_for_exec(&self, i: usize) -> Result<Option<ParsedFile>, RenderError> {
        if matches!(self.state.borrow()[i], FileState::Taken) {
            return Ok(None);
        }
        self.take(i).map(Some)
    }

    /// File `i`'s parse; a parse error is the run's error: the first in
    /// Helm's order.
    fn take(&self, i: usize) -> Result<ParsedFile, RenderError> {
        match self.shared.take(self.files[i].1) {
            Ok(file) => {
                self.state.borrow_mut()[i] = FileState::Taken;
                Ok(file)
            }
            Err(e) => {
                self.state.borrow_mut()[i] = FileState::Failed(e);
                Err(self.first_error())
            }
        }
    }

    /// Every file not yet taken that parses ([`Templates::set_late`]).
    fn take_rest(&self) -> Vec<ParsedFile> {
        let mut out = Vec::new();
        for (i, (_, id)) in self.files.iter().enumerate() {
            if !matches!(self.state.borrow()[i], FileState::Pending) {
                continue;
            }
            let next = match self.shared.take(*id) {
                Ok(file) => {
                    out.push(file);
                    FileState::Taken
                }
                Err(e) => FileState::Failed(e),
            };
            self.state.borrow_mut()[i] = next;
        }
        out
    }

    /// Parse what is left: the first file in Helm's order that does not
    /// parse is the error; otherwise the parses not taken yet.
    fn check_parsed(&self) -> Result<Vec<ParsedFile>, RenderError> {
        let rest = self.take_rest();
        let state = self.state.borrow();
        for (i, s) in state.iter().enumerate() {
            if let FileState::Failed(e) = s {
                return Err(RenderError::Parse(cleanup_parse_error(
                    &self.files[i].0,
                    &e.to_string(),
                )));
            }
        }
        Ok(rest)
    }

    fn first_error(&self) -> RenderError {
        match self.check_parsed() {
            Err(e) => e,
            Ok(_) => RenderError::Parse("parse error: lost".into()),
        }
    }
}

/// Where a file goes in the parse queue before execution starts: `_*`
/// files (where charts keep their `define`s, which must all be parsed
/// before any file executes) first, larger files before smaller (a large
/// file taken last would leave the other threads idle meanwhile).
fn queue_key((name, data): &(String, Data)) -> (bool, std::cmp::Reverse<usize>) {
    (
        !after_last_slash(name).starts_with('_'),
        std::cmp::Reverse(data.size_hint()),
    )
}

/// Whether template text may hold a `define` or `block` action: the word
/// right after `{{` (and a trim marker). A plain search over the bytes, so
/// that a file need not be parsed to know; the word in text or in a
/// comment does not count.
fn may_define(text: &[u8]) -> bool {
    [&b"define"[..], b"block"].into_iter().any(|word| {
        crate::scan::find_iter(text, word).any(|at| {
            let before = text[..at].trim_ascii_end();
            before.strip_suffix(b"-").unwrap_or(before).ends_with(b"{{")
        })
    })
}

/// go-yaml's reader error for the first document of `bytes` that is not
/// UTF-8, documents split and trimmed as `releaseutil.SplitManifests` does
/// (so a cut character at the end of a document is "incomplete").
fn yaml_reader_error(bytes: &[u8]) -> String {
    use bstr::ByteSlice;
    static SEP: std::sync::LazyLock<Option<regex::bytes::Regex>> =
        std::sync::LazyLock::new(|| regex::bytes::Regex::new(r"(?-u)(?:^|\s*\n)---\s*").ok());
    let docs: Vec<&[u8]> = match &*SEP {
        Some(re) => re.split(bytes.trim()).map(|d| d.trim()).collect(),
        None => vec![bytes.trim()],
    };
    docs.into_iter()
        .find_map(|d| crate::yaml::check_input(d).err())
        .map(|e| e.to_string())
        .unwrap_or_else(|| {
            "error converting YAML to JSON: yaml: invalid leading UTF-8 octet".into()
        })
}

struct Shared {
    release: Value,
    capabilities: Value,
}

fn release_value(r: &ReleaseOptions) -> Value {
    let mut e = Entries::new();
    e.insert(Key::from("Name"), Value::str(&r.name));
    e.insert(Key::from("Namespace"), Value::str(&r.namespace));
    e.insert(Key::from("IsUpgrade"), Value::Bool(r.is_upgrade));
    e.insert(Key::from("IsInstall"), Value::Bool(r.is_install));
    e.insert(Key::from("Revision"), Value::Int(r.revision));
    e.insert(Key::from("Service"), Value::str("Helm"));
    Value::map(e)
}

/// Helm's `recAllTpls`: build the chart's top-level data, recurse into
/// subcharts (each gets the `Values.<name>` table of its parent), and
/// collect the chart's templates. Returns the chart's data map, which the
/// parent exposes as `.Subcharts.<name>`.
fn rec_all_templates(
    chart: &Chart,
    parent_path: Option<&str>,
    parent_values: &Value,
    shared: &Shared,
    out: &mut BTreeMap<String, Renderable>,
) -> Rc<Map> {
    let is_root = parent_path.is_none();
    let values = if is_root {
        parent_values.clone()
    } else {
        values_table(parent_values, chart.name())
    };
    let full_path = chart_path(parent_path, chart);

    let subcharts = Rc::new(Map::new(MapKind::Any, Entries::new()));
    let next = Rc::new(Map::new(MapKind::Values, Entries::new()));
    next.insert(
        "Chart",
        Value::Object(Rc::new(ChartObject {
            meta: chart.metadata.clone(),
            is_root,
        })),
    );
    next.insert("Files", Files::from_chart(chart).to_value());
    next.insert("Release", shared.release.clone());
    next.insert("Capabilities", shared.capabilities.clone());
    next.insert("Values", values.clone());
    next.insert("Subcharts", Value::Map(subcharts.clone()));

    for child in &chart.dependencies {
        let child_vals = rec_all_templates(child, Some(&full_path), &values, shared, out);
        subcharts.insert(child.name(), Value::Map(child_vals));
    }

    for name in own_templates(chart, &full_path).map(|(name, _)| name) {
        out.insert(
            name,
            Renderable {
                vals: next.clone(),
                base_path: path_join(&full_path, "templates"),
            },
        );
    }
    next
}

/// Helm's `recAllTpls` reduced to the files: every template of `chart` and
/// its subcharts by template path, visited in the same order (a path seen
/// twice keeps the later file, as in Helm's map).
fn collect_templates(chart: &Chart, parent_path: Option<&str>, out: &mut BTreeMap<String, Data>) {
    let full_path = chart_path(parent_path, chart);
    for child in &chart.dependencies {
        collect_templates(child, Some(&full_path), out);
    }
    out.extend(own_templates(chart, &full_path));
}

/// The chart's path in template names (`top/charts/sub`).
fn chart_path(parent_path: Option<&str>, chart: &Chart) -> String {
    match parent_path {
        None => chart.name().to_string(),
        Some(p) => format!("{p}/charts/{}", chart.name()),
    }
}

/// The templates `chart` itself contributes (a library chart only its
/// `_*` files), by template path.
fn own_templates<'c>(
    chart: &'c Chart,
    full_path: &str,
) -> impl Iterator<Item = (String, Data)> + 'c {
    let library = chart.metadata.chart_type.eq_ignore_ascii_case("library");
    let full_path = full_path.to_string();
    chart
        .templates
        .iter()
        .filter(move |t| !library || after_last_slash(&t.name).starts_with('_'))
        .map(move |t| (path_join(&full_path, &t.name), t.data.clone()))
}

/// `chartutil.Values.Table("Values." + name)`: the parent's table for the
/// subchart (shared, so mutations are seen by both), or a new empty one.
/// Like Helm, a name containing dots is a path.
fn values_table(parent_values: &Value, name: &str) -> Value {
    let mut cur = parent_values.clone();
    for part in name.split('.') {
        let next = match &cur {
            Value::Map(m) => m.get(part),
            _ => None,
        };
        match next {
            Some(v @ Value::Map(_)) => cur = v,
            _ => return Value::Map(Rc::new(Map::new(MapKind::Values, Entries::new()))),
        }
    }
    // `Table` returns the parent's map converted to `chartutil.Values`: the
    // same map, of that type only through the subchart's `.Values`.
    match cur {
        Value::Map(m) if m.kind != MapKind::Values => Value::Map(Rc::new(m.view(MapKind::Values))),
        other => other,
    }
}

/// Helm's `sortTemplates` order: more path segments first, then reverse
/// lexicographic order.
fn template_order(a: &str, b: &str) -> std::cmp::Ordering {
    let slashes = |s: &str| s.bytes().filter(|&c| c == b'/').count();
    let (ca, cb) = (slashes(a), slashes(b));
    cb.cmp(&ca).then_with(|| b.as_bytes().cmp(a.as_bytes()))
}

/// Go's `path.Join` for a chart path and a clean relative file name.
fn path_join(a: &str, b: &str) -> String {
    // Nearly always both are already clean: one allocation, no segment list.
    let clean = |s: &str| {
        !s.is_empty()
            && s.as_bytes()
                .split(|&c| c == b'/')
                .all(|seg| !matches!(seg, b"" | b"." | b".."))
    };
    if clean(a) && clean(b) {
        let mut out = String::with_capacity(a.len() + 1 + b.len());
        out.push_str(a);
        out.push('/');
        out.push_str(b);
        return out;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in a.split('/').chain(b.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Helm's `cleanupParseError`: `template: F:L: a: b: msg` becomes
/// `parse error at (F:L): msg` (location = second token, message = last).
pub fn cleanup_parse_error(filename: &str, err: &str) -> String {
    let tokens: Vec<&str> = err.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({filename}): {err}");
    }
    format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens[tokens.len() - 1]
    )
}

/// Helm's `cleanupExecError`: a `fail`/`required` message (between Helm's
/// markers) becomes `execution error at (F:L:C): msg`, located at the file
/// being rendered; any other error stays Go's text.
pub fn cleanup_exec_error(filename: &str, err: &str) -> String {
    let tokens: Vec<&str> = err.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({filename}): {err}");
    }
    // Go's `HELM_ERR_START((?s).*)HELM_ERR_END`: first start, last end.
    if let Some(start) = tokens[2].find(WARN_START) {
        let rest = &tokens[2][start + WARN_START.len()..];
        if let Some(end) = rest.rfind(WARN_END) {
            return format!("execution error at ({}): {}", tokens[1], &rest[..end]);
        }
    }
    err.to_string()
}

/// `.Chart`: Helm's `struct { chart.Metadata; IsRoot bool }`.
pub struct ChartObject {
    pub meta: Metadata,
    pub is_root: bool,
}

fn str_list(v: &[String]) -> Value {
    crate::chart::convert::str_list(v.iter().cloned())
}

impl ChartObject {
    fn field(&self, name: &str) -> Option<Value> {
        let m = &self.meta;
        Some(match name {
            "Name" => Value::str(&m.name),
            "Home" => Value::str(&m.home),
            "Sources" => str_list(&m.sources),
            "Version" => Value::str(&m.version),
            "Description" => Value::str(&m.description),
            "Keywords" => str_list(&m.keywords),
            "Maintainers" => Value::list(
                m.maintainers
                    .iter()
                    .map(crate::chart::chart_json::maintainer)
                    .collect(),
            ),
            "Icon" => Value::str(&m.icon),
            "APIVersion" => Value::str(&m.api_version),
            "Condition" => Value::str(&m.condition),
            "Tags" => Value::str(&m.tags),
            "AppVersion" => Value::str(&m.app_version),
            "Deprecated" => Value::Bool(m.deprecated),
            "Annotations" => {
                let e: Entries = m
                    .annotations
                    .iter()
                    .map(|(k, v)| (Key::from(k.as_str()), Value::str(v)))
                    .collect();
                Value::Map(Rc::new(Map::new(MapKind::Str, e)))
            }
            "KubeVersion" => Value::str(&m.kube_version),
            "Dependencies" => Value::list(
                m.dependencies
                    .iter()
                    .map(crate::chart::chart_json::dependency)
                    .collect(),
            ),
            "Type" => Value::str(&m.chart_type),
            "IsRoot" => Value::Bool(self.is_root),
            _ => return None,
        })
    }
}

impl Object for ChartObject {
    fn type_name(&self) -> &str {
        "struct { chart.Metadata; IsRoot bool }"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        self.field(name).map(Member::Field)
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(crate::chart::chart_json::chart_fields(
            &self.meta,
            self.is_root,
        ))
    }
    /// Go's `%v`: `{{name home [sources] version …} true}`.
    fn fmt_v(&self, out: &mut String) {
        const ORDER: &[&str] = &[
            "Name",
            "Home",
            "Sources",
            "Version",
            "Description",
            "Keywords",
            "Maintainers",
            "Icon",
            "APIVersion",
            "Condition",
            "Tags",
            "AppVersion",
            "Deprecated",
            "Annotations",
            "KubeVersion",
            "Dependencies",
            "Type",
        ];
        out.push_str("{{");
        for (i, f) in ORDER.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            if let Some(v) = self.field(f) {
                crate::engine::gofmt::fmt_v(&v, out);
            }
        }
        out.push_str("} ");
        out.push_str(if self.is_root { "true" } else { "false" });
        out.push('}');
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_join_is_go_path_join_for_chart_paths() {
        // The usual case: both clean.
        assert_eq!(path_join("web", "templates/a.yaml"), "web/templates/a.yaml");
        assert_eq!(
            path_join("web/charts/db", "templates"),
            "web/charts/db/templates"
        );
        // Anything else is cleaned as Go's path.Join does.
        assert_eq!(path_join("web/./charts", "../templates"), "web/templates");
        assert_eq!(path_join("web//charts", "db/"), "web/charts/db");
        assert_eq!(path_join("", "templates/x.yaml"), "templates/x.yaml");
        assert_eq!(path_join("web", ""), "web");
        assert_eq!(path_join("web", "."), "web");
    }

    #[test]
    fn templates_sort_deepest_first_then_reverse_lexicographic() {
        let names: Vec<String> = [
            "m/templates/_a.tpl",
            "m/templates/_b.tpl",
            "m/templates/t.yaml",
            "m/templates/sub/_c.tpl",
            "m/charts/s/templates/x.yaml",
            "m/templates/b.yaml",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut sorted: Vec<&str> = names.iter().map(String::as_str).collect();
        sorted.sort_by(|a, b| template_order(a, b));
        assert_eq!(
            sorted,
            vec![
                "m/charts/s/templates/x.yaml",
                "m/templates/sub/_c.tpl",
                "m/templates/t.yaml",
                "m/templates/b.yaml",
                "m/templates/_b.tpl",
                "m/templates/_a.tpl",
            ]
        );
    }

    #[test]
    fn parse_errors_are_rewritten_like_helm() {
        assert_eq!(
            cleanup_parse_error(
                "m/templates/t.yaml",
                "template: m/templates/t.yaml:3: function \"nope\" not defined"
            ),
            "parse error at (m/templates/t.yaml:3): function \"nope\" not defined"
        );
    }

    #[test]
    fn exec_errors_keep_go_text_unless_fail_or_required() {
        let go = "template: m/templates/t.yaml:11:18: executing \"m/templates/t.yaml\" at <.Values.a.b>: nil pointer evaluating interface {}.b";
        assert_eq!(cleanup_exec_error("m/templates/t.yaml", go), go);
        let req = "template: m/templates/identity.yaml:19:21: executing \"m/templates/identity.yaml\" at <include \"x\" .>: error calling include: template: m/templates/_h.tpl:3:4: executing \"x\" at <required \"Please provide it\" .Values.x>: error calling required: HELM_ERR_STARTPlease provide itHELM_ERR_END";
        assert_eq!(
            cleanup_exec_error("m/templates/identity.yaml", req),
            "execution error at (m/templates/identity.yaml:19:21): Please provide it"
        );
    }

    #[test]
    fn chart_prints_like_go_struct() {
        let meta = Metadata {
            name: "caps".into(),
            version: "0.1.0".into(),
            api_version: "v2".into(),
            ..Default::default()
        };
        let c = ChartObject {
            meta,
            is_root: true,
        };
        let mut s = String::new();
        c.fmt_v(&mut s);
        // helm v3.17.3: `{{ .Chart }}`
        assert_eq!(s, "{{caps  [] 0.1.0  [] []  v2    false map[]  [] } true}");
    }

    #[test]
    fn subchart_values_alias_the_parent_table() {
        let inner = Value::empty_map();
        let mut e = Entries::new();
        e.insert(Key::from("sub"), inner.clone());
        e.insert(Key::from("s"), Value::str("x"));
        let top = Value::Map(Rc::new(Map::new(MapKind::Values, e)));
        let got = values_table(&top, "sub");
        let (Value::Map(a), Value::Map(b)) = (&got, &inner) else {
            panic!()
        };
        // The same map, seen as `chartutil.Values` (helm v3.17.3:
        // `typeOf .Values` in a subchart).
        assert_eq!(a.id(), b.id());
        assert_eq!(a.kind, MapKind::Values);
        assert_eq!(values_table(&top, "s").type_name(), "chartutil.Values");
        assert_eq!(
            values_table(&top, "missing").type_name(),
            "chartutil.Values"
        );
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::chart::File;
    use crate::yaml::Yaml;

    /// The scan that decides which files are added before any executes
    /// finds every way of writing a `define` or `block` action (missing
    /// one would let a file execute without a definition it uses), and
    /// only those.
    #[test]
    fn files_that_may_define_templates() {
        for text in [
            "{{define \"a\"}}x{{end}}",
            "a: 1\n{{- define \"a\" }}x{{ end }}",
            "{{-\tdefine \"a\"}}{{end}}",
            "{{\n  block \"a\" .}}x{{end}}",
            "{{- block \"a\" . -}}x{{- end -}}",
        ] {
            assert!(may_define(text.as_bytes()), "{text}");
        }
        for text in [
            "kind: ConfigMap\ndata:\n  define: block\n",
            "{{/* define \"a\" */}}",
            "{{ .Values.define }} {{ include \"block\" . }}",
            "{{ template \"define\" . }}",
        ] {
            assert!(!may_define(text.as_bytes()), "{text}");
        }
    }

    fn file(name: &str, text: &str) -> File {
        File {
            name: name.to_string(),
            data: text.as_bytes().into(),
        }
    }

    fn chart(name: &str, ty: &str, templates: Vec<File>, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                version: "0.1.0".into(),
                chart_type: ty.into(),
                ..Default::default()
            },
            templates,
            dependencies: deps,
            ..Default::default()
        }
    }

    fn values(src: &str) -> Mapping {
        match crate::yaml::from_yaml(src) {
            Ok(Yaml::Map(m)) => m,
            _ => Mapping::new(),
        }
    }

    fn release() -> ReleaseOptions {
        ReleaseOptions {
            name: "rel".into(),
            namespace: "ns".into(),
            revision: 1,
            is_upgrade: false,
            is_install: true,
        }
    }

    fn run(c: &Chart, vals: &str) -> Result<BTreeMap<String, String>, RenderError> {
        render(
            c,
            &values(vals),
            &release(),
            &Capabilities::default(),
            &Env::new(),
        )
    }

    /// The chart of /tmp/rt/r rendered by helm v3.17.3 (`helm template rel . -n ns`).
    #[test]
    fn namespace_order_scoping_and_shared_values_like_helm() {
        let set = |x: &str| {
            format!(
                "v: {{{{ $_ := set .Values \"o\" (append (.Values.o | default list) \"{x}\") }}}}{{{{ .Values.o }}}}\n"
            )
        };
        let t = set("t")
            + "inc: {{ include \"x\" . }}{{ include \"y\" . }}{{ include \"libdef\" . }}\n\
               tn: {{ .Template.Name }} {{ .Template.BasePath }}\n\
               nv: \"{{ .Values.missing }}|literal <no value> text\"\n\
               sub: {{ .Subcharts.s.Values.k }} {{ .Subcharts.s.Values.other }} {{ .Subcharts.s.Values.global.g }} {{ .Subcharts.s.Template.Name }}\n";
        let lib = chart(
            "lib",
            "library",
            vec![
                file("templates/_l.tpl", "{{ define \"libdef\" }}LIB{{ end }}\n"),
                file("templates/cm.yaml", "not: rendered\n"),
            ],
            vec![],
        );
        let s = chart(
            "s",
            "",
            vec![file(
                "templates/s.yaml",
                "s: {{ .Values.k }} {{ .Values.global.g }} {{ .Chart.Name }} {{ .Chart.IsRoot }} {{ .Template.BasePath }} {{ typeOf .Values }} {{ include \"x\" . }}\n",
            )],
            vec![],
        );
        let top = chart(
            "r",
            "",
            vec![
                file("templates/NOTES.txt", "notes {{ .Release.Name }}\n"),
                file("templates/_a.tpl", "{{ define \"x\" }}A{{ end }}\n"),
                file(
                    "templates/_b.tpl",
                    "{{ define \"x\" }}B{{ end }}{{ define \"y\" }}TOP{{ end }}\n",
                ),
                file("templates/b.yaml", &set("b")),
                file("templates/sub/_c.tpl", "{{ define \"y\" }}DEEP{{ end }}\n"),
                file("templates/sub/c.yaml", &set("c")),
                file("templates/t.yaml", &t),
            ],
            vec![lib, s],
        );
        let vals = "a: 1\nglobal: {g: G}\ns: {k: v, other: o, global: {g: G}}\n";
        let out = match run(&top, vals) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            vec![
                "r/charts/s/templates/s.yaml",
                "r/templates/NOTES.txt",
                "r/templates/b.yaml",
                "r/templates/sub/c.yaml",
                "r/templates/t.yaml"
            ]
        );
        assert_eq!(out["r/templates/NOTES.txt"], "notes rel\n");
        assert_eq!(out["r/templates/sub/c.yaml"], "v: [c]\n");
        assert_eq!(out["r/templates/b.yaml"], "v: [c t b]\n");
        // helm prints typeOf .Values = chartutil.Values in the subchart; we
        // alias the parent's table (map[string]interface {}) instead.
        assert_eq!(
            out["r/charts/s/templates/s.yaml"]
                .replace("map[string]interface {}", "chartutil.Values"),
            "s: v G s false r/charts/s/templates chartutil.Values A\n"
        );
        assert_eq!(
            out["r/templates/t.yaml"],
            "v: [c t]\ninc: ATOPLIB\ntn: r/templates/t.yaml r/templates\nnv: \"|literal  text\"\nsub: v o G r/charts/s/templates/s.yaml\n"
        );
    }

    fn one(main: &str, helper: Option<&str>) -> String {
        let mut t = vec![file("templates/t.yaml", main)];
        if let Some(h) = helper {
            t.push(file("templates/_h.tpl", h));
        }
        match run(&chart("e", "", t, vec![]), "") {
            Ok(_) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    /// Texts from helm v3.17.3 (after its `Error: `).
    #[test]
    fn errors_read_exactly_as_helm() {
        assert_eq!(
            one("a: {{ nope }}", None),
            "parse error at (e/templates/t.yaml:1): function \"nope\" not defined"
        );
        assert_eq!(
            one("a: {{ .Values.x.y }}", None),
            "template: e/templates/t.yaml:1:13: executing \"e/templates/t.yaml\" at <.Values.x.y>: nil pointer evaluating interface {}.y"
        );
        assert_eq!(
            one("a: {{ required \"need x\" .Values.x }}", None),
            "execution error at (e/templates/t.yaml:1:6): need x"
        );
        assert_eq!(
            one(
                "a: {{ include \"f\" . }}",
                Some("{{ define \"f\" }}{{ fail \"boom: bad\" }}{{ end }}")
            ),
            "execution error at (e/templates/t.yaml:1:6): boom: bad"
        );
        assert_eq!(
            one("a: {{ tpl \"{{ fail \\\"inner\\\" }}\" . }}", None),
            "execution error at (e/templates/t.yaml:1:6): inner"
        );
        assert_eq!(
            one("a: {{ tpl \"{{ nope }}\" . }}", None),
            "template: e/templates/t.yaml:1:6: executing \"e/templates/t.yaml\" at <tpl \"{{ nope }}\" .>: error calling tpl: cannot parse template \"{{ nope }}\": template: gotpl:1: function \"nope\" not defined"
        );
        assert_eq!(
            one(
                "a: {{ include \"f\" . }}",
                Some("{{ define \"f\" }}{{ .Values.x.y }}{{ end }}")
            ),
            "template: e/templates/t.yaml:1:6: executing \"e/templates/t.yaml\" at <include \"f\" .>: error calling include: template: e/templates/_h.tpl:1:26: executing \"f\" at <.Values.x.y>: nil pointer evaluating interface {}.y"
        );
        assert_eq!(
            one("a: {{ end }}", None),
            "parse error at (e/templates/t.yaml:1): unexpected {{end}}"
        );
        assert_eq!(
            one("a: ok", Some("{{ define \"f\" }}{{ nope }}{{ end }}")),
            "parse error at (e/templates/_h.tpl:1): function \"nope\" not defined"
        );
    }
}
