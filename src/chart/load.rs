//! Loading a chart from a directory or a `.tgz` archive: a port of Helm
//! v3.17's `pkg/chart/loader` (`LoadDir`, `LoadFile`, `LoadArchiveFiles`,
//! `LoadFiles`). Files are sorted into Chart.yaml, values, schema,
//! templates, CRDs, subcharts and other files exactly as Helm does, with
//! Helm's error texts; subcharts under `charts/` (directories and archives)
//! load recursively and every chart gets its `full_path`.

use rustix::fs::FileType;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::chart::ignore::Rules;
use crate::chart::metadata::{self, go_quote};
use crate::chart::types::{Chart, Data, File, Warn, read_shared};
use crate::gocompat::os::path_error;
use crate::yaml::{Mapping, Yaml};

/// Helm's `MaxDecompressedChartSize` (100 MiB).
const MAX_DECOMPRESSED_CHART_SIZE: u64 = 100 * 1024 * 1024;
/// Helm's `MaxDecompressedFileSize` (5 MiB).
const MAX_DECOMPRESSED_FILE_SIZE: u64 = 5 * 1024 * 1024;

/// Why a chart could not be loaded; `Display` is Helm's message (what it
/// prints after `Error: `).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The chart path does not exist (`helm`'s `LocateChart` text).
    #[error("path {} not found", go_quote(.0))]
    NotFound(String),
    /// Anything else, already worded as Helm words it.
    #[error("{0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> LoadError {
    LoadError::Invalid(msg.into())
}

/// A file read from a chart directory or archive, named relative to the
/// chart root (Helm's `BufferedFile`).
#[derive(Clone, Debug)]
pub struct BufferedFile {
    pub name: String,
    pub data: Data,
}

/// Parse YAML text as sigs.k8s.io/yaml.Unmarshal into `interface{}` does
/// (numbers float64). The error is Helm's full text
/// (`error converting YAML to JSON: yaml: line N: …`).
///
/// This and [`parse_yaml_typed`] are the only places the chart module parses
/// YAML. Until the crate's YAML loader is merged they use the stand-in
/// below; at the merge their bodies become
/// `crate::yaml::from_yaml(src).map_err(|e| e.to_string())` and
/// `crate::yaml::load(src, crate::yaml::Numbers::Yaml).map_err(|e|
/// format!("error converting YAML to JSON: {e}"))`, and `mod yaml_shim`
/// goes away.
pub(crate) fn parse_yaml(src: &str) -> Result<Yaml, String> {
    crate::yaml::from_yaml(src).map_err(|e| e.to_string())
}

/// Parse YAML keeping yaml.v2's int/float distinction, for decoding into Go
/// structs (`Chart.yaml`, where sigs.k8s.io/yaml turns an int `12345678`
/// into "12345678" but a float into `FormatFloat(f, 'g', -1, 32)`).
pub(crate) fn parse_yaml_typed(src: &str) -> Result<Yaml, String> {
    crate::yaml::load(src, crate::yaml::Numbers::Yaml)
        .map_err(|e| format!("error converting YAML to JSON: {e}"))
}

/// Load a chart from a directory or a gzipped tar archive (Helm's
/// `loader.Load`). Helm's loader warnings become `tracing` events; a caller
/// that shows them as helm does takes [`load_with_warnings`].
pub fn load(path: &Path) -> Result<Chart, LoadError> {
    load_with_warnings(
        path,
        &mut |line| tracing::warn!(target: "antiopa::chart", "{line}"),
    )
}

/// [`load`], sending Helm's loader warnings (`load.go:120: Warning: …`, the
/// line its `log.Printf` prints) to `warn`.
pub fn load_with_warnings(path: &Path, warn: Warn) -> Result<Chart, LoadError> {
    load_observed(path, warn, &mut NoObserver)
}

/// Sees the top chart while it loads, so that its templates can be
/// parsed meanwhile (see [`load_observed`]).
pub trait LoadObserver {
    /// A file of the top chart's `templates/` directory (`rel`:
    /// `templates/x.yaml`), as soon as it is found (its bytes are read on
    /// first use, so by the thread that parses it), with the chart's name
    /// as its `Chart.yaml` gives it. Only for chart directories whose
    /// `Chart.yaml` names the chart; their `templates/` is read before the
    /// rest of the directory.
    fn template_read(&mut self, _chart: &str, _rel: &str, _data: &Data) {}
    /// The top chart part-loaded: its metadata and templates are read, its
    /// values not yet. Called once, unless loading fails first.
    fn templates_known(&mut self, _chart: &Chart) {}
}

/// A closure sees only [`LoadObserver::templates_known`].
impl<F: FnMut(&Chart)> LoadObserver for F {
    fn templates_known(&mut self, chart: &Chart) {
        self(chart)
    }
}

/// Sees nothing.
pub struct NoObserver;
impl LoadObserver for NoObserver {}

type Observer<'a> = &'a mut dyn LoadObserver;

/// [`load_with_warnings`], showing the top chart's templates to `observer`
/// as they are read and the chart before its values file is parsed, so
/// that the caller can parse the templates meanwhile.
pub fn load_observed(
    path: &Path,
    warn: Warn,
    templates_known: Observer,
) -> Result<Chart, LoadError> {
    let meta = std::fs::metadata(path)
        .map_err(|_| LoadError::NotFound(path.to_string_lossy().into_owned()))?;
    let mut chart = if meta.is_dir() {
        load_dir_observed(path, None, warn, templates_known)?
    } else {
        load_file_observed(path, warn, templates_known)?
    };
    set_full_paths(&mut chart, "");
    Ok(chart)
}

/// `checkIfInstallable` of `helm install/template`: only application charts
/// render (`Error: library charts are not installable`).
pub fn check_installable(chart: &Chart) -> Result<(), String> {
    match chart.metadata.chart_type.as_str() {
        "" | "application" => Ok(()),
        t => Err(format!("{t} charts are not installable")),
    }
}

/// Recompute `full_path` for a chart tree (Helm's `ChartFullPath`:
/// `parent/charts/name`, using each chart's current name, so aliases show).
pub fn set_full_paths(chart: &mut Chart, parent: &str) {
    chart.full_path = if parent.is_empty() {
        chart.metadata.name.clone()
    } else {
        format!("{parent}/charts/{}", chart.metadata.name)
    };
    let me = chart.full_path.clone();
    for dep in &mut chart.dependencies {
        set_full_paths(dep, &me);
    }
}

