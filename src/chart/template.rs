//! `antiopa template`: Helm v3.17.3's `helm template` from validated
//! settings to the exact stdout, in Helm's order of steps and errors
//! (cmd/helm/template.go, install.go `runInstall`): the kube version, name
//! and chart resolution, values merging and loading, then the render
//! ([`crate::chart::pipeline`]: installability and dependency checks,
//! values, rendering, manifest sorting), and printing its result (or
//! writing `--output-dir`) with the warnings on the log writer.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::chart::manifest::{self, Hook, Manifest, source_block};
use crate::chart::pipeline::{self, CrdFile, LoadedChart, RenderOptions, Rendered};
use crate::chart::strvals::ValueOptions;
use crate::engine::Env;

/// Validated settings of one `antiopa template` run. `Default` is helm's
/// flag defaults apart from `namespace` (empty; every caller names one).
#[derive(Default)]
pub struct TemplateSettings {
    /// Positional arguments: `[NAME] CHART`.
    pub args: Vec<String>,
    pub namespace: String,
    pub values: ValueOptions,
    pub include_crds: bool,
    pub skip_tests: bool,
    pub no_hooks: bool,
    pub is_upgrade: bool,
    /// `.Release.Revision`; 0 (the default) renders `helm template`'s 1.
    /// `antiopa apply` passes the revision it is about to write.
    pub revision: i64,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    pub show_only: Vec<String>,
    pub output_dir: Option<PathBuf>,
    /// `--release-name`: put `--output-dir` files under a directory named
    /// after the release.
    pub release_name_dir: bool,
    pub generate_name: bool,
    pub name_template: Option<String>,
    pub skip_schema_validation: bool,
    /// Where randomness and time come from (`--seed`, `--now`).
    pub env: Env,
}

/// A failed run; Display is what Helm prints after `Error: `.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

fn err(msg: impl Into<String>) -> TemplateError {
    TemplateError(msg.into())
}

/// `action.Install.NameAndChart` as `helm template` uses it (the release
/// name is preset to `release-name`, so `--generate-name` with one argument
/// still yields `release-name`).
fn name_and_chart(s: &TemplateSettings) -> Result<(String, String), TemplateError> {
    let args = &s.args;
    if args.len() > 2 {
        return Err(err(format!(
            "expected at most two arguments, unexpected arguments: {}",
            args[2..].join(", ")
        )));
    }
    if args.len() == 2 {
        if s.generate_name {
            return Err(err("cannot set --generate-name and also specify a name"));
        }
        if s.name_template.is_some() {
            return Err(err("cannot set --name-template and also specify a name"));
        }
        return Ok((args[0].clone(), args[1].clone()));
    }
    let chart = args.first().cloned().unwrap_or_default();
    if let Some(t) = &s.name_template {
        return Ok((template_name(t, &s.env)?, chart));
    }
    Ok(("release-name".to_string(), chart))
}

/// `action.TemplateName`: a name template rendered with Sprig over nil.
fn template_name(text: &str, env: &Env) -> Result<String, TemplateError> {
    if text.is_empty() {
        return Ok(String::new());
    }
    let mut t =
        crate::engine::Templates::new(std::sync::Arc::new(crate::engine::FuncMap::standard()));
    t.parse("name-template", text)
        .map_err(|e| err(e.to_string()))?;
    t.execute("name-template", &crate::engine::Value::Nil, env)
        .map_err(|e| err(e.to_string()))
}

