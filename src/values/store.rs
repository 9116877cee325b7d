//! One values store per module and one for the global section: a port of
//! addon-operator's `ValuesStorage` (models/modules/values_storage.go) with
//! the patch handling of `GlobalModule.handlePatch` / `executeHook` (global.go)
//! and `BasicModule.handleModuleValuesPatch` (basic.go).
//!
//! The result is recomputed from scratch whenever an input changes
//! (`calculateResultValues`), in this order, maps deep-merged:
//! 1. static values (directory `values.yaml` and module `values.yaml`);
//! 2. defaults from the config schema (`openapi/config-values.yaml`);
//! 3. config values (the ConfigMap section);
//! 4. defaults from the values schema (`openapi/values.yaml`, which with
//!    `x-extend` includes the config schema);
//! 5. the stored hook patches, applied to `{<key>: merged}` ignoring removes
//!    of missing paths; the result is the `<key>` section (`{}` if a patch
//!    made it something other than a map).

use super::convert::{Values, go_type_name};
use super::merge::{TooDeep, merge_into};
use super::names::GLOBAL_VALUES_KEY;
use super::patch::{
    ApplyMode, PatchOp, PatchScope, ValuesPatch, apply_patch, compact, validate_hook_patch,
};
use super::schema::{SchemaError, SchemaStorage, SchemaType, ValidationError, multierror};
use serde_json::Value;
use std::fmt;

/// Everything that can go wrong computing values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    /// A schema file that cannot be loaded (`new schema storage: …`).
    #[error("module '{module}': new schema storage: {source}")]
    Schema { module: String, source: SchemaError },
    /// Values that fail a schema; `context` is addon-operator's wrapping
    /// ("validate config values", "validate values", …).
    #[error("module '{module}': {context}: {source}")]
    Invalid {
        module: String,
        context: String,
        source: ValidationError,
    },
    /// A hook's values patch that is refused or does not apply; the text is
    /// addon-operator's ("global hook 'x': dynamic global values update
    /// error: merge global values failed: …").
    #[error("{0}")]
    Patch(String),
    /// A module hook's patch whose result fails the values schema: Go
    /// appends the schema errors to "cannot apply values patch for module
    /// values" in one multierror.
    #[error("{}", ModulePatchInvalid("cannot apply values patch for module values", .0))]
    PatchInvalid(ValidationError),
    /// The same for a module hook's config values patch ("cannot apply
    /// config values patch for module values").
    #[error("{}", ModulePatchInvalid("cannot apply config values patch for module values", .0))]
    ConfigPatchInvalid(ValidationError),
    /// Values that cannot be merged or used (bad YAML, nesting too deep,
    /// a non-map module section).
    #[error("{0}")]
    Data(String),
}

/// `multierror.Append(fmt.Errorf(first), validationErr)`: the schema errors
/// are flattened into the same list.
struct ModulePatchInvalid<'a>(&'static str, &'a ValidationError);

impl fmt::Display for ModulePatchInvalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut all = vec![self.0.to_string()];
        all.extend(self.1.errors.iter().cloned());
        multierror(f, &all)
    }
}

impl From<TooDeep> for ValuesError {
    fn from(e: TooDeep) -> Self {
        ValuesError::Data(e.to_string())
    }
}

/// What a hook patch did (`globalValuesPatchResult` /
/// `moduleValuesMergeResult`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatchOutcome {
    /// The values changed and the patch was stored.
    pub changed: bool,
    /// Operations on `/<camelName>Enabled` keys (global hooks only), for the
    /// enabled-state layer (`applyEnabledPatches`).
    pub enabled: ValuesPatch,
    /// After a config values patch that changed them: the new config values
    /// of the section, to be written back to the ConfigMap.
    pub config_values: Option<Values>,
}

/// The values of one module or of the global section.
#[derive(Debug)]
pub struct ValuesStore {
    name: String,
    key: String,
    static_values: Values,
    config_values: Option<Values>,
    patches: Vec<PatchOp>,
    schemas: SchemaStorage,
    result: Values,
}

impl ValuesStore {
    /// `NewValuesStorage`: `name` is the module name (kebab-case) or
    /// `global`; `static_values` the merged static values of the section.
    pub fn new(
        name: &str,
        static_values: Values,
        config_schema: Option<&str>,
        values_schema: Option<&str>,
    ) -> Result<ValuesStore, ValuesError> {
        let schemas = SchemaStorage::new(config_schema, values_schema).map_err(|source| {
            ValuesError::Schema {
                module: name.to_string(),
                source,
            }
        })?;
        let mut st = ValuesStore {
            name: name.to_string(),
            key: super::names::values_key(name),
            static_values,
            config_values: None,
            patches: Vec::new(),
            schemas,
            result: Values::new(),
        };
        st.calculate()?;
        Ok(st)
    }