/// `LoadDir`: walk the directory (following symlinks, names sorted within
/// each directory as Go's `filepath.Walk` does), applying `.helmignore`.
pub fn load_dir(dir: &Path, warn: Warn) -> Result<Chart, LoadError> {
    load_dir_observed(dir, None, warn, &mut NoObserver)
}

/// [`load_observed`] of a chart directory that may lack `Chart.yaml`:
/// `chart_yaml` is taken as its text then (addon-operator writes such a
/// file into a module directory without one; this writes nothing). The
/// directory is walked as any chart's, so an irregular file in it fails the
/// load with Helm's error instead of being opened.
pub fn load_dir_with_default_metadata(
    dir: &Path,
    chart_yaml: &str,
    warn: Warn,
    observer: Observer,
) -> Result<Chart, LoadError> {
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Err(LoadError::NotFound(dir.to_string_lossy().into_owned()));
    }
    let mut chart = load_dir_observed(dir, Some(chart_yaml), warn, observer)?;
    set_full_paths(&mut chart, "");
    Ok(chart)
}

fn load_dir_observed(
    dir: &Path,
    default_chart_yaml: Option<&str>,
    warn: Warn,
    observe: Observer,
) -> Result<Chart, LoadError> {
    let top = std::path::absolute(dir).map_err(|e| invalid(e.to_string()))?;
    let mut rules = Rules::empty();
    let ifile = top.join(".helmignore");
    if ifile.exists() {
        let text = std::fs::read(&ifile).map_err(|e| invalid(e.to_string()))?;
        rules = Rules::parse(&String::from_utf8_lossy(&text)).map_err(invalid)?;
    }
    rules.add_defaults();
    let mut files = Vec::new();
    walk_top(&top, &rules, &mut files, default_chart_yaml, warn, observe)?;
    if let Some(text) = default_chart_yaml
        && !files.iter().any(|f| f.name == "Chart.yaml")
    {
        files.insert(
            0,
            BufferedFile {
                name: "Chart.yaml".into(),
                data: Data::from(text.as_bytes()),
            },
        );
    }
    load_files_observed(files, warn, observe)
}

/// Walk the chart directory `top` as [`Walk`] does, but its `templates/`
/// first, each file shown to `observer` as it is read (when `Chart.yaml`
/// gives the chart's name), so that parsing starts before the rest
/// (READMEs, changelogs, CI values, subcharts) is read. The files, the
/// warnings and the first error come out as in Helm's name order.
fn walk_top(
    top: &Path,
    rules: &Rules,
    files: &mut Vec<BufferedFile>,
    default_chart_yaml: Option<&str>,
    warn: Warn,
    observer: Observer,
) -> Result<(), LoadError> {
    let (dirfd, entries) = read_dir_sorted(top, None)?;
    let dirfd = Arc::new(dirfd);
    let name = match std::fs::read(top.join("Chart.yaml")) {
        Ok(bytes) => chart_name_in(&bytes),
        Err(_) => default_chart_yaml.and_then(|t| chart_name_in(t.as_bytes())),
    };
    let first = name.and_then(|name| {
        entries
            .iter()
            .position(|(n, ft)| n == "templates" && *ft == FileType::Directory)
            .map(|i| (name, i))
    });
    let mut plain = Walk {
        rules,
        files,
        warn,
        sink: &mut |_, _| {},
    };
    let Some((chart, i)) = first else {
        return plain.entries(top, &dirfd, "", entries);
    };
    let mut entries = entries;
    let after = entries.split_off(i + 1);
    let templates = entries.split_off(i);
    let (mut own, mut said) = (Vec::new(), Vec::new());
    let walked = Walk {
        rules,
        files: &mut own,
        warn: &mut |w| said.push(w.to_string()),
        sink: &mut |rel, data| observer.template_read(&chart, rel, data),
    }
    .entries(top, &dirfd, "", templates);
    plain.entries(top, &dirfd, "", entries)?;
    for w in &said {
        (plain.warn)(w);
    }
    walked?;
    plain.files.append(&mut own);
    plain.entries(top, &dirfd, "", after)
}

