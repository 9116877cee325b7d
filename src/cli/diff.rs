//! `antiopa diff OLD NEW` and `antiopa diff --git REV1 [REV2]`: clap types,
//! telling what each side is, and printing. Sides are read or rendered by
//! [`crate::module::tree_render`] and compared by [`crate::diff`].
//!
//! Exit codes follow `git diff`: 0 on success (with `--exit-code`: 0 when
//! nothing differs, 1 when something does), 2 on any error.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::diff::{CompareOptions, Format, RenderOptions, Source, compare, render};
use crate::module::discovery::split_dirs;
use crate::module::tree_render::{
    TreeRenderInput, is_modules_dir, read_rendered, read_stdin, render_tree, tree_at_revision,
};
use crate::module::{ModulesSettings, OfflineConfig, RenderOptions as TreeOptions};

/// Exit code for errors, as `git diff` and `diff` use.
const EXIT_ERROR: i32 = 2;

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// OLD and NEW: rendered output (a file, `-` for stdin, or a directory as
    /// `render --output-dir` / `helm template --output-dir` write) or modules
    /// directories (rendered first). With --git: two revisions, or one to
    /// compare with the working tree.
    #[arg(value_names = ["OLD", "NEW"], num_args = 0..=2)]
    sides: Vec<String>,
    /// Compare the modules directory at git revisions.
    #[arg(long)]
    git: bool,
    /// How to read OLD and NEW.
    #[arg(long = "as", value_enum, default_value = "auto")]
    input: InputKind,
    /// Modules directories for --git (colon-separated; default: $MODULES_DIR or ./modules).
    #[arg(long = "modules-dir")]
    modules_dir: Option<String>,
    /// Global hooks directory (default: with --git $GLOBAL_HOOKS_DIR or
    /// ./global-hooks; for a modules directory, a `global-hooks` beside it).
    #[arg(long = "global-hooks-dir")]
    global_hooks_dir: Option<PathBuf>,
    /// A ConfigMap manifest with the config values (both sides).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Objects for kubernetes bindings (both sides; see `render --snapshots`).
    #[arg(long)]
    snapshots: Option<PathBuf>,
    /// Release namespace, also the namespace of objects that name none.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// Lines of context around each change.
    #[arg(short = 'U', long, default_value_t = 3)]
    context: usize,
    /// Colour the output.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorWhen,
    /// Exit with 1 when there are differences, 0 when there are none.
    #[arg(long = "exit-code")]
    exit_code: bool,
    /// Output format (markdown: a table and fenced diff blocks for a pull request).
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: OutputFormat,
    /// Print Secret values; by default they are masked (`***`, `*** (before)`,
    /// `*** (after)`) as `kubectl diff` masks them.
    #[arg(long = "show-secrets")]
    show_secrets: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A directory with module sources is a modules tree, anything else rendered output.
    Auto,
    /// Rendered manifests (a file, or YAML files under a directory).
    Rendered,
    /// A modules directory, rendered first.
    Modules,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Markdown,
}

/// One side, resolved.
enum Side {
    Stdin,
    Rendered(PathBuf),
    Tree(ModulesSettings),
}

/// Runs the command; returns the exit code.
pub fn run_diff(a: DiffArgs) -> i32 {
    match diff(&a) {
        Ok(differs) => i32::from(a.exit_code && differs),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "Error: {e}");
            EXIT_ERROR
        }
    }
}

