//! One release's render, as data: Helm v3.17's `action.Install` from a
//! loaded chart to its resources (`RunWithContext` and `renderResources`:
//! installability and dependency checks, the release name, dependency
//! processing, values coalescing and schema validation, the kubeVersion
//! check, rendering, manifest sorting), ending in a [`Rendered`]: the
//! manifests in install order with their parsed heads, the hooks, the CRDs,
//! the top chart's NOTES and the lines Helm logs on the way. Nothing is
//! printed here: `helm template`'s output is [`crate::chart::template`]'s,
//! applying is the caller's.
//!
//! The work is spread as before over the helpers of the entered
//! [`crate::chart::workers::Pool`]: a chart loaded with
//! [`LoadedChart::load`] has its templates parsed while the loader reads
//! the rest and the values coalesce, and manifest heads are parsed while
//! later files execute.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::chart::Chart;
use crate::chart::capabilities::{Capabilities, KubeVersion};
use crate::chart::coalesce::ValuesError;
use crate::chart::load::LoadError;
use crate::chart::manifest::{self, Hook, Manifest};
use crate::chart::render::{self, ParsePool, ReleaseOptions};
use crate::chart::schema::Schemas;
use crate::chart::types::Warn;
use crate::engine::Env;
use crate::gocompat::strconv::quote as go_quote;
use crate::yaml::Mapping;

/// What to render a chart as: the release, the user's values, the cluster
/// it is rendered for and the engine's environment. `Default` is
/// `helm template`'s defaults without a release name.
#[derive(Default)]
pub struct RenderOptions {
    /// `.Release.Name`; checked as Helm checks it.
    pub release_name: String,
    pub namespace: String,
    /// `.Release.Revision`; 0 renders Helm's 1 for a new release.
    pub revision: i64,
    /// `.Release.IsUpgrade` (and `IsInstall`, its opposite).
    pub is_upgrade: bool,
    /// The user-supplied values (`-f`/`--set` merged), coalesced over the
    /// charts' defaults.
    pub values: Mapping,
    /// `.Capabilities.KubeVersion` (Helm's default when `None`).
    pub kube_version: Option<KubeVersion>,
    /// Added to the default `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
    /// Read the charts' `crds/` files into [`Rendered::crds`].
    pub include_crds: bool,
    pub skip_schema_validation: bool,
    /// Randomness, time and render limits.
    pub env: Env,
}

/// A chart ready to render, perhaps with its templates already being
/// parsed (see [`LoadedChart::load`]). Any [`Chart`] converts into one.
pub struct LoadedChart {
    chart: Chart,
    parsing: ParsePool,
}

impl LoadedChart {
    /// Load a chart directory or archive (Helm's `loader.Load`), parsing the
    /// top chart's templates on the pool's helpers while the rest is read.
    /// Helm's loader warnings go to `warn` as they come.
    pub fn load(path: &Path, warn: Warn) -> Result<LoadedChart, LoadError> {
        let mut parsing = ParsePool::new();
        let chart = crate::chart::load::load_observed(path, warn, &mut parsing)?;
        Ok(LoadedChart { chart, parsing })
    }

    /// [`LoadedChart::load`] of a chart directory that may lack
    /// `Chart.yaml`: `chart_yaml` stands in for it then (addon-operator
    /// writes one for a module without it). Nothing is written.
    pub fn load_dir_or(dir: &Path, chart_yaml: &str, warn: Warn) -> Result<LoadedChart, LoadError> {
        let mut parsing = ParsePool::new();
        let chart = crate::chart::load::load_dir_with_default_metadata(
            dir,
            chart_yaml,
            warn,
            &mut parsing,
        )?;
        Ok(LoadedChart { chart, parsing })
    }

    /// The chart as loaded (its values not yet coalesced).
    pub fn chart(&self) -> &Chart {
        &self.chart
    }
}

impl From<Chart> for LoadedChart {
    fn from(chart: Chart) -> LoadedChart {
        LoadedChart {
            chart,
            parsing: ParsePool::new(),
        }
    }
}

/// One file of a chart's `crds/` directory (subcharts' included).
#[derive(Clone, Debug, PartialEq)]
pub struct CrdFile {
    /// `mychart/crds/x.yaml`, `mychart/charts/sub/crds/y.yaml`.
    pub path: String,
    /// The file's text, all its documents.
    pub content: String,
}