/// `ChartPathOptions.LocateChart` without repositories: an existing path,
/// or Helm's error for what it would have tried to download.
pub fn locate_chart(name: &str) -> Result<PathBuf, TemplateError> {
    let name = name.trim();
    let p = Path::new(name);
    if p.exists() {
        return Ok(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    }
    if p.is_absolute() || name.starts_with('.') {
        return Err(err(format!("path {} not found", go_quote(name))));
    }
    match name.split_once('/') {
        Some((repo, _)) => Err(err(format!("repo {repo} not found"))),
        None => Err(err(format!(
            "non-absolute URLs should be in form of repo_name/path_to_chart, got: {name}"
        ))),
    }
}

use crate::gocompat::strconv::quote as go_quote;

/// Run `helm template` with `s`, writing what Helm writes to stdout into
/// `out` and its log lines (warnings) into `log`.
pub fn run(
    s: TemplateSettings,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), TemplateError> {
    run_keeping(s, out, log).map(drop)
}

/// What a successful run leaves behind: the render's large structures and
/// the printed text, for a process about to exit to skip freeing them
/// (`std::mem::forget`); for big charts that is a measurable part of the
/// run time. Dropping frees them.
pub struct Leftovers(#[allow(dead_code)] Box<dyn std::any::Any>);

/// As [`run`], but hands back the run's large structures instead of
/// dropping them (see [`Leftovers`]).
pub fn run_keeping(
    s: TemplateSettings,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<Leftovers, TemplateError> {
    let kube_version = match &s.kube_version {
        Some(v) if !v.is_empty() => Some(
            crate::chart::capabilities::KubeVersion::parse(v).map_err(|e| err(e.to_string()))?,
        ),
        _ => None,
    };
    let (name, chart_ref) = name_and_chart(&s)?;
    let chart_path = locate_chart(&chart_ref)?;
    let values = s.values.merge().map_err(|e| err(e.to_string()))?;
    // The top chart's templates parse on the spare cores as they are read
    // (a chart directory's `templates/` first).
    let loaded = LoadedChart::load(&chart_path, &mut |line| {
        let _ = writeln!(log, "{line}");
    })
    .map_err(|e| err(e.to_string()))?;
    let opts = RenderOptions {
        release_name: name.clone(),
        namespace: s.namespace,
        revision: s.revision,
        is_upgrade: s.is_upgrade,
        values,
        kube_version,
        api_versions: s.api_versions,
        include_crds: s.include_crds,
        skip_schema_validation: s.skip_schema_validation,
        env: s.env,
    };
    let (rendered, kept) = match pipeline::render_chart_keeping(loaded, &opts) {
        Ok(r) => r,
        Err(failure) => {
            for w in &failure.warnings {
                let _ = writeln!(log, "{w}");
            }
            return Err(err(failure.to_string()));
        }
    };
    for w in &rendered.warnings {
        let _ = writeln!(log, "{w}");
    }

    let mut writer = OutputDir::new(s.output_dir.as_deref(), out);
    let release_dir = if s.release_name_dir {
        Some(name.as_str())
    } else {
        None
    };
    let hooks = printed_hooks(&rendered, s.no_hooks, s.skip_tests);
    let text = match &mut writer {
        Some(w) => {
            for crd in &rendered.crds {
                w.write(None, &crd.path, &crd.content)?;
            }
            for m in &rendered.manifests {
                w.write(release_dir, &m.name, &m.content)?;
            }
            for h in &hooks {
                w.write_hook(release_dir, &h.path, &h.manifest)?;
            }
            // What stays on stdout: the (empty) trimmed body's newline.
            "\n".to_string()
        }
        None => stdout_text(&rendered.crds, &rendered.manifests, &hooks),
    };
    drop(writer);
    let printed = if s.show_only.is_empty() {
        text
    } else {
        manifest::show_only(&text, &s.show_only).map_err(err)?
    };
    out.write_all(printed.as_bytes())
        .map_err(|e| err(e.to_string()))?;
    drop(hooks);
    Ok(Leftovers(Box::new((kept, rendered, opts, printed))))
}

/// What `helm template` prints of `rendered` without `--output-dir` and
/// `--show-only`: the CRD files when it holds them, the manifests, then
/// the hooks (test hooks left out when `skip_tests`, all when `no_hooks`).
pub fn print_rendered(rendered: &Rendered, no_hooks: bool, skip_tests: bool) -> String {
    let hooks = printed_hooks(rendered, no_hooks, skip_tests);
    stdout_text(&rendered.crds, &rendered.manifests, &hooks)
}

/// The hooks `helm template` prints (`--no-hooks`, `--skip-tests`).
fn printed_hooks(rendered: &Rendered, no_hooks: bool, skip_tests: bool) -> Vec<&Hook> {
    if no_hooks {
        return Vec::new();
    }
    rendered
        .hooks
        .iter()
        .filter(|h| !(skip_tests && h.is_test()))
        .collect()
}

/// cmd/helm/template.go prints the CRDs' and manifests' blocks trimmed
/// (`strings.TrimSpace`), a newline, then the hooks' blocks. Built in one
/// buffer of its final size: a big chart prints megabytes, and growing the
/// text and copying it again to trim it cost as much as writing it.
fn stdout_text(crds: &[CrdFile], manifests: &[Manifest], hooks: &[&Hook]) -> String {
    let body = crds
        .iter()
        .map(|c| (c.path.as_str(), c.content.as_str()))
        .chain(
            manifests
                .iter()
                .map(|m| (m.name.as_str(), m.content.as_str())),
        );
    let hook_blocks = hooks.iter().map(|h| (h.path.as_str(), h.manifest.as_str()));
    let len: usize = body
        .clone()
        .chain(hook_blocks.clone())
        .map(|(p, c)| manifest::source_block_len(p, c))
        .sum();
    let mut text = String::with_capacity(len + 1);
    for (path, content) in body {
        manifest::push_source_block(&mut text, path, content);
    }
    text.truncate(text.trim_end().len());
    let lead = text.len() - text.trim_start().len();
    text.drain(..lead);
    text.push('\n');
    for (path, content) in hook_blocks {
        manifest::push_source_block(&mut text, path, content);
    }
    text
}

/// `--output-dir`: Helm's `writeToFile` (create or append, then print
/// `wrote <file>` on stdout).
struct OutputDir<'a> {
    dir: PathBuf,
    out: &'a mut dyn Write,
    written: BTreeMap<PathBuf, bool>,
}

impl<'a> OutputDir<'a> {
    fn new(dir: Option<&Path>, out: &'a mut dyn Write) -> Option<OutputDir<'a>> {
        dir.map(|d| OutputDir {
            dir: d.to_path_buf(),
            out,
            written: BTreeMap::new(),
        })
    }

    fn target(&self, release_dir: Option<&str>, name: &str) -> PathBuf {
        let mut p = self.dir.clone();
        if let Some(r) = release_dir {
            p.push(r);
        }
        // Helm joins with the separator without cleaning.
        PathBuf::from(format!("{}/{name}", p.display()))
    }

    /// A manifest or CRD: the first write of a run truncates, later ones append.
    fn write(
        &mut self,
        release_dir: Option<&str>,
        name: &str,
        data: &str,
    ) -> Result<(), TemplateError> {
        let file = self.target(release_dir, name);
        let append = self.written.get(&file).copied().unwrap_or(false);
        self.write_file(&file, name, data, append)?;
        self.written.insert(file, true);
        Ok(())
    }

    /// A hook: appended whenever the file already exists.
    fn write_hook(
        &mut self,
        release_dir: Option<&str>,
        name: &str,
        data: &str,
    ) -> Result<(), TemplateError> {
        let file = self.target(release_dir, name);
        let append = file.exists() || self.written.get(&file).copied().unwrap_or(false);
        self.write_file(&file, name, data, append)?;
        self.written.insert(file, true);
        Ok(())
    }

    fn write_file(
        &mut self,
        file: &Path,
        name: &str,
        data: &str,
        append: bool,
    ) -> Result<(), TemplateError> {
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| err(e.to_string()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(file)
            .map_err(|e| err(e.to_string()))?;
        f.write_all(source_block(name, data).as_bytes())
            .map_err(|e| err(e.to_string()))?;
        writeln!(self.out, "wrote {}", file.display()).map_err(|e| err(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    /// A small chart exercising kinds, hooks, CRDs, NOTES, partials, a
    /// subchart and the built-in objects; expected outputs below come from
    /// helm v3.17.3 run on the same files.
    const CHART: &[(&str, &str)] = &[
        (
            "Chart.yaml",
            r#"apiVersion: v2
name: m
version: 0.1.0
appVersion: "1.0"
"#,
        ),
        (
            "charts/sub/Chart.yaml",
            r#"apiVersion: v2
name: sub
version: 0.2.0
"#,
        ),
        (
            "charts/sub/templates/s.yaml",
            r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: {{ .Values.val | quote }}
"#,
        ),
        (
            "crds/crd.yaml",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.x.io
"#,
        ),
        (
            "templates/NOTES.txt",
            r#"NOTES {{ .Release.Name }}
"#,
        ),
        (
            "templates/_h.tpl",
            r#"{{ define "x" }}X{{ end }}
"#,
        ),
        (
            "templates/cm.yaml",
            r#"
---
# only a comment
---
apiVersion: v1
kind: Service
metadata:
  name: s
---

---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
---
apiVersion: v1
kind: Foo
metadata:
  name: f
---
apiVersion: v1
kind: Bar
metadata:
  name: b
"#,
        ),
        (
            "templates/empty.yaml",
            r#"
"#,
        ),
        (
            "templates/hooks.yaml",
            r#"apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  annotations:
    "helm.sh/hook": post-install,pre-upgrade
---
apiVersion: v1
kind: Pod
metadata:
  name: t1
  annotations:
    "helm.sh/hook": test
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: u1
  annotations:
    "helm.sh/hook": foo
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
"#,
        ),
        (
            "templates/info.yaml",
            r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Revision }} {{ .Release.Service }}"
  kube: "{{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion.Major }} {{ .Capabilities.KubeVersion.Minor }}"
  api: "{{ .Capabilities.APIVersions.Has "x.io/v1" }} {{ .Capabilities.APIVersions.Has "apps/v1" }}"
  chart: "{{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }}"
  values: "{{ .Values.global.g }} {{ .Values.sub.val }}"
"#,
        ),
        (
            "values.yaml",
            r#"global:
  g: 2
sub:
  val: "3"
"#,
        ),
    ];

    const DEFAULT: &str = r#"---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "3"
---
# Source: m/templates/cm.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: Pod
metadata:
  name: t1
  annotations:
    "helm.sh/hook": test
---
# Source: m/templates/hooks.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  annotations:
    "helm.sh/hook": post-install,pre-upgrade
"#;

    const CRDS: &str = r#"---
# Source: m/crds/crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.x.io

---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "3"
---
# Source: m/templates/cm.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: Pod
metadata:
  name: t1
  annotations:
    "helm.sh/hook": test
---
# Source: m/templates/hooks.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  annotations:
    "helm.sh/hook": post-install,pre-upgrade
"#;

    const SKIPTESTS: &str = r#"---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "3"
---
# Source: m/templates/cm.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
---
# Source: m/templates/hooks.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  annotations:
    "helm.sh/hook": post-install,pre-upgrade
"#;

    const NOHOOKS: &str = r#"---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "3"
---
# Source: m/templates/cm.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
"#;

    const SO1: &str = r#"---
# Source: m/templates/cm.yaml
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
"#;

    const SO2: &str = r#"---
# Source: m/templates/cm.yaml
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a1
  annotations:
    other: x
---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Service
metadata:
  name: s
---
# Source: m/templates/cm.yaml
# only a comment
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Bar
metadata:
  name: b
---
# Source: m/templates/cm.yaml
apiVersion: v1
kind: Foo
metadata:
  name: f
---
# Source: m/templates/hooks.yaml
apiVersion: v1
kind: Pod
metadata:
  name: t1
  annotations:
    "helm.sh/hook": test
---
# Source: m/templates/hooks.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  annotations:
    "helm.sh/hook": post-install,pre-upgrade
---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "3"
"#;

    const FLAGS: &str = r#"---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel other false true 1 Helm"
  kube: "v1.29.3 1 29"
  api: "true true"
  chart: "m 0.1.0 1.0"
  values: "2 3"
"#;

    const SET: &str = r#"---
# Source: m/templates/info.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  release: "rel default true false 1 Helm"
  kube: "v1.32.0 1 32"
  api: "false true"
  chart: "m 0.1.0 1.0"
  values: "2 7"
---
# Source: m/charts/sub/templates/s.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  v: "7"
"#;

    const OD: &str = r#"wrote /tmp/rt/tcod/m/crds/crd.yaml
wrote /tmp/rt/tcod/m/charts/sub/templates/s.yaml
wrote /tmp/rt/tcod/m/templates/cm.yaml
wrote /tmp/rt/tcod/m/templates/hooks.yaml
wrote /tmp/rt/tcod/m/templates/info.yaml
wrote /tmp/rt/tcod/m/templates/cm.yaml
wrote /tmp/rt/tcod/m/templates/cm.yaml
wrote /tmp/rt/tcod/m/templates/cm.yaml
wrote /tmp/rt/tcod/m/templates/cm.yaml
wrote /tmp/rt/tcod/m/templates/hooks.yaml
wrote /tmp/rt/tcod/m/templates/hooks.yaml

"#;

    fn chart_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        for (name, text) in CHART {
            let p = dir.path().join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
        }
        dir
    }

    fn settings(dir: &Path, extra: impl FnOnce(&mut TemplateSettings)) -> TemplateSettings {
        let mut s = TemplateSettings {
            args: vec!["rel".into(), dir.display().to_string()],
            namespace: "default".into(),
            values: ValueOptions::default(),
            include_crds: false,
            skip_tests: false,
            no_hooks: false,
            is_upgrade: false,
            revision: 0,
            kube_version: None,
            api_versions: vec![],
            show_only: vec![],
            output_dir: None,
            release_name_dir: false,
            generate_name: false,
            name_template: None,
            skip_schema_validation: false,
            env: Env::new(),
        };
        extra(&mut s);
        s
    }

    fn run_with(extra: impl FnOnce(&mut TemplateSettings)) -> Result<String, String> {
        let dir = chart_dir();
        let s = settings(dir.path(), extra);
        let mut out = Vec::new();
        let mut log = Vec::new();
        run(s, &mut out, &mut log).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn prints_like_helm_template() {
        assert_eq!(run_with(|_| {}).as_deref(), Ok(DEFAULT));
    }

    #[test]
    fn crds_tests_and_hooks_flags() {
        assert_eq!(run_with(|s| s.include_crds = true).as_deref(), Ok(CRDS));
        assert_eq!(run_with(|s| s.skip_tests = true).as_deref(), Ok(SKIPTESTS));
        assert_eq!(run_with(|s| s.no_hooks = true).as_deref(), Ok(NOHOOKS));
    }

    #[test]
    fn show_only_like_helm() {
        assert_eq!(
            run_with(|s| s.show_only = vec!["templates/cm.yaml".into()]).as_deref(),
            Ok(SO1)
        );
        assert_eq!(
            run_with(
                |s| s.show_only = vec!["templates/*".into(), "charts/sub/templates/s.yaml".into()]
            )
            .as_deref(),
            Ok(SO2)
        );
        assert_eq!(
            run_with(|s| s.show_only = vec!["templates/nope.yaml".into()]),
            Err("could not find template templates/nope.yaml in chart".into())
        );
    }

    #[test]
    fn release_capabilities_and_set_flags() {
        let flags = run_with(|s| {
            s.namespace = "other".into();
            s.is_upgrade = true;
            s.kube_version = Some("1.29.3".into());
            s.api_versions = vec!["x.io/v1".into()];
            s.show_only = vec!["templates/info.yaml".into()];
        });
        assert_eq!(flags.as_deref(), Ok(FLAGS));
        let set = run_with(|s| {
            s.values.set = vec!["sub.val=7".into()];
            s.show_only = vec![
                "templates/info.yaml".into(),
                "charts/sub/templates/s.yaml".into(),
            ];
        });
        assert_eq!(set.as_deref(), Ok(SET));
    }

    #[test]
    fn output_dir_writes_files_like_helm() {
        let dir = chart_dir();
        let od = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let target = od.path().join("out");
        let s = settings(dir.path(), |s| {
            s.include_crds = true;
            s.output_dir = Some(target.clone());
        });
        let mut out = Vec::new();
        let mut log = Vec::new();
        assert!(run(s, &mut out, &mut log).is_ok());
        let stdout =
            String::from_utf8_lossy(&out).replace(&target.display().to_string(), "/tmp/rt/tcod");
        assert_eq!(stdout, OD);
        let hooks =
            std::fs::read_to_string(target.join("m/templates/hooks.yaml")).unwrap_or_default();
        assert!(hooks.starts_with(
            "---\n# Source: m/templates/hooks.yaml\napiVersion: v1\nkind: ConfigMap\n"
        ));
        assert!(hooks.ends_with("    \"helm.sh/hook\": post-install,pre-upgrade\n"));
    }

    #[test]
    fn argument_errors_read_as_helm() {
        let err = |f: &dyn Fn(&mut TemplateSettings)| run_with(|s| f(s)).err().unwrap_or_default();
        assert_eq!(
            err(&|s| s.args.push("b".into())),
            "expected at most two arguments, unexpected arguments: b"
        );
        assert_eq!(
            err(&|s| s.generate_name = true),
            "cannot set --generate-name and also specify a name"
        );
        assert_eq!(
            err(&|s| s.kube_version = Some("abc".into())),
            "invalid kube version 'abc': Invalid Semantic Version"
        );
        assert_eq!(
            err(&|s| s.args[0] = "Foo".into()),
            "release name \"Foo\": invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53"
        );
        assert_eq!(
            err(&|s| s.args[1] = "./nope".into()),
            "path \"./nope\" not found"
        );
        assert_eq!(
            err(&|s| s.args[1] = "nope".into()),
            "non-absolute URLs should be in form of repo_name/path_to_chart, got: nope"
        );
        assert_eq!(err(&|s| s.args[1] = "foo/bar".into()), "repo foo not found");
    }
}

#[cfg(test)]
mod helm_function_tests {
    use super::*;

    /// Helm's functions, `.Files` and `.Capabilities` through the whole
    /// pipeline; expected output from helm v3.17.3 on the same chart.
    const CHART: &[(&str, &str)] = &[
        (
            "Chart.yaml",
            r#"apiVersion: v2
name: f
version: 0.1.0
"#,
        ),
        (
            "files/a.txt",
            r#"line1
line2
"#,
        ),
        ("files/b.txt", r#"b"#),
        (
            "templates/t.yaml",
            r#"ty: {{ toYaml .Values | quote }}
typ: {{ toYamlPretty .Values | quote }}
tj: {{ toJson .Values | quote }}
tt: {{ toToml .Values | quote }}
tt2: {{ toToml (list 1 2) | quote }}
fy: {{ fromYaml "a: 1\nb: [x]" | quote }}
fy2: {{ fromYaml "- 1" | quote }}
fy3: {{ fromYaml "a: b: c" | quote }}
fya: {{ fromYamlArray "- 1\n- a" | quote }}
fya2: {{ fromYamlArray "a: 1" | quote }}
fj: {{ fromJson "{\"a\": [1, 2.5]}" | quote }}
fj2: {{ fromJson "[1]" | quote }}
fj3: {{ fromJson "{" | quote }}
fja: {{ fromJsonArray "[1, \"x\"]" | quote }}
ft: {{ fromToml "a = 1\nb = \"x\"" | quote }}
lk: {{ lookup "v1" "Secret" "ns" "x" | quote }}
gh: {{ getHostByName "example.com" | quote }}
cfg: {{ (.Files.Glob "files/*").AsConfig | quote }}
sec: {{ (.Files.Glob "files/*").AsSecrets | quote }}
cfg0: {{ (.Files.Glob "nothing").AsConfig | quote }}
chart: {{ toYaml .Chart | quote }}
kv: "{{ .Capabilities.KubeVersion }} {{ typeOf .Capabilities.KubeVersion }}"
caps: {{ .Capabilities.HelmVersion | quote }}
"#,
        ),
        (
            "values.yaml",
            r#"big: 1000000
f: 1.5
l: ["true", "yes", "", "0755"]
m: {b: 1, a: [x, 2]}
s: "<b>&"
"#,
        ),
    ];

    const EXPECTED: &str = r#"---
# Source: f/templates/t.yaml
ty: "big: 1000000\nf: 1.5\nl:\n- \"true\"\n- \"yes\"\n- \"\"\n- \"0755\"\nm:\n  a:\n  - x\n  - 2\n  b: 1\ns: <b>&"
typ: "big: 1e+06\nf: 1.5\nl:\n  - \"true\"\n  - \"yes\"\n  - \"\"\n  - \"0755\"\nm:\n  a:\n    - x\n    - 2\n  b: 1\ns: <b>&"
tj: "{\"big\":1000000,\"f\":1.5,\"l\":[\"true\",\"yes\",\"\",\"0755\"],\"m\":{\"a\":[\"x\",2],\"b\":1},\"s\":\"\\u003cb\\u003e\\u0026\"}"
tt: "big = 1000000.0\nf = 1.5\nl = [\"true\", \"yes\", \"\", \"0755\"]\ns = \"<b>&\"\n\n[m]\n  a = [\"x\", 2.0]\n  b = 1.0\n"
tt2: "[1, 2]"
fy: "map[a:1 b:[x]]"
fy2: "map[Error:error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}]"
fy3: "map[Error:error converting YAML to JSON: yaml: mapping values are not allowed in this context]"
fya: "[1 a]"
fya2: "[error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}]"
fj: "map[a:[1 2.5]]"
fj2: "map[Error:json: cannot unmarshal array into Go value of type map[string]interface {}]"
fj3: "map[Error:unexpected end of JSON input]"
fja: "[1 x]"
ft: "map[a:1 b:x]"
lk: "map[]"
gh: ""
cfg: "a.txt: |\n  line1\n  line2\nb.txt: b"
sec: "a.txt: bGluZTEKbGluZTIK\nb.txt: Yg=="
cfg0: "{}"
chart: "IsRoot: true\napiVersion: v2\nname: f\nversion: 0.1.0"
kv: "v1.32.0 chartutil.KubeVersion"
caps: "{v3.17.3 e4da49785aa6e6ee2b86efd5dd9e43400318262b clean go1.23.7}"
"#;

    #[test]
    fn functions_files_and_capabilities_like_helm() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        for (name, text) in CHART {
            let p = dir.path().join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let s = TemplateSettings {
            args: vec!["rel".into(), dir.path().display().to_string()],
            namespace: "default".into(),
            values: ValueOptions::default(),
            include_crds: false,
            skip_tests: false,
            no_hooks: false,
            is_upgrade: false,
            revision: 0,
            kube_version: None,
            api_versions: vec![],
            show_only: vec![],
            output_dir: None,
            release_name_dir: false,
            generate_name: false,
            name_template: None,
            skip_schema_validation: false,
            env: Env::new(),
        };
        let mut out = Vec::new();
        let mut log = Vec::new();
        let r = run(s, &mut out, &mut log);
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(String::from_utf8_lossy(&out), EXPECTED);
    }
}

/// Parsing runs on several threads and beside the values phase; these
/// charts are big enough for that (tens of KB of templates, hundreds of
/// values) on a machine with more than one core.
#[cfg(test)]
mod parallel_tests {
    use super::*;

    const PAD_LEN: usize = 400;

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
    }

    fn pad() -> String {
        format!("{{{{/* {} */}}}}\n", "p".repeat(PAD_LEN))
    }

    fn template(dir: &Path, skip_schema: bool) -> Result<String, String> {
        let s = TemplateSettings {
            args: vec!["r".into(), dir.display().to_string()],
            namespace: "ns".into(),
            skip_schema_validation: skip_schema,
            ..Default::default()
        };
        let (mut out, mut log) = (Vec::new(), Vec::new());
        run(s, &mut out, &mut log).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// 150 helper files over three directory depths all define "x", some
    /// define "y" (a few only with whitespace, which never overrides).
    /// Expected output from helm v3.17.3 on the same files: the last
    /// definition in `sortTemplates` order wins.
    #[test]
    fn define_overrides_follow_helms_order_under_parallel_parsing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path();
        write(
            d,
            "Chart.yaml",
            "apiVersion: v2\nname: many\nversion: 0.1.0\n",
        );
        write(
            d,
            "templates/out.yaml",
            "x: {{ include \"x\" . }}\ny: {{ include \"y\" . }}\n",
        );
        for i in 0..150 {
            let sub = ["templates/", "templates/sub/", "templates/sub/deep/"][i % 3];
            let mut t = format!("{}{{{{ define \"x\" }}}}X{i}{{{{ end }}}}", pad());
            if i % 5 == 0 {
                t.push_str("{{ define \"y\" }}  {{ end }}");
            } else if i % 7 == 0 {
                t.push_str(&format!("{{{{ define \"y\" }}}}Y{i}{{{{ end }}}}"));
            }
            write(d, &format!("{sub}_h{i:03}.tpl"), &format!("{t}\n"));
        }
        let want = "---\n# Source: many/templates/out.yaml\nx: X0\ny: Y21\n";
        // Repeated: which thread parses which file varies from run to run.
        for _ in 0..5 {
            assert_eq!(template(d, false).as_deref(), Ok(want));
        }
    }

    /// A chart whose values break its schema and whose templates do not
    /// parse (two files). Helm validates the values first; without
    /// validation, the first broken file in its parse order is reported
    /// (t50 before t10: reverse lexicographic). Texts from helm v3.17.3.
    #[test]
    fn schema_error_wins_over_parse_errors_like_helm() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path();
        write(
            d,
            "Chart.yaml",
            "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
        );
        let values: String = (0..700).map(|i| format!("k{i}: {i}\n")).collect();
        write(d, "values.yaml", &format!("replicas: three\n{values}"));
        write(
            d,
            "values.schema.json",
            r#"{"type": "object", "properties": {"replicas": {"type": "integer"}}}"#,
        );
        for i in 0..80 {
            let mut t = format!("{}k: {{{{ .Values.k1 }}}}\n", pad());
            if i == 10 {
                t.push_str("a: {{ nope }}\n");
            }
            if i == 50 {
                t.push_str("b: {{ end }}\n");
            }
            write(d, &format!("templates/t{i:02}.yaml"), &t);
        }
        for _ in 0..3 {
            assert_eq!(
                template(d, false),
                Err("values don't meet the specifications of the schema(s) in the following chart(s):\nbad:\n- replicas: Invalid type. Expected: integer, given: string\n".into())
            );
            assert_eq!(
                template(d, true),
                Err("parse error at (bad/templates/t50.yaml:3): unexpected {{end}}\n\nUse --debug flag to render out invalid YAML".into())
            );
        }
    }

    /// The schema check runs beside the render when the schema is big
    /// (here 28 KB, above [`SCHEMA_HELPER_MIN_BYTES`]) and, unless a helper
    /// already runs, inline when it is small; either way Helm's order holds: a values error wins over a
    /// `fail` while rendering and over an incompatible kubeVersion, and
    /// valid values print the render. Texts from helm v3.17.3 on the same
    /// charts.
    #[test]
    fn schema_error_wins_over_render_errors_like_helm() {
        let values_error = "values don't meet the specifications of the schema(s) in the following chart(s):\nchecked:\n- replicas: Invalid type. Expected: integer, given: string\n";
        let fail_error = "execution error at (checked/templates/t.yaml:2:3): rendering fails\n\nUse --debug flag to render out invalid YAML";
        let kube_error = "chart requires kubeVersion: >=9.0.0 which is incompatible with Kubernetes v1.32.0\n\nUse --debug flag to render out invalid YAML";
        for big in [false, true] {
            let mut props = vec![r#""replicas": {"type": "integer"}"#.to_string()];
            if big {
                props.extend((0..300).map(|i| {
                    format!(
                        r#""p{i:03}": {{"type": "string", "description": "{}"}}"#,
                        "padding ".repeat(6)
                    )
                }));
            }
            let schema = format!(
                r#"{{"type": "object", "properties": {{{}}}}}"#,
                props.join(", ")
            );
            assert_eq!(
                schema.len() >= crate::chart::pipeline::SCHEMA_HELPER_MIN_BYTES,
                big
            );
            for kube in [false, true] {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let d = dir.path();
                let kube_line = if kube {
                    "kubeVersion: \">=9.0.0\"\n"
                } else {
                    ""
                };
                write(
                    d,
                    "Chart.yaml",
                    &format!("apiVersion: v2\nname: checked\nversion: 0.1.0\n{kube_line}"),
                );
                write(d, "values.yaml", "replicas: three\n");
                write(d, "values.schema.json", &schema);
                write(
                    d,
                    "templates/t.yaml",
                    "a: 1\n{{ fail \"rendering fails\" }}\n",
                );
                assert_eq!(
                    template(d, false),
                    Err(values_error.into()),
                    "big {big}, kube {kube}"
                );
                let skipped = if kube { kube_error } else { fail_error };
                assert_eq!(
                    template(d, true),
                    Err(skipped.into()),
                    "big {big}, kube {kube}"
                );
                if !kube {
                    write(d, "values.yaml", "replicas: 3\n");
                    write(d, "templates/t.yaml", "a: {{ .Values.replicas }}\n");
                    let want = "---\n# Source: checked/templates/t.yaml\na: 3\n";
                    assert_eq!(template(d, false).as_deref(), Ok(want), "big {big}");
                }
            }
        }
    }
}