    /// The module name (or `global`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The values key (`<camelName>` or `global`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The prepared schemas.
    pub fn schemas(&self) -> &SchemaStorage {
        &self.schemas
    }

    fn is_global(&self) -> bool {
        self.key == GLOBAL_VALUES_KEY
    }

    /// `calculateResultValues`.
    fn calculate(&mut self) -> Result<(), ValuesError> {
        let mut merged = Values::new();
        merge_into(&mut merged, &self.static_values)?;
        merged = self.schemas.with_defaults(SchemaType::Config, &merged);
        if let Some(cfg) = &self.config_values {
            merge_into(&mut merged, cfg)?;
        }
        merged = self.schemas.with_defaults(SchemaType::Values, &merged);
        let mut prefixed = Values::new();
        prefixed.insert(self.key.clone(), Value::Object(merged));
        let ops = ValuesPatch {
            operations: self.patches.clone(),
        };
        let (patched, _) = apply_patch(&prefixed, &ops, ApplyMode::IgnoreNonExistentPaths)
            .map_err(ValuesError::Patch)?;
        self.result = match patched.get(&self.key) {
            Some(Value::Object(m)) => m.clone(),
            _ => Values::new(),
        };
        Ok(())
    }

    /// `GetValues(false)`: the effective values of the section.
    pub fn values(&self) -> &Values {
        &self.result
    }

    /// `GetValues(true)`: `{<key>: values}`.
    pub fn values_with_prefix(&self) -> Values {
        let mut m = Values::new();
        m.insert(self.key.clone(), Value::Object(self.result.clone()));
        m
    }

    /// `GetConfigValues(false)`: the config values as given (no defaults);
    /// empty when none were set.
    pub fn config_values(&self) -> Values {
        self.config_values.clone().unwrap_or_default()
    }

    /// `GetConfigValues(true)`: `{<key>: config values}`.
    pub fn config_values_with_prefix(&self) -> Values {
        let mut m = Values::new();
        m.insert(self.key.clone(), Value::Object(self.config_values()));
        m
    }

    /// The stored (compacted) hook patches (`GetValuesPatches`).
    pub fn patches(&self) -> &[PatchOp] {
        &self.patches
    }

    /// `GenerateNewConfigValues(config, true)` then `SaveConfigValues`: the
    /// config values, with the config schema's defaults, must satisfy the
    /// config schema; then they become the config layer.
    pub fn set_config_values(&mut self, config: Values) -> Result<(), ValuesError> {
        self.check_config_values(&config)?;
        self.config_values = Some(config);
        self.calculate()
    }

    /// `SaveConfigValues` without validation (the operator does this for
    /// values it has already checked).
    pub fn set_config_values_unchecked(&mut self, config: Values) -> Result<(), ValuesError> {
        self.config_values = Some(config);
        self.calculate()
    }

    /// The check of `GenerateNewConfigValues(config, true)`.
    pub fn check_config_values(&self, config: &Values) -> Result<(), ValuesError> {
        let mut with_defaults = self
            .schemas
            .with_defaults(SchemaType::Config, &Values::new());
        merge_into(&mut with_defaults, config)?;
        self.schemas
            .validate(SchemaType::Config, &self.key, &with_defaults)
            .map_err(|source| self.invalid("validate config values", source))
    }

    fn invalid(&self, context: &str, source: ValidationError) -> ValuesError {
        ValuesError::Invalid {
            module: self.name.clone(),
            context: context.to_string(),
            source,
        }
    }

    /// `BasicModule.Validate` (less the name check): the effective values
    /// against the values schema, then the config values, if any, against
    /// the config schema.
    pub fn validate(&self) -> Result<(), ValuesError> {
        self.schemas
            .validate(SchemaType::Values, &self.key, &self.result)
            .map_err(|s| self.invalid("validate values", s))?;
        // Config values are checked only when a config section exists: the
        // operator checks ConfigMap sections as they arrive, and an absent
        // section is not checked against `required`.
        match &self.config_values {
            Some(cfg) => self
                .schemas
                .validate(SchemaType::Config, &self.key, cfg)
                .map_err(|s| self.invalid("validate config values", s)),
            None => Ok(()),
        }
    }

    /// `ValidateModuleHelmValues`: the module's section of the values given
    /// to Helm against the values schema plus `x-required-for-helm`.
    pub fn validate_helm(&self) -> Result<(), ValuesError> {
        self.schemas
            .validate(SchemaType::Helm, &self.key, &self.result)
            .map_err(|s| self.invalid("validate helm values", s))
    }

    /// `appendValuesPatch` + `CommitValues`: store operations (compacted) and
    /// recompute, without the hook checks (used for `enabledModules`).
    pub fn append_patch(&mut self, ops: &[PatchOp]) -> Result<(), ValuesError> {
        self.patches = compact(&self.patches, ops);
        self.calculate()
    }