/// The chart name a `Chart.yaml` text gives, if it parses and names one
/// (the loader parses it again, in order, and reports any error then).
fn chart_name_in(bytes: &[u8]) -> Option<String> {
    let doc = parse_yaml_typed(std::str::from_utf8(bytes).ok()?).ok()?;
    match doc {
        Yaml::Map(m) => match m.get("name") {
            Some(Yaml::Str(name)) if !name.is_empty() => Some(name.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// A directory opened (files are opened relative to it: resolving every
/// file's whole path again was most of the walk's system time) and its
/// entries sorted by name, each with the type its entry gives (no stat on
/// Linux). A subdirectory is opened relative to its parent (`within`),
/// and its entries are read from that one descriptor: `std::fs::read_dir`
/// would open it a second time by its whole path and allocate a name for
/// every entry.
fn read_dir_sorted(
    dir: &Path,
    within: Option<(&rustix::fd::OwnedFd, &str)>,
) -> Result<(rustix::fd::OwnedFd, Vec<(String, FileType)>), LoadError> {
    use rustix::fs::{AtFlags, OFlags};
    let failed =
        |e: rustix::io::Errno| invalid(format!("{}: {}", dir.display(), std::io::Error::from(e)));
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dirfd = match within {
        // Follows a symlink, as `sympath.Walk` does.
        Some((parent, name)) => rustix::fs::openat(parent, name, flags, rustix::fs::Mode::empty()),
        None => rustix::fs::open(dir, flags, rustix::fs::Mode::empty()),
    }
    .map_err(failed)?;
    let mut entries: Vec<(String, FileType)> = Vec::new();
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
    let mut rd = rustix::fs::RawDir::new(&dirfd, &mut buf);
    while let Some(entry) = rd.next() {
        let entry = entry.map_err(failed)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let ft = match entry.file_type() {
            // A file system that does not say in the entry: ask (not following a link).
            FileType::Unknown => {
                rustix::fs::statat(&dirfd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| FileType::from_raw_mode(st.st_mode))
                    .map_err(failed)?
            }
            ft => ft,
        };
        entries.push((name, ft));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((dirfd, entries))
}

/// `sympath.Walk` of a chart directory: every file not ignored, names
/// sorted within each directory, symlinks followed.
struct Walk<'w> {
    rules: &'w Rules,
    /// Where the files go, in walk order.
    files: &'w mut Vec<BufferedFile>,
    warn: Warn<'w>,
    /// Sees each template as it is found (path relative to the chart); its
    /// bytes may be read on first use, by whichever thread uses them.
    sink: &'w mut dyn FnMut(&str, &Data),
}

impl Walk<'_> {
    /// Walk `dir` (path `rel` relative to the chart), entry `name` of the
    /// directory open as `parent`.
    fn dir(
        &mut self,
        dir: &Path,
        parent: &rustix::fd::OwnedFd,
        name: &str,
        rel: &str,
    ) -> Result<(), LoadError> {
        let (dirfd, entries) = read_dir_sorted(dir, Some((parent, name)))?;
        self.entries(dir, &Arc::new(dirfd), rel, entries)
    }

    /// Walk `entries` of `dir` (opened as `dirfd`).
    fn entries(
        &mut self,
        dir: &Path,
        dirfd: &Arc<rustix::fd::OwnedFd>,
        rel: &str,
        entries: Vec<(String, FileType)>,
    ) -> Result<(), LoadError> {
        for (name, ft) in entries {
            let full = dir.join(&name);
            let n = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            // sympath.Walk follows symlinks (and says so): only those need a
            // stat here.
            let followed = if ft == FileType::Symlink {
                let resolved = std::fs::canonicalize(&full).map_err(|e| {
                    invalid(format!(
                        "error evaluating symlink {}: {}",
                        full.display(),
                        path_error("lstat", &link_target(&full), &e)
                    ))
                })?;
                (self.warn)(&format!(
                    "walk.go:75: found symbolic link in path: {} resolves to {}. Contents of linked file included and used",
                    full.display(),
                    resolved.display()
                ));
                Some(
                    std::fs::metadata(&resolved)
                        .map_err(|e| invalid(path_error("lstat", &resolved, &e)))?,
                )
            } else {
                None
            };
            let (is_dir, is_file) = match &followed {
                Some(m) => (m.is_dir(), m.is_file()),
                None => (ft == FileType::Directory, ft == FileType::RegularFile),
            };
            if is_dir {
                if self.rules.ignore(&n, true) {
                    continue;
                }
                self.dir(&full, dirfd, &name, &n)?;
                continue;
            }
            if self.rules.ignore(&n, false) {
                continue;
            }
            if !is_file {
                return Err(invalid(format!(
                    "cannot load irregular file {} as it has file mode type bits set",
                    full.display()
                )));
            }
            let too_big = |len: u64| {
                (len > MAX_DECOMPRESSED_FILE_SIZE).then(|| {
                    invalid(format!(
                        "chart file {} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}",
                        go_quote(&name)
                    ))
                })
            };
            // Files every render reads are read now; the others (READMEs, CI
            // values, CRDs left out) only if used, and templates by the thread
            // that parses them, while this one goes on to the values. Helm
            // checks each file's size, then reads it: a deferred file is
            // stat'ed (one call, where opening it costs three: charts ship
            // hundreds of such files) and opened only when its mode bits do
            // not show it readable, to report the open error Helm would.
            let eager = read_at_load(&n);
            let template = is_template(&n);
            if !eager || template {
                let follow = if followed.is_some() {
                    rustix::fs::AtFlags::empty()
                } else {
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW
                };
                if let Ok(st) = rustix::fs::statat(dirfd, name.as_str(), follow) {
                    if let Some(e) = too_big(st.st_size as u64) {
                        return Err(e);
                    }
                    if surely_readable(&st) {
                        let data = Data::lazy(dirfd.clone(), &name, st.st_size as usize);
                        if template {
                            (self.sink)(&n, &data);
                        }
                        self.files.push(BufferedFile { name: n, data });
                        continue;
                    }
                }
            }
            // Opening it first gives the size without a separate stat; on an
            // open error the size is checked by path so that Helm's first error
            // stays first.
            let opened = rustix::fs::openat(
                dirfd,
                name.as_str(),
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            );
            let fd = match opened {
                Ok(fd) => fd,
                Err(e) => {
                    let e = std::io::Error::from(e);
                    let len = std::fs::metadata(&full).map_or(0, |m| m.len());
                    return Err(too_big(len).unwrap_or_else(|| {
                        invalid(format!(
                            "error reading {n}: {}",
                            path_error("open", &full, &e)
                        ))
                    }));
                }
            };
            let len = rustix::fs::fstat(&fd)
                .map_err(|e| invalid(format!("error reading {n}: {}", std::io::Error::from(e))))?
                .st_size as u64;
            if let Some(e) = too_big(len) {
                return Err(e);
            }
            let data = if eager {
                let data = Data::from(
                    read_shared(&fd, len as usize)
                        .map_err(|e| invalid(format!("error reading {n}: {e}")))?,
                );
                (self.sink)(&n, &data);
                data
            } else {
                Data::lazy(dirfd.clone(), &name, len as usize)
            };
            self.files.push(BufferedFile { name: n, data });
        }
        Ok(())
    }
}

/// Whether the mode bits of a file let this process read it, without
/// asking (no ACL, no security module said otherwise): the superuser, or
/// an owner with read permission, or read permission for group and others
/// alike. Otherwise the caller opens the file to find out.
fn surely_readable(st: &rustix::fs::Stat) -> bool {
    static EUID: std::sync::OnceLock<rustix::process::Uid> = std::sync::OnceLock::new();
    let euid = *EUID.get_or_init(rustix::process::geteuid);
    let mode = st.st_mode;
    euid.is_root() || (st.st_uid == euid.as_raw() && mode & 0o400 != 0) || mode & 0o044 == 0o044
}

/// Where the symlink at `link` points, made absolute and cleaned as
/// `filepath.EvalSymlinks` reports it when the target is missing.
fn link_target(link: &Path) -> std::path::PathBuf {
    let Ok(target) = std::fs::read_link(link) else {
        return link.to_path_buf();
    };
    let joined = match link.parent() {
        Some(dir) if target.is_relative() => dir.join(target),
        _ => target,
    };
    let mut clean = std::path::PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            c => clean.push(c),
        }
    }
    clean
}

/// Whether a chart file (path relative to the top chart) is read by every
/// render: metadata, values and schema files, templates (also of
/// subcharts) and packed subcharts.
fn read_at_load(rel: &str) -> bool {
    let base = crate::scan::after_last_slash(rel);
    matches!(
        base,
        "Chart.yaml"
            | "values.yaml"
            | "values.schema.json"
            | "Chart.lock"
            | "requirements.yaml"
            | "requirements.lock"
    ) || is_template(rel)
        || (rel.starts_with("charts/") && base.ends_with(".tgz"))
}

/// Whether a chart file (path relative to the top chart) is a template of
/// the chart or of a subchart.
fn is_template(rel: &str) -> bool {
    rel.starts_with("templates/") || rel.contains("/templates/")
}

/// `LoadFile`: a chart archive on disk, with Helm's content sniffing.
pub fn load_file(path: &Path, warn: Warn) -> Result<Chart, LoadError> {
    load_file_observed(path, warn, &mut NoObserver)
}

fn load_file_observed(path: &Path, warn: Warn, observe: Observer) -> Result<Chart, LoadError> {
    let name = path.to_string_lossy().into_owned();
    let data = std::fs::read(path).map_err(|e| invalid(format!("open {name}: {e}")))?;
    // Helm sniffs a 512-byte buffer, zero-padded when the file is shorter.
    let mut head = data[..data.len().min(512)].to_vec();
    head.resize(512, 0);
    let head = head.as_slice();
    if !head.starts_with(&[0x1F, 0x8B, 0x08]) {
        if name.ends_with(".yml") || name.ends_with(".yaml") {
            return Err(invalid(format!(
                "file '{name}' seems to be a YAML file, but expected a gzipped archive"
            )));
        }
        return Err(invalid(format!(
            "file '{name}' does not appear to be a gzipped archive; got '{}'",
            detect_content_type(head)
        )));
    }
    load_files_observed(load_archive_files(&data)?, warn, observe)
}

/// A reduced `http.DetectContentType` for the non-gzip case of Helm's
/// message: text vs. binary.
fn detect_content_type(head: &[u8]) -> &'static str {
    let binary = head
        .iter()
        .any(|b| matches!(b, 0x00..=0x08 | 0x0B | 0x0E..=0x1A | 0x1C..=0x1F));
    if binary {
        "application/octet-stream"
    } else if std::str::from_utf8(head).is_ok() {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    }
}

