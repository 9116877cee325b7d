//! TEMPORARY shim of the yaml module's planned API, so that the render branch
//! compiles and tests before the yaml branch lands. Removed at merge.

use saphyr_parser::{Event, Parser};

use super::value::{Mapping, Yaml};

#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error converting YAML to JSON: yaml: {}", self.0)
    }
}
impl std::error::Error for Error {}

pub fn from_yaml(s: &str) -> Result<Yaml, Error> {
    let mut events = Vec::new();
    for ev in Parser::new_from_str(s) {
        let (ev, _) = ev.map_err(|e| Error(e.to_string()))?;
        events.push(ev);
    }
    let mut i = 0;
    while i < events.len() && !matches!(events[i], Event::DocumentStart(_)) {
        i += 1;
    }
    if i >= events.len() {
        return Ok(Yaml::Null);
    }
    i += 1;
    if matches!(events.get(i), Some(Event::DocumentEnd) | Some(Event::StreamEnd) | None) {
        return Ok(Yaml::Null);
    }
    node(&events, &mut i)
}

fn node(ev: &[Event], i: &mut usize) -> Result<Yaml, Error> {
    let e = ev.get(*i).ok_or_else(|| Error("eof".into()))?;
    *i += 1;
    Ok(match e {
        Event::Scalar(s, style, _, _) => {
            if *style != saphyr_parser::ScalarStyle::Plain {
                Yaml::Str(s.to_string())
            } else {
                match s.as_ref() {
                    "" | "~" | "null" => Yaml::Null,
                    "true" | "yes" | "on" => Yaml::Bool(true),
                    "false" | "no" | "off" => Yaml::Bool(false),
                    t => t.parse::<f64>().map(Yaml::Float).unwrap_or_else(|_| Yaml::Str(t.to_string())),
                }
            }
        }
        Event::SequenceStart(..) => {
            let mut out = Vec::new();
            while !matches!(ev.get(*i), Some(Event::SequenceEnd) | None) {
                out.push(node(ev, i)?);
            }
            *i += 1;
            Yaml::Seq(out)
        }
        Event::MappingStart(..) => {
            let mut out = Mapping::new();
            while !matches!(ev.get(*i), Some(Event::MappingEnd) | None) {
                let k = match node(ev, i)? {
                    Yaml::Str(s) => s,
                    Yaml::Bool(b) => b.to_string(),
                    Yaml::Float(f) => f.to_string(),
                    _ => "null".into(),
                };
                let v = node(ev, i)?;
                out.insert(k, v);
            }
            *i += 1;
            Yaml::Map(out)
        }
        _ => Yaml::Null,
    })
}

/// Crude stand-in: JSON text (valid YAML), with a trailing newline.
pub fn to_yaml(y: &Yaml) -> String {
    let mut s = json(y);
    s.push('\n');
    s
}

pub fn to_yaml_pretty(y: &Yaml) -> String {
    to_yaml(y)
}

fn json(y: &Yaml) -> String {
    match y {
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => f.to_string(),
        Yaml::Str(s) => serde_json::to_string(s).unwrap_or_default(),
        Yaml::Seq(v) => format!("[{}]", v.iter().map(json).collect::<Vec<_>>().join(",")),
        Yaml::Map(m) => format!(
            "{{{}}}",
            m.iter().map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap_or_default(), json(v))).collect::<Vec<_>>().join(",")
        ),
    }
}