fn diff(a: &DiffArgs) -> Result<bool, String> {
    let env_settings = ModulesSettings::from_env().map_err(|e| e.to_string())?;
    let (old, new) = if a.git {
        let (rev1, rev2) = match a.sides.as_slice() {
            [r1] => (r1, None),
            [r1, r2] => (r1, Some(r2)),
            _ => {
                return Err(
                    "\"antiopa diff --git\" requires 1 or 2 revisions (REV1 [REV2])".into(),
                );
            }
        };
        let mut base = env_settings;
        if let Some(d) = &a.modules_dir {
            base.modules_dirs = split_dirs(d);
        }
        if let Some(g) = &a.global_hooks_dir {
            base.global_hooks_dir = Some(g.clone());
        }
        let old_tree = tree_at_revision(&base, rev1).map_err(|e| e.to_string())?;
        let new_tree = match rev2 {
            Some(r) => Some(tree_at_revision(&base, r).map_err(|e| e.to_string())?),
            None => None,
        };
        let new_settings = new_tree.as_ref().map_or(&base, |t| &t.settings);
        let old = sources(a, rev1, &Side::Tree(old_tree.settings.clone()))?;
        let new_label = rev2.map_or("working tree", |r| r.as_str());
        let new = sources(a, new_label, &Side::Tree(new_settings.clone()))?;
        (old, new)
    } else {
        let [o, n] = a.sides.as_slice() else {
            return Err(format!(
                "\"antiopa diff\" requires 2 arguments (OLD NEW), got {}",
                a.sides.len()
            ));
        };
        let old_side = side(a, o, &env_settings)?;
        let new_side = side(a, n, &env_settings)?;
        (sources(a, o, &old_side)?, sources(a, n, &new_side)?)
    };
    let result = compare(
        &old,
        &new,
        &CompareOptions {
            default_namespace: a.namespace.clone(),
            show_secrets: a.show_secrets,
        },
    )
    .map_err(|e| e.to_string())?;
    let format = match a.output {
        OutputFormat::Text => Format::Text,
        OutputFormat::Markdown => Format::Markdown,
    };
    let color = format == Format::Text
        && match a.color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var("TERM").map_or(true, |t| t != "dumb")
            }
        };
    let text = render(
        &result,
        &RenderOptions {
            context: a.context,
            color,
            format,
        },
    );
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing output: {e}"))?;
    Ok(result.has_differences())
}

/// What a path argument is.
fn side(a: &DiffArgs, arg: &str, env: &ModulesSettings) -> Result<Side, String> {
    if arg == "-" {
        return Ok(Side::Stdin);
    }
    let path = PathBuf::from(arg);
    if !path.exists() {
        return Err(format!("{arg}: no such file or directory"));
    }
    let tree = match a.input {
        InputKind::Rendered => false,
        InputKind::Modules => true,
        InputKind::Auto => path.is_dir() && is_modules_dir(&path),
    };
    if !tree {
        return Ok(Side::Rendered(path));
    }
    let global_hooks_dir = match &a.global_hooks_dir {
        Some(g) => Some(g.clone()),
        None => sibling_global_hooks(&path),
    };
    Ok(Side::Tree(ModulesSettings {
        modules_dirs: vec![path],
        global_hooks_dir,
        unnumbered_order: env.unnumbered_order,
    }))
}

/// `global-hooks` next to a modules directory, the layout of addon-operator
/// images (`/modules`, `/global-hooks`) and of this repository.
fn sibling_global_hooks(modules_dir: &Path) -> Option<PathBuf> {
    let parent = match modules_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let g = parent.join("global-hooks");
    g.is_dir().then_some(g)
}

/// A side's texts for the comparison.
fn sources(a: &DiffArgs, label: &str, side: &Side) -> Result<Vec<Source>, String> {
    match side {
        Side::Stdin => Ok(vec![Source::new(
            "<stdin>",
            "",
            read_stdin().map_err(|e| e.to_string())?,
        )]),
        Side::Rendered(path) => Ok(read_rendered(path)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|f| Source::new(f.path.display().to_string(), f.relative, f.text))
            .collect()),
        Side::Tree(settings) => {
            let config = match &a.config {
                Some(p) => OfflineConfig::read(p).map_err(|e| e.to_string())?,
                None => OfflineConfig::default(),
            };
            let snapshots = match &a.snapshots {
                Some(p) => {
                    crate::module::session::SnapshotInput::read(p).map_err(|e| e.to_string())?
                }
                None => Default::default(),
            };
            let input = TreeRenderInput {
                config,
                snapshots,
                run: super::module::run_options(),
                options: TreeOptions {
                    namespace: a.namespace.clone(),
                    only: Vec::new(),
                    // Rendered as `antiopa render` renders (the operator's limits).
                    limits: crate::engine::Limits::operator(),
                },
            };
            let mut fwd = |line: &str| {
                let _ = writeln!(std::io::stderr(), "{line}");
            };
            let rendered =
                render_tree(settings, &input, &mut fwd).map_err(|e| format!("{label}: {e}"))?;
            Ok(rendered
                .into_iter()
                .map(|(name, text)| {
                    Source::new(
                        format!("{label}: module {name}"),
                        format!("module {name}"),
                        text,
                    )
                })
                .collect())
        }
    }
}