/// `LoadArchive`: a gzipped tar held in memory.
pub fn load_archive(data: &[u8], warn: Warn) -> Result<Chart, LoadError> {
    load_files(load_archive_files(data)?, warn)
}

/// `LoadArchiveFiles`: unpack, dropping the top directory of each entry.
pub fn load_archive_files(data: &[u8]) -> Result<Vec<BufferedFile>, LoadError> {
    if !data.starts_with(&[0x1F, 0x8B]) {
        return Err(invalid("gzip: invalid header"));
    }
    let gz = flate2::read::GzDecoder::new(data);
    let mut ar = tar::Archive::new(gz);
    let mut files = Vec::new();
    let mut remaining = MAX_DECOMPRESSED_CHART_SIZE;
    let entries = ar.entries().map_err(|e| invalid(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| invalid(e.to_string()))?;
        let et = entry.header().entry_type();
        if et.is_dir() || et.is_pax_global_extensions() || et.is_pax_local_extensions() {
            continue;
        }
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delim = if raw_name.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw_name.split(delim).collect();
        let n = parts[1..].join("/");
        if n.starts_with('/') {
            return Err(invalid("chart illegally contains absolute paths"));
        }
        let n = go_path_clean(&n);
        if n == "." {
            return Err(invalid(format!(
                "chart illegally contains content outside the base directory: {}",
                go_quote(&raw_name)
            )));
        }
        if n.starts_with("..") {
            return Err(invalid("chart illegally references parent directory"));
        }
        let b = n.as_bytes();
        if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
            return Err(invalid("chart contains illegally named files"));
        }
        if parts[0] == "Chart.yaml" {
            return Err(invalid("chart yaml not in base directory"));
        }
        let size = entry.header().size().unwrap_or(0);
        if size > remaining {
            return Err(invalid(format!(
                "decompressed chart is larger than the maximum file size {MAX_DECOMPRESSED_CHART_SIZE}"
            )));
        }
        if size > MAX_DECOMPRESSED_FILE_SIZE {
            return Err(invalid(format!(
                "decompressed chart file {} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}",
                go_quote(&raw_name)
            )));
        }
        let mut buf = Vec::new();
        (&mut entry)
            .take(remaining)
            .read_to_end(&mut buf)
            .map_err(|e| invalid(e.to_string()))?;
        remaining -= buf.len() as u64;
        if (buf.len() as u64) < size || remaining == 0 {
            return Err(invalid(format!(
                "decompressed chart is larger than the maximum file size {MAX_DECOMPRESSED_CHART_SIZE}"
            )));
        }
        if buf.starts_with(&[0xEF, 0xBB, 0xBF]) {
            buf.drain(..3);
        }
        files.push(BufferedFile {
            name: n,
            data: Data::from(buf),
        });
    }
    if files.is_empty() {
        return Err(invalid("no files in chart archive"));
    }
    Ok(files)
}

/// Go's `path.Clean`.
fn go_path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

fn file(name: &str, data: Data) -> File {
    File {
        name: name.to_string(),
        data,
    }
}

/// `chart.hasManifestExtension`: what `Chart.CRDs()` keeps from `crds/`.
fn has_manifest_extension(name: &str) -> bool {
    let base = crate::scan::after_last_slash(name);
    let ext = match base.rfind('.') {
        Some(i) => &base[i..],
        None => "",
    };
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(e))
}

/// Go's `filepath.Ext`.
fn go_ext(name: &str) -> &str {
    let base = crate::scan::after_last_slash(name);
    match base.rfind('.') {
        Some(i) => &base[i..],
        None => "",
    }
}

fn load_yaml_doc(data: &[u8], what: &str, typed: bool) -> Result<Yaml, LoadError> {
    // go-yaml rejects invalid UTF-8 before parsing.
    let text =
        crate::yaml::check_input(data).map_err(|e| invalid(format!("cannot load {what}: {e}")))?;
    let doc = if typed {
        parse_yaml_typed(text)
    } else {
        parse_yaml(text)
    };
    doc.map_err(|e| invalid(format!("cannot load {what}: {e}")))
}

