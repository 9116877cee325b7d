//! A loaded chart, as Helm's `chart.Chart` holds it: metadata, templates,
//! other files, default values, schema, CRDs and loaded subcharts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::yaml::Mapping;

/// Where warnings go: one call per line Helm would print on stderr (the
/// loader's and the values code's `log.Printf` lines).
pub type Warn<'a> = &'a mut dyn FnMut(&str);

/// One file of a chart, named by its path relative to the chart root with
/// `/` separators (`templates/deployment.yaml`, `files/a.conf`).
#[derive(Clone, Debug)]
pub struct File {
    pub name: String,
    pub data: Data,
}

/// A file's bytes, shared by every clone. Files of a chart directory that
/// are neither templates nor values/metadata are only read when something
/// asks for them (`.Files.Get`, `--include-crds`): charts vendor megabytes
/// of CRDs and data files that most renders never touch. Templates are read
/// by the thread that parses them, so that the loading thread goes on to the
/// values meanwhile. Helm reads every file up front; the loader therefore
/// still checks each one, so an unreadable file fails the load as in Helm.
#[derive(Clone, Debug)]
pub struct Data(Arc<DataInner>);

#[derive(Debug)]
struct DataInner {
    /// Where to read the bytes from when `bytes` is still empty: the
    /// file's name in its directory, opened when the walk found it
    /// (opening by name there skips resolving every component of the
    /// whole path again, most of what an open costs). Taken by the read,
    /// so a chart whose files were all read holds no directory open.
    at: Mutex<Option<(Arc<rustix::fd::OwnedFd>, Box<str>)>>,
    /// Why the deferred read failed (the bytes are then empty): a file that
    /// vanished or became unreadable since the load. Reported by
    /// [`Chart::read_errors`], never taken for an empty file.
    error: OnceLock<String>,
    /// The file's size when it was checked, for work planning before it is
    /// read (a byte order mark makes it 3 more than the bytes).
    size: usize,
    bytes: OnceLock<Arc<[u8]>>,
}

impl Data {
    /// The bytes of the file `name` of the open directory `dir`, of `size`
    /// bytes when checked, read on first use, without a UTF-8 byte order
    /// mark (Helm's loader drops it from every file).
    pub fn lazy(dir: Arc<rustix::fd::OwnedFd>, name: &str, size: usize) -> Data {
        Data(Arc::new(DataInner {
            at: Mutex::new(Some((dir, name.into()))),
            error: OnceLock::new(),
            size,
            bytes: OnceLock::new(),
        }))
    }

    /// The length of the bytes if they were read, else the file's size when
    /// it was checked: what planning work by size needs, without reading.
    pub fn size_hint(&self) -> usize {
        match self.0.bytes.get() {
            Some(b) => b.len(),
            None => self.0.size,
        }
    }

    /// Whether `other` is a clone of this (the same file, read once).
    pub fn same(&self, other: &Data) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The bytes (read now if they were deferred). A file that vanished or
    /// became unreadable since the load reads as empty here, and its error
    /// is kept for [`Data::read_error`] (renders fail with it).
    pub fn bytes(&self) -> &[u8] {
        self.shared()
    }

    /// The bytes as a shared buffer.
    pub fn shared(&self) -> &Arc<[u8]> {
        self.0.bytes.get_or_init(|| {
            let at = self
                .0
                .at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match at {
                None => Arc::from(&[][..]),
                Some((dir, name)) => match read_at(&dir, &name, self.0.size) {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = self.0.error.set(e.to_string());
                        Arc::from(&[][..])
                    }
                },
            }
        })
    }

    /// Why reading the file failed, if it was read and failed.
    pub fn read_error(&self) -> Option<&str> {
        self.0.error.get().map(String::as_str)
    }
}

impl std::ops::Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl From<Arc<[u8]>> for Data {
    fn from(bytes: Arc<[u8]>) -> Data {
        Data(Arc::new(DataInner {
            at: Mutex::new(None),
            error: OnceLock::new(),
            size: bytes.len(),
            bytes: OnceLock::from(bytes),
        }))
    }
}

impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Data {
        Data::from(Arc::<[u8]>::from(bytes))
    }
}

