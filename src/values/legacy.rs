//! Values in the original antiopa layout (addon-operator's predecessor):
//! one flat map per module, no `global`/`<camelName>` sections, merged from
//! six sources in this order, later winning (maps deep-merge, lists and
//! scalars replace, as everywhere else here):
//! 1. `modules/values.yaml` — for every module;
//! 2. the values global hooks returned through `RETURN_VALUES_PATH`, in the
//!    order the hooks ran;
//! 3. `modules/<module>/values.yaml`;
//! 4. the YAML the module's `initial_values` script printed (the caller runs
//!    it, or takes the copy remembered in the config);
//! 5. config key `values` — for every module of this installation;
//! 6. config key `<module-name>-values`.

use super::convert::{Values, values_from_yaml};
use super::merge::merge_into;
use super::store::ValuesError;
use std::collections::BTreeMap;

/// The six sources, as data.
#[derive(Debug, Clone, Default)]
pub struct LegacySources {
    /// `modules/values.yaml`.
    pub common: Option<Values>,
    /// Global hooks' returned values, in call order.
    pub global_hook_returns: Vec<Values>,
    /// `modules/<module>/values.yaml`.
    pub module: Option<Values>,
    /// Output of `initial_values`.
    pub initial_values: Option<Values>,
    /// Config key `values`.
    pub config_values: Option<Values>,
    /// Config key `<module-name>-values`.
    pub config_module_values: Option<Values>,
}

/// The merged values of one module in the legacy layout.
pub fn legacy_values(src: &LegacySources) -> Result<Values, ValuesError> {
    let mut res = Values::new();
    let layers = std::iter::once(src.common.as_ref())
        .chain(src.global_hook_returns.iter().map(Some))
        .chain([
            src.module.as_ref(),
            src.initial_values.as_ref(),
            src.config_values.as_ref(),
            src.config_module_values.as_ref(),
        ])
        .flatten();
    for layer in layers {
        merge_into(&mut res, layer)?;
    }
    Ok(res)
}

/// The config key holding a module's values in the legacy layout.
pub fn legacy_config_key(module_name: &str) -> String {
    format!("{module_name}-values")
}

/// Sources 5 and 6 from a legacy ConfigMap's data (`values`,
/// `<module-name>-values`, each a YAML map).
pub fn legacy_config(
    data: &BTreeMap<String, String>,
    module_name: &str,
) -> Result<(Option<Values>, Option<Values>), ValuesError> {
    let read = |key: &str| -> Result<Option<Values>, ValuesError> {
        data.get(key)
            .map(|t| {
                values_from_yaml(t)
                    .map_err(|e| ValuesError::Data(format!("config key '{key}': {e}")))
            })
            .transpose()
    };
    Ok((read("values")?, read(&legacy_config_key(module_name))?))
}
