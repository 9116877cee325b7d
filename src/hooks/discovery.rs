//! Finding hook executables on disk.
//!
//! addon-operator's layout (`RecursiveGetExecutablePaths` in shell-operator's
//! `pkg/utils/file`, called from addon-operator's `searchModuleShellHooks` and
//! `searchGlobalShellHooks`): every executable file under the hooks dir,
//! recursively, sorted by path; directories named `lib` or `venv` (module hooks
//! only) or starting with `.` are skipped, as are hidden files, files ending in
//! `.yaml`, `.json`, `.md` or `.txt`, and files without an execute bit.
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

/// Whether a file is a hook for addon-operator (`checkExecutableHookFile`).
fn is_hook_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    if name.starts_with('.') {
        return false;
    }
    if let Some(ext) = path.extension().and_then(|e| e.to_str())
        && matches!(ext, "yaml" | "json" | "md" | "txt")
    {
        return false;
    }
    // Follow symlinks to their target: a link to a script is a hook.
    match fs::metadata(path) {
        Ok(m) => m.is_file() && m.permissions().mode() & 0o111 != 0,
        Err(_) => false,
    }
}

fn walk(dir: &Path, excluded: &[&str], out: &mut Vec<PathBuf>) -> Result<(), HookError> {
    let entries = fs::read_dir(dir).map_err(|e| io_err(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let path = entry.path();
        // filepath.Walk uses Lstat: a symlinked directory is not descended.
        let ft = entry.file_type().map_err(|e| io_err(&path, e))?;
        if ft.is_dir() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || excluded.contains(&name.as_ref()) {
                continue;
            }
            walk(&path, excluded, out)?;
        } else if is_hook_file(&path) {
            out.push(path);
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

/// A module's hooks: executables under `<module_dir>/hooks`, skipping `lib`
/// and `venv`, sorted by path. A missing `hooks` dir means no hooks.
pub fn discover_module_hooks(module_dir: &Path) -> Result<Vec<FoundHook>, HookError> {
    let hooks_dir = module_dir.join("hooks");
    if !hooks_dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    walk(&hooks_dir, &["lib", "venv"], &mut paths)?;
    paths.sort();
    Ok(paths
        .into_iter()
        .map(|p| FoundHook {
            name: relative_name(module_dir, &p),
            path: p,
        })
        .collect())
}

/// Global hooks: executables under `<dir>/hooks` if that exists, else under
/// `dir`, skipping `lib`, sorted by path. Names are relative to `dir`
/// (`hooks/000-a/hook.sh`), as addon-operator's `normalizeHookPath` makes them.
/// A missing dir means no hooks.
pub fn discover_global_hooks(dir: &Path) -> Result<Vec<FoundHook>, HookError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let sub = dir.join("hooks");
    let root = if sub.is_dir() { sub } else { dir.to_path_buf() };
    let mut paths = Vec::new();
    walk(&root, &["lib"], &mut paths)?;
    paths.sort();
    Ok(paths
        .into_iter()
        .map(|p| FoundHook {
            name: relative_name(dir, &p),
            path: p,
        })
        .collect())
}

/// The original antiopa layout: executables directly in `base/<stage dir>`,
/// alphabetical. A missing dir means no hooks.
pub fn discover_legacy_hooks(base: &Path, stage: LegacyStage) -> Result<Vec<FoundHook>, HookError> {
    let dir = base.join(stage.dir());
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    for entry in fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
        let entry = entry.map_err(|e| io_err(&dir, e))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && is_executable_file(&path) {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths
        .into_iter()
        .map(|p| FoundHook {
            name: relative_name(base, &p),
            path: p,
        })
        .collect())
}

/// Whether `path` uses the original antiopa layout (`hooks/before-helm` or
/// `hooks/after-helm` present in a module dir).
pub fn has_legacy_module_layout(module_dir: &Path) -> bool {
    module_dir.join(LegacyStage::BeforeHelm.dir()).is_dir()
        || module_dir.join(LegacyStage::AfterHelm.dir()).is_dir()
}

fn is_executable_file(path: &Path) -> bool {
    match fs::metadata(path) {
        Ok(m) => m.is_file() && m.permissions().mode() & 0o111 != 0,
        Err(_) => false,
    }
}
