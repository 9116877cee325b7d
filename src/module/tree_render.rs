//! The on-disk side of `antiopa diff`: what one side of a comparison is
//! and its rendered texts. A side is rendered output (a file, or a
//! directory as `antiopa render --output-dir` or `helm template
//! --output-dir` writes it), a modules tree rendered offline exactly as
//! `antiopa render` does, or a modules tree as it was at a git revision
//! (materialised from `git archive` into a temporary directory, then
//! rendered).

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use super::ModuleError;
use super::config::OfflineConfig;
use super::discovery::ModulesSettings;
use super::render::{RenderOptions, render_modules};
use super::session::{Session, SnapshotInput};
use crate::hooks::RunOptions;

/// One rendered file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedFile {
    /// The path as given plus the file's place under it.
    pub path: PathBuf,
    /// Relative to the directory given (`echo/templates/deploy.yaml`);
    /// empty when a single file was given.
    pub relative: String,
    pub text: String,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ModuleError {
    ModuleError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Reads rendered output: the file itself, or every `.yaml`, `.yml` and
/// `.json` file under the directory (hidden entries skipped), sorted by
/// relative path.
pub fn read_rendered(path: &Path) -> Result<Vec<RenderedFile>, ModuleError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if !meta.is_dir() {
        let text = std::fs::read_to_string(path).map_err(|e| io_err(path, e))?;
        return Ok(vec![RenderedFile {
            path: path.to_path_buf(),
            relative: String::new(),
            text,
        }]);
    }
    let mut out = Vec::new();
    walk(path, "", &mut out)?;
    out.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<RenderedFile>) -> Result<(), ModuleError> {
    for e in std::fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
        let e = e.map_err(|e| io_err(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let p = e.path();
        let relative = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let meta = std::fs::metadata(&p).map_err(|e| io_err(&p, e))?;
        if meta.is_dir() {
            walk(&p, &relative, out)?;
        } else if [".yaml", ".yml", ".json"].iter().any(|x| name.ends_with(x)) {
            let text = std::fs::read_to_string(&p).map_err(|e| io_err(&p, e))?;
            out.push(RenderedFile {
                path: p,
                relative,
                text,
            });
        }
    }
    Ok(())
}

/// Whether a directory is a modules tree rather than rendered output: a
/// subdirectory has a numeric order prefix (`010-echo`) or something only
/// a module or chart source has (`Chart.yaml`, `values.yaml`, `hooks/`,
/// `openapi/`, an `enabled` script, `templates/*.tpl`). Rendered output
/// (`<chart>/templates/*.yaml`) has none of these.
pub fn is_modules_dir(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if !p.is_dir() {
            return false;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let digits = name.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && name.as_bytes().get(digits) == Some(&b'-') {
            return true;
        }
        let has_tpl = std::fs::read_dir(p.join("templates")).is_ok_and(|rd| {
            rd.flatten()
                .any(|t| t.file_name().to_string_lossy().ends_with(".tpl"))
        });
        has_tpl
            || ["Chart.yaml", "values.yaml", "hooks", "openapi", "enabled"]
                .iter()
                .any(|f| p.join(f).exists())
    })
}

/// What a tree render needs besides the directories.
#[derive(Clone, Debug, Default)]
pub struct TreeRenderInput {
    pub config: OfflineConfig,
    pub snapshots: SnapshotInput,
    pub run: RunOptions,
    pub options: RenderOptions,
}

/// Renders every enabled module of a tree as `antiopa render` does and
/// returns (module name, `helm template` output) in module order. Any
/// module failing is an error: a partial render would show its objects
/// as removed.
pub fn render_tree(
    settings: &ModulesSettings,
    input: &TreeRenderInput,
    on_stderr: &mut dyn FnMut(&str),
) -> Result<Vec<(String, String)>, ModuleError> {
    let mut session = Session::load(settings, input.config.clone(), input.run.clone())?;
    session.snapshots = input.snapshots.clone();
    let results = render_modules(&mut session, &input.options, on_stderr)?;
    results
        .into_iter()
        .map(|r| r.result.map(|text| (r.name, text)))
        .collect()
}

/// A modules tree as of a git revision, in a temporary directory that
/// lives as long as this value.
pub struct RevisionTree {
    _dir: tempfile::TempDir,
    /// The same settings, with every directory inside a git work tree
    /// pointing into the materialised copy.
    pub settings: ModulesSettings,
}

fn git_err(message: String) -> ModuleError {
    ModuleError::Settings(format!("git: {message}"))
}

/// Runs git in `dir`; its stdout, or its stderr as the error.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, ModuleError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| git_err(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or_default();
        let first = first
            .strip_prefix("fatal: ")
            .or_else(|| first.strip_prefix("error: "))
            .unwrap_or(first);
        return Err(git_err(format!("git {}: {first}", args.join(" "))));
    }
    Ok(out.stdout)
}