/// `LoadFiles`: sort files into the chart, validate its metadata, then load
/// the subcharts found under `charts/`.
pub fn load_files(files: Vec<BufferedFile>, warn: Warn) -> Result<Chart, LoadError> {
    load_files_observed(files, warn, &mut NoObserver)
}

fn load_files_observed(
    files: Vec<BufferedFile>,
    warn: Warn,
    observe: Observer,
) -> Result<Chart, LoadError> {
    let mut c = Chart::default();
    let mut have_metadata = false;
    let mut nulls = metadata::NullEntries::default();
    // Subchart name → its files, in first-seen order (Go iterates a map
    // here; the order of dependencies is re-established by the dependency
    // processing and template sorting, so any stable order will do).
    let mut subcharts: Vec<(String, Vec<BufferedFile>)> = Vec::new();
    let mut values_file = None;

    for f in &files {
        if f.name == "Chart.yaml" {
            have_metadata = true;
            let doc = load_yaml_doc(&f.data, "Chart.yaml", true)?;
            metadata::decode_metadata(&doc, &mut c.metadata).map_err(|e| {
                invalid(format!(
                    "cannot load Chart.yaml: error unmarshaling JSON: while decoding JSON: {e}"
                ))
            })?;
            let n = metadata::null_entries(&doc);
            nulls.maintainers |= n.maintainers;
            nulls.dependencies |= n.dependencies;
            if c.metadata.api_version.is_empty() {
                c.metadata.api_version = "v1".into();
            }
        }
    }
    for f in files {
        let name = f.name.as_str();
        match name {
            "Chart.yaml" => continue,
            "Chart.lock" | "requirements.lock" => {
                let what = name.to_string();
                let doc = load_yaml_doc(&f.data, &what, false)?;
                if !matches!(doc, Yaml::Map(_) | Yaml::Null) {
                    return Err(invalid(format!(
                        "cannot load {what}: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type chart.Lock",
                        kind_name(&doc)
                    )));
                }
                if name == "requirements.lock" {
                    // Helm creates (empty) metadata here when Chart.yaml is
                    // absent, so validation reports the missing apiVersion.
                    have_metadata = true;
                    if c.metadata.api_version != "v1" {
                        warn(
                            "load.go:138: Warning: Dependency locking is handled in Chart.lock since apiVersion \"v2\". We recommend migrating to Chart.lock.",
                        );
                    }
                    if c.metadata.api_version == "v1" {
                        c.files.push(file(name, f.data));
                    }
                }
            }
            // Parsed after the loop: no file after it in walk order can
            // fail to load, so Helm's first error is still the first.
            "values.yaml" => values_file = Some(f.data),
            "values.schema.json" => c.schema = Some(f.data.shared().clone()),
            "requirements.yaml" => {
                have_metadata = true;
                if c.metadata.api_version != "v1" {
                    warn(
                        "load.go:120: Warning: Dependencies are handled in Chart.yaml since apiVersion \"v2\". We recommend migrating dependencies to Chart.yaml.",
                    );
                }
                let doc = load_yaml_doc(&f.data, "requirements.yaml", true)?;
                metadata::decode_metadata(&doc, &mut c.metadata).map_err(|e| {
                    invalid(format!(
                        "cannot load requirements.yaml: error unmarshaling JSON: while decoding JSON: {e}"
                    ))
                })?;
                let n = metadata::null_entries(&doc);
                nulls.maintainers |= n.maintainers;
                nulls.dependencies |= n.dependencies;
                if c.metadata.api_version == "v1" {
                    c.files.push(file(name, f.data));
                }
            }
            _ if name.starts_with("templates/") => c.templates.push(file(name, f.data)),
            _ if name.starts_with("charts/") => {
                if go_ext(name) == ".prov" {
                    c.files.push(file(name, f.data));
                    continue;
                }
                let fname = &name["charts/".len()..];
                let cname = fname.split('/').next().unwrap_or(fname).to_string();
                let bf = BufferedFile {
                    name: fname.to_string(),
                    data: f.data,
                };
                match subcharts.iter_mut().find(|(n, _)| *n == cname) {
                    Some((_, v)) => v.push(bf),
                    None => subcharts.push((cname, vec![bf])),
                }
            }
            _ => {
                let f = file(name, f.data);
                if name.starts_with("crds/") && has_manifest_extension(name) {
                    // Shared with `files`, not copied: CRDs can be megabytes.
                    c.crds.push(f.clone());
                }
                c.files.push(f);
            }
        }
    }

    observe.templates_known(&c);
    if let Some(data) = values_file {
        let doc = load_yaml_doc(&data, "values.yaml", false)?;
        c.values = match doc {
            Yaml::Map(m) => m,
            Yaml::Null => Mapping::new(),
            other => {
                return Err(invalid(format!(
                    "cannot load values.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    kind_name(&other)
                )));
            }
        };
    }
    if !have_metadata {
        return Err(invalid("Chart.yaml file is missing"));
    }
    metadata::validate(&mut c.metadata, nulls).map_err(|e| invalid(format!("validation: {e}")))?;

    for (n, files) in subcharts {
        if n.starts_with('_') || n.starts_with('.') {
            continue;
        }
        let sc = if go_ext(&n) == ".tgz" {
            let first = &files[0];
            if first.name != n {
                return Err(invalid(format!(
                    "error unpacking subchart tar in {}: expected {n}, got {}",
                    c.metadata.name, first.name
                )));
            }
            load_archive(&first.data, warn)
        } else {
            let mut buff = Vec::with_capacity(files.len());
            for mut f in files {
                let Some((_, rest)) = f.name.split_once('/') else {
                    continue;
                };
                f.name = rest.to_string();
                buff.push(f);
            }
            load_files(buff, warn)
        };
        match sc {
            Ok(sc) => c.dependencies.push(sc),
            Err(e) => {
                return Err(invalid(format!(
                    "error unpacking subchart {n} in {}: {e}",
                    c.metadata.name
                )));
            }
        }
    }
    Ok(c)
}