impl From<&[u8]> for Data {
    fn from(bytes: &[u8]) -> Data {
        Data::from(Arc::<[u8]>::from(bytes))
    }
}

/// A chart and its dependencies, after `.helmignore` filtering.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub metadata: Metadata,
    /// `templates/**` files, in path order.
    pub templates: Vec<File>,
    /// Every other file that `.Files` may read (not `templates/`, not
    /// `Chart.yaml`/`values.yaml`/`values.schema.json`/`Chart.lock`, not `charts/`).
    pub files: Vec<File>,
    /// `crds/**` files.
    pub crds: Vec<File>,
    /// The chart's `values.yaml`, parsed (empty when absent).
    pub values: Mapping,
    /// `values.schema.json`, raw.
    pub schema: Option<Arc<[u8]>>,
    /// Subcharts loaded from `charts/` (directories and `.tgz` archives).
    pub dependencies: Vec<Chart>,
    /// The chart's path from the top chart's templates root, e.g. `mychart` or
    /// `mychart/charts/sub` (Helm's `ChartFullPath`), set by the loader.
    pub full_path: String,
}

/// `Chart.yaml` (Helm's `chart.Metadata`).
#[derive(Clone, Debug, Default)]
pub struct Metadata {
    pub name: String,
    pub home: String,
    pub sources: Vec<String>,
    pub version: String,
    pub description: String,
    pub keywords: Vec<String>,
    pub maintainers: Vec<Maintainer>,
    pub icon: String,
    pub api_version: String,
    pub condition: String,
    pub tags: String,
    pub app_version: String,
    pub deprecated: bool,
    pub annotations: BTreeMap<String, String>,
    pub kube_version: String,
    pub dependencies: Vec<Dependency>,
    /// `application` or `library` (empty means application).
    pub chart_type: String,
}

#[derive(Clone, Debug, Default)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
    pub url: String,
}

/// One entry of `dependencies:` in Chart.yaml (Helm's `chart.Dependency`).
#[derive(Clone, Debug, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// Raw `import-values` entries: strings or `{child, parent}` maps.
    pub import_values: Vec<crate::yaml::Yaml>,
    pub alias: String,
}

impl Chart {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
    pub fn is_library(&self) -> bool {
        self.metadata.chart_type == "library"
    }

    /// The files (templates and others, subcharts' included) whose deferred
    /// read failed, as `chart/path: why`: they vanished or became unreadable
    /// after the load. A render that read one must fail rather than take it
    /// for empty.
    pub fn read_errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_read_errors(&mut out);
        out
    }

    fn collect_read_errors(&self, out: &mut Vec<String>) {
        for f in self.templates.iter().chain(&self.files) {
            if let Some(e) = f.data.read_error() {
                out.push(format!("{}/{}: {e}", self.name(), f.name));
            }
        }
        for d in &self.dependencies {
            d.collect_read_errors(out);
        }
    }

    /// Reads every file whose read was deferred, so that the chart holds no
    /// directory open and stays whole for as long as it is kept (a process
    /// that keeps charts between renders calls this once); the errors as
    /// [`Chart::read_errors`] gives them.
    pub fn read_all(&self) -> Result<(), Vec<String>> {
        self.touch_all();
        let errors = self.read_errors();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn touch_all(&self) {
        for f in self.templates.iter().chain(&self.files) {
            f.data.bytes();
        }
        for d in &self.dependencies {
            d.touch_all();
        }
    }
}