/// `path` made absolute without resolving symlinks, `.` and `..` removed.
fn absolute(path: &Path) -> Result<PathBuf, ModuleError> {
    let base = std::env::current_dir().map_err(|e| io_err(path, e))?;
    let mut out = PathBuf::new();
    for c in base.join(path).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The git work tree holding `path` (which may no longer exist), and
/// `path` relative to it with `/` separators.
fn locate(path: &Path) -> Result<(PathBuf, String), ModuleError> {
    let abs = absolute(path)?;
    let mut existing = abs.as_path();
    while !existing.is_dir() {
        existing = existing
            .parent()
            .ok_or_else(|| git_err(format!("{} is not in a git work tree", path.display())))?;
    }
    let top = git(existing, &["rev-parse", "--show-toplevel"])?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim_end_matches('\n'));
    let top = std::fs::canonicalize(&top).map_err(|e| io_err(&top, e))?;
    let existing_real = std::fs::canonicalize(existing).map_err(|e| io_err(existing, e))?;
    let rest = abs.strip_prefix(existing).unwrap_or(Path::new(""));
    let real = existing_real.join(rest);
    let rel = real.strip_prefix(&top).map_err(|_| {
        git_err(format!(
            "{} is not inside {}",
            path.display(),
            top.display()
        ))
    })?;
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok((top, rel.join("/")))
}

/// Extracts `rel` of the work tree `top` at `rev` under `dest`; false if
/// the path does not exist in that revision.
fn extract(top: &Path, rev: &str, rel: &str, dest: &Path) -> Result<bool, ModuleError> {
    let spec = format!("{rev}:{rel}");
    let exists = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["cat-file", "-e", &spec])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| git_err(format!("cannot run git: {e}")))?;
    if !exists.success() {
        return Ok(false);
    }
    let mut args = vec!["archive", "--format=tar", rev];
    if !rel.is_empty() {
        args.extend(["--", rel]);
    }
    let tar = git(top, &args)?;
    let mut archive = tar::Archive::new(tar.as_slice());
    // Hooks and `enabled` scripts must stay executable.
    archive.set_preserve_permissions(true);
    archive
        .unpack(dest)
        .map_err(|e| io_err(dest, format!("unpacking git archive of {rev}: {e}")))?;
    Ok(true)
}

/// Materialises the modules directories and the global hooks directory of
/// `settings` as they were at `rev` (any commit-ish). A modules directory
/// missing at that revision is an empty tree; a missing global hooks
/// directory is none. Directories outside any git work tree are an error.
pub fn tree_at_revision(
    settings: &ModulesSettings,
    rev: &str,
) -> Result<RevisionTree, ModuleError> {
    let dir = tempfile::Builder::new()
        .prefix("antiopa-diff-")
        .tempdir()
        .map_err(|e| io_err(&std::env::temp_dir(), e))?;
    let mut out = settings.clone();
    let mut verified = Vec::new();
    let mut materialise = |i: usize, path: &Path| -> Result<Option<PathBuf>, ModuleError> {
        let (top, rel) = locate(path)?;
        if !verified.contains(&top) {
            let commit = format!("{rev}^{{commit}}");
            git(&top, &["rev-parse", "--verify", "--quiet", &commit])
                .map_err(|_| git_err(format!("unknown revision '{rev}'")))?;
            verified.push(top.clone());
        }
        let dest = dir.path().join(format!("{i}"));
        std::fs::create_dir_all(&dest).map_err(|e| io_err(&dest, e))?;
        let found = extract(&top, rev, &rel, &dest)?;
        Ok(found.then(|| dest.join(&rel)))
    };
    let mut n = 0;
    for d in out.modules_dirs.iter_mut() {
        let at = materialise(n, d)?;
        n += 1;
        *d = match at {
            Some(p) => p,
            None => {
                let empty = dir.path().join(format!("{n}-empty"));
                std::fs::create_dir_all(&empty).map_err(|e| io_err(&empty, e))?;
                empty
            }
        };
    }
    // The global hooks directory defaults to ./global-hooks, which need
    // not exist nor be in a repository: then it is taken as it is.
    if let Some(g) = out.global_hooks_dir.clone() {
        out.global_hooks_dir = match materialise(n, &g) {
            Ok(at) => at,
            Err(_) if !g.exists() => None,
            Err(_) if locate(&g).is_err() => Some(g),
            Err(e) => return Err(e),
        };
    }
    Ok(RevisionTree {
        _dir: dir,
        settings: out,
    })
}

/// Standard input whole, for a side given as `-`.
pub fn read_stdin() -> Result<String, ModuleError> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| io_err(Path::new("-"), e))?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or(root)).unwrap();
        std::fs::write(p, "x: 1\n").unwrap();
    }

    #[test]
    fn module_sources_versus_rendered_output() {
        let t = tempfile::tempdir().unwrap();
        // helm template --output-dir
        touch(t.path(), "rendered/web/templates/a.yaml");
        touch(t.path(), "rendered/web/charts/db/templates/b.yml");
        touch(t.path(), "rendered/web/NOTES.txt");
        assert!(!is_modules_dir(&t.path().join("rendered")));
        let files = read_rendered(&t.path().join("rendered")).unwrap();
        let rel: Vec<&str> = files.iter().map(|f| f.relative.as_str()).collect();
        assert_eq!(
            rel,
            ["web/charts/db/templates/b.yml", "web/templates/a.yaml"]
        );
        for tree in [
            "t1/010-echo/templates/a.yaml",
            "t2/echo/Chart.yaml",
            "t3/echo/templates/_helpers.tpl",
            "t4/echo/hooks/h.sh",
        ] {
            touch(t.path(), tree);
            let root = t.path().join(&tree[..2]);
            assert!(is_modules_dir(&root), "{tree}");
        }
    }
}
