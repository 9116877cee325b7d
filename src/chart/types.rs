//! A loaded chart, as Helm's `chart.Chart` holds it: metadata, templates,
//! other files, default values, schema, CRDs and loaded subcharts.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::yaml::Mapping;

/// One file of a chart, named by its path relative to the chart root with
/// `/` separators (`templates/deployment.yaml`, `files/a.conf`).
#[derive(Clone, Debug)]
pub struct File {
    pub name: String,
    pub data: Arc<[u8]>,
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
}
