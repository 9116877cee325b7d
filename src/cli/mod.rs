//! Command-line interface: clap types and output formatting only.
//!
//! Parsing happens in two steps: clap fills [`Cli`] with raw strings, then
//! [`template_settings`] validates them into the library's
//! [`TemplateSettings`]; the library never sees clap types. Errors are
//! printed once, as Helm prints them (`Error: …` on stderr, exit code 1).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod apply;
mod apply_live;
mod ctl;
mod diff;
mod drift;
mod jq_worker;
mod lifecycle;
mod limits;
mod manifests;
mod module;
mod run;

use crate::chart::strvals::ValueOptions;
use crate::chart::template::{self, TemplateSettings};
use crate::engine::Env;

const ABOUT: &str = "Kubernetes addon operator; renders Helm charts natively";
const TEMPLATE_ABOUT: &str =
    "Render chart templates locally and print them, exactly as `helm template` does";

#[derive(Parser, Debug)]
#[command(
    name = "antiopa",
    version,
    about = ABOUT,
    // pflag: a repeated single-value flag takes its last value.
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    #[command(about = TEMPLATE_ABOUT)]
    Template(TemplateArgs),
    /// addon-operator modules: list them, show their values.
    #[command(subcommand)]
    Module(module::ModuleCommand),
    /// addon-operator hooks: show a hook's parsed --config.
    #[command(subcommand)]
    Hook(module::HookCommand),
    /// Render every enabled module offline (global and module hooks, values, charts).
    Render(module::RenderArgs),
    /// Compare rendered manifests object by object: files, directories,
    /// modules trees, or the modules tree at git revisions. With `--live
    /// NAME CHART`: what an apply would change on the cluster (server-side
    /// dry run).
    Diff(diff::DiffArgs),
    /// Install or upgrade a release with server-side apply (helm upgrade --install).
    Apply(apply::ApplyArgs),
    /// Uninstall a release: delete its objects and records.
    Uninstall(apply::UninstallArgs),
    /// Show a release's revisions.
    History(apply::HistoryArgs),
    /// Archive a release: its workloads deleted, its PersistentVolumeClaims
    /// and history kept (Octopod's archive).
    Archive(lifecycle::LifecycleArgs),
    /// Restore an archived release: its last chart, values and manifest
    /// applied again as a new revision.
    Restore(lifecycle::LifecycleArgs),
    /// Clean up an archived release (its claims and history deleted), or
    /// with --expired every archive older than the retention.
    Cleanup(lifecycle::CleanupArgs),
    /// A release's action log: install, upgrade, archive, restore,
    /// cleanup, uninstall, with who did each and how it ended.
    Actions(lifecycle::ActionsArgs),
    /// Run the operator: converge the modules tree into the cluster and
    /// keep it converged (addon-operator's environment and ConfigMap).
    Run(run::RunArgs),
    /// The running operator's queue (through its debug socket).
    #[command(subcommand)]
    Queue(ctl::QueueCommand),
    /// The running operator's kubernetes-binding watches (through its debug socket).
    #[command(subcommand)]
    Watch(ctl::WatchCommand),
    /// The running operator's global values and config (through its debug socket).
    #[command(subcommand)]
    Global(ctl::GlobalCommand),
    /// Print the YAML that installs the operator (kubectl apply --server-side -f -).
    Manifests(manifests::ManifestsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion(manifests::CompletionArgs),
    /// What of the modules' deployed releases differs on the cluster now
    /// (deleted objects, changed fields), object by object; exit 1 when
    /// something does.
    Drift(drift::DriftArgs),
}

/// [`Cli`] with `template` as its only subcommand, for command lines that
/// start with `template`: building every subcommand's arguments is most of
/// clap's work, ~200 k instructions (0.1 ms), a quarter of all a small
/// chart's rendering takes. The attributes and arguments are [`Cli`]'s, so help, usage
/// and errors are the same.
#[derive(Parser, Debug)]
#[command(name = "antiopa", version, about = ABOUT, args_override_self = true)]
struct TemplateCli {
    #[command(subcommand)]
    command: TemplateCommand,
}

#[derive(Subcommand, Debug)]
enum TemplateCommand {
    #[command(about = TEMPLATE_ABOUT)]
    Template(TemplateArgs),
}