/// A rendered release.
#[derive(Debug, Default)]
pub struct Rendered {
    /// Non-hook documents in Helm's install order, each with its template
    /// path, head and text.
    pub manifests: Vec<Manifest>,
    /// Hook documents in kind order, with events, weight and delete
    /// policies (test hooks included).
    pub hooks: Vec<Hook>,
    /// The charts' `crds/` files when [`RenderOptions::include_crds`], the
    /// top chart's first (Helm's `CRDObjects`).
    pub crds: Vec<CrdFile>,
    /// The top chart's rendered `templates/NOTES.txt` (empty without one;
    /// subcharts' notes are rendered but dropped, as Helm's `subNotes` off).
    pub notes: String,
    /// What Helm logs on stderr on the way, in order and in its words
    /// (`WARNING: This chart is deprecated`, `coalesce.go:…`,
    /// `manifest_sorter.go:190: info: skipping unknown hook: …`).
    pub warnings: Vec<String>,
}

/// Why a render failed; Display is Helm's text (what it prints after
/// `Error: `).
#[derive(Debug, thiserror::Error)]
pub enum ChartRenderError {
    /// `checkIfInstallable`: a library chart.
    #[error("{0} charts are not installable")]
    NotInstallable(String),
    /// `action.CheckDependencies`: a dependency without its chart (the
    /// whole text is Helm's).
    #[error("{0}")]
    MissingDependencies(String),
    #[error("release name {}: no name provided", go_quote(.0))]
    NoReleaseName(String),
    #[error(
        "release name {}: invalid release name, must match regex {} and the length must not be longer than 53",
        go_quote(.0),
        VALID_NAME
    )]
    InvalidReleaseName(String),
    /// Dependency processing, coalescing or the values schema.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// The kubeVersion check, a template that fails to parse or execute,
    /// a manifest whose head does not decode.
    #[error("{0}\n\nUse --debug flag to render out invalid YAML")]
    Render(String),
    /// A chart file that vanished or became unreadable after the load.
    #[error("cannot read chart file {0}")]
    UnreadableFile(String),
}

/// A failed render with the warnings logged before it failed (Helm prints
/// them before its error).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RenderFailure {
    pub error: ChartRenderError,
    pub warnings: Vec<String>,
}

