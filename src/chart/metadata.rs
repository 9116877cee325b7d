//! `Chart.yaml` (and v1 `requirements.yaml`) into [`Metadata`], the way Helm
//! v3.17 reads it: sigs.k8s.io/yaml's YAML→JSON step (numbers and bools
//! aimed at string fields become strings), then Go's `encoding/json` into
//! `chart.Metadata` (case-insensitive field names, unknown fields ignored,
//! type mismatches are errors), then `Metadata.Validate` with Helm's texts.
//! `version:` is validated with Masterminds/semver's parsing, the port the
//! `semver` template function uses.

use std::collections::BTreeMap;

use crate::chart::types::{Dependency, Maintainer, Metadata};
use crate::engine::funcs::sprig::semver::Version;
use crate::yaml::Yaml;

/// A decoding error, in Go's `json.UnmarshalTypeError` wording.
fn type_error(json_kind: &str, strukt: &str, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {json_kind} into Go struct field {strukt}.{field} of type {go_type}"
    )
}

fn json_kind(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "null",
        Yaml::Bool(_) => "bool",
        Yaml::Int(_) | Yaml::Float(_) => "number",
        Yaml::Str(_) => "string",
        Yaml::Seq(_) => "array",
        Yaml::Map(_) => "object",
    }
}

/// A value aimed at a Go `string` field.
fn as_string(v: &Yaml, strukt: &str, field: &str) -> Result<Option<String>, String> {
    match v {
        Yaml::Null => Ok(None),
        Yaml::Str(s) => Ok(Some(s.clone())),
        Yaml::Bool(b) => Ok(Some(b.to_string())),
        Yaml::Int(i) => Ok(Some(i.to_string())),
        Yaml::Float(_) => Ok(crate::yaml::go_string_field(v)),
        other => Err(type_error(json_kind(other), strukt, field, "string")),
    }
}

fn as_bool(v: &Yaml, strukt: &str, field: &str) -> Result<Option<bool>, String> {
    match v {
        Yaml::Null => Ok(None),
        Yaml::Bool(b) => Ok(Some(*b)),
        other => Err(type_error(json_kind(other), strukt, field, "bool")),
    }
}

fn as_string_list(v: &Yaml, strukt: &str, field: &str) -> Result<Option<Vec<String>>, String> {
    match v {
        Yaml::Null => Ok(None),
        Yaml::Seq(items) => {
            let mut out = Vec::new();
            for it in items {
                out.push(as_string(it, strukt, field)?.unwrap_or_default());
            }
            Ok(Some(out))
        }
        other => Err(type_error(json_kind(other), strukt, field, "[]string")),
    }
}

/// encoding/json's field lookup: an exact name first, else a
/// case-insensitive match.
fn field_of<'a>(key: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .find(|n| **n == key)
        .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(key)))
        .copied()
}

const METADATA_FIELDS: &[&str] = &[
    "name",
    "home",
    "sources",
    "version",
    "description",
    "keywords",
    "maintainers",
    "icon",
    "apiVersion",
    "condition",
    "tags",
    "appVersion",
    "deprecated",
    "annotations",
    "kubeVersion",
    "dependencies",
    "type",
];