/// The whole of an open file of `len` bytes (more if it grew since),
/// without a UTF-8 byte order mark (Helm's loader drops it from every
/// file), read straight into the shared buffer the chart keeps, usually
/// in one system call. Not `std::fs::read` and `Arc::from(Vec)`: that
/// copies every byte a second time into a new allocation (a chart's
/// templates and values are hundreds of kilobytes, and each fresh page of
/// the copy is a page fault), and `Read::read_to_end` on a `File` first
/// asks the file's size and position again, and then reads once more to
/// find the end (three more system calls per file).
pub(crate) fn read_shared(fd: &rustix::fd::OwnedFd, len: usize) -> std::io::Result<Arc<[u8]>> {
    // A zero-filled slice collected from an exact-size iterator is a
    // single allocation of the final size, which the file is read into.
    let mut buf: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
    let mut filled = 0;
    // Past the buffer, a small probe on the stack: a file that grew still
    // needs no allocation to be noticed.
    let mut probe = [0u8; 64];
    let mut more = 0;
    let mut at_end = false;
    if let Some(dst) = Arc::get_mut(&mut buf) {
        loop {
            let asked = len - filled + probe.len();
            let mut iov = [
                std::io::IoSliceMut::new(&mut dst[filled..]),
                std::io::IoSliceMut::new(&mut probe),
            ];
            match rustix::io::readv(fd, &mut iov) {
                Ok(0) => {
                    at_end = true;
                    break;
                }
                Ok(n) => {
                    let into_buf = n.min(len - filled);
                    filled += into_buf;
                    more = n - into_buf;
                    if filled == len {
                        // A read of a regular file that stops short of what
                        // was asked has met the end: the usual file, whose
                        // size is what was measured, needs no second call
                        // to find it. A file measured empty (procfs and the
                        // like) is read on to the end, as is one that filled
                        // the probe too.
                        at_end = len > 0 && n < asked;
                        break;
                    }
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if filled == len && more == 0 && at_end {
        return Ok(without_bom(buf));
    }
    // The file changed size since it was measured, or its end is unknown.
    let mut v = buf[..filled].to_vec();
    v.extend_from_slice(&probe[..more]);
    if !at_end {
        read_rest(fd, &mut v)?;
    }
    Ok(without_bom(Arc::from(v)))
}

/// Append what is left of `fd` to `v`.
fn read_rest(fd: &rustix::fd::OwnedFd, v: &mut Vec<u8>) -> std::io::Result<()> {
    loop {
        if v.len() == v.capacity() {
            v.reserve(v.capacity().max(64));
        }
        match rustix::io::read(fd, rustix::buffer::spare_capacity(&mut *v)) {
            Ok(0) => return Ok(()),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn without_bom(buf: Arc<[u8]>) -> Arc<[u8]> {
    match buf.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        Some(rest) => Arc::from(rest),
        None => buf,
    }
}

/// The bytes of the file `name` of directory `dir` ([`read_shared`]), for
/// a file whose reading was deferred, of `len` bytes when it was checked
/// (`read_shared` reads whatever it holds now).
fn read_at(dir: &rustix::fd::OwnedFd, name: &str, len: usize) -> std::io::Result<Arc<[u8]>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    read_shared(&fd, len)
}

#[cfg(test)]
mod read_tests {
    use super::*;

    fn dir_fd(p: &std::path::Path) -> Arc<rustix::fd::OwnedFd> {
        use rustix::fs::{Mode, OFlags};
        Arc::new(
            rustix::fs::open(
                p,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .unwrap(),
        )
    }

    /// A deferred read gives the bytes and lets the directory go; one that
    /// fails is an error naming the file, never an empty file taken for
    /// real.
    #[test]
    fn deferred_reads_release_the_directory_and_keep_their_errors() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "hello").unwrap();
        let dir = dir_fd(tmp.path());
        let ok = Data::lazy(dir.clone(), "a.txt", 5);
        let gone = Data::lazy(dir.clone(), "vanished.txt", 3);
        assert_eq!(Arc::strong_count(&dir), 3);
        assert_eq!(ok.bytes(), b"hello");
        assert!(gone.bytes().is_empty());
        assert_eq!(Arc::strong_count(&dir), 1, "read files hold no directory");
        assert!(ok.read_error().is_none());
        assert!(gone.read_error().unwrap().contains("No such file"));

        let chart = Chart {
            metadata: Metadata {
                name: "c".into(),
                ..Metadata::default()
            },
            files: vec![
                File {
                    name: "a.txt".into(),
                    data: ok,
                },
                File {
                    name: "vanished.txt".into(),
                    data: gone,
                },
            ],
            ..Chart::default()
        };
        let errs = chart.read_all().unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("c/vanished.txt: "), "{errs:?}");
    }
}
