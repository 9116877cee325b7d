//! Finding hook executables on disk.
//!
//! addon-operator's layout (`RecursiveGetExecutablePaths` in shell-operator's
//! `pkg/utils/file`, called from addon-operator's `searchModuleShellHooks` and
//! `searchGlobalShellHooks`): every executable file under the hooks dir,
//! recursively, sorted by path; directories named `lib` or `venv` (module hooks
//! only) or starting with `.` are skipped, as are hidden files and files ending
//! in `.yaml`, `.json`, `.md` or `.txt`. Other files that are not executable
//! regular files are skipped with a warning (shell-operator logs one for a
//! missing execute bit; a FIFO, socket or device gets one too, and is never
//! opened).
//!
//! The original antiopa's layout: `hooks/before-helm/*` and `hooks/after-helm/*`
//! in a module, `on-kube-node-change/*` in the global hooks dir; only the files
//! directly in those dirs, in alphabetical order.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::HookError;

/// One hook found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundHook {
    /// addon-operator's hook name: the path relative to the module dir
    /// (`hooks/subdir/my-hook.sh`), or relative to the global hooks dir.
    pub name: String,
    /// Absolute or caller-relative path to the executable.
    pub path: PathBuf,
}

/// Which hooks of the original antiopa layout a file belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegacyStage {
    /// `hooks/before-helm/*` of a module.
    BeforeHelm,
    /// `hooks/after-helm/*` of a module.
    AfterHelm,
    /// `on-kube-node-change/*` of the global hooks dir.
    OnKubeNodeChange,
}

impl LegacyStage {
    /// The directory, relative to the module dir or the global hooks dir.
    pub fn dir(self) -> &'static str {
        match self {
            LegacyStage::BeforeHelm => "hooks/before-helm",
            LegacyStage::AfterHelm => "hooks/after-helm",
            LegacyStage::OnKubeNodeChange => "on-kube-node-change",
        }
    }
}

fn io_err(path: &Path, e: std::io::Error) -> HookError {
    HookError::Discovery {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// What a search found: the hooks, and warnings for files skipped that
/// look like hooks (not executable, or not a regular file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovered {
    pub hooks: Vec<FoundHook>,
    pub warnings: Vec<String>,
}

/// What to do with a file found in a hooks dir.
enum Verdict {
    Hook,
    /// Ignored by design (hidden, documentation, data): no word.
    Ignore,
    /// Looks like a hook but cannot be one: skipped with this warning.
    Warn(String),
}

/// addon-operator's `checkExecutableHookFile`: hidden files and `.yaml`,
/// `.json`, `.md`, `.txt` files are ignored; others must be executable
/// regular files (a symlink counts as its target). Only `stat` is used:
/// nothing is opened, so a FIFO cannot block the search. Where
/// shell-operator logs "file is skipped: no executable permissions", the
/// warning is returned.
fn verdict(path: &Path, name: &str) -> Verdict {
    if name.starts_with('.') {
        return Verdict::Ignore;
    }
    if let Some(ext) = path.extension().and_then(|e| e.to_str())
        && matches!(ext, "yaml" | "json" | "md" | "txt")
    {
        return Verdict::Ignore;
    }
    let m = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Verdict::Warn(format!("{}: skipped: cannot read it ({e})", path.display()));
        }
    };
    let ft = m.file_type();
    if !ft.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let kind = if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_dir() {
            // A symlink to a directory: filepath.Walk does not follow it.
            return Verdict::Ignore;
        } else {
            "not a regular file"
        };
        return Verdict::Warn(format!(
            "{}: skipped: {kind}, not a regular file (only regular files are run as hooks)",
            path.display()
        ));
    }
    if m.permissions().mode() & 0o111 == 0 {
        return Verdict::Warn(format!(
            "{}: skipped: not executable (chmod +x is required to run this hook)",
            path.display()
        ));
    }
    Verdict::Hook
}

fn walk(
    dir: &Path,
    excluded: &[&str],
    out: &mut Vec<PathBuf>,
    warnings: &mut Vec<String>,
) -> Result<(), HookError> {
    let entries = fs::read_dir(dir).map_err(|e| io_err(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // filepath.Walk uses Lstat: a symlinked directory is not descended.
        let ft = entry.file_type().map_err(|e| io_err(&path, e))?;
        if ft.is_dir() {
            if name.starts_with('.') || excluded.contains(&name.as_ref()) {
                continue;
            }
            walk(&path, excluded, out, warnings)?;
            continue;
        }
        match verdict(&path, &name) {
            Verdict::Hook => out.push(path),
            Verdict::Ignore => {}
            Verdict::Warn(w) => warnings.push(w),
        }
    }
    Ok(())
}

fn relative_name(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn found(base: &Path, mut paths: Vec<PathBuf>, mut warnings: Vec<String>) -> Discovered {
    paths.sort();
    warnings.sort();
    Discovered {
        hooks: paths
            .into_iter()
            .map(|p| FoundHook {
                name: relative_name(base, &p),
                path: p,
            })
            .collect(),
        warnings,
    }
}

/// A module's hooks: executables under `<module_dir>/hooks`, skipping `lib`
/// and `venv`, sorted by path. A missing `hooks` dir means no hooks.
pub fn discover_module_hooks(module_dir: &Path) -> Result<Discovered, HookError> {
    let hooks_dir = module_dir.join("hooks");
    if !hooks_dir.is_dir() {
        return Ok(Discovered::default());
    }
    let (mut paths, mut warnings) = (Vec::new(), Vec::new());
    walk(&hooks_dir, &["lib", "venv"], &mut paths, &mut warnings)?;
    Ok(found(module_dir, paths, warnings))
}

/// Global hooks: executables under `<dir>/hooks` if that exists, else under
/// `dir`, skipping `lib`, sorted by path. Names are relative to `dir`
/// (`hooks/000-a/hook.sh`), as addon-operator's `normalizeHookPath` makes them.
/// A missing dir means no hooks.
pub fn discover_global_hooks(dir: &Path) -> Result<Discovered, HookError> {
    if !dir.is_dir() {
        return Ok(Discovered::default());
    }
    let sub = dir.join("hooks");
    let root = if sub.is_dir() { sub } else { dir.to_path_buf() };
    let (mut paths, mut warnings) = (Vec::new(), Vec::new());
    walk(&root, &["lib"], &mut paths, &mut warnings)?;
    Ok(found(dir, paths, warnings))
}

/// The original antiopa layout: executables directly in `base/<stage dir>`,
/// alphabetical. A missing dir means no hooks. Files are judged as in
/// addon-operator's layout.
pub fn discover_legacy_hooks(base: &Path, stage: LegacyStage) -> Result<Discovered, HookError> {
    let dir = base.join(stage.dir());
    if !dir.is_dir() {
        return Ok(Discovered::default());
    }
    let (mut paths, mut warnings) = (Vec::new(), Vec::new());
    for entry in fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
        let entry = entry.map_err(|e| io_err(&dir, e))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match verdict(&path, &name) {
            Verdict::Hook => paths.push(path),
            Verdict::Ignore => {}
            Verdict::Warn(w) => warnings.push(w),
        }
    }
    Ok(found(base, paths, warnings))
}

/// Whether `path` uses the original antiopa layout (`hooks/before-helm` or
/// `hooks/after-helm` present in a module dir).
pub fn has_legacy_module_layout(module_dir: &Path) -> bool {
    module_dir.join(LegacyStage::BeforeHelm.dir()).is_dir()
        || module_dir.join(LegacyStage::AfterHelm.dir()).is_dir()
}
