//! Module names ↔ values keys, as addon-operator converts them: a module
//! directory `NNN-l2-load-balancer` is the module `l2-load-balancer`, whose
//! values live under `l2LoadBalancer`, whose enabled flag is
//! `l2LoadBalancerEnabled`.
//!
//! addon-operator uses `github.com/ettle/strcase` v0.2.0 (`ToCamel`,
//! `ToKebab`) in `pkg/utils/values.go` (`ModuleNameToValuesKey`,
//! `ModuleNameFromValuesKey`). That library's word splitting has quirks (digits
//! start a new word after letters only in one direction, acronyms split before
//! their last capital, `.` is a delimiter except between digits), and a module
//! name is valid only if it survives kebab → camel → kebab, so the conversion
//! is a port of its `convertWithoutInitialisms` and `defaultSplitFn` rather
//! than a general-purpose case-conversion crate.

use unicode_general_category::{GeneralCategory, get_general_category};

/// The values key of the global section (`utils.GlobalValuesKey`).
pub const GLOBAL_VALUES_KEY: &str = "global";
/// Suffix of the enabled flags (`utils.EnabledSuffix`).
pub const ENABLED_SUFFIX: &str = "Enabled";
/// Suffix of the maintenance keys (`utils.MaintenanceStateSuffix`).
pub const MAINTENANCE_SUFFIX: &str = "Maintenance";

/// `utils.ModuleNameToValuesKey`: `l2-load-balancer` → `l2LoadBalancer`
/// (`strcase.ToCamel`).
pub fn values_key(module_name: &str) -> String {
    convert(module_name, None, WordCase::Camel)
}

/// `utils.ModuleNameFromValuesKey`: `l2LoadBalancer` → `l2-load-balancer`
/// (`strcase.ToKebab`).
pub fn module_name(values_key: &str) -> String {
    convert(values_key, Some('-'), WordCase::Lower)
}

/// `ModuleConfig.ModuleEnabledKey`: `<camelName>Enabled`.
pub fn enabled_key(module_name: &str) -> String {
    values_key(module_name) + ENABLED_SUFFIX
}

/// `ModuleConfig.ModuleMaintenanceStateKey`: `<camelName>Maintenance`.
pub fn maintenance_key(module_name: &str) -> String {
    values_key(module_name) + MAINTENANCE_SUFFIX
}

/// A module name that does not survive kebab → camel → kebab.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{name}' name should be in kebab-case and be restorable from camelCase: consider renaming to '{suggestion}'"
)]
pub struct NameError {
    pub name: String,
    pub suggestion: String,
}

/// `validateModuleName` (loader/fs/fs.go) and `BasicModule.Validate`: the
/// name must equal `ToKebab(ToCamel(name))`; the error suggests that value.
pub fn validate_module_name(name: &str) -> Result<(), NameError> {
    let restored = module_name(&values_key(name));
    if restored == name {
        Ok(())
    } else {
        Err(NameError {
            name: name.to_string(),
            suggestion: restored,
        })
    }
}

/// A ConfigMap key that is not a round-tripping camelCase module key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad module name '{0}': should be camelCased")]
pub struct KeyError(pub String);

/// `getModulesNamesFromConfigData` (kube_config_manager/backend/configmap):
/// the module a ConfigMap key belongs to. `Enabled` then `Maintenance`
/// suffixes are trimmed (once each, in that order), and the rest must satisfy
/// `ToCamel(ToKebab(key)) == key`. `global` is not a module key: `None`.
pub fn module_of_config_key(key: &str) -> Result<Option<String>, KeyError> {
    if key == GLOBAL_VALUES_KEY {
        return Ok(None);
    }
    let trimmed = key.strip_suffix(ENABLED_SUFFIX).unwrap_or(key);
    let trimmed = trimmed.strip_suffix(MAINTENANCE_SUFFIX).unwrap_or(trimmed);
    let name = module_name(trimmed);
    if values_key(&name) != trimmed {
        return Err(KeyError(trimmed.to_string()));
    }
    Ok(Some(name))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WordCase {
    Lower,
    Camel,
}

#[derive(PartialEq, Eq)]
enum Action {
    Noop,
    Split,
    SkipSplit,
}

/// strcase `convertWithoutInitialisms` for LowerCase and CamelCase.
fn convert(input: &str, delimiter: Option<char>, case: WordCase) -> String {
    // strings.TrimSpace: Go's unicode.IsSpace set equals Rust's White_Space.
    let runes: Vec<char> = input.trim().chars().collect();
    let mut out = String::with_capacity(input.len() + 4);
    let (mut prev, mut curr);
    curr = '\0';
    let mut next = match runes.first() {
        Some(c) => *c,
        None => return out,
    };
    let mut in_word = false;
    let mut first_word = true;
    for i in 0..runes.len() {
        prev = curr;
        curr = next;
        next = runes.get(i + 1).copied().unwrap_or('\0');
        match default_split(prev, curr, next) {
            Action::SkipSplit => {
                if in_word && let Some(d) = delimiter {
                    out.push(d);
                }
                in_word = false;
                continue;
            }
            Action::Split => {
                if in_word && let Some(d) = delimiter {
                    out.push(d);
                }
                in_word = false;
            }
            Action::Noop => {}
        }
        match case {
            WordCase::Lower => out.push(to_lower(curr)),
            WordCase::Camel => {
                if in_word || first_word {
                    out.push(to_lower(curr));
                    first_word = false;
                } else {
                    out.push(to_upper(curr));
                }
            }
        }
        in_word = true;
    }
    out
}

/// strcase `defaultSplitFn`.
fn default_split(prev: char, curr: char, next: char) -> Action {
    if is_lower(curr) {
        return Action::Noop;
    }
    if curr == '_' || curr == '-' || is_space(curr) {
        return Action::SkipSplit;
    }
    if is_upper(curr) && (is_lower(prev) || (is_upper(prev) && is_lower(next))) {
        return Action::Split;
    }
    if is_number(prev) {
        if (curr == '.' || curr == ',') && is_number(next) {
            return Action::Noop;
        }
        if !is_number(curr) && curr != '.' {
            return Action::Split;
        }
    }
    if curr == '.' {
        return Action::SkipSplit;
    }
    Action::Noop
}

// Go's unicode.IsUpper / IsLower are the Lu / Ll categories (Rust's
// is_uppercase uses the wider Uppercase property); IsNumber is N*.
fn is_upper(c: char) -> bool {
    get_general_category(c) == GeneralCategory::UppercaseLetter
}

fn is_lower(c: char) -> bool {
    get_general_category(c) == GeneralCategory::LowercaseLetter
}

fn is_number(c: char) -> bool {
    c.is_numeric()
}

fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// unicode.ToUpper/ToLower are single-rune mappings: a character whose full
/// mapping is several characters (ß → SS) keeps itself.
fn to_upper(c: char) -> char {
    single(c.to_uppercase(), c)
}

fn to_lower(c: char) -> char {
    single(c.to_lowercase(), c)
}

fn single(mut it: impl Iterator<Item = char>, orig: char) -> char {
    match (it.next(), it.next()) {
        (Some(c), None) => c,
        _ => orig,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_examples() {
        assert_eq!(values_key("l2-load-balancer"), "l2LoadBalancer");
        assert_eq!(module_name("l2LoadBalancer"), "l2-load-balancer");
        assert_eq!(values_key("very-simple-module"), "verySimpleModule");
        assert_eq!(values_key("global"), "global");
        assert_eq!(enabled_key("cert-manager"), "certManagerEnabled");
    }
}