/// Helm's values flags, shared by `template`, `apply` and `diff --live`.
#[derive(Args, Debug, Clone)]
struct ValuesFlags {
    /// Values files (repeatable; comma-separated lists accepted, as Helm).
    #[arg(short = 'f', long = "values", value_delimiter = ',')]
    pub(crate) values: Vec<String>,
    /// Set values (key1=val1,key2=val2).
    #[arg(long)]
    pub(crate) set: Vec<String>,
    /// Set STRING values.
    #[arg(long = "set-string")]
    pub(crate) set_string: Vec<String>,
    /// Set values from files (key=path).
    #[arg(long = "set-file")]
    pub(crate) set_file: Vec<String>,
    /// Set JSON values (key=json).
    #[arg(long = "set-json")]
    pub(crate) set_json: Vec<String>,
    /// Set a literal STRING value (no `,` splitting or escapes).
    #[arg(long = "set-literal")]
    pub(crate) set_literal: Vec<String>,
}

impl ValuesFlags {
    fn options(&self) -> ValueOptions {
        ValueOptions {
            values_files: self.values.clone(),
            set: self.set.clone(),
            set_string: self.set_string.clone(),
            set_file: self.set_file.clone(),
            set_json: self.set_json.clone(),
            set_literal: self.set_literal.clone(),
        }
    }
}

/// `helm template` flags, with Helm's names and meanings.
#[derive(Args, Debug)]
struct TemplateArgs {
    /// [NAME] CHART
    #[arg(value_name = "NAME_OR_CHART")]
    args: Vec<String>,
    /// Namespace of the release (`.Release.Namespace`).
    #[arg(short = 'n', long, default_value = "default", env = "HELM_NAMESPACE")]
    namespace: String,
    #[command(flatten)]
    values: ValuesFlags,
    /// Include CRDs in the output.
    #[arg(long = "include-crds")]
    include_crds: bool,
    /// Accepted for compatibility; CRDs are only printed with --include-crds.
    #[arg(long = "skip-crds")]
    skip_crds: bool,
    /// Skip test hooks.
    #[arg(long = "skip-tests")]
    skip_tests: bool,
    /// Do not print hooks.
    #[arg(long = "no-hooks")]
    no_hooks: bool,
    /// Set .Release.IsUpgrade instead of .Release.IsInstall.
    #[arg(long = "is-upgrade")]
    is_upgrade: bool,
    /// Kubernetes version for .Capabilities.KubeVersion.
    #[arg(long = "kube-version")]
    kube_version: Option<String>,
    /// Extra API versions for .Capabilities.APIVersions.
    #[arg(short = 'a', long = "api-versions", value_delimiter = ',')]
    api_versions: Vec<String>,
    /// Only show manifests rendered from these templates.
    #[arg(short = 's', long = "show-only")]
    show_only: Vec<String>,
    /// Write the rendered files into this directory instead of stdout.
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Use the release name in the --output-dir path.
    #[arg(long = "release-name")]
    release_name: bool,
    /// Generate the release name (as helm template, it stays `release-name`).
    #[arg(short = 'g', long = "generate-name")]
    generate_name: bool,
    /// Template for the release name.
    #[arg(long = "name-template")]
    name_template: Option<String>,
    /// Do not validate values against values.schema.json.
    #[arg(long = "skip-schema-validation")]
    skip_schema_validation: bool,
    /// Seed for random functions (randAlphaNum, genCA, …): reproducible output.
    #[arg(long)]
    seed: Option<u64>,
    /// Fixed time (RFC 3339) for `now` and certificate validity: reproducible output.
    #[arg(long)]
    now: Option<String>,
    #[command(flatten)]
    limits: limits::RenderLimitArgs,
}

/// A settings error found while validating the raw arguments.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error(
        "\"antiopa template\" requires at least 1 argument\n\nUsage:  antiopa template [NAME] [CHART] [flags]"
    )]
    MissingChart,
    #[error("invalid --now {0:?}: expected an RFC 3339 time such as 2024-01-02T03:04:05Z")]
    BadNow(String),
}

/// Step two of parsing: raw arguments to validated library settings.
fn template_settings(a: TemplateArgs) -> Result<TemplateSettings, CliError> {
    if a.args.is_empty() {
        return Err(CliError::MissingChart);
    }
    let now = match &a.now {
        Some(s) => {
            Some(chrono::DateTime::parse_from_rfc3339(s).map_err(|_| CliError::BadNow(s.clone()))?)
        }
        None => None,
    };
    let mut env = Env::new();
    if let Some(seed) = a.seed {
        env.seed(seed);
    }
    env.set_now(now);
    // As helm unless asked: no limits.
    env.set_limits(a.limits.limits(crate::engine::Limits::unlimited()));
    let _ = a.skip_crds;
    Ok(TemplateSettings {
        args: a.args,
        namespace: a.namespace,
        values: a.values.options(),
        include_crds: a.include_crds,
        skip_tests: a.skip_tests,
        no_hooks: a.no_hooks,
        is_upgrade: a.is_upgrade,
        // helm template always renders revision 1.
        revision: 0,
        kube_version: a.kube_version,
        api_versions: a.api_versions,
        show_only: a.show_only,
        output_dir: a.output_dir,
        release_name_dir: a.release_name,
        generate_name: a.generate_name,
        name_template: a.name_template,
        skip_schema_validation: a.skip_schema_validation,
        env,
    })
}