/// Decode a loaded `Chart.yaml` (or `requirements.yaml`) document into `md`,
/// as `yaml.Unmarshal(data, md)` does: fields present overwrite, others
/// stay. Errors are encoding/json's texts.
pub fn decode_metadata(doc: &Yaml, md: &mut Metadata) -> Result<(), String> {
    let map = match doc {
        Yaml::Null => return Ok(()),
        Yaml::Map(m) => m,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type chart.Metadata",
                json_kind(other)
            ));
        }
    };
    const S: &str = "Metadata";
    for (key, v) in map {
        let Some(field) = field_of(key, METADATA_FIELDS) else {
            continue;
        };
        match field {
            "name" => set_str(&mut md.name, v, S, field)?,
            "home" => set_str(&mut md.home, v, S, field)?,
            "version" => set_str(&mut md.version, v, S, field)?,
            "description" => set_str(&mut md.description, v, S, field)?,
            "icon" => set_str(&mut md.icon, v, S, field)?,
            "apiVersion" => set_str(&mut md.api_version, v, S, field)?,
            "condition" => set_str(&mut md.condition, v, S, field)?,
            "tags" => set_str(&mut md.tags, v, S, field)?,
            "appVersion" => set_str(&mut md.app_version, v, S, field)?,
            "kubeVersion" => set_str(&mut md.kube_version, v, S, field)?,
            "type" => set_str(&mut md.chart_type, v, S, field)?,
            "deprecated" => {
                if let Some(b) = as_bool(v, S, field)? {
                    md.deprecated = b;
                }
            }
            "sources" => match as_string_list(v, S, field)? {
                Some(l) => md.sources = l,
                None => md.sources.clear(),
            },
            "keywords" => match as_string_list(v, S, field)? {
                Some(l) => md.keywords = l,
                None => md.keywords.clear(),
            },
            "annotations" => match v {
                Yaml::Null => md.annotations.clear(),
                Yaml::Map(m) => {
                    let mut out = BTreeMap::new();
                    for (k, item) in m {
                        let s = as_string(item, S, &format!("annotations.{k}"))?;
                        out.insert(k.clone(), s.unwrap_or_default());
                    }
                    md.annotations = out;
                }
                other => {
                    return Err(type_error(json_kind(other), S, field, "map[string]string"));
                }
            },
            "maintainers" => match v {
                Yaml::Null => md.maintainers.clear(),
                Yaml::Seq(items) => {
                    let mut out = Vec::new();
                    for it in items {
                        out.push(decode_maintainer(it)?.unwrap_or_default());
                    }
                    md.maintainers = out;
                }
                other => {
                    return Err(type_error(
                        json_kind(other),
                        S,
                        field,
                        "[]*chart.Maintainer",
                    ));
                }
            },
            "dependencies" => match v {
                Yaml::Null => md.dependencies.clear(),
                Yaml::Seq(items) => {
                    let mut out = Vec::new();
                    for it in items {
                        out.push(decode_dependency(it)?.unwrap_or_default());
                    }
                    md.dependencies = out;
                }
                other => {
                    return Err(type_error(
                        json_kind(other),
                        S,
                        field,
                        "[]*chart.Dependency",
                    ));
                }
            },
            _ => {}
        }
    }
    Ok(())
}

fn set_str(dst: &mut String, v: &Yaml, strukt: &str, field: &str) -> Result<(), String> {
    if let Some(s) = as_string(v, strukt, field)? {
        *dst = s;
    }
    Ok(())
}

fn decode_maintainer(v: &Yaml) -> Result<Option<Maintainer>, String> {
    let m = match v {
        // A null entry decodes to a nil pointer, which Validate rejects.
        Yaml::Null => return Ok(None),
        Yaml::Map(m) => m,
        other => {
            return Err(type_error(
                json_kind(other),
                "Metadata",
                "maintainers",
                "chart.Maintainer",
            ));
        }
    };
    let mut out = Maintainer::default();
    const S: &str = "Maintainer";
    for (key, item) in m {
        match field_of(key, &["name", "email", "url"]) {
            Some("name") => set_str(&mut out.name, item, S, "maintainers.name")?,
            Some("email") => set_str(&mut out.email, item, S, "maintainers.email")?,
            Some("url") => set_str(&mut out.url, item, S, "maintainers.url")?,
            _ => {}
        }
    }
    Ok(Some(out))
}