    /// A hook's values patch (`VALUES_JSON_PATCH_PATH`), as `executeHook`
    /// handles `MemoryValuesPatch`:
    /// - `ValidateHookValuesPatch` with the store's root (`replace` and other
    ///   roots refused);
    /// - global hooks: only the `/global` operations are applied
    ///   (`FilterValuesPatch`); `*Enabled` operations are returned for the
    ///   enabled-state layer;
    /// - applied strictly to the current values; the result must still be a
    ///   map under the store's key;
    /// - if anything changed, the result must satisfy the values schema; then
    ///   the operations are stored and the values recomputed.
    ///
    /// Error texts are addon-operator's, naming the hook.
    pub fn apply_hook_patch(
        &mut self,
        hook: &str,
        patch: &ValuesPatch,
    ) -> Result<PatchOutcome, ValuesError> {
        self.hook_patch(hook, patch, Target::Values)
    }

    /// A hook's config values patch (`CONFIG_VALUES_JSON_PATCH_PATH`), as
    /// `executeHook` handles `ConfigMapPatch`: the same checks as
    /// [`Self::apply_hook_patch`], applied to the config values; if they
    /// changed, the new config values (with the config schema's defaults)
    /// must satisfy the config schema, then they replace the config layer and
    /// are returned in [`PatchOutcome::config_values`] for the caller to
    /// write back to the ConfigMap.
    pub fn apply_hook_config_patch(
        &mut self,
        hook: &str,
        patch: &ValuesPatch,
    ) -> Result<PatchOutcome, ValuesError> {
        self.hook_patch(hook, patch, Target::Config)
    }

    fn hook_patch(
        &mut self,
        hook: &str,
        patch: &ValuesPatch,
        target: Target,
    ) -> Result<PatchOutcome, ValuesError> {
        let global = self.is_global();
        let scope = if global {
            PatchScope::Global
        } else {
            PatchScope::Module(self.key.clone())
        };
        // The wrapping of executeHook around handlePatch's errors.
        let context = match (global, target) {
            (true, Target::Values) => {
                format!("global hook '{hook}': dynamic global values update error")
            }
            (true, Target::Config) => {
                format!("global hook '{hook}': kube config global values update error")
            }
            (false, Target::Values) => {
                format!("module hook '{hook}': dynamic module values update error")
            }
            (false, Target::Config) => {
                format!("module hook '{hook}': kube module config values update error")
            }
        };
        let merge_failed = if global {
            "merge global values failed".to_string()
        } else {
            format!("merge module '{}' values failed", self.name)
        };
        let fail = |msg: String| ValuesError::Patch(format!("{context}: {merge_failed}: {msg}"));
        validate_hook_patch(patch, &scope).map_err(fail)?;
        let enabled = if global {
            patch.enabled_operations()
        } else {
            ValuesPatch::default()
        };
        let own = if global {
            patch.filter_root(GLOBAL_VALUES_KEY)
        } else {
            patch.clone()
        };
        if own.is_empty() {
            return Ok(PatchOutcome {
                enabled,
                ..PatchOutcome::default()
            });
        }
        let current = match target {
            Target::Values => self.values_with_prefix(),
            Target::Config => self.config_values_with_prefix(),
        };
        let (new_values, changed) = apply_patch(&current, &own, ApplyMode::Strict).map_err(fail)?;
        let section = match new_values.get(&self.key) {
            Some(Value::Object(m)) => m.clone(),
            other => {
                let t = other.map_or("<nil>", go_type_name);
                let what = if global { "global" } else { "module" };
                return Err(ValuesError::Patch(format!(
                    "{context}: unknown {what} values type: {t}"
                )));
            }
        };
        let mut outcome = PatchOutcome {
            changed,
            enabled,
            config_values: None,
        };
        if !changed {
            return Ok(outcome);
        }
        match target {
            Target::Values => {
                if let Err(e) = self
                    .schemas
                    .validate(SchemaType::Values, &self.key, &section)
                {
                    return Err(if global {
                        ValuesError::Patch(format!(
                            "cannot apply values patch for global values: {e}"
                        ))
                    } else {
                        ValuesError::PatchInvalid(e)
                    });
                }
                self.patches = compact(&self.patches, &own.operations);
            }
            Target::Config => {
                if let Err(e) = self.check_config_values(&section) {
                    let ValuesError::Invalid { source, .. } = e else {
                        return Err(e);
                    };
                    return Err(if global {
                        ValuesError::Patch(format!(
                            "cannot apply config values patch for global values: {source}"
                        ))
                    } else {
                        ValuesError::ConfigPatchInvalid(source)
                    });
                }
                self.config_values = Some(section.clone());
                outcome.config_values = Some(section);
            }
        }
        self.calculate()?;
        Ok(outcome)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Values,
    Config,
}