/// Stack the command runs on: deeply nested (hostile) templates and YAML
/// recurse in the parsers, which stop at Go's depth limits; the main
/// thread's default 8 MiB would overflow first. Only touched pages are
/// actually allocated.
const STACK_SIZE: usize = 1 << 30;

/// Run the command line and exit the process with its exit code.
///
/// The work runs on the main thread switched onto a large stack (`stacker`
/// maps it and switches to it in place). A worker thread would do as well,
/// but costs a wake-up on another core and a second malloc arena, about
/// half a millisecond of a 4 ms `antiopa template`. The process exits
/// from that stack: returning would first unmap it, page by page of what
/// the run touched, which the exit does anyway. A bug that still panics is
/// reported as one `Error:` line (exit 1), never as Rust's panic message.
pub fn main() -> ! {
    if jq_worker::is_worker_call() {
        std::process::exit(jq_worker::run());
    }
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "Error: internal error, please report it: {what}{at}"
        );
    }));
    // One pool of render helpers for the whole run, sized to the CPUs the
    // affinity mask allows (not `available_parallelism`, whose cgroup quota
    // look-up costs ~140 µs, a few percent of a small chart: a one-shot
    // process gains nothing from it); it may shape the heap for a process
    // that exits after one render.
    let pool = crate::chart::workers::Pool::new(affinity_cpus()).for_one_shot_process();
    // The panic hook has already printed the error.
    let code = std::panic::catch_unwind(|| {
        stacker::grow(STACK_SIZE, || {
            std::process::exit(pool.enter(run_cli));
        })
    })
    .unwrap_or(1);
    std::process::exit(code)
}

/// The CPUs in this process's affinity mask, as Go's `runtime.NumCPU`
/// counts them.
fn affinity_cpus() -> usize {
    rustix::thread::sched_getaffinity(None)
        .ok()
        .and_then(|set| usize::try_from(set.count()).ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

fn run_cli() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "diff") && argv[2..].iter().any(|a| a == "--live") {
        let rest = argv[2..].iter().cloned();
        return run_live_diff_cli(std::iter::once("antiopa diff".into()).chain(rest).collect());
    }
    let parsed = if argv.get(1).is_some_and(|a| a == "template") {
        TemplateCli::try_parse_from(argv).map(|c| {
            let TemplateCommand::Template(a) = c.command;
            Cli {
                command: Command::Template(a),
            }
        })
    } else {
        Cli::try_parse_from(argv)
    };
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version
                let _ = e.print();
                return 0;
            }
            let code = print_error(&cobra_message(&e));
            // `antiopa diff` exits 2 on errors, as `git diff` does.
            if std::env::args_os().nth(1).is_some_and(|a| a == "diff") {
                return 2;
            }
            return code;
        }
    };
    match cli.command {
        Command::Template(a) => run_template(a),
        Command::Module(c) => module::run_module(c),
        Command::Hook(c) => module::run_hook(c),
        Command::Render(a) => module::run_render(a),
        Command::Diff(a) => diff::run_diff(a),
        Command::Apply(a) => exit_code(apply::run_apply(a)),
        Command::Uninstall(a) => exit_code(apply::run_uninstall(a)),
        Command::Archive(a) => exit_code(lifecycle::run_archive(a)),
        Command::Restore(a) => exit_code(lifecycle::run_restore(a)),
        Command::Cleanup(a) => exit_code(lifecycle::run_cleanup(a)),
        Command::Actions(a) => exit_code(lifecycle::run_actions(a)),
        Command::History(a) => exit_code(apply::run_history(a)),
        Command::Run(a) => run::run_operator(a),
        Command::Queue(c) => ctl::run_queue(c),
        Command::Watch(c) => ctl::run_watch(c),
        Command::Global(c) => ctl::run_global(c),
        Command::Manifests(a) => manifests::run_manifests(a),
        Command::Completion(a) => {
            manifests::run_completion(a, <Cli as clap::CommandFactory>::command())
        }
        Command::Drift(a) => match drift::run_drift(a) {
            Ok(differs) => i32::from(differs),
            Err(e) => print_error(&e.to_string()) + 1,
        },
    }
}