/// Decode one `dependencies:` entry; `None` for a null entry.
fn decode_dependency(v: &Yaml) -> Result<Option<Dependency>, String> {
    let m = match v {
        Yaml::Null => return Ok(None),
        Yaml::Map(m) => m,
        other => {
            return Err(type_error(
                json_kind(other),
                "Metadata",
                "dependencies",
                "chart.Dependency",
            ));
        }
    };
    let mut d = Dependency::default();
    const S: &str = "Dependency";
    const FIELDS: &[&str] = &[
        "name",
        "version",
        "repository",
        "condition",
        "tags",
        "enabled",
        "import-values",
        "alias",
    ];
    for (key, item) in m {
        let Some(field) = field_of(key, FIELDS) else {
            continue;
        };
        let path = format!("dependencies.{field}");
        match field {
            "name" => set_str(&mut d.name, item, S, &path)?,
            "version" => set_str(&mut d.version, item, S, &path)?,
            "repository" => set_str(&mut d.repository, item, S, &path)?,
            "condition" => set_str(&mut d.condition, item, S, &path)?,
            "alias" => set_str(&mut d.alias, item, S, &path)?,
            "tags" => d.tags = as_string_list(item, S, &path)?.unwrap_or_default(),
            "enabled" => d.enabled = as_bool(item, S, &path)?.unwrap_or(false),
            "import-values" => match item {
                Yaml::Null => d.import_values.clear(),
                Yaml::Seq(items) => d.import_values = items.clone(),
                other => {
                    return Err(type_error(json_kind(other), S, &path, "[]interface {}"));
                }
            },
            _ => {}
        }
    }
    Ok(Some(d))
}

/// Null entries found by decoding, reported by [`validate`].
#[derive(Default, Debug, Clone, Copy)]
pub struct NullEntries {
    pub maintainers: bool,
    pub dependencies: bool,
}

/// Whether the document has null `maintainers`/`dependencies` entries.
pub fn null_entries(doc: &Yaml) -> NullEntries {
    let mut out = NullEntries::default();
    if let Yaml::Map(m) = doc {
        for (k, v) in m {
            if let Yaml::Seq(items) = v {
                let has_null = items.iter().any(|i| matches!(i, Yaml::Null));
                match field_of(k, METADATA_FIELDS) {
                    Some("maintainers") => out.maintainers |= has_null,
                    Some("dependencies") => out.dependencies |= has_null,
                    _ => {}
                }
            }
        }
    }
    out
}

/// Helm's `sanitizeString`: whitespace becomes a space, non-printable
/// characters are dropped.
fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// `Metadata.Validate` (without the "validation: " prefix, which the
/// caller's error type adds): sanitizes strings in place and checks the
/// required fields, the version, the type and the dependencies.
pub fn validate(md: &mut Metadata, nulls: NullEntries) -> Result<(), String> {
    md.name = sanitize(&md.name);
    md.description = sanitize(&md.description);
    md.home = sanitize(&md.home);
    md.icon = sanitize(&md.icon);
    md.condition = sanitize(&md.condition);
    md.tags = sanitize(&md.tags);
    md.app_version = sanitize(&md.app_version);
    md.kube_version = sanitize(&md.kube_version);
    for s in md.sources.iter_mut().chain(md.keywords.iter_mut()) {
        *s = sanitize(s);
    }
    if md.api_version.is_empty() {
        return Err("chart.metadata.apiVersion is required".into());
    }
    if md.name.is_empty() {
        return Err("chart.metadata.name is required".into());
    }
    if md.name != go_base(&md.name) {
        return Err(format!(
            "chart.metadata.name {} is invalid",
            go_quote(&md.name)
        ));
    }
    if md.version.is_empty() {
        return Err("chart.metadata.version is required".into());
    }
    if Version::parse(&md.version).is_err() {
        return Err(format!(
            "chart.metadata.version {} is invalid",
            go_quote(&md.version)
        ));
    }
    if !matches!(md.chart_type.as_str(), "" | "application" | "library") {
        return Err("chart.metadata.type must be application or library".into());
    }
    if nulls.maintainers {
        return Err("maintainers must not contain empty or null nodes".into());
    }
    for m in &mut md.maintainers {
        m.name = sanitize(&m.name);
        m.email = sanitize(&m.email);
        m.url = sanitize(&m.url);
    }
    if nulls.dependencies {
        return Err("dependencies must not contain empty or null nodes".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for d in &mut md.dependencies {
        d.name = sanitize(&d.name);
        d.version = sanitize(&d.version);
        d.repository = sanitize(&d.repository);
        d.condition = sanitize(&d.condition);
        for t in &mut d.tags {
            *t = sanitize(t);
        }
        if !d.alias.is_empty()
            && !d
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "dependency {} has disallowed characters in the alias",
                go_quote(&d.name)
            ));
        }
        let key = if d.alias.is_empty() {
            d.name.clone()
        } else {
            d.alias.clone()
        };
        if !seen.insert(key.clone()) {
            return Err(format!(
                "more than one dependency with name or alias {}",
                go_quote(&key)
            ));
        }
    }
    Ok(())
}