/// The large structures a render leaves behind (the chart, the values, the
/// parsed templates, the rendered files), for a caller that would rather
/// not free them: a process about to exit can `std::mem::forget` them and
/// skip freeing tens of thousands of small allocations. Dropping frees them.
pub struct Leftovers(#[allow(dead_code)] Box<dyn std::any::Any>);

/// Render `chart` as a release (see the module comment).
pub fn render_chart(
    chart: impl Into<LoadedChart>,
    opts: &RenderOptions,
) -> Result<Rendered, RenderFailure> {
    render_chart_keeping(chart, opts).map(|(rendered, _leftovers)| rendered)
}

/// [`render_chart`], handing back its [`Leftovers`] instead of freeing them.
pub fn render_chart_keeping(
    chart: impl Into<LoadedChart>,
    opts: &RenderOptions,
) -> Result<(Rendered, Leftovers), RenderFailure> {
    let mut warnings = Vec::new();
    match render_into(chart.into(), opts, &mut warnings) {
        Ok((mut rendered, leftovers)) => {
            rendered.warnings = warnings;
            Ok((rendered, leftovers))
        }
        Err(error) => Err(RenderFailure { error, warnings }),
    }
}

/// Helm's `validName` regexp (action/install.go), quoted in its error.
pub const VALID_NAME: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// Whether `name` matches [`VALID_NAME`]: dot-separated labels of
/// `[-a-z0-9]` that start and end with `[a-z0-9]`. Checked by hand: it runs
/// on every render and compiling the regexp would cost more than rendering
/// a small chart.
fn is_valid_name(name: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.split('.').all(|label| {
        let b = label.as_bytes();
        match (b.first(), b.last()) {
            (Some(&f), Some(&l)) => {
                alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-')
            }
            _ => false,
        }
    })
}

/// The steps of `action.Install` in Helm's order of errors; warnings are
/// collected into `warnings` as they come, so a failure keeps them too.
fn render_into(
    loaded: LoadedChart,
    opts: &RenderOptions,
    warnings: &mut Vec<String>,
) -> Result<(Rendered, Leftovers), ChartRenderError> {
    let LoadedChart {
        mut chart,
        parsing: pool,
    } = loaded;
    match chart.metadata.chart_type.as_str() {
        "" | "application" => {}
        other => return Err(ChartRenderError::NotInstallable(other.to_string())),
    }
    if chart.metadata.deprecated {
        warnings.push("WARNING: This chart is deprecated".to_string());
    }
    if !chart.metadata.dependencies.is_empty() {
        crate::chart::dependencies::check_dependencies(&chart)
            .map_err(ChartRenderError::MissingDependencies)?;
    }
    // action.Install.availableName
    let name = &opts.release_name;
    if name.is_empty() {
        return Err(ChartRenderError::NoReleaseName(name.clone()));
    }
    if name.len() > 53 || !is_valid_name(name) {
        return Err(ChartRenderError::InvalidReleaseName(name.clone()));
    }

    let caps = Capabilities::for_template(opts.kube_version.clone(), &opts.api_versions);
    let mut warn = |line: &str| warnings.push(line.to_string());
    // `chartutil.ToRenderValues` runs while the templates are parsed: the
    // two are independent once the dependencies are processed (which decides
    // the charts to render). Its values coalescing is done here before the
    // render, its schema check (see [`SchemaCheck`]) by the end of it. Helm
    // validates before it parses, so a values error wins over a parse error.
    crate::chart::dependencies::process_dependencies(&mut chart, &opts.values, &mut warn)?;
    // The values are also turned into the templates' `.Values` here, while
    // the other cores parse. Nothing reads the charts' own defaults after
    // this coalescing: it consumes them rather than copying them.
    let cost = values_cost(&chart);
    let defaults = crate::chart::coalesce::take_chart_values(&mut chart);
    let (values, parsed) = pool.finish(&chart, cost, || {
        crate::chart::coalesce::coalesce_taken_values(&chart, defaults, &opts.values, &mut warn)
            .map(|v| {
                let top = crate::chart::convert::values_to_value(&v);
                (v, top)
            })
    });
    let (values, top_values) = values?;
    let values = Arc::new(values);
    let schema_check = (!opts.skip_schema_validation)
        .then(|| SchemaCheck::start(Schemas::of(&chart), values.clone()));
    let rendered = render_and_sort(&chart, parsed, top_values, opts, &caps);
    // Helm validates the values before it renders: a schema error wins
    // over anything rendering did.
    if let Some(check) = schema_check {
        check.finish()?;
    }
    let RenderedFiles {
        notes,
        files,
        sorted,
        state,
    } = rendered?;
    let crds = if opts.include_crds {
        crd_files(&chart)
    } else {
        Vec::new()
    };
    // A file that vanished or became unreadable since the load was read as
    // empty: the render is wrong, whatever it produced.
    if let Some(e) = chart.read_errors().into_iter().next() {
        return Err(ChartRenderError::UnreadableFile(e));
    }
    warnings.extend(
        sorted
            .warnings
            .iter()
            .map(|w| format!("manifest_sorter.go:190: {w}")),
    );
    let rendered = Rendered {
        manifests: sorted.manifests,
        hooks: sorted.hooks,
        crds,
        notes,
        warnings: Vec::new(),
    };
    Ok((rendered, Leftovers(Box::new((chart, values, state, files)))))
}

/// Schemas below this many bytes are checked where the values are made
/// when no helper thread runs yet: decoding, compiling and applying one
/// costs some 8 µs a KB, and starting a helper costs the render 60-130 µs.
pub(crate) const SCHEMA_HELPER_MIN_BYTES: usize = 16 * 1024;
/// The same with a helper already started (it parses the templates of all
/// but the smallest charts): handing it the check costs a lock.
const SCHEMA_HELPER_MIN_BYTES_STARTED: usize = 1024;

/// `values.schema.json` validation of the coalesced values, Helm's last
/// step of `ToRenderValues`. A big schema (vault's is 48 KB, bitnami-redis'
/// 150 KB: a tenth of their runs) is checked on a helper thread while the
/// templates render; [`SchemaCheck::finish`] gives the verdict before
/// the render's result is used, so a values error still wins over every
/// error rendering may raise, as in Helm, which validates before it
/// renders. The price: values a big schema rejects are rendered before the
/// error.
struct SchemaCheck(Checking);

enum Checking {
    Done(Result<(), ValuesError>),
    /// The job, taken by whichever thread comes to it first: the helper,
    /// or [`SchemaCheck::finish`] when the helper has not begun (it may be
    /// busy with other work), so that the render never waits for a helper
    /// only to start.
    Helper {
        job: Arc<SchemaJob>,
        pending: crate::chart::workers::Pending<Option<Result<(), ValuesError>>>,
    },
}

struct SchemaJob {
    taken: AtomicBool,
    schemas: Schemas,
    values: Arc<Mapping>,
}

impl SchemaJob {
    fn run(&self) -> Option<Result<(), ValuesError>> {
        (!self.taken.swap(true, Ordering::AcqRel))
            .then(|| crate::chart::coalesce::validate_values(&self.schemas, &self.values))
    }
}

impl SchemaCheck {
    fn start(schemas: Schemas, values: Arc<Mapping>) -> SchemaCheck {
        let size = schemas.size();
        let job = Arc::new(SchemaJob {
            taken: AtomicBool::new(false),
            schemas,
            values,
        });
        let worth_a_helper = size >= SCHEMA_HELPER_MIN_BYTES
            || (size >= SCHEMA_HELPER_MIN_BYTES_STARTED
                && crate::chart::workers::helpers_started());
        if worth_a_helper && crate::chart::workers::cores() > 1 {
            let theirs = job.clone();
            if let Ok(pending) = crate::chart::workers::spawn_detached_next(move || theirs.run()) {
                return SchemaCheck(Checking::Helper { job, pending });
            }
        }
        // Not handed over, or no thread could be started for it (the job
        // was dropped unrun): checked here, now.
        match job.run() {
            Some(r) => SchemaCheck(Checking::Done(r)),
            None => unreachable!("a schema job not handed over was taken"),
        }
    }

    fn finish(self) -> Result<(), ValuesError> {
        match self.0 {
            Checking::Done(r) => r,
            Checking::Helper { job, pending } => match job.run() {
                Some(r) => r,
                None => match pending.wait() {
                    Ok(Some(r)) => r,
                    Ok(None) => unreachable!("the schema job ran on neither thread"),
                    // The panic hook has reported it; end as the main thread would.
                    Err(panic) => std::panic::resume_unwind(panic),
                },
            },
        }
    }
}

/// What [`render_and_sort`] hands back.
struct RenderedFiles {
    /// The top chart's NOTES.txt.
    notes: String,
    /// The rendered files, NOTES.txt left out (kept only as leftovers).
    files: BTreeMap<String, String>,
    sorted: manifest::Sorted,
    state: render::RenderState,
}

/// The parsed templates rendered (Helm's `action.renderResources` after the
/// values): the kubeVersion check, rendering, and the manifests sorted
/// into install order.
fn render_and_sort(
    chart: &Chart,
    parsed: Result<render::ParsedTemplates, render::RenderError>,
    top_values: crate::engine::Value,
    opts: &RenderOptions,
    caps: &Capabilities,
) -> Result<RenderedFiles, ChartRenderError> {
    let release = ReleaseOptions {
        name: opts.release_name.clone(),
        namespace: opts.namespace.clone(),
        revision: if opts.revision > 0 { opts.revision } else { 1 },
        is_upgrade: opts.is_upgrade,
        is_install: !opts.is_upgrade,
    };

    // action.renderResources
    if !chart.metadata.kube_version.is_empty()
        && !crate::chart::dependencies::is_compatible_range(
            &chart.metadata.kube_version,
            &caps.kube_version.version,
        )
    {
        return Err(ChartRenderError::Render(format!(
            "chart requires kubeVersion: {} which is incompatible with Kubernetes {}",
            chart.metadata.kube_version, caps.kube_version.version
        )));
    }
    // Manifest heads are parsed on another core as the files render.
    let heads = match &parsed {
        Ok(p) if p.worth_a_thread() => manifest::HeadWorker::start(),
        _ => None,
    };
    let (mut files, state) = parsed
        .and_then(|p| {
            render::render_parsed(
                chart,
                p,
                top_values,
                &release,
                caps,
                &opts.env,
                &mut |path, text| {
                    if let Some(h) = &heads {
                        h.send(path, text);
                    }
                },
            )
        })
        .map_err(|e| ChartRenderError::Render(e.to_string()))?;
    // NOTES.txt is rendered (its errors count) but is no manifest; the top
    // chart's is kept.
    let notes = files
        .remove(&format!("{}/templates/NOTES.txt", chart.name()))
        .unwrap_or_default();
    files.retain(|k, _| !k.ends_with("NOTES.txt"));
    check_utf8(chart, &files)?;
    let pre = heads.map(manifest::HeadWorker::finish).unwrap_or_default();
    let sorted = manifest::sort_manifests_with(&files, pre)
        .map_err(|e| ChartRenderError::Render(e.to_string()))?;

    Ok(RenderedFiles {
        notes,
        files,
        sorted,
        state,
    })
}

/// The values work on `chart` (coalescing, then the schema check, which a
/// helper may take), as the bytes of template text that take about as
/// long to parse (a rough figure from the corpus: a values node costs some
/// 32 template bytes, a schema byte one), to decide whether a thread should
/// parse templates while it runs.
fn values_cost(chart: &Chart) -> usize {
    fn nodes(y: &crate::yaml::Yaml) -> usize {
        match y {
            crate::yaml::Yaml::Seq(v) => 1 + v.iter().map(nodes).sum::<usize>(),
            crate::yaml::Yaml::Map(m) => 1 + m.values().map(nodes).sum::<usize>(),
            _ => 1,
        }
    }
    fn rec(c: &Chart) -> usize {
        let values: usize = c.values.values().map(nodes).sum();
        let schema = c.schema.as_ref().map_or(0, |s| s.len());
        32 * values + schema + c.dependencies.iter().map(rec).sum::<usize>()
    }
    rec(chart)
}

/// Helm renders template bytes as they are and then fails in go-yaml's
/// reader when a manifest holds invalid UTF-8; our engine works on text
/// (invalid bytes become U+FFFD), so a rendered manifest whose template is
/// not UTF-8 and whose output kept a replacement character gets go-yaml's
/// error here, as Helm reports it.
fn check_utf8(chart: &Chart, files: &BTreeMap<String, String>) -> Result<(), ChartRenderError> {
    fn rec(c: &Chart, path: &str, out: &mut Vec<(String, String)>) {
        for f in &c.templates {
            if std::str::from_utf8(&f.data).is_err()
                && let Err(e) = crate::yaml::check_input(&f.data)
            {
                out.push((format!("{path}/{}", f.name), e.to_string()));
            }
        }
        for d in &c.dependencies {
            rec(d, &format!("{path}/charts/{}", d.name()), out);
        }
    }
    let mut bad = Vec::new();
    rec(chart, chart.name(), &mut bad);
    for (path, why) in bad {
        if files.get(&path).is_some_and(|t| t.contains('\u{FFFD}')) {
            return Err(ChartRenderError::Render(format!(
                "YAML parse error on {path}: {why}"
            )));
        }
    }
    Ok(())
}

/// `Chart.CRDObjects`: `crds/` files with a manifest extension, the chart's
/// own first, then each subchart's, named by chart path.
fn crd_files(chart: &Chart) -> Vec<CrdFile> {
    fn rec(c: &Chart, path: &str, out: &mut Vec<CrdFile>) {
        for f in &c.crds {
            let ext_ok = [".yaml", ".yml", ".json"]
                .iter()
                .any(|e| f.name.ends_with(e));
            if f.name.starts_with("crds/") && ext_ok {
                out.push(CrdFile {
                    path: format!("{path}/{}", f.name),
                    content: String::from_utf8_lossy(&f.data).into_owned(),
                });
            }
        }
        for d in &c.dependencies {
            rec(d, &format!("{path}/charts/{}", d.name()), out);
        }
    }
    let mut out = Vec::new();
    rec(chart, chart.name(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_name_check_matches_helms_regexp() {
        let re = regex::Regex::new(VALID_NAME).unwrap_or_else(|_| unreachable!());
        for n in [
            "a", "a-b", "a.b", "a-", "-a", "a..b", ".a", "a.", "A", "a_b", "0", "a.b-c.d9", "a b",
            "é", "a.-b", "ab-.c",
        ] {
            assert_eq!(is_valid_name(n), re.is_match(n), "{n:?}");
        }
    }
}
