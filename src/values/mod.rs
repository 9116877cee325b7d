//! Module values: addon-operator's values model as a pure library (files are
//! read by the helpers in [`sources`]; nothing is executed here).
//!
//! - [`names`]: module name ↔ values key (`l2-load-balancer` ↔
//!   `l2LoadBalancer`), `<camelName>Enabled`, the round-trip check.
//! - [`merge`]: deep merge (maps merge; lists, scalars and null replace).
//! - [`schema`]: `openapi/config-values.yaml` and `openapi/values.yaml` with
//!   addon-operator's transforms, defaults and go-openapi-worded errors.
//! - [`patch`]: hook JSON patches: parsing, scope rules, application,
//!   compaction.
//! - [`store`]: one module's (or the global section's) values, recomputed in
//!   addon-operator's merge order.
//! - [`sources`]: [`ValuesSources`] → [`EffectiveValues`] for a whole tree,
//!   `global.enabledModules`, the values given to Helm.
//! - [`config`]: config values from a ConfigMap's data.
//! - [`legacy`]: the original antiopa layout's flat values.
//! - [`convert`]: YAML ↔ JSON, the only place the two models meet.
//!
//! How the other layers use it:
//! - discovery fills [`ValuesSources`] (see [`sources::read_global_sources`],
//!   [`sources::read_module_sources`], [`parse_config_data`] +
//!   [`ValuesSources::apply_config`]) and calls [`EffectiveValues::compute`];
//! - hooks read `VALUES_PATH` / `CONFIG_VALUES_PATH` from
//!   [`EffectiveValues::module_values`] / [`EffectiveValues::module_config_values`]
//!   with `with_global` (global hooks: [`ValuesStore::values_with_prefix`] of
//!   `global`), parse their patch files with [`ValuesPatch::from_json_stream`]
//!   and hand them to [`ValuesStore::apply_hook_patch`] /
//!   [`ValuesStore::apply_hook_config_patch`] (global hooks' `*Enabled`
//!   operations come back in [`PatchOutcome::enabled`]);
//! - `enabled` scripts read [`EffectiveValues::enabled_script_values`];
//! - rendering takes [`EffectiveValues::helm_values`] (checked with
//!   `x-required-for-helm`) and [`convert::map_to_yaml`] for the chart layer;
//! - `antiopa module values NAME [-g] [-o yaml|json]` prints
//!   [`EffectiveValues::module_values`] with [`values_to_yaml`] /
//!   [`values_to_json`].

pub mod config;
pub mod convert;
pub mod legacy;
pub mod merge;
pub mod names;
pub mod patch;
pub mod schema;
pub mod sources;
pub mod store;

pub use config::{KubeConfig, ModuleConfig, parse_config_data};
pub use convert::{Values, values_to_json, values_to_yaml};
pub use legacy::{LegacySources, legacy_values};
pub use names::{enabled_key, module_name, validate_module_name, values_key};
pub use patch::{ApplyMode, PatchOp, PatchScope, ValuesPatch, apply_patch, validate_hook_patch};
pub use schema::{SchemaStorage, SchemaType, ValidationError};
pub use sources::{EffectiveValues, GlobalSources, ModuleSources, ValuesSources};
pub use store::{PatchOutcome, ValuesError, ValuesStore};