/// Go's `filepath.Base` on Unix.
fn go_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/";
    }
    crate::scan::after_last_slash(t)
}

pub(crate) use crate::gocompat::strconv::quote as go_quote;

#[cfg(test)]
mod tests {

    use super::*;

    fn map(entries: &[(&str, Yaml)]) -> Yaml {
        Yaml::Map(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn numbers_become_strings_like_sigs_yaml() {
        // Helm prints `.Chart.Version` 1 for `version: 1.0`, 1.1 for
        // `appVersion: 1.10`, 12345678 and 1000 for `12345678` / `1e3`.
        let doc = crate::chart::load::parse_yaml_typed(
            "a: 1.0\nb: 1.10\nc: 12345678\nd: 1e3\ne: 0.1\nf: 1.5e-7\n",
        )
        .expect("valid YAML");
        let Yaml::Map(m) = doc else {
            panic!("not a map: {doc:?}")
        };
        let s = |k: &str| as_string(&m[k], "Metadata", k).ok().flatten();
        assert_eq!(s("a").as_deref(), Some("1"));
        assert_eq!(s("b").as_deref(), Some("1.1"));
        assert_eq!(s("c").as_deref(), Some("12345678"));
        assert_eq!(s("d").as_deref(), Some("1000"));
        assert_eq!(s("e").as_deref(), Some("0.1"));
        assert_eq!(s("f").as_deref(), Some("1.5e-07"));
    }

    #[test]
    fn decode_and_validate() {
        let doc = map(&[
            ("name", Yaml::Str("c1".into())),
            ("Version", Yaml::Float(1.0)),
        ]);
        let mut md = Metadata::default();
        decode_metadata(&doc, &mut md).unwrap();
        assert_eq!(md.version, "1");
        md.api_version = "v1".into();
        validate(&mut md, NullEntries::default()).unwrap();

        let doc = map(&[("version", Yaml::Seq(vec![Yaml::Float(1.0)]))]);
        assert_eq!(
            decode_metadata(&doc, &mut Metadata::default()).unwrap_err(),
            "json: cannot unmarshal array into Go struct field Metadata.version of type string"
        );
        let mut md = Metadata {
            api_version: "v2".into(),
            version: "1.0.0".into(),
            ..Default::default()
        };
        assert_eq!(
            validate(&mut md, NullEntries::default()).unwrap_err(),
            "chart.metadata.name is required"
        );
        md.name = "x".into();
        md.version = "1.x".into();
        assert_eq!(
            validate(&mut md, NullEntries::default()).unwrap_err(),
            "chart.metadata.version \"1.x\" is invalid"
        );
        md.version = "1.2.3".into();
        md.chart_type = "foo".into();
        assert_eq!(
            validate(&mut md, NullEntries::default()).unwrap_err(),
            "chart.metadata.type must be application or library"
        );
    }

    #[test]
    fn versions() {
        assert!(Version::parse("1").is_ok());
        assert!(Version::parse("v1.2").is_ok());
        assert!(Version::parse("0.0.0-undefined").is_ok());
        assert!(Version::parse("1.x").is_err());
        assert!(Version::parse("1.2.3-01").is_err());
        let a = Version::parse("1.0.0-alpha").unwrap();
        let b = Version::parse("1.0.0").unwrap();
        assert_eq!(a.compare(&b), std::cmp::Ordering::Less);
    }
}