/// `antiopa diff --live NAME CHART …` takes the release flags of `apply`,
/// not the OLD/NEW arguments of the offline diff, so it is parsed on its
/// own. It exits 1 when something would change, as `kubectl diff` does.
#[derive(Parser, Debug)]
#[command(name = "antiopa diff")]
struct LiveDiffCli {
    #[command(flatten)]
    args: apply_live::LiveDiffArgs,
}

fn run_live_diff_cli(args: Vec<std::ffi::OsString>) -> i32 {
    let cli = match LiveDiffCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                let _ = e.print();
                return 0;
            }
            print_error(&cobra_message(&e));
            return 2;
        }
    };
    match apply_live::run_live_diff(cli.args) {
        Ok(changed) => i32::from(changed),
        Err(e) => print_error(&e.to_string()) + 1,
    }
}

fn exit_code(r: Result<(), apply::CmdError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => print_error(&e.to_string()),
    }
}

fn run_template(a: TemplateArgs) -> i32 {
    let settings = match template_settings(a) {
        Ok(s) => s,
        Err(e) => return print_error(&e.to_string()),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // Warnings go to stderr unlocked between writes: this thread waits for
    // helper threads during the run, and a helper that panics reports it
    // on stderr (the panic hook); holding the lock for the whole run
    // would hang the process there instead of printing the error.
    let result = template::run_keeping(settings, &mut out, &mut std::io::stderr());
    let _ = out.flush();
    match result {
        Ok(leftovers) => {
            // The process exits right after this: freeing the chart, the
            // values and every parsed template node one by one would only
            // cost time (over a tenth of the run for big charts); the OS
            // reclaims the memory at exit anyway. Nothing in them owns a
            // resource that needs a destructor (files are closed, output is
            // flushed above).
            std::mem::forget(leftovers);
            0
        }
        Err(e) => print_error(&e.to_string()),
    }
}

/// Helm's (cobra/pflag's) wording for the common argument errors; clap's
/// own text otherwise.
fn cobra_message(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let flag = arg.split([' ', '=']).next().unwrap_or_default().to_string();
    match e.kind() {
        ErrorKind::UnknownArgument if flag.starts_with("--") => format!("unknown flag: {flag}"),
        ErrorKind::UnknownArgument if flag.starts_with('-') && flag.len() > 1 => {
            format!("unknown shorthand flag: '{}' in {flag}", &flag[1..2])
        }
        ErrorKind::InvalidValue | ErrorKind::NoEquals if arg.starts_with('-') => {
            format!("flag needs an argument: {flag}")
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            first.strip_prefix("error: ").unwrap_or(first).to_string()
        }
    }
}

fn print_error(msg: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "Error: {msg}");
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `antiopa template` is parsed by [`TemplateCli`] alone: its help,
    /// usage and arguments must be those of [`Cli`]'s `template`.
    #[test]
    fn template_only_command_is_clis_template() {
        let render = |mut top: clap::Command| {
            top.build();
            let sub = top
                .find_subcommand_mut("template")
                .expect("template")
                .clone();
            let args: Vec<String> = sub.get_arguments().map(|a| format!("{a:?}")).collect();
            (
                sub.clone().render_long_help().to_string(),
                sub.clone().render_usage().to_string(),
                args,
            )
        };
        let full = render(Cli::command());
        let only = render(TemplateCli::command());
        assert!(
            full.0.contains("exactly as `helm template` does"),
            "{}",
            full.0
        );
        assert_eq!(only, full);
        let mut top = TemplateCli::command();
        top.build();
        let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
        assert_eq!(names, ["template", "help"]);
    }

    /// Errors come out the same from both parsers.
    #[test]
    fn template_only_errors_are_clis() {
        for argv in [
            &["antiopa", "template", "--bogus"][..],
            &["antiopa", "template", "-n"],
            &["antiopa", "template", "-x"],
            &["antiopa", "template", "--include-crds=maybe"],
        ] {
            let full = Cli::try_parse_from(argv).expect_err("an error");
            let only = TemplateCli::try_parse_from(argv).expect_err("an error");
            assert_eq!(cobra_message(&only), cobra_message(&full), "{argv:?}");
            assert_eq!(only.kind(), full.kind(), "{argv:?}");
        }
    }
}