fn kind_name(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "null",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) | Yaml::Float(_) => "number",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "array",
        Yaml::Map(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, text).unwrap();
    }

    /// Make a FIFO at `path`; false where `mkfifo` is missing.
    fn mkfifo(path: &Path) -> bool {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        made.is_ok_and(|s| s.success())
    }

    /// A temporary directory (kept while the first value lives), its
    /// canonical path, and a chart `c` in it whose `Chart.yaml` names `name`.
    fn chart_in_tempdir(name: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let d = root.join("c");
        write_chart_yaml(&d, name);
        (t, root, d)
    }

    /// A minimal v2 `Chart.yaml` named `name` at `chart_dir`.
    fn write_chart_yaml(chart_dir: &Path, name: &str) {
        write(
            chart_dir,
            "Chart.yaml",
            &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        );
    }

    #[test]
    fn files_lose_their_byte_order_mark_whether_read_now_or_later() {
        let (_t, _root, d) = chart_in_tempdir("bom");
        write(&d, "values.yaml", "\u{feff}a: 1\n");
        write(&d, "templates/t.yaml", "\u{feff}x: {{ .Values.a }}\n");
        write(&d, "files/f.txt", "\u{feff}text");
        let c = load_dir(&d, &mut |_| {}).unwrap();
        assert_eq!(&*c.templates[0].data, b"x: {{ .Values.a }}\n");
        assert_eq!(
            c.values.get("a").map(|v| format!("{v:?}")),
            Some("Float(1.0)".into())
        );
        let f = c.files.iter().find(|f| f.name == "files/f.txt").unwrap();
        assert_eq!(&*f.data, b"text");
    }

    /// A template is only checked at load (its size planned with), and read
    /// by whoever first uses it, such as the thread that parses it.
    #[test]
    fn templates_are_read_on_first_use() {
        let (_t, _root, d) = chart_in_tempdir("lazy");
        write(&d, "templates/t.yaml", "\u{feff}x: 1\n");
        let c = load_dir(&d, &mut |_| {}).unwrap();
        let t = &c.templates[0].data;
        assert_eq!(
            t.size_hint(),
            8,
            "the file's size, byte order mark included"
        );
        let parser = t.clone();
        let read = std::thread::spawn(move || parser.bytes().to_vec())
            .join()
            .unwrap();
        assert_eq!(read, b"x: 1\n");
        assert_eq!(t.size_hint(), 5, "read once, for every clone");
        assert!(t.same(&c.clone().templates[0].data));
    }

    #[test]
    fn a_file_that_changed_size_since_its_stat_is_read_whole() {
        let (_t, _root, d) = chart_in_tempdir("size");
        let p = d.join("f");
        std::fs::write(&p, "0123456789").unwrap();
        let open =
            || rustix::fs::open(&p, rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        // Longer than measured, shorter than measured, exactly as measured.
        assert_eq!(&*read_shared(&open(), 4).unwrap(), b"0123456789");
        assert_eq!(&*read_shared(&open(), 20).unwrap(), b"0123456789");
        assert_eq!(&*read_shared(&open(), 10).unwrap(), b"0123456789");
        assert_eq!(&*read_shared(&open(), 0).unwrap(), b"0123456789");
        // Grown past the probe read with the measured bytes.
        let long: Vec<u8> = (0..200u8).collect();
        std::fs::write(&p, &long).unwrap();
        assert_eq!(&*read_shared(&open(), 4).unwrap(), &long[..]);
        assert_eq!(&*read_shared(&open(), 136).unwrap(), &long[..]);
        assert_eq!(&*read_shared(&open(), 200).unwrap(), &long[..]);
    }

    #[test]
    fn missing_path() {
        let e = load(Path::new("./nonexist")).unwrap_err();
        assert_eq!(e.to_string(), "path \"./nonexist\" not found");
    }

    /// Symlinks are followed with Helm's warning per link; a dangling one,
    /// a FIFO and a file over the size limit fail with Helm's texts (taken
    /// from helm v3.17.3 on the same layout).
    #[test]
    fn symlinks_and_irregular_files_as_helm() {
        let (_t, root, d) = chart_in_tempdir("c");
        write(&root, "ext/a.yaml", "kind: A\n");
        write(&root, "ext/sub/b.yaml", "kind: B\n");
        std::fs::create_dir(d.join("templates")).unwrap();
        std::os::unix::fs::symlink("../../ext/a.yaml", d.join("templates/link.yaml")).unwrap();
        std::os::unix::fs::symlink("../../ext/sub", d.join("templates/sub")).unwrap();
        let mut said = Vec::new();
        // Files read on first use, through a link or not.
        write(&d, "files/own.conf", "own\n");
        std::os::unix::fs::symlink("../../ext/sub/b.yaml", d.join("files/linked.yaml")).unwrap();
        let c = load_with_warnings(&d, &mut |w| said.push(w.to_string())).unwrap();
        let names: Vec<&str> = c.templates.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["templates/link.yaml", "templates/sub/b.yaml"]);
        assert_eq!(&*c.templates[0].data, b"kind: A\n");
        let files: Vec<(&str, &[u8])> = c
            .files
            .iter()
            .map(|f| (f.name.as_str(), &*f.data))
            .collect();
        assert_eq!(
            files,
            [
                ("files/linked.yaml", &b"kind: B\n"[..]),
                ("files/own.conf", b"own\n")
            ]
        );
        let r = root.display();
        assert_eq!(
            said,
            [
                format!(
                    "walk.go:75: found symbolic link in path: {r}/c/files/linked.yaml resolves to {r}/ext/sub/b.yaml. Contents of linked file included and used"
                ),
                format!(
                    "walk.go:75: found symbolic link in path: {r}/c/templates/link.yaml resolves to {r}/ext/a.yaml. Contents of linked file included and used"
                ),
                format!(
                    "walk.go:75: found symbolic link in path: {r}/c/templates/sub resolves to {r}/ext/sub. Contents of linked file included and used"
                ),
            ]
        );

        std::os::unix::fs::symlink("../nowhere", d.join("templates/dangling.yaml")).unwrap();
        assert_eq!(
            load_with_warnings(&d, &mut |_| {}).unwrap_err().to_string(),
            format!(
                "error evaluating symlink {r}/c/templates/dangling.yaml: lstat {r}/c/nowhere: no such file or directory"
            )
        );
        std::fs::remove_file(d.join("templates/dangling.yaml")).unwrap();

        let fifo = d.join("templates/fifo.yaml");
        if mkfifo(&fifo) {
            assert_eq!(
                load(&d).unwrap_err().to_string(),
                format!(
                    "cannot load irregular file {r}/c/templates/fifo.yaml as it has file mode type bits set"
                )
            );
            std::fs::remove_file(&fifo).unwrap();
        }

        let big = std::fs::File::create(d.join("big.bin")).unwrap();
        big.set_len(MAX_DECOMPRESSED_FILE_SIZE + 1).unwrap();
        assert_eq!(
            load(&d).unwrap_err().to_string(),
            format!(
                "chart file \"big.bin\" is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
            )
        );
    }

    /// A chart directory's `templates/` is read first, each file shown to
    /// the observer as it is read; the files, the warnings and the first
    /// error are still those of Helm's walk in name order.
    #[test]
    fn templates_read_first_yet_in_helms_order() {
        #[derive(Default)]
        struct Seen {
            reads: Vec<(String, String, Vec<u8>)>,
            known: Vec<usize>,
        }
        impl LoadObserver for Seen {
            fn template_read(&mut self, chart: &str, rel: &str, data: &Data) {
                self.reads.push((chart.into(), rel.into(), data.to_vec()));
            }
            fn templates_known(&mut self, chart: &Chart) {
                self.known.push(chart.templates.len());
            }
        }
        let (_t, root, d) = chart_in_tempdir("named");
        write(&d, "a.txt", "a");
        write(&d, "templates/x.yaml", "x");
        write(&d, "z.txt", "z");
        write(&root, "ext/t.yaml", "t");
        std::os::unix::fs::symlink("../ext/t.yaml", d.join("b-link.yaml")).unwrap();
        std::os::unix::fs::symlink("../../ext/t.yaml", d.join("templates/y.yaml")).unwrap();
        let (mut seen, mut said) = (Seen::default(), Vec::new());
        let c = load_observed(&d, &mut |w| said.push(w.to_string()), &mut seen).unwrap();
        let r = root.display();
        assert_eq!(
            seen.reads,
            [
                ("named".into(), "templates/x.yaml".into(), b"x".to_vec()),
                ("named".into(), "templates/y.yaml".into(), b"t".to_vec())
            ]
        );
        assert_eq!(seen.known, [2]);
        let names = |fs: &[File]| fs.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&c.files), ["a.txt", "b-link.yaml", "z.txt"]);
        assert_eq!(
            names(&c.templates),
            ["templates/x.yaml", "templates/y.yaml"]
        );
        assert_eq!(
            said,
            [
                format!(
                    "walk.go:75: found symbolic link in path: {r}/c/b-link.yaml resolves to {r}/ext/t.yaml. Contents of linked file included and used"
                ),
                format!(
                    "walk.go:75: found symbolic link in path: {r}/c/templates/y.yaml resolves to {r}/ext/t.yaml. Contents of linked file included and used"
                ),
            ]
        );

        // An error in templates/ is the error, unless a file before it
        // in name order fails too.
        if mkfifo(&d.join("templates/f.yaml")) {
            assert_eq!(
                load(&d).unwrap_err().to_string(),
                format!(
                    "cannot load irregular file {r}/c/templates/f.yaml as it has file mode type bits set"
                )
            );
        }
        let big = std::fs::File::create(d.join("a-big.bin")).unwrap();
        big.set_len(MAX_DECOMPRESSED_FILE_SIZE + 1).unwrap();
        assert_eq!(
            load(&d).unwrap_err().to_string(),
            format!(
                "chart file \"a-big.bin\" is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
            )
        );
    }

    /// The observer sees the top chart with its templates before the
    /// values file is parsed, once; subcharts are not shown to it.
    #[test]
    fn observer_sees_templates_before_values() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        write_chart_yaml(d, "top");
        write(d, "values.yaml", "a: 1\n");
        write(d, "templates/a.yaml", "x");
        write_chart_yaml(&d.join("charts/sub"), "sub");
        write(d, "charts/sub/values.yaml", "b: 2\n");
        let mut seen = Vec::new();
        let c = load_observed(d, &mut |_| {}, &mut |c: &Chart| {
            seen.push((c.name().to_string(), c.templates.len(), c.values.len()));
        })
        .unwrap();
        assert_eq!(seen, [("top".to_string(), 1, 0)]);
        assert_eq!(c.values.len(), 1);
        assert_eq!(c.dependencies[0].values.len(), 1);

        // A bad values file is still reported, after the observer ran.
        write(d, "values.yaml", "a: [\n");
        let mut calls = 0;
        let e = load_observed(d, &mut |_| {}, &mut |_: &Chart| calls += 1).unwrap_err();
        assert!(e.to_string().starts_with("cannot load values.yaml"), "{e}");
        assert_eq!(calls, 1);
    }

    #[test]
    fn loads_directory_with_helmignore_and_subcharts() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        write(d, "Chart.yaml", "name: top\nversion: 1.0\n");
        write(d, ".helmignore", "*.bak\nsecret/\n");
        write(d, "values.yaml", "a: 1\nb: yes\n");
        write(d, "templates/a.yaml", "x");
        write(d, "templates/.hidden", "x");
        write(d, "templates/old.bak", "x");
        write(d, "secret/x.txt", "x");
        write(d, "files/a.txt", "x");
        write(d, "crds/c.yaml", "x");
        write(d, "crds/README.md", "x");
        write_chart_yaml(&d.join("charts/sub"), "sub");
        write(d, "charts/sub/templates/.hidden", "x");
        let c = load(d).unwrap();
        assert_eq!(c.metadata.version, "1");
        assert_eq!(c.metadata.api_version, "v1");
        assert_eq!(c.full_path, "top");
        let names = |fs: &[File]| fs.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&c.templates), vec!["templates/a.yaml"]);
        assert_eq!(
            names(&c.files),
            vec![
                ".helmignore",
                "crds/README.md",
                "crds/c.yaml",
                "files/a.txt"
            ]
        );
        assert_eq!(names(&c.crds), vec!["crds/c.yaml"]);
        assert_eq!(c.values.get("b"), Some(&Yaml::Bool(true)));
        assert_eq!(c.dependencies.len(), 1);
        let sub = &c.dependencies[0];
        assert_eq!(sub.full_path, "top/charts/sub");
        // The default rule is anchored at the top chart: a subchart's
        // templates/.hidden is kept, as Helm does.
        assert_eq!(names(&sub.templates), vec!["templates/.hidden"]);
    }

    /// `.Files` as helm v3.17.3 lists them for the same tree; with a `!`
    /// rule every other path is ignored (Helm's inverted negation), so
    /// Chart.yaml itself goes missing.
    #[test]
    fn helmignore_like_helm() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        write(d, "Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n");
        write(
            d,
            "charts/s/Chart.yaml",
            "apiVersion: v2\nname: s\nversion: 1.0.0\n",
        );
        write(
            d,
            ".helmignore",
            "*.bak\n/top.txt\nfiles/d/\n*.tmp\n# c\nx/\n",
        );
        write(d, "charts/s/.helmignore", "*\n");
        for f in [
            "top.txt",
            "a.bak",
            "files/top.txt",
            "files/d/in.txt",
            "files/ok.txt",
            "keep.tmp",
            "other.tmp",
            "templates/.h",
            "templates/sub/.h",
            "templates/a.yaml",
            "charts/s/x/y",
            "charts/s/a.bak",
            "charts/s/f.txt",
        ] {
            write(d, f, "");
        }
        let c = load(d).unwrap();
        let names = |fs: &[File]| fs.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&c.files),
            vec![".helmignore", "files/ok.txt", "files/top.txt"]
        );
        assert_eq!(
            names(&c.templates),
            vec!["templates/a.yaml", "templates/sub/.h"]
        );
        assert_eq!(
            names(&c.dependencies[0].files),
            vec![".helmignore", "f.txt"]
        );
        write(d, ".helmignore", "*.bak\n!keep.tmp\n");
        assert_eq!(
            load(d).unwrap_err().to_string(),
            "Chart.yaml file is missing"
        );
    }

    #[test]
    fn chart_yaml_errors() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        write(d, "Chart.yaml", "version: 1.0.0\n");
        assert_eq!(
            load(d).unwrap_err().to_string(),
            "validation: chart.metadata.name is required"
        );
        write(d, "Chart.yaml", "name: c1\nversion: [1]\n");
        assert_eq!(
            load(d).unwrap_err().to_string(),
            "cannot load Chart.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field Metadata.version of type string"
        );
        write(d, "Chart.yaml", "name: c1\nversion: 1\n");
        write(d, "values.yaml", "- a\n");
        assert_eq!(
            load(d).unwrap_err().to_string(),
            "cannot load values.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        std::fs::remove_file(d.join("values.yaml")).unwrap();
        std::fs::remove_file(d.join("Chart.yaml")).unwrap();
        write(d, "templates/a.yaml", "x");
        assert_eq!(
            load(d).unwrap_err().to_string(),
            "Chart.yaml file is missing"
        );
    }

    /// helm v3.17.3: a v2 chart with requirements.yaml warns (and does not
    /// expose the file); without Chart.yaml the metadata exists but has no
    /// apiVersion.
    #[test]
    fn requirements_yaml() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        write(d, "Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n");
        write(d, "requirements.yaml", "dependencies: []\n");
        let mut warnings = Vec::new();
        let c = load_with_warnings(d, &mut |w: &str| warnings.push(w.to_string())).unwrap();
        assert!(c.files.is_empty());
        assert_eq!(
            warnings,
            vec![
                "load.go:120: Warning: Dependencies are handled in Chart.yaml since apiVersion \"v2\". We recommend migrating dependencies to Chart.yaml."
            ]
        );
        std::fs::remove_file(d.join("Chart.yaml")).unwrap();
        let e = load_with_warnings(d, &mut |_: &str| {}).unwrap_err();
        assert_eq!(
            e.to_string(),
            "validation: chart.metadata.apiVersion is required"
        );
        write(
            d,
            "Chart.yaml",
            "name: c\nversion: 1.0.0\ndependencies:\n- name: a\n",
        );
        write(
            d,
            "requirements.yaml",
            "dependencies:\n- name: b\n  version: 1.0.0\n",
        );
        let c = load_with_warnings(d, &mut |_: &str| {}).unwrap();
        assert_eq!(c.metadata.dependencies[0].name, "b");
        assert_eq!(c.files[0].name, "requirements.yaml");
    }

    #[test]
    fn archive_errors_and_roundtrip() {
        let t = tempfile::tempdir().unwrap();
        let empty = t.path().join("empty.tgz");
        std::fs::write(&empty, [0u8; 0]).unwrap();
        assert_eq!(
            load(&empty).unwrap_err().to_string(),
            format!(
                "file '{}' does not appear to be a gzipped archive; got 'application/octet-stream'",
                empty.display()
            )
        );
        let y = t.path().join("Chart.yaml");
        std::fs::write(&y, "name: x\n").unwrap();
        assert_eq!(
            load(&y).unwrap_err().to_string(),
            format!(
                "file '{}' seems to be a YAML file, but expected a gzipped archive",
                y.display()
            )
        );
        // Build a chart archive with a nested archive subchart.
        let sub = tgz(&[
            (
                "sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            ),
            ("sub/values.yaml", "x: 1\n"),
        ]);
        let top = tgz_bytes(&[
            (
                "top/Chart.yaml",
                b"apiVersion: v2\nname: top\nversion: 0.1.0\n".to_vec(),
            ),
            ("top/charts/sub-0.1.0.tgz", sub),
        ]);
        let p = t.path().join("top-0.1.0.tgz");
        std::fs::write(&p, top).unwrap();
        let c = load(&p).unwrap();
        assert_eq!(c.dependencies[0].name(), "sub");
        assert_eq!(c.dependencies[0].full_path, "top/charts/sub");
    }

    fn tgz(entries: &[(&str, &str)]) -> Vec<u8> {
        tgz_bytes(
            &entries
                .iter()
                .map(|(n, d)| (*n, d.as_bytes().to_vec()))
                .collect::<Vec<_>>(),
        )
    }

    fn tgz_bytes(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut b = tar::Builder::new(enc);
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, data.as_slice()).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    /// Every corpus chart loads.
    #[test]
    fn corpus_charts_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/charts");
        let Ok(rd) = std::fs::read_dir(&root) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if let Err(err) = load(&p) {
                panic!("{}: {err}", p.display());
            }
        }
    }
}
